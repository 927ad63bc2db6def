"""The rewriter's scanner twins, as markupsafe keeps ``_speedups`` beside ``_native``: the C module
``proxy_addon._fastscan`` and the Python module ``proxy_addon._scan_python`` offer the same functions,
with the same signatures (the C one's as its stub and its docstrings declare them), and ``rewrite.scanner``,
the one place that chooses between them, is what every scan, placing of marks and splice goes through."""

from __future__ import annotations

import ast
import inspect
import os

import pytest
from barkit import bar_count, bars, outside_panel, panel_of

from proxy_addon import _fastscan, _scan_python, rewrite
from proxy_addon.markup import LinkInfo, PanelData

STUB = os.path.join(os.path.dirname(_scan_python.__file__), "_fastscan.pyi")
PAGE = "http://site.example/dir/page.html"


def _stub_signatures() -> dict[str, list[tuple[str, str]]]:
    """Each function the stub declares: its parameters (name, kind), from its first declaration (an overload's
    first form is the one for text, which both twins read)."""
    found: dict[str, list[tuple[str, str]]] = {}
    for node in ast.parse(open(STUB).read()).body:
        if isinstance(node, ast.FunctionDef) and node.name not in found:
            arguments = node.args
            found[node.name] = [(a.arg, "POSITIONAL_ONLY") for a in arguments.posonlyargs] + [
                (a.arg, "POSITIONAL_OR_KEYWORD") for a in arguments.args
            ]
    return found


def _python_signature(name: str) -> list[tuple[str, str]]:
    return [(p.name, p.kind.name) for p in inspect.signature(getattr(_scan_python, name)).parameters.values()]


def test_the_twins_offer_the_same_functions():
    c_functions = {name for name in dir(_fastscan) if not name.startswith("_") and callable(getattr(_fastscan, name))}
    assert c_functions == set(_scan_python.__all__) == set(_stub_signatures()) == {"scan", "splice", "place"}
    for name in c_functions:
        assert inspect.isfunction(getattr(_scan_python, name)), name
        assert inspect.isbuiltin(getattr(_fastscan, name)), name


@pytest.mark.parametrize("name", ["scan", "splice", "place"])
def test_the_twins_take_the_same_arguments(name):
    python = _python_signature(name)
    assert python == _stub_signatures()[name]
    # the C functions' own signature is their docstring's first words (METH_VARARGS: positional only)
    assert all(kind == "POSITIONAL_ONLY" for _, kind in python)
    doc = getattr(_fastscan, name).__doc__
    assert doc.startswith(f"{name}({', '.join(parameter for parameter, _ in python)})"), doc


def test_the_c_twin_is_chosen_where_it_is_built():
    assert rewrite.fast is _fastscan
    assert rewrite.scanner is _fastscan


def _counting(monkeypatch, module, calls):
    for name in ("scan", "splice", "place"):
        original = getattr(module, name)

        def counted(*args, _original=original, _name=name):
            calls.append((module.__name__.rsplit(".", 1)[-1], _name, type(args[0]).__name__))
            return _original(*args)

        monkeypatch.setattr(module, name, counted)


def test_the_one_switch_selects_each_twin(scanner, monkeypatch):
    chosen = {"c": _fastscan, "python": _scan_python}[scanner]
    assert rewrite.scanner is chosen
    calls: list[tuple[str, str, str]] = []
    _counting(monkeypatch, _fastscan, calls)
    _counting(monkeypatch, _scan_python, calls)
    lookup = lambda urls: {url: LinkInfo(0.25, 50.0, 5, 3, 20) for url in urls}  # noqa: E731
    panel_data = lambda url: PanelData(url, LinkInfo(None), [], 0)  # noqa: E731
    text = "<!doctype html><head><title>t</title></head><body><a href=a.html>a</a><a href=b.html rel=ugc>b</a>"
    done = rewrite.annotate(text, PAGE, lookup, panel_data)
    assert done.links == 2 and bar_count(outside_panel(done.text)) == 2 and panel_of(done.text) is not None
    assert "<pagerank-" not in done.text  # built-in host elements, no custom ones (a page could define those)
    assert [bar.attributes.get("data-nofollow") for bar in bars(outside_panel(done.text))] == [None, "true"]
    name = chosen.__name__.rsplit(".", 1)[-1]
    assert {(module, function) for module, function, _ in calls} == {
        (name, "scan"),
        (name, "place"),
        (name, "splice"),
    }
    calls.clear()
    new_body, again = rewrite.annotate_bytes(text.encode(), "text/html; charset=utf-8", PAGE, lookup, panel_data)
    assert new_body == done.text.encode() and again.edits == done.edits
    # UTF-8 is read as bytes by the C twin alone; the Python one reads the decoded text
    read = "bytes" if scanner == "c" else "str"
    assert (name, "scan", read) in calls
    assert {module for module, _, _ in calls} == {name}
