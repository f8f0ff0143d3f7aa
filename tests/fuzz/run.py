"""`make fuzz`: a fuzz campaign over every subcommand, bounded by time or invocations, with a summary.

    .venv/bin/python tests/fuzz/run.py --seconds 600 --out fuzz-failures
    .venv/bin/python tests/fuzz/run.py --invocations 10000 --workers 2 --seed 7
    .venv/bin/python tests/fuzz/run.py --seed 7 --replay 123 --out /tmp/f     # input 123 of seed 7, alone
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fuzzlib.campaign import Campaign, make_input, run_one, seed_files  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="run.py", description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--seconds", type=float, default=None, help="stop starting new inputs after this long")
    p.add_argument("--invocations", type=int, default=None, help="stop after this many CLI invocations")
    p.add_argument("--timeout", type=float, default=60.0, help="wall-clock guard per invocation (s)")
    p.add_argument("--workers", type=int, default=1, help="parallel inputs (at most 2 on a shared machine)")
    p.add_argument("--out", default="fuzz-failures", help="directory for failing inputs")
    p.add_argument("--no-reduce", action="store_true", help="keep failing inputs as they are")
    p.add_argument("--start", type=int, default=0, help="first input index")
    p.add_argument("--replay", type=int, default=None, help="check only input REPLAY of --seed and print it")
    p.add_argument("--json", default=None, help="also write the summary and failures as JSON here")
    p.add_argument("--snapshot", action="store_true",
                   help="run porter/, rules/, templates/ as committed (git HEAD at the start), not the working "
                        "tree: a long campaign in a tree that others are editing")
    a = p.parse_args(argv)
    tree = _snapshot() if a.snapshot else None
    if a.replay is not None:
        inp = make_input(a.seed, a.replay, seed_files())
        os.makedirs(a.out, exist_ok=True)
        path = os.path.join(a.out, f"input-{a.seed}-{a.replay}.cu")
        with open(path, "wb") as fh:
            fh.write(inp["data"])
        res = run_one(a.seed, a.replay, a.timeout, seed_files(), tree)
        print(json.dumps({k: v for k, v in res.items() if k != "data"}, indent=1))
        print(f"input written to {path}")
        return 1 if res["failures"] else 0
    if a.seconds is None and a.invocations is None:
        a.seconds = 60.0
    c = Campaign(seed=a.seed, max_invocations=a.invocations, max_seconds=a.seconds, timeout=a.timeout,
                 workers=a.workers, out_dir=a.out, reduce=not a.no_reduce, start=a.start,
                 log=lambda s: print(s, flush=True), tree=tree)
    def write_json(c):
        if a.json:
            os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
            with open(a.json, "w") as fh:
                json.dump({"summary": c.summary(), "failures": c.failures, "inputs": c.inputs,
                           "invocations": c.invocations, "by_kind": dict(c.by_kind)}, fh, indent=1)

    def stop(signum, frame):
        Campaign.stop = True    # the loop sees it between inputs: the summary still comes
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    c.on_progress = write_json
    c.run()
    sys.stdout.write(c.summary())
    write_json(c)
    return 1 if c.failures else 0


def _snapshot() -> str:
    import subprocess
    import tempfile
    from fuzzlib.check import ROOT
    tree = tempfile.mkdtemp(prefix="cuport-fuzz-tree-")
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    archive = subprocess.run(["git", "archive", "HEAD", "porter", "rules", "templates"], cwd=ROOT,
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", tree], input=archive, check=True)
    print(f"running commit {head.strip()} from {tree}", flush=True)
    return tree


if __name__ == "__main__":
    sys.exit(main())
