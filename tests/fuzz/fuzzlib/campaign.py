"""The fuzz loop: seed files -> mutated inputs -> every subcommand -> failures (minimized, written out), summary.

Input `i` of a campaign with seed `s` depends only on (s, i), so a run bounded by invocations is deterministic and
any failing input can be replayed alone (`run.py --seed s --replay i`).
"""
from __future__ import annotations

import glob
import hashlib
import json
import os
import random
import time
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

from . import mutate
from .check import GROUPS, KINDS, ROOT, Runner, check_input, choose_opts
from .reduce import minimize


def seed_files(root: str = ROOT) -> list[str]:
    pats = ["examples/**/*.cu", "tests/fixtures/**/*.cu"]
    return sorted({p for pat in pats for p in glob.glob(os.path.join(root, pat), recursive=True)})


def make_input(seed: int, index: int, seeds: list[str]) -> dict:
    r = random.Random(f"{seed}:{index}")
    path = r.choice(seeds)
    with open(path, "rb") as fh:
        data = fh.read()
    how, data = mutate.mutate(r, data)
    return {"index": index, "seed_file": os.path.relpath(path, ROOT), "mutation": how, "data": data,
            "opts": choose_opts(r)}


def run_one(seed: int, index: int, timeout: float, seeds: list[str], tree: str | None = None) -> dict:
    """Worker: build input `index`, check it, return its failures (the input only when something failed)."""
    inp = make_input(seed, index, seeds)
    runner = Runner(timeout=timeout, tree=tree)
    t0 = time.monotonic()
    fails = check_input(runner, inp["data"], inp["opts"])
    out = {k: v for k, v in inp.items() if k != "data"}
    out.update(invocations=runner.invocations, seconds=time.monotonic() - t0, size=len(inp["data"]),
               failures=[f.to_dict() for f in fails])
    if fails:
        out["data"] = inp["data"]
    return out


def reproduces(data: bytes, fail: dict, opts: dict, timeout: float, tree: str | None = None) -> bool:
    """The same kind of failure in the same group, checked again from scratch (a tree edited while the campaign
    runs, or a loaded machine, gives one-off failures that are not the program's)."""
    runner = Runner(timeout=timeout, tree=tree)
    return any(f.kind == fail["kind"] for f in check_input(runner, data, opts, groups=[fail["group"]]))


def reduce_failure(data: bytes, fail: dict, opts: dict, timeout: float, max_tests: int, max_seconds: float,
                   tree: str | None = None):
    """Minimize `data` keeping the same failure kind in the same group."""
    runner = Runner(timeout=min(timeout, 20.0) if fail["kind"] == "hang" else timeout, tree=tree)

    def still(candidate: bytes) -> bool:
        return any(f.kind == fail["kind"] for f in check_input(runner, candidate, opts, groups=[fail["group"]]))

    small, tests = minimize(data, still, max_tests=max_tests, max_seconds=max_seconds)
    return small, runner.invocations


def save_failure(out_dir: str, inp: dict, fail: dict, small: bytes | None) -> str:
    os.makedirs(out_dir, exist_ok=True)
    slug = fail["kind"].replace(" ", "-")
    h = hashlib.sha256(inp["data"]).hexdigest()[:10]
    base = os.path.join(out_dir, f"{slug}-{fail['group']}-{h}")
    with open(base + ".cu", "wb") as fh:
        fh.write(inp["data"])
    if small is not None:
        with open(base + ".min.cu", "wb") as fh:
            fh.write(small)
    meta = {k: v for k, v in inp.items() if k not in ("data", "failures")}
    meta["failure"] = fail
    with open(base + ".json", "w") as fh:
        json.dump(meta, fh, indent=1)
    return base


