"""Hand-written verify spec for HeCBench dpid-cuda's two kernels (the program at /tmp/hec10/src/dpid-cuda, HeCBench
f27000a5), translated with its whole warps returning early predicated on emulated 32-lane warps (docs/warp32.md).
The derived case draws the by-value `Params p`'s pWidth / pHeight at random, so its reads go out of bounds (PoCL
SIGSEGV at 8192 x 8192); here the fields are the program's: pWidth = iWidth / oWidth, pHeight = iHeight / oHeight
(main.cu:56-57), lambda 0.5 or 1.0. 30 pixels per row leave two warps of the last block without a pixel.
kernelGuidance against a numpy model of the patch means, kernelDownsampling across targets.

    .venv/bin/python -m porter verify bench/specs/dpid_verify_spec.py --targets vulkan,opencl -j 1

Session 11 (branch s11-shfl): 24 pass (guidance: exact, max abs 0; downsampling: lavapipe 4/8/16 and PoCL agree)."""
import os

import numpy as np
from porter.verify.spec import Case, Tol, full, uniform

SRC = os.path.join(os.environ.get("CUPORT_HEC_SRC", "/tmp/hec10/src"), "dpid-cuda", "kernels.cu")   # breadth sets it
PARAMS = "oWidth: u32, oHeight: u32, iWidth: u32, iHeight: u32, pWidth: f32, pHeight: f32, lambda: f32, repeat: u32"


def _p(ow, oh, iw, ih, lam):
    return {"oWidth": full(ow), "oHeight": full(oh), "iWidth": full(iw), "iHeight": full(ih),
            "pWidth": full(np.float32(iw / np.float32(ow))), "pHeight": full(np.float32(ih / np.float32(oh))),
            "lambda": full(lam), "repeat": full(1)}


def guidance(ow, oh, iw, ih, **b):
    inp = b["input"].reshape(ih, iw, 3).astype(np.float64)
    out = b["patches"].reshape(oh, ow, 3).copy()
    pw, ph = np.float32(iw / np.float32(ow)), np.float32(ih / np.float32(oh))
    for py in range(oh):
        for px in range(ow):
            sx, ex = max(px * pw, 0.0), min((px + 1) * pw, float(iw))
            sy, ey = max(py * ph, 0.0), min((py + 1) * ph, float(ih))
            xs = np.arange(int(np.floor(sx)), int(np.ceil(ex)))
            ys = np.arange(int(np.floor(sy)), int(np.ceil(ey)))
            fx = np.ones(len(xs))
            fx = np.where(xs < sx, fx * (1 - (sx - xs)), fx)
            fx = np.where(xs + 1.0 > ex, fx * (1 - ((xs + 1.0) - ex)), fx)
            fy = np.ones(len(ys))
            fy = np.where(ys < sy, fy * (1 - (sy - ys)), fy)
            fy = np.where(ys + 1.0 > ey, fy * (1 - ((ys + 1.0) - ey)), fy)
            f = fy[:, None] * fx[None, :]
            c = (inp[ys[0]:ys[-1] + 1, xs[0]:xs[-1] + 1] * f[:, :, None]).sum(axis=(0, 1)) / f.sum()
            out[py, px] = np.trunc(c).astype(np.uint8)
    return {"patches": out.reshape(-1)}


SIZES = [dict(ow=30, oh=6, iw=256, ih=50), dict(ow=16, oh=4, iw=128, ih=32)]
KERNELS = [
    Case(source=SRC, kernel="kernelGuidance", structs={"Params": PARAMS},
         signature="input: u8[3 * iw * ih] in, patches: u8[3 * ow * oh] inout, p: Params",
         grid="(cdiv(ow, 4), oh)", block="128",
         init={"input": uniform(0, 255), "patches": full(7), "p": _p(s["ow"], s["oh"], s["iw"], s["ih"], 0.5)},
         sizes=[s], tol={"u8": Tol(0, 1)}, translate={"portability_fixes": True}, reference=guidance,
         name=f"guidance_{s['ow']}x{s['oh']}")
    for s in SIZES
] + [
    Case(source=SRC, kernel="kernelDownsampling", structs={"Params": PARAMS},
         signature="input: u8[3 * iw * ih] in, patches: u8[3 * ow * oh] in, p: Params, output: u8[3 * ow * oh] inout",
         grid="(cdiv(ow, 4), oh)", block="128",
         init={"input": uniform(0, 255), "patches": uniform(0, 255), "output": full(7),
               "p": _p(s["ow"], s["oh"], s["iw"], s["ih"], lam)},
         sizes=[s], tol={"u8": Tol(0, 1)}, translate={"portability_fixes": True}, reference=None,
         name=f"downsampling_{s['ow']}x{s['oh']}_l{lam}")
    for s in SIZES for lam in (0.5, 1.0)
]
