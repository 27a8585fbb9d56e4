"""The type stubs (elevator/__init__.pyi) name every public function and method with the
parameters the package takes."""

import ast
import inspect
from pathlib import Path

import elevator


def _stub_signatures():
    tree = ast.parse((Path(elevator.__file__).with_suffix(".pyi")).read_text())
    out = {}

    def sig(fn):
        a = fn.args
        return [x.arg for x in a.posonlyargs + a.args], sorted(x.arg for x in a.kwonlyargs)

    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            out[node.name] = sig(node)
        elif isinstance(node, ast.ClassDef):
            for n in node.body:
                if isinstance(n, ast.FunctionDef):
                    out[f"{node.name}.{n.name}"] = sig(n)
    return out


def _signature(fn):
    ps = inspect.signature(fn).parameters.values()
    pos = [p.name for p in ps if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return pos, sorted(p.name for p in ps if p.kind == p.KEYWORD_ONLY)


def test_the_stubs_match_every_public_function_and_method():
    stubs = _stub_signatures()
    grid_kw = set(inspect.signature(elevator.grid_spec).parameters) - {"scenario"}
    problems = []
    for name in elevator.__all__:
        obj = getattr(elevator, name)
        if inspect.isfunction(obj):
            got = _signature(obj)
            if name == "sim":  # sim(**grid) takes grid_spec's keywords; the stub spells them out
                got = (got[0], sorted(set(got[1]) | grid_kw))
            if stubs.get(name) != got:
                problems.append((name, got, stubs.get(name)))
        elif inspect.isclass(obj) and not issubclass(obj, BaseException):
            for m, f in vars(obj).items():
                if m.startswith("_") and m not in ("__init__", "__len__"):
                    continue
                f = f.__func__ if isinstance(f, (classmethod, staticmethod)) else f
                if inspect.isfunction(f) and stubs.get(f"{name}.{m}") != _signature(f):
                    problems.append((f"{name}.{m}", _signature(f), stubs.get(f"{name}.{m}")))
    assert not problems, problems