class Campaign:
    def __init__(self, seed=1, max_invocations=None, max_seconds=None, timeout=60.0, workers=1, out_dir=None,
                 reduce=True, reduce_tests=150, reduce_seconds=300.0, log=None, start=0, tree=None):
        self.seed, self.max_invocations, self.max_seconds = seed, max_invocations, max_seconds
        self.timeout, self.workers, self.out_dir, self.reduce = timeout, workers, out_dir, reduce
        self.reduce_tests, self.reduce_seconds, self.log = reduce_tests, reduce_seconds, log
        self.next_index = start
        self.tree = tree
        self.on_progress = None
        self.t0 = time.monotonic()
        self.not_reproduced = 0
        self.reduced: dict = {}
        self.seeds = seed_files()
        self.inputs = 0
        self.invocations = 0          # checking invocations (reduction runs are counted apart)
        self.reduce_invocations = 0
        self.by_kind: Counter = Counter()
        self.by_group: Counter = Counter()
        self.by_mutator: Counter = Counter()
        self.failures: list[dict] = []
        self.seconds = 0.0

    stop = False   # set from a SIGTERM/SIGINT handler: finish the inputs in flight, then summarize

    def _done(self, t0) -> bool:
        if self.stop:
            return True
        if self.max_invocations is not None and self.invocations >= self.max_invocations:
            return True
        return self.max_seconds is not None and time.monotonic() - t0 >= self.max_seconds

    def run(self) -> "Campaign":
        t0 = self.t0 = time.monotonic()
        if self.workers <= 1:
            while not self._done(t0):
                self._record(run_one(self.seed, self._take(), self.timeout, self.seeds, self.tree))
        else:
            with ProcessPoolExecutor(self.workers) as pool:
                pending = set()
                while True:
                    while not self._done(t0) and len(pending) < self.workers:
                        pending.add(pool.submit(run_one, self.seed, self._take(), self.timeout, self.seeds, self.tree))
                    if not pending:
                        break
                    done, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for fut in sorted(done, key=lambda f: f.result()["index"]):
                        self._record(fut.result())
        self.seconds = time.monotonic() - t0
        return self

    def _take(self) -> int:
        self.next_index += 1
        return self.next_index - 1

    def _record(self, res: dict) -> None:
        self.inputs += 1
        self.invocations += res["invocations"]
        if self.log and self.inputs % 50 == 0:
            self.log(f"progress: {self.inputs} inputs, {self.invocations} invocations, "
                     f"{sum(self.by_kind.values())} failures")
            if self.on_progress:
                self.on_progress(self)
        for m in res["mutation"].split("+"):
            self.by_mutator[m] += 1
        seen = set()
        for fail in res["failures"]:
            key = (fail["kind"], fail["group"])
            if key in seen:
                continue   # one saved (and minimized) example per kind and group of an input
            seen.add(key)
            if not reproduces(res["data"], fail, res["opts"], self.timeout, self.tree):
                self.not_reproduced += 1
                if self.log:
                    self.log(f"not reproduced #{res['index']} [{fail['kind']}] {fail['step']}: {fail['detail'][:200]}")
                continue
            self.by_kind[fail["kind"]] += 1
            self.by_group[fail["group"]] += 1
            small = None
            sig = (fail["kind"], fail["step"])
            self.reduced[sig] = self.reduced.get(sig, 0) + 1
            if self.reduce and self.out_dir and self.reduced[sig] <= 2:   # the same failure again: saved as is
                small, n = reduce_failure(res["data"], fail, res["opts"], self.timeout, self.reduce_tests,
                                          self.reduce_seconds, self.tree)
                self.reduce_invocations += n
            where = save_failure(self.out_dir, res, fail, small) if self.out_dir else None
            self.failures.append({"index": res["index"], "seed_file": res["seed_file"], "mutation": res["mutation"],
                                  "saved": where, **fail})
            if self.log:
                self.log(f"FAIL #{res['index']} [{fail['kind']}] {fail['step']}: {fail['detail'][:300]}"
                         + (f" -> {where}" if where else ""))

    def summary(self) -> str:
        secs = self.seconds or time.monotonic() - self.t0     # still running: so far
        lines = [f"cuport fuzz: seed {self.seed}, {self.inputs} inputs, {self.invocations} invocations "
                 f"({self.reduce_invocations} more while minimizing), {secs:.0f} s, "
                 f"{len(self.seeds)} seed files",
                 "failures by kind:"]
        lines += [f"  {k:20s} {self.by_kind.get(k, 0)}" for k in KINDS]
        lines.append(f"  (not reproduced on a second run, not counted: {self.not_reproduced})")
        if self.by_group:
            lines.append("failures by subcommand: " + ", ".join(f"{g} {self.by_group[g]}" for g in GROUPS
                                                              if self.by_group.get(g)))
        lines.append("mutators used: " + ", ".join(f"{m} {n}" for m, n in sorted(self.by_mutator.items())))
        if self.out_dir:
            lines.append(f"failing inputs: {self.out_dir}" if self.failures else "failing inputs: none")
        return "\n".join(lines) + "\n"
