"""Differential verify: cases without a NumPy reference (reference=None, e.g. derived by derive.py) are checked
by comparing the runs of the same inputs with each other.

With the CUDA original among the runs (a GPU with the cuda backend), every translation is compared with it.
Without it (CPU-only machines) every pair of runs is compared: Vulkan at subgroup sizes 4 / 8 / 16, OpenCL and
whatever else ran, which is where code that assumes a warp of 32 comes apart. The runs that agree form groups;
a strict majority passes and the others fail ("disagrees with the majority"); with no strict majority every run
fails. Each disagreeing pair is reported with the first differing index and both values.
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass

import numpy as np

from porter.verify.compare import MULTISET

REFERENCE_TARGET = "cuda"


@dataclass
class Pair:
    case: str
    sizes: dict | None
    a: str                       # run labels: "vulkan/sg4", "opencl"
    b: str
    ok: bool
    message: str
    first: list | None = None    # first differing index (of the first differing output)
    values: list | None = None   # [value in a, value in b]

    def as_dict(self) -> dict:
        return asdict(self)


def label(r) -> str:
    return r.target if r.variant in ("-", "", None) else f"{r.target}/{r.variant}"


def sanitizer_failure(case, info: dict) -> dict | None:
    """An Oclgrind report fails the run whatever the numbers (as in the reference comparison)."""
    reports = info.pop("sanitizer", None)
    if not reports:
        return None
    from porter.verify.backends.oclgrind import summarize
    info["sanitizer"] = [{k: r[k] for k in ("kind", "kernel", "locations")} for r in reports[:20]]
    return {"status": "FAIL", "message": summarize(reports, str(case.source_path)), "info": info}


def _compare(case, sizes, ra, oa: dict, rb, ob: dict) -> Pair:
    """Every output of run a against run b (b judged against a's values), after their assert outcomes."""
    from porter.verify import asserts
    same, note = asserts.compare(label(ra), oa, label(rb), ob, bool(case.sig.outputs))
    if same is False:
        return Pair(case.id, sizes, label(ra), label(rb), False, note)
    if same is None:
        return Pair(case.id, sizes, label(ra), label(rb), True, f"agree ({note})")
    worst = None
    for p in case.sig.outputs:
        if p.name not in oa or p.name not in ob:
            return Pair(case.id, sizes, label(ra), label(rb), False, f"{p.name}: missing from one run")
        c = case.compare_output(p, ob[p.name], oa[p.name], sizes)
        if not c.ok:
            if c.problem:
                return Pair(case.id, sizes, label(ra), label(rb), False, c.message)
            msg = (f"{c.label}: {c.n_bad} of {c.size} elements differ; first at {c.where}: "
                   f"{label(ra)} {_fmt(c.want_value)}, {label(rb)} {_fmt(c.got_value)}")
            return Pair(case.id, sizes, label(ra), label(rb), False, msg, list(c.first_bad or ()),
                        [c.want_value, c.got_value])
        worst = max(worst or 0.0, c.max_abs)
    how = "".join(f"; {p} {MULTISET}" for p in getattr(case, "unordered", ()))
    return Pair(case.id, sizes, label(ra), label(rb), True,
                f"agree ({note}max abs difference {worst or 0.0:.3g}{how})")


def _fmt(v) -> str:
    if v is None:
        return "-"
    return repr(v) if isinstance(v, (int, np.integer)) else f"{v:.9g}"


def _load(r) -> dict:
    path = r.info.pop("dump", None)
    if not path or not os.path.exists(path):
        return {}
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def apply(results: list, cases: list) -> list[Pair]:
    """Compare the runs of every reference-less case and set their status; returns every compared pair."""
    by_id = {(c.spec_path, c.id): c for c in cases if c.reference is None}
    groups: dict[tuple, list] = {}
    for r in results:
        if (r.spec, r.case) in by_id:
            groups.setdefault((r.spec, r.case, json.dumps(r.sizes, sort_keys=True)), []).append(r)
    pairs: list[Pair] = []
    for (spec, cid, _), rows in groups.items():
        case = by_id[(spec, cid)]
        outs = {id(r): _load(r) for r in rows}
        runs = [r for r in rows if r.status == "pass" and outs[id(r)]]
        pairs += _judge(case, runs, outs)
        for r in rows:
            expect = case.expect_for(r.target, r.variant)
            if expect == "fail" and r.status in ("FAIL", "crash", "timeout"):
                r.status, r.message = "xfail", f"expected failure: {r.message}"
            elif expect == "fail" and r.status == "pass" and outs[id(r)]:
                r.status, r.message = "XPASS", "marked expect='fail' but agreed: " + r.message
    return pairs


def _judge(case, runs: list, outs: dict) -> list[Pair]:
    if not runs:
        return []
    if len(runs) == 1:
        runs[0].status = "skipped"
        runs[0].message = "no other target ran this case: nothing to compare with (no reference in the spec)"
        return []
    sizes = runs[0].sizes
    ref = next((r for r in runs if r.target == REFERENCE_TARGET), None)
    if ref is not None:
        pairs = []
        for r in runs:
            if r is ref:
                continue
            p = _compare(case, sizes, ref, outs[id(ref)], r, outs[id(r)])
            pairs.append(p)
            r.status = "pass" if p.ok else "FAIL"
            r.message = f"{'agrees with' if p.ok else 'differs from'} the CUDA original: {p.message}"
        ref.message = f"the CUDA original: reference for {len(runs) - 1} run(s)"
        return pairs
    pairs, agree = [], {}
    for i, a in enumerate(runs):
        for b in runs[i + 1:]:
            p = _compare(case, sizes, a, outs[id(a)], b, outs[id(b)])
            pairs.append(p)
            agree[(id(a), id(b))] = agree[(id(b), id(a))] = p
    clusters: list[list] = []
    for r in runs:                      # each run joins the first group whose first member it agrees with
        home = next((c for c in clusters if agree[(id(c[0]), id(r))].ok), None)
        if home is None:
            clusters.append([r])
        else:
            home.append(r)
    if len(clusters) == 1:
        for r in runs:
            r.message = f"agrees with {', '.join(label(o) for o in runs if o is not r)}"
        return pairs
    clusters.sort(key=len, reverse=True)
    major = clusters[0] if len(clusters[0]) * 2 > len(runs) else None
    for r in runs:
        if major is not None and any(r is m for m in major):
            r.status = "pass"
            r.message = f"agrees with the majority ({', '.join(label(o) for o in major if o is not r)})"
            continue
        others = major if major is not None else [o for o in runs if o is not r]
        first = next(agree[(id(o), id(r))] for o in others if not agree[(id(o), id(r))].ok)
        r.status = "FAIL"
        head = "disagrees with the majority" if major is not None else "the targets disagree"
        r.message = f"{head}: {first.message}"
    return pairs


def format_pairs(pairs: list[Pair]) -> list[str]:
    """Table lines for the disagreeing pairs."""
    bad = [p for p in pairs if not p.ok]
    if not bad:
        return []
    lines = ["", "disagreements (no reference: the targets compared with each other):"]
    for p in bad:
        sizes = ",".join(f"{k}={v}" for k, v in (p.sizes or {}).items())
        lines.append(f"  {p.case} {sizes}: {p.a} vs {p.b}: {p.message}")
    return lines
