"""`cuport verify k.cu` without a spec, and `cuport verify --init k.cu`: the command-line side of derive.py."""
from __future__ import annotations

import re
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


INPUT_KINDS = {"uniform": 2, "full": 1, "zeros": 0, "ones": 0, "arange": (0, 1), "below": 1, "special": (0, 1),
               "chain": (0, 1)}


def parse_inputs(text: str) -> dict:
    """--inputs `b=uniform(4, 5),dt=1e-4`: {name: (Init kind, args)} for arrays, {name: number} for scalars.
    The derived inputs are random over the dtype's range; a kernel whose result is only meaningful on the
    program's own data (a solver without pivoting on a diagonally dominant system, a model in physical units)
    is verified on the ranges its user names here. Raises ValueError with what is wrong."""
    from porter.frontend.lexer import split_top_level
    out: dict = {}
    for item in split_top_level(text):
        name, eq, value = item.partition("=")
        name, value = name.strip(), value.strip()
        if not eq or not name.isidentifier() or not value:
            raise ValueError(f"expected NAME=uniform(lo, hi)|full(v)|zeros()|ones()|arange([m])|below(expr)|"
                             f"special([f])|chain([shift])|NUMBER, got {item.strip()!r}")
        m = re.fullmatch(r"(\w+)\s*\((.*)\)", value, re.S)
        if m is None:
            try:
                out[name] = int(value, 0)
            except ValueError:
                try:
                    out[name] = float(value)
                except ValueError:
                    raise ValueError(f"{name}: {value!r} is neither a number nor an initializer") from None
            continue
        kind, args = m.group(1), [a.strip() for a in split_top_level(m.group(2))] if m.group(2).strip() else []
        want = INPUT_KINDS.get(kind)
        if want is None:
            raise ValueError(f"{name}: unknown initializer {kind}() (one of {', '.join(INPUT_KINDS)})")
        lo, hi = want if isinstance(want, tuple) else (want, want)
        if not lo <= len(args) <= hi:
            raise ValueError(f"{name}: {kind}() takes {lo if lo == hi else f'{lo} or {hi}'} argument(s)")
        if kind == "below":                 # an expression of the sizes, evaluated per case
            out[name] = (kind, (args[0],))
            continue
        if kind in ("zeros", "ones"):       # spec.py's zeros() / ones() are full(0) / full(1)
            out[name] = ("full", (0.0 if kind == "zeros" else 1.0,))
            continue
        try:
            nums = tuple(float(a) for a in args)
        except ValueError:
            raise ValueError(f"{name}: {kind}() takes numbers, got {m.group(2)!r}") from None
        if kind == "chain":                 # a shift in bits: an integer
            if any(v != int(v) for v in nums):
                raise ValueError(f"{name}: chain() takes an integer shift, got {m.group(2)!r}")
            out[name] = (kind, tuple(int(v) for v in nums))
            continue
        if kind == "uniform" and not nums[0] < nums[1]:
            raise ValueError(f"{name}: uniform({args[0]}, {args[1]}) is an empty range")
        out[name] = (kind, tuple(int(v) for v in nums) if kind == "arange" else nums)
    return out


def apply_inputs(d, inputs: dict) -> list[str]:
    """Set the named inputs of one Derived (arrays: their Init; scalars: their value); returns the names used."""
    used = []
    for p in d.params:
        if p.name not in inputs:
            continue
        value = inputs[p.name]
        if p.shape is not None:             # an array
            if not isinstance(value, tuple):
                value = ("full", (float(value),))
            if p.direction == "out":
                continue                    # its contents are never read: an init would be a no-op
            p.init = value
        else:
            if isinstance(value, tuple):
                if value[0] != "full":
                    raise SpecError(f"{d.kernel}: '{p.name}' is a scalar: give it a number, not {value[0]}()")
                value = value[1][0]
            p.default = repr(int(value)) if p.dtype[0] in "iu" else repr(float(value))
        used.append(p.name)
    return used


def _derive(path: str, args=None):
    from porter.verify.derive import derive_file
    try:
        derived = derive_file(path, args)
    except Exception as e:                 # the frontend failed on this file: the file's problem, not ours
        raise SpecError(f"{path}: cannot derive verify cases: {type(e).__name__}: {e}") from None
    if not derived:
        raise SpecError(f"{path}: no kernel with a body to verify")
    return derived


def selected(kernel: str, wanted: set) -> bool:
    """A kernel named in --kernels, or an instance of a template kernel named without its arguments."""
    return kernel in wanted or kernel.split("<")[0] in wanted


