"""Round 8's GPU verdicts (CUDA original vs GLSL on the NVIDIA driver), put together from the runs that made them:
sample A's first run hit the 10-minute limit of one device call after sph-cuda (its rows come from its log), the
rest of A and sph again (after the NVRTC fixes) ran separately, sample B in two halves. The files are read by
bench/breadth_union.py's `rows` (the one reader of breadth JSON and logs).
Usage: python bench/gpu/tally_round8.py   (reads bench/results/breadth-gpu-round8-*)"""
import collections
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from breadth_union import rows  # noqa: E402

R = Path(__file__).resolve().parents[1] / "results"


def verdicts(*paths, skip=()):
    """{(program, kernel): (verdict, why)} of the files in order, later programs replacing earlier; underived
    kernels left out (no run)."""
    merged = {}
    for path in paths:
        merged.update({p: ks for p, ks in rows(str(path)).items() if p not in skip})
    return {(p, k): v for p, ks in merged.items() for k, v in ks.items() if v[0] != "underived"}


A = {**verdicts(R / "breadth-gpu-round8-a1.err", R / "breadth-gpu-round8-a2.json", skip={"sph-cuda"}),
     **verdicts(R / "breadth-gpu-round8-a-sph.json")}
B = verdicts(R / "breadth-gpu-round8-b1.json", R / "breadth-gpu-round8-b2.json")
for name, found in (("A", A), ("B", B)):
    print(name, len(found), "derived:", dict(collections.Counter(v[0] for v in found.values())))
    for k, v in sorted(found.items()):
        if v[0] != "agree":
            print("   ", k[0], k[1], v[0], v[1][:160])
