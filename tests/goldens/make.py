"""Golden outputs of every example and test fixture: lint findings, the `--fix` result and the hip / glsl /
opencl translations, one JSON file per input under tests/goldens/out/ (mirroring its path).

They pin the product's behaviour across refactors (issue 12): tests/test_goldens.py recomputes them and
compares. Where a change is meant to alter an output, regenerate and say in the commit which golden changed
and why:

    .venv/bin/python tests/goldens/make.py            # rewrite every golden
    .venv/bin/python tests/goldens/make.py --check    # exit 1 and list the inputs whose outputs changed
"""
from __future__ import annotations

import json
import os
import sys
from concurrent.futures import ProcessPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "goldens", "out")
SOURCES = ("examples", os.path.join("tests", "fixtures"))
TARGETS = ("hip", "glsl", "opencl")


def inputs() -> list[str]:
    """Every .cu / .cuh under examples/ and tests/fixtures/, relative to the repository root, sorted."""
    found = []
    for top in SOURCES:
        for d, _, files in os.walk(os.path.join(ROOT, top)):
            for f in files:
                if f.endswith((".cu", ".cuh")):
                    found.append(os.path.relpath(os.path.join(d, f), ROOT))
    return sorted(found)


def _diag(d) -> list:
    fix = None
    if d.fix is not None:
        fix = [d.fix.applicability.value, [[e.start, e.end, e.content] for e in d.fix.edits]]
    return [d.code, d.severity, d.row, d.column, d.end_row, d.end_column, d.message, fix]


def compute(rel: str) -> dict:
    """Every output of one input, as plain JSON data (paths relative to the repository root)."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))
    from porter.lint.checker import fix_source, lint_source
    from porter.source import read_source
    from porter.translate.api import translate_file

    cwd = os.getcwd()
    os.chdir(ROOT)          # filenames in diagnostics stay relative
    try:
        src = read_source(rel)
        lint = lint_source(src)
        fixed = fix_source(read_source(rel))
        out = {"lint": sorted(_diag(d) for d in lint.diagnostics),
               "fix": {"text": fixed.text, "fixed": len(fixed.fixed), "refused": fixed.refused}}
        for t in TARGETS:
            try:
                res = translate_file(rel, t)
            except Exception as exc:          # a golden of the failure, not a crash of the generator
                out[t] = {"exception": f"{type(exc).__name__}: {exc}"}
                continue
            out[t] = {"text": res.text, "shaders": dict(sorted(res.shaders.items())),
                      "failed": dict(sorted(res.failed_kernels.items())),
                      "diagnostics": sorted(_diag(d) for d in res.diagnostics)}
        return json.loads(json.dumps(out))    # tuples -> lists, as read back from disk
    finally:
        os.chdir(cwd)


def golden_path(rel: str) -> str:
    return os.path.join(OUT, rel + ".json")


def load(rel: str) -> dict | None:
    try:
        with open(golden_path(rel), encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        return None


def _write(rel: str, data: dict) -> None:
    p = golden_path(rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, sort_keys=True, ensure_ascii=False)
        f.write("\n")


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    check = "--check" in argv
    rels = inputs()
    with ProcessPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        results = dict(zip(rels, pool.map(compute, rels)))
    changed = []
    for rel, data in results.items():
        if load(rel) != data:
            changed.append(rel)
            if not check:
                _write(rel, data)
    if not check:                             # goldens of inputs that are gone
        for d, _, files in os.walk(OUT):
            for f in files:
                rel = os.path.relpath(os.path.join(d, f), OUT)[:-len(".json")]
                if rel not in results:
                    os.unlink(os.path.join(d, f))
    for rel in changed:
        print(("changed: " if check else "wrote: ") + rel)
    print(f"{len(rels)} inputs, {len(changed)} {'differ' if check else 'rewritten'}")
    return 1 if check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
