"""pybind11's own TypeError for arguments it cannot convert ("incompatible function arguments. The following argument
types are supported: 1. (input: tinyformer._core.Tensor, shape: List[int]) ... Invoked with: 'abc', 3") is several
lines of C++ signatures. Every function and method of the extension goes through one_line_type_errors, which turns it
into one line naming the argument: "reshape(): argument 'shape' must be a list of int, got int 3"."""
import functools
import numbers
import re

import numpy as np

_CAST_MESSAGE = "an argument does not convert:"
_OVERLOAD = re.compile(r"^\s*\d+\. \((.*)\) -> ", re.M)
_CONSTRUCTOR = re.compile(r"^\s*\d+\. [\w.]*?(\w+)\((.*)\)$", re.M)  # "1. tinyformer._core.Vocabulary(tokens: ...)"
_PYBIND_ERROR = re.compile(r"^(\w+)\(\): incompatible (?:function|constructor) arguments")


def _split_top(text):
    """'a: List[int], b: Dict[str, int] = 1' -> ['a: List[int]', 'b: Dict[str, int] = 1'] (commas at depth 0)."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "[(":
            depth += 1
        elif c in "])":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    if text[start:].strip():
        parts.append(text[start:].strip())
    return parts


def _parameters(signature):
    """[(name, type, has_default)] of one overload's signature text."""
    out = []
    for part in _split_top(signature):
        if part in ("*", "/") or part.startswith("*"):
            continue
        name, _, rest = part.partition(": ")
        typ, _, default = rest.partition(" = ")
        out.append((name.strip(), typ.strip(), bool(default)))
    return out


def _fits(value, typ):
    """Whether pybind11 could convert `value` to `typ` (as far as can be told from the type's name); None: unknown."""
    if typ.startswith("Optional["):
        return value is None or _fits(value, typ[9:-1]) is not False
    if typ in ("int", "SupportsInt"):  # pybind11 converts what fits 64 bits (signed or not: the name does not say)
        return isinstance(value, (numbers.Integral, np.integer)) and not isinstance(value, bool) and \
            -2**63 <= int(value) < 2**64
    if typ in ("float", "SupportsFloat"):
        return isinstance(value, (numbers.Real, np.number)) and not isinstance(value, bool)
    if typ == "bool":
        return isinstance(value, (bool, np.bool_))
    if typ == "str":  # a str with lone surrogates (bytes that are not UTF-8) does not convert
        return isinstance(value, (str, bytes)) and (not isinstance(value, str) or _encodes(value))
    if typ.startswith(("List[", "Sequence[")):
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
            return False
        inner = typ[typ.index("[") + 1:-1]
        return all(_fits(v, inner) is not False for v in value)
    if typ.startswith("Tuple["):
        return isinstance(value, tuple)
    if typ.startswith("Callable["):
        return callable(value)
    if typ.startswith("tinyformer._core."):  # None stands for a null pointer
        cls = typ.rsplit(".", 1)[1]
        return value is None or any(k.__name__ == cls for k in type(value).__mro__)
    return None


def _encodes(text):
    try:
        text.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def _describe(typ):
    if typ.startswith("Optional["):
        return _describe(typ[9:-1]) + " or None"
    if typ.startswith(("List[", "Sequence[")):
        return "a list of " + _describe(typ[typ.index("[") + 1:-1]).removeprefix("a ").removeprefix("an ")
    if typ.startswith("tinyformer._core."):
        name = typ.rsplit(".", 1)[1].lstrip("_")
        return "a tinyformer " + name + (" (tf.tensor(...))" if name == "Tensor" else "")
    if typ.startswith("numpy.ndarray"):
        return "an array"
    if typ.startswith("Callable["):
        return "a function"
    return {"int": "an int", "float": "a number", "bool": "True or False", "str": "a string"}.get(typ, typ)


def _shown(value):
    text = repr(value)
    text = text if len(text) <= 60 else text[:57] + "..."
    return f"{type(value).__name__} {text}".encode("unicode_escape").decode("ascii") if not isinstance(
        value, (int, float)) else f"{type(value).__name__} {text}"


