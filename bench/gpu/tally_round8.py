"""Round 8's GPU verdicts (CUDA original vs GLSL on the NVIDIA driver), put together from the runs that made them:
sample A's first run hit the 10-minute limit of one device call after sph-cuda (its rows come from its log), the
rest of A and sph again (after the NVRTC fixes) ran separately, sample B in two halves.
Usage: python bench/gpu/tally_round8.py   (reads bench/results/breadth-gpu-round8-*)"""
import collections
import json
import re
from pathlib import Path

R = Path(__file__).resolve().parents[1] / "results"


def from_log(path, skip=()):
    out = {}
    for line in open(path):
        m = re.match(r"\s+verify (\S+) (.+?): (agree|disagree|failed|nondeterministic)\b(.*)", line)
        if m and m.group(1) not in skip:     # instances of a template kernel: one row, as breadth.py counts
            key = (m.group(1), m.group(2).split("<")[0])
            if out.get(key, ("agree",))[0] == "agree":
                out[key] = (m.group(3), m.group(4).strip())
    return out


def from_json(path, skip=()):
    doc = json.load(open(path))
    return {(p, k): (v["verdict"], v.get("why", "")) for p, r in doc["results"].items() if p not in skip
            for k, v in (r.get("verify") or {}).items() if v["verdict"] != "underived"}


A = {**from_log(R / "breadth-gpu-round8-a1.err", skip={"sph-cuda"}),
     **from_json(R / "breadth-gpu-round8-a2.json", skip={"sph-cuda"}), **from_json(R / "breadth-gpu-round8-a-sph.json")}
B = {**from_json(R / "breadth-gpu-round8-b1.json"), **from_json(R / "breadth-gpu-round8-b2.json")}
for name, rows in (("A", A), ("B", B)):
    print(name, len(rows), "derived:", dict(collections.Counter(v[0] for v in rows.values())))
    for k, v in sorted(rows.items()):
        if v[0] != "agree":
            print("   ", k[0], k[1], v[0], v[1][:160])
