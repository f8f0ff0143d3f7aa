"""Kernels verified one way or the other: the CPU pair (lavapipe at subgroups 4/8/16 and PoCL agreeing, breadth.py
--verify) or the CUDA original on a GPU (bench/gpu/breadth_gpu.sh: NVRTC vs the GLSL on the NVIDIA driver).
A kernel the notes' "_veto" names (bench/breadth_verify_notes.json: a race found in the original) never counts.
A kernel whose case Oclgrind finds out of bounds on the CPU does not count even where the GPU agrees: CUDA read the
same addresses, so the agreement proves nothing. Nor does one whose CPU runs changed between two runs with the same
inputs (nondeterministic: a race the translations keep from the original, such as myocyte's two blocks writing
d_finavalu[0..2]): one agreeing GPU run was luck.

Each JSON is a breadth.py --json file; later files replace earlier ones program by program (a rerun of a few
programs after a change). GPU rows may also come from the log of a run cut short (`verify P K: verdict` lines).
Usage: python bench/breadth_union.py --cpu A.json [B.json ...] --gpu G.json|G.err [...] [--list]"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re


def rows(path: str) -> dict:
    """{program: {kernel: (verdict, why)}} of one file."""
    out: dict = collections.defaultdict(dict)
    if path.endswith(".json"):
        for p, r in json.load(open(path))["results"].items():
            if not r.get("verify"):     # a program translated but not verified in this run (cut by time)
                continue
            out[p] = {k: (v["verdict"], v.get("why", "") + (f" [at the program's run arguments: "
                                                            f"{v['program_args_run']}]"
                                                            if v.get("program_args_run") else ""))
                      for k, v in (r.get("verify") or {}).items()}
        return out
    for line in open(path):             # the log of a GPU run that hit the device's time limit
        m = re.match(r"\s+verify (\S+) (.+?): (agree|disagree|failed|nondeterministic)\b(.*)", line)
        if m:                           # instances of a template kernel: one row, as breadth.py counts
            key = m.group(2).split("<")[0]
            if out[m.group(1)].get(key, ("agree",))[0] == "agree":
                out[m.group(1)][key] = (m.group(3), m.group(4).strip())
    return out


def latest(paths: list[str]) -> dict:
    merged: dict = {}
    for path in paths:
        merged.update(rows(path))
    return {(p, k): v for p, ks in merged.items() for k, v in ks.items()}


NOTES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "breadth_verify_notes.json")


def known_wrong(path: str = NOTES) -> dict:
    """{(program, kernel): why} of kernels whose agreement proves nothing by what an investigation found (the
    notes' "_veto": a race in the original that one run may or may not show)."""
    try:
        veto = json.load(open(path)).get("_veto", {})
    except (OSError, ValueError):
        return {}
    return {tuple(k.split("/", 1)): v for k, v in veto.items()}


AT_ARGS = re.compile(r"\[at the program's run arguments: .*\(bounds checked at [^)]*\)\]$")


def vetoed(row, gpu=None) -> bool:
    """A CPU row that makes a GPU agreement prove nothing: the case out of bounds, or the runs nondeterministic.
    A case out of bounds at the assumed sizes that Oclgrind found in bounds at the program's run arguments
    (breadth.py's retry; vadd's vectorized kernel, with no second implementation on the CPU) does not veto a GPU
    agreement at those arguments."""
    if row is None:
        return False
    if row[0] == "failed" and row[1].startswith("out of bounds under the derived sizes"):
        return not (gpu is not None and gpu[1].startswith("agree at the program's run arguments") and
                    AT_ARGS.search(row[1]) is not None)
    return row[0] == "nondeterministic"


def union(cpu: dict, gpu: dict, veto: dict | None = None) -> dict:
    """{(program, kernel): how it is verified: "cpu", "gpu", "both" or the reason it is not}."""
    out = {}
    for key in sorted(set(cpu) | set(gpu)):
        c, g = cpu.get(key), gpu.get(key)
        if veto and key in veto:
            out[key] = f"vetoed: {veto[key][:100]}"
            continue
        c_ok = c is not None and c[0] == "agree"
        g_ok = g is not None and g[0] == "agree" and not vetoed(c, g)
        out[key] = "both" if c_ok and g_ok else "cpu" if c_ok else "gpu" if g_ok else \
            f"CPU: {c[0] if c else '-'} {c[1][:100] if c else ''} | GPU: {g[0] if g else '-'} {g[1][:100] if g else ''}"
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cpu", nargs="+", default=[])
    ap.add_argument("--gpu", nargs="*", default=[])
    ap.add_argument("--list", action="store_true", help="list the kernels not verified, with both rows")
    args = ap.parse_args(argv)
    cpu, gpu = latest(args.cpu), latest(args.gpu)
    u = union(cpu, gpu, known_wrong())
    how = collections.Counter(v if v in ("cpu", "gpu", "both") else "not verified" for v in u.values())
    ok = how["cpu"] + how["gpu"] + how["both"]
    print(f"kernels with a verify row: {len(u)} (CPU {len(cpu)}, GPU {len(gpu)}); verified: {ok} "
          f"(CPU pair and GPU {how['both']}, CPU pair only {how['cpu']}, GPU only {how['gpu']}); "
          f"CPU agree {sum(v[0] == 'agree' for v in cpu.values())}, GPU agree {sum(v[0] == 'agree' for v in gpu.values())}")
    if args.list:
        for (p, k), v in u.items():
            if v not in ("cpu", "gpu", "both"):
                print(f"  {p} {k}: {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
