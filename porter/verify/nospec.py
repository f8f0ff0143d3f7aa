"""`cuport verify k.cu` without a spec, and `cuport verify --init k.cu`: the command-line side of derive.py."""
from __future__ import annotations

import sys
from pathlib import Path

from porter.verify.spec import SPEC_FILENAME, SpecError, load_spec

SOURCE_SUFFIXES = (".cu", ".cuh", ".h", ".hpp", ".cpp", ".cc", ".cxx")


def _say(text: str) -> None:
    print(f"cuport verify: {text}", file=sys.stderr)


def wants_derivation(path: str, no_spec: bool) -> bool:
    """A source file whose cases no verify_spec.py beside it gives (or --no-spec)."""
    p = Path(path)
    if not p.is_file() or p.suffix == ".py":
        return False
    spec = p.parent / SPEC_FILENAME
    if no_spec or not spec.exists():
        return True
    try:
        return not any(c.source_path.resolve() == p.resolve() for c in load_spec(spec))
    except Exception:
        return False                       # a broken spec is reported by the normal path


def _derive(path: str):
    from porter.verify.derive import derive_file
    try:
        derived = derive_file(path)
    except Exception as e:                 # the frontend failed on this file: the file's problem, not ours
        raise SpecError(f"{path}: cannot derive verify cases: {type(e).__name__}: {e}") from None
    if not derived:
        raise SpecError(f"{path}: no kernel with a body to verify")
    return derived


def selected(kernel: str, wanted: set) -> bool:
    """A kernel named in --kernels, or an instance of a template kernel named without its arguments."""
    return kernel in wanted or kernel.split("<")[0] in wanted


def derived_cases(path: str, portability_fixes: bool, wanted: set | None = None,
                  finite: bool = False) -> tuple[list, bool]:
    """([(path, cases)], refused): a differential Case per derivable kernel; the others are reported. With
    `wanted` (--kernels), only those kernels (or a template kernel's instances, by its bare name); `finite`
    (--finite-inputs): uniform(-1, 1) where special values were derived."""
    from porter.verify.derive import case_from_dict
    cases, refused = [], False
    for d in _derive(path):
        if wanted and not selected(d.kernel, wanted):
            continue
        where = f"{d.defined_in or path}:{d.line}: {d.kernel}"
        if d.problems:
            refused = True
            _say(f"{where}: cannot derive a verify case: " + "; ".join(p.message for p in d.problems)
                 + f". Write a spec to edit with `cuport verify --init {path}`")
            continue
        if finite:
            for p in d.params:
                if p.init and p.init[0] == "special":
                    p.init = ("uniform", (-1.0, 1.0))
        for note in d.notes:
            _say(f"note: {where}: {note}")
        try:
            cases.append(case_from_dict(d.as_dict(portability_fixes)))
        except SpecError as e:             # what was derived does not make a case: say it, do not trace back
            refused = True
            _say(f"{where}: the derived case is not usable ({e}). Write a spec with `cuport verify --init {path}`")
    if cases:
        as_what = "cuport's fixed translations" if portability_fixes else "the source as written"
        _say(f"note: {path}: no {SPEC_FILENAME}: {len(cases)} kernel(s) verified from what the source says "
             f"({as_what}), the targets compared with each other")
    return ([(Path(path), cases)] if cases else []), refused


def write_init(paths: list[str], portability_fixes: bool) -> int:
    """Write verify_spec.py beside the given source files (one per directory); never overwrite one."""
    from porter.verify.derive import skeleton
    by_dir: dict[Path, list[str]] = {}
    for path in paths:
        p = Path(path)
        if p.is_dir() or p.suffix == ".py" or path == "-":
            _say(f"error: --init takes source files (.cu), not {path}")
            return 2
        if not p.is_file():
            _say(f"error: {path}: no such file")
            return 2
        by_dir.setdefault(p.parent, []).append(path)
    for folder, files in by_dir.items():
        out = folder / SPEC_FILENAME
        if out.exists():
            _say(f"error: {out} exists: not overwritten (edit it, or move it away and run --init again)")
            return 2
    for folder, files in by_dir.items():
        try:
            derived = [d for f in files for d in _derive(f)]
        except SpecError as e:
            _say(f"error: {e}")
            return 2
        out = folder / SPEC_FILENAME
        try:
            with open(out, "x") as fh:     # "x": a file that appeared meanwhile is not overwritten either
                fh.write(skeleton(derived, folder, portability_fixes))
        except OSError as e:
            _say(f"error: cannot write {out}: {e.strerror or e}")
            return 2
        todo = sum(len(d.problems) for d in derived)
        _say(f"wrote {out}: {len(derived)} case(s)" + (f", {todo} TODO(s) to fill in" if todo else ""))
    return 0
