#!/usr/bin/env python3
"""Writes tinyformer/_core.pyi, the type stub of the compiled module, from the module itself: pybind11 puts each
function's signature (argument names, types, defaults) and docstring into its __doc__, so the stub is read from
the bindings (python/src/*.cpp) and cannot drift from them. The build runs this after linking the module
(python/CMakeLists.txt); pip installs the stub with the package.

Usage: make_stub.py MODULE.so OUT.pyi
"""
import importlib.machinery
import importlib.util
import inspect
import re
import sys

HEADER = '''"""Type stub of tinyformer._core (the C++ library's bindings), written by python/make_stub.py from the module's
pybind11 signatures at build time."""
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union, overload

import numpy
import numpy.typing

'''


def load(path):
    loader = importlib.machinery.ExtensionFileLoader("tinyformer._core", path)
    spec = importlib.util.spec_from_file_location("tinyformer._core", path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def clean(text):
    """A pybind11 signature as stub syntax: our own classes by their bare names, unprintable defaults as `...`."""
    text = text.replace("tinyformer._core.", "")
    text = re.sub(r"= <[^>]*>", "= ...", text)
    text = re.sub(r"numpy\.ndarray\[[^\]]*\]", "numpy.ndarray", text)
    text = re.sub(r"=\s*(-?inf|nan)\b", "= ...", text)
    text = re.sub(r":\s*function\b", ": Callable[..., Any]", text)
    return text.replace("buffer", "Any").replace("capsule", "Any").replace(": handle", ": Any")


def signatures(obj, name):
    """[(signature, docstring)] of a pybind11 function or method: one per overload."""
    doc = inspect.getdoc(obj) or ""
    lines = doc.splitlines()
    if not lines or not lines[0].startswith(name + "("):
        return [(f"{name}(*args: Any, **kwargs: Any) -> Any", doc)]
    if len(lines) > 1 and lines[1].strip() == "Overloaded function.":
        out, body = [], "\n".join(lines[2:])
        for part in re.split(r"\n\d+\. (?=" + re.escape(name) + r"\()", "\n" + body):
            part = part.strip()
            if not part:
                continue
            sig, _, rest = part.partition("\n")
            out.append((re.sub(r"^\d+\. ", "", sig), rest.strip()))
        return out
    return [(lines[0], "\n".join(lines[1:]).strip())]


def docstring(text, indent):
    if not text:
        return ""
    text = text.replace('"""', "'''").replace("\\", "\\\\")
    return f'{indent}"""{text}"""\n'


def function(obj, name, indent=""):
    sigs = signatures(obj, name)
    out = ""
    for sig, doc in sigs:
        out += f"{indent}@overload\n" if len(sigs) > 1 else ""
        out += f"{indent}def {clean(sig)}:\n"
        out += docstring(doc, indent + "    ") or f"{indent}    ...\n"
        if docstring(doc, indent + "    "):
            out += f"{indent}    ...\n"
    return out


def prop(obj, name, indent):
    fget = obj.fget
    sig = signatures(fget, "")[0][0] if fget is not None else ""
    returns = re.search(r"->\s*(.+)$", signatures(fget, "")[0][0]) if fget is not None else None
    kind = clean(returns.group(1)) if returns else "Any"
    doc = (inspect.getdoc(obj) or "").splitlines()
    text = "\n".join(doc[1:]).strip() if doc and doc[0].startswith("(") else "\n".join(doc).strip()
    del sig
    out = f"{indent}@property\n{indent}def {name}(self) -> {kind}:\n" + (docstring(text, indent + "    "))
    out += f"{indent}    ...\n"
    if obj.fset is not None:
        out += f"{indent}@{name}.setter\n{indent}def {name}(self, value: {kind}) -> None: ...\n"
    return out


def cls(obj, name):
    bases = [b.__name__ for b in obj.__bases__ if b.__module__ == "tinyformer._core"]
    out = f"class {name}({', '.join(bases)}):\n" if bases else f"class {name}:\n"
    doc = obj.__doc__ if obj.__doc__ and not obj.__doc__.startswith(name + "(") else ""
    body = docstring(doc, "    ")
    for member, value in obj.__dict__.items():
        if member.startswith("__") and member not in ("__init__", "__call__", "__enter__", "__exit__", "__len__",
                                                     "__bool__", "__array__", "__repr__") and \
                not re.fullmatch(r"__r?(add|sub|mul|truediv|matmul|neg|pow)__", member):
            continue
        if member == "__init__" and not (inspect.getdoc(value) or "").startswith("__init__("):
            continue  # no constructor bound: not constructible from Python
        if isinstance(value, property):
            body += prop(value, member, "    ")
        elif callable(value):
            body += function(value, member, "    ")
    return out + (body or "    ...\n")


def stub(module):
    out = HEADER
    for name, value in sorted(vars(module).items()):
        if name.startswith("__") and name != "__version__":
            continue
        if inspect.isclass(value):
            continue
        if callable(value):
            out += function(value, name) + "\n"
        elif isinstance(value, (str, int, float, bool)):
            out += f"{name}: {type(value).__name__}\n\n"
    classes = [(n, v) for n, v in vars(module).items() if inspect.isclass(v)]
    done, ordered = set(), []
    while classes:  # a base before the classes derived from it
        for n, v in classes:
            if all(b.__module__ != "tinyformer._core" or b.__name__ in done for b in v.__bases__):
                ordered.append((n, v))
                done.add(n)
        classes = [(n, v) for n, v in classes if n not in done]
    for name, value in ordered:
        out += cls(value, name) + "\n"
    return out.rstrip() + "\n"


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[-1])
    text = stub(load(sys.argv[1]))
    compile(text, sys.argv[2], "exec")  # the stub must be valid Python
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
    main()