def one_line_message(message, args, kwargs, skip_self):
    """The one line for pybind11's message about a call with args and kwargs."""
    match = _PYBIND_ERROR.match(message)
    name = match.group(1) if match else "call"
    args = list(args[1:] if skip_self else args)
    overloads = [_parameters(s) for s in _OVERLOAD.findall(message)]
    constructors = _CONSTRUCTOR.findall(message)
    if constructors:  # a class's __init__: named as the class
        name, overloads = constructors[0][0], [_parameters(s) for _, s in constructors]
    if skip_self:
        overloads = [p[1:] if p and p[0][0] == "self" else p for p in overloads]
    for params in overloads:
        names = [p[0] for p in params]
        if len(args) > len(params) or any(k not in names for k in kwargs):
            continue
        bound = dict(zip(names, args))
        bound.update(kwargs)
        missing = [p[0] for p in params if p[0] not in bound and not p[2]]
        if missing:
            return f"{name}(): argument '{missing[0]}' is missing"
        for pname, typ, _ in params:
            if pname in bound and _fits(bound[pname], typ) is False:
                return f"{name}(): argument '{pname}' must be {_describe(typ)}, got {_shown(bound[pname])}"
    for params in overloads:  # a negative count, which the C++ side holds unsigned
        bound = dict(zip([p[0] for p in params], args))
        bound.update(kwargs)
        for pname, typ, _ in params:
            value = bound.get(pname)
            if "int" in typ and isinstance(value, (numbers.Integral, np.integer)) and not isinstance(value, bool) \
                    and value < 0:
                return f"{name}(): argument '{pname}' must be a whole number >= 0, got {value}"
    if len(overloads) == 1:
        params = overloads[0]
        if len(args) > len(params):
            return f"{name}(): takes at most {len(params)} arguments ({', '.join(p[0] for p in params)}), got " \
                   f"{len(args)}"
        unknown = [k for k in kwargs if k not in [p[0] for p in params]]
        if unknown:
            return f"{name}(): no argument named '{unknown[0]}'; its arguments: {', '.join(p[0] for p in params)}"
    signatures = "; ".join("(" + ", ".join(f"{p[0]}: {_describe(p[1])}" for p in params) + ")"
                           for params in overloads)
    return f"{name}(): the arguments do not fit {signatures}"


def _wrapped(fn, skip_self):
    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except TypeError as e:
            text = str(e)
            if text.startswith(_CAST_MESSAGE):  # a py::cast inside the binding (python/src/module.cpp)
                shown = ", ".join([_shown(a) for a in args[1 if skip_self else 0:]] +
                                  [f"{k}={_shown(v)}" for k, v in kwargs.items()][:4])
                raise TypeError(f"{fn.__name__}(): {text}; got {shown}") from None
            if "incompatible function arguments" not in text and "incompatible constructor arguments" not in text:
                raise
            raise TypeError(one_line_message(text, args, kwargs, skip_self)) from None
    return call


def one_line_type_errors(module):
    """Wraps every function of `module` and every method of its classes (not the operators: pybind11 returns
    NotImplemented for those, and Python's own message is one line)."""
    for attr, value in list(vars(module).items()):
        if attr.startswith("__"):
            continue
        if type(value).__name__ == "builtin_function_or_method":
            setattr(module, attr, _wrapped(value, skip_self=False))
        elif isinstance(value, type):
            for name, member in list(vars(value).items()):
                if name.startswith("__") and name != "__init__":
                    continue
                if type(member).__name__ == "instancemethod":
                    setattr(value, name, _wrapped(member.__func__, skip_self=True))
                elif name == "__init__":
                    setattr(value, name, _wrapped(member, skip_self=True))
                elif isinstance(member, staticmethod):
                    setattr(value, name, staticmethod(_wrapped(member.__func__, skip_self=False)))
                elif isinstance(member, property) and member.fset is not None:
                    setattr(value, name, property(member.fget, _wrapped(member.fset, skip_self=True), member.fdel,
                                                  member.__doc__))
