"""The layers import one way (docs/architecture.md): frontend <- analysis <- lint <- translate <- verify / report /
server / cli, and no two modules import each other, directly or round a longer cycle. Function-level imports
count: a lazy import is still a dependency."""
from __future__ import annotations

import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# a layer may import its own and lower layers only
LAYERS = {"base": 0, "frontend": 1, "analysis": 2, "lint": 3, "translate": 4, "verify": 5, "top": 6}
BASE = {"porter", "porter.diagnostics", "porter.record", "porter.source", "porter.resources", "porter.textdiff",
        "porter.progress"}
# the configuration (it validates rule codes) and the supervised workers (they pre-load the rules) serve lint
# and everything above it
LINT_LEVEL = {"porter.config", "porter.isolate"}


def layer(mod: str) -> str:
    if mod in BASE:
        return "base"
    if mod in LINT_LEVEL:
        return "lint"
    parts = mod.split(".")
    if len(parts) > 1 and parts[1] in LAYERS:
        return parts[1]
    return "top"                    # cli, demo, report, report_html, server, __main__


def modules(root: str = ROOT) -> dict[str, str]:
    out = {}
    for d, _, files in os.walk(os.path.join(root, "porter")):
        for f in files:
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(d, f), root)[:-3].replace(os.sep, ".")
                out[rel[:-len(".__init__")] if rel.endswith(".__init__") else rel] = os.path.join(d, f)
    return out


def imports_of(path: str, mod: str, known: set) -> set:
    """porter modules `path` imports anywhere in its body (from X import Y counts X.Y when that is a module)."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    pkg = mod if path.endswith("__init__.py") else mod.rpartition(".")[0]
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            out |= {a.name for a in n.names if a.name.startswith("porter")}
        elif isinstance(n, ast.ImportFrom):
            base = n.module or ""
            if n.level:
                up = pkg.split(".")[:len(pkg.split(".")) - n.level + 1]
                base = ".".join(up + ([base] if base else []))
            if not base.startswith("porter"):
                continue
            subs = {f"{base}.{a.name}" for a in n.names if f"{base}.{a.name}" in known}
            out |= subs or {base}
            if subs and base in known and any(f"{base}.{a.name}" not in known for a in n.names):
                out.add(base)
    out.discard(mod)
    return {m for m in out if m in known}


def graph(root: str = ROOT) -> dict[str, set]:
    mods = modules(root)
    return {m: imports_of(p, m, set(mods)) for m, p in mods.items()}


def layer_violations(g: dict[str, set]) -> list[str]:
    return sorted(f"{a} ({layer(a)}) imports {b} ({layer(b)})" for a, deps in g.items() for b in deps
                  if LAYERS[layer(b)] > LAYERS[layer(a)])


def find_cycle(g: dict[str, set]) -> list[str] | None:
    """One import cycle (as a path a -> ... -> a), or None. Package __init__ edges to their own submodules are
    not cycles of meaning (a package re-exporting), so `porter` itself is left out."""
    color, stack = {}, []

    def visit(u):
        color[u] = 1
        stack.append(u)
        for v in sorted(g.get(u, ())):
            if v == "porter":
                continue
            if color.get(v) == 1:
                return stack[stack.index(v):] + [v]
            if not color.get(v):
                found = visit(v)
                if found:
                    return found
        stack.pop()
        color[u] = 2
        return None

    for u in sorted(g):
        if not color.get(u) and u != "porter":
            found = visit(u)
            if found:
                return found
    return None


def test_layers_import_one_way():
    assert layer_violations(graph()) == []


def test_no_import_cycle():
    cycle = find_cycle(graph())
    assert cycle is None, " -> ".join(cycle)


def test_the_checks_catch_a_planted_violation_and_cycle():
    g = {"porter.frontend.model": {"porter.lint.helpers"}, "porter.lint.helpers": {"porter.frontend.model"},
         "porter.analysis.affine": {"porter.frontend.model"}}
    assert layer_violations(g) == ["porter.frontend.model (frontend) imports porter.lint.helpers (lint)"]
    assert find_cycle(g) in (["porter.frontend.model", "porter.lint.helpers", "porter.frontend.model"],
                             ["porter.lint.helpers", "porter.frontend.model", "porter.lint.helpers"])
    assert find_cycle({"porter.a": {"porter.b"}, "porter.b": set()}) is None


@pytest.mark.parametrize("mod,expected", [("porter.frontend.model", "frontend"), ("porter.analysis.launch", "analysis"),
                                          ("porter.cli", "top"), ("porter.source", "base")])
def test_layer_names(mod, expected):
    assert layer(mod) == expected
