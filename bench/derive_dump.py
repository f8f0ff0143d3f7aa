"""What spec-less derivation (porter/verify/derive.py) makes of every .cu file under the given folders: one line
per derived case, every field, sorted. A change meant to leave derivation as it is dumps before and after and
diffs (docs/architecture.md):

    mkdir -p /tmp/before && git archive BASE porter rules templates | tar -x -C /tmp/before
    DIRS="/tmp/hec/src /tmp/cs/Samples tests examples"
    PYTHONPATH=/tmp/before .venv/bin/python bench/derive_dump.py $DIRS > /tmp/before.txt
    PYTHONPATH=$PWD .venv/bin/python bench/derive_dump.py $DIRS > /tmp/after.txt
    diff /tmp/before.txt /tmp/after.txt

Run from the checkout (tests' paths are relative); the PYTHONPATH picks the code. tests/fuzz/regressions/
report_json_clang_crash.cu crashes libclang in this process (the workers isolate it elsewhere): left out.
"""
from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path

CRASHES = {"report_json_clang_crash.cu"}


def main(roots: list[str]) -> None:
    import porter.verify.derive_sizes
    from porter.verify.derive import derive_file
    print(f"code: {Path(porter.verify.derive_sizes.__file__).parent}", file=sys.stderr)
    for root in roots:
        for f in [Path(root)] if root.endswith(".cu") else sorted(Path(root).rglob("*.cu")):
            if f.name in CRASHES:
                print(f"{f}: SKIPPED")
                continue
            try:
                ds = derive_file(str(f))
            except Exception as e:              # noqa: BLE001 - the dump records it; the diff compares it
                print(f"{f}: ERROR {type(e).__name__}: {e}")
                continue
            for d in sorted(ds, key=lambda d: (d.path, d.kernel, d.line, repr(d))):
                print(f"{f}: {sorted(asdict(d).items())!r}")
            sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
