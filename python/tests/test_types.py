"""Type hints and docstrings: tinyformer/_core.pyi (written at build time from the bindings, python/make_stub.py) is
valid Python and names every public function and class of the compiled module with their public methods; and every
public name of the Python layers (tf.nn, tf.nn.functional, tf.optim, tf.optim.lr_scheduler, tinyformer.lens, its
patching, head detector and FactoredMatrix, the notebook views) has a docstring and annotated arguments. Under a second."""
import ast
import inspect
import os

import pytest

import tinyformer as tf
import tinyformer._core as core
from tinyformer import (factored_matrix, functional, head_detector, lens, lr_scheduler, nn, nn_init, nn_utils, optim,
                        patching, serialization, views)


def _stub():
    path = os.path.join(os.path.dirname(core.__file__), "_core.pyi")
    return ast.parse(open(path, encoding="utf-8").read())


def test_the_stub_names_every_public_function_and_class_of_the_module():
    tree = _stub()
    top = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    # constants (dtype names, the default generator) as annotated names
    top.update({n.target.id: n for n in tree.body if isinstance(n, ast.AnnAssign)})
    public = [n for n in dir(core) if not n.startswith("_")]
    assert public and [n for n in public if n not in top] == []
    for name in public:
        value = getattr(core, name)
        if isinstance(top[name], ast.AnnAssign) or inspect.ismodule(value):
            assert not callable(value) or inspect.ismodule(value), name
        elif inspect.isclass(value):
            methods = {m.name for m in top[name].body if isinstance(m, ast.FunctionDef)}
            # what the bindings define (methods added in Python, tinyformer/__init__.py's, are typed by their source)
            wanted = {m for m, v in vars(value).items() if not m.startswith("_") and not inspect.isfunction(
                v.fget if isinstance(v, property) else v)}
            assert wanted <= methods, (name, sorted(wanted - methods))
        else:
            node = top[name]
            assert node.returns is not None and all(a.annotation is not None for a in node.args.args), name
    assert any(isinstance(n, ast.AnnAssign) and n.target.id == "__version__" for n in tree.body)


def _public(module):
    return [(name, getattr(module, name)) for name in module.__all__]


@pytest.mark.parametrize("module", [nn, functional, optim, lr_scheduler, lens, patching, factored_matrix,
                                    head_detector, nn_init, nn_utils, serialization, views],
                         ids=lambda m: m.__name__)
def test_every_public_name_has_a_docstring_and_annotations(module):
    missing = []
    for name, obj in _public(module):
        if inspect.ismodule(obj):
            continue
        if not inspect.getdoc(obj):
            missing.append(f"{name}: no docstring")
        callables = [(name, obj)] if inspect.isfunction(obj) else []
        if inspect.isclass(obj):
            callables += [(f"{name}.{m}", f) for m, f in vars(obj).items()
                          if inspect.isfunction(f) and (not m.startswith("_") or m == "__init__")]
            for m, p in vars(obj).items():
                if isinstance(p, property) and not m.startswith("_") and not inspect.getdoc(p):
                    missing.append(f"{name}.{m}: no docstring")
        for qual, f in callables:
            if not qual.endswith("__init__") and not inspect.getdoc(f):
                missing.append(f"{qual}: no docstring")
            sig = inspect.signature(f)
            unannotated = [p for p, v in sig.parameters.items()
                           if p not in ("self", "cls") and v.annotation is inspect.Parameter.empty]
            if unannotated or sig.return_annotation is inspect.Signature.empty:
                missing.append(f"{qual}: unannotated {unannotated or 'return'}")
    assert missing == []


def test_the_package_says_its_version_and_the_grad_mode_decorator_is_documented():
    assert tf.__version__ == core.__version__ and tf.__version__.count(".") == 2
    assert "decorator" in tf.no_grad.__doc__ and tf.AttentionMap.__doc__ and tf.report.__doc__