def derived_cases(path: str, portability_fixes: bool, wanted: set | None = None,
                  finite: bool = False, inputs: dict | None = None, args=None,
                  sizes_given: bool = False) -> tuple[list, bool]:
    """([(path, cases)], refused): a differential Case per derivable kernel; the others are reported. With
    `wanted` (--kernels), only those kernels (or a template kernel's instances, by its bare name); `finite`
    (--finite-inputs): uniform(-1, 1) where special values were derived; `inputs` (--inputs): the user's values
    for the named parameters (parse_inputs), an error when no selected kernel has one of them; `args` (--args):
    the program's command-line arguments for the sizes it reads from them, the sizes then brought under
    sizecap.VERIFY_CAP as bench/breadth.py does (or the kernel refused) unless `sizes_given` (--sizes decides)."""
    from porter.verify.derive import case_from_dict
    cases, refused, used, from_args = [], False, set(), False
    for d in _derive(path, args):
        if wanted and not selected(d.kernel, wanted):
            continue
        where = f"{d.defined_in or path}:{d.line}: {d.kernel}"
        if inputs:                         # a scalar the source does not give (streamcluster's `x`, an element
            given = {p.name for p in d.params if p.shape is None and p.name in inputs}   # of its data): the
            for p in [p for p in d.problems if p.what in given]:                         # user's value stands
                d.problems.remove(p)
                d.notes.append(f"'{p.what}' = {inputs[p.what]} from --inputs ({p.message})")
        if d.problems:
            refused = True
            _say(f"{where}: cannot derive a verify case: " + "; ".join(p.message for p in d.problems)
                 + f". Write a spec to edit with `cuport verify --init {path}`")
            continue
        if finite:
            for p in d.params:
                if p.init and p.init[0] == "special":
                    p.init = ("uniform", (-1.0, 1.0))
        if inputs:
            used.update(apply_inputs(d, inputs))
        for note in d.notes:
            _say(f"note: {where}: {note}")
        doc = d.as_dict(portability_fixes)
        mine = args is not None and any("(--args)" in n for n in d.notes)
        if mine:                        # a size the arguments give: brought under the cap
            from_args = True
            if not sizes_given and not _capped(doc, where, path):
                refused = True
                continue
        try:
            cases.append(case_from_dict(doc))
        except SpecError as e:             # what was derived does not make a case: say it, do not trace back
            refused = True
            _say(f"{where}: the derived case is not usable ({e}). Write a spec with `cuport verify --init {path}`")
    if args is not None and not from_args and (cases or not refused):
        _say(f"note: {path}: --args: no size of the kernels verified is read from the program's arguments "
             "(`atoi(argv[K])`): the sizes are derived as without it")
    unknown = sorted(set(inputs or ()) - used)
    if unknown and (cases or not refused):
        raise SpecError(f"{path}: --inputs names {', '.join(unknown)}: no input parameter of that name in the "
                        f"kernels verified")
    if cases:
        as_what = "cuport's fixed translations" if portability_fixes else "the source as written"
        _say(f"note: {path}: no {SPEC_FILENAME}: {len(cases)} kernel(s) verified from what the source says "
             f"({as_what}), the targets compared with each other")
    return ([(Path(path), cases)] if cases else []), refused


def _capped(doc: dict, where: str, path: str) -> bool:
    """The derived case `doc` with its sizes brought under sizecap.VERIFY_CAP (the program's arguments size buffers
    in the GBs: adjacent's 100M elements); False, said, when they cannot be."""
    from porter.verify.sizecap import VERIFY_CAP, cap_sizes
    sizes, why = cap_sizes(doc)
    if why:
        _say(f"{where}: {why}; give smaller sizes with --sizes, or write a spec with `cuport verify --init {path}`")
        return False
    if sizes != doc["sizes"][0]:
        shown = ",".join(f"{k}={v}" for k, v in sizes.items())
        _say(f"note: {where}: the sizes the arguments give are brought under {VERIFY_CAP} elements per buffer and "
             f"threads per launch: {shown} (--sizes to choose others)")
        doc["sizes"] = [sizes]
    return True


def write_init(paths: list[str], portability_fixes: bool, args=None) -> int:
    """Write verify_spec.py beside the given source files (one per directory); never overwrite one. `args`
    (--args): the program's arguments give the sizes it reads from them (not capped: the spec is edited)."""
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
            derived = [d for f in files for d in _derive(f, args)]
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
