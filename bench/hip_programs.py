"""Whole real programs through `cuport translate --to hip`, compiled with hipcc for gfx90a next to their
hand-written HIP ports (issue 13, item 6).

HeCBench ships most benchmarks twice: `src/NAME-cuda` and a hand-written `src/NAME-hip`. For each NAME with both:
1. cuport translates every .cu/.cuh/.h of NAME-cuda (`--include-headers`, the Makefile's -I/-D) into a scratch
   tree, and hipcc compiles each translated .cu (`-fsyntax-only`: the whole front end, host and device, for
   gfx90a, without code generation, which would only cost time);
2. hipcc compiles the hand-written NAME-hip the same way;
3. with `--hipify-perl PATH`, hipify-perl's translation of NAME-cuda too.
A program counts as a translation failure only when the hand-written port compiles and cuport's does not;
a failure on a ROCm library header absent here (hipBLAS, hipRAND, hipCUB, ...) is reported as such, not counted.

    python bench/hip_programs.py --root /src/HeCBench [--limit N] [--jobs 2] [--json out.json] [--hipify-perl P]

The code stays outside the repository; results go to bench/results/hip_programs.json and docs/hip-programs.md.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "corpus"))
import load  # noqa: E402  (bench/corpus/load.py: Makefile -I/-D)

SOURCE_EXT = (".cu", ".cuh", ".h", ".hpp", ".cpp", ".c")
# a missing header of a ROCm library (or of its CUDA original, in a hand port that kept one): environment
_LIB_HEADER = re.compile(r"fatal error: '((?:hip|roc|miopen|rccl|hipblas|hiprand|hipcub|hipfft|hipsparse|hipsolver|"
                         r"rocblas|rocrand|rocprim|thrust|cub|cublas|curand|cufft|cusparse|cusolver|cudnn|nccl|"
                         r"hipblaslt|rocsparse|rocsolver|rocfft|omp|mpi|tbb|boost|oneapi|sycl)[^']*)' file not found")
_ERROR = re.compile(r"^(.*?):(\d+):(\d+): (?:fatal )?error: (.*)$", re.M)


def programs(root: str) -> list[str]:
    src = os.path.join(root, "src")
    names = sorted(d[:-len("-cuda")] for d in os.listdir(src) if d.endswith("-cuda"))
    return [n for n in names if os.path.isdir(os.path.join(src, n + "-hip"))]


def _sources(d: str) -> list[str]:
    out = []
    for base, _, files in os.walk(d):
        out += [os.path.join(base, f) for f in files if f.endswith(SOURCE_EXT)]
    return sorted(out)


def _units(d: str) -> list[str]:
    """The translation units hipcc compiles: every .cu (HeCBench's Makefiles compile the .cu files)."""
    return [p for p in _sources(d) if p.endswith(".cu")]


def _flags(d: str) -> list[str]:
    mk = os.path.join(d, "Makefile")
    return load.makefile_flags(mk) if os.path.exists(mk) else []


def _abs_flags(flags: list[str], d: str) -> list[str]:
    out = []
    for f in flags:
        if f.startswith("-I") and not os.path.isabs(f[2:]):
            f = "-I" + os.path.normpath(os.path.join(d, f[2:]))
        out.append(f)
    return out


def hipcc(units: list[str], include_dir: str, flags: list[str], timeout: int) -> dict:
    """Compile each unit for gfx90a (front end only). {'ok': bool, 'error': first error, 'library': header}."""
    env = dict(os.environ, HIP_PLATFORM="amd")
    for u in units:
        cmd = ["hipcc", "--offload-arch=gfx90a", "-fsyntax-only", "-std=c++17", "-w", "-I", include_dir,
               "-I", os.path.dirname(u), *flags, u]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"ok": False, "error": f"{os.path.basename(u)}: hipcc timed out after {timeout} s", "library": None}
        if r.returncode != 0:
            lib = _LIB_HEADER.search(r.stderr)
            m = _ERROR.search(r.stderr)
            first = (f"{os.path.relpath(m.group(1), include_dir)}:{m.group(2)}: {m.group(4)}" if m
                     else (r.stderr.strip().splitlines() or ["hipcc failed"])[-1])
            return {"ok": False, "error": first[:300], "library": lib.group(1) if lib else None}
    return {"ok": bool(units), "error": None if units else "no .cu file", "library": None}


def translate_cuport(src_dir: str, out_dir: str, flags: list[str], timeout: int) -> dict:
    files = [p for p in _sources(src_dir) if p.endswith((".cu", ".cuh"))]
    cmd = [sys.executable, "-m", "porter", "translate", "--to", "hip", "--include-headers", "--no-validate",
           "--output-dir", out_dir, *flags, *files]
    t0 = time.perf_counter()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=src_dir, timeout=timeout,
                           env=dict(os.environ, PYTHONPATH=ROOT))
    except subprocess.TimeoutExpired:
        return {"exit": "timeout", "seconds": timeout, "diagnostics": []}
    diags = [ln.replace(src_dir + "/", "") for ln in r.stderr.splitlines() if re.search(r": CP\d{3}", ln)]
    errors = [d for d in diags if re.search(r": CP\d{3} ", d) and "[warning]" not in d and "[info]" not in d
              and not re.search(r": CP[123]\d\d ", d)]      # the lint findings it fixed are not why it stopped
    missing = [os.path.relpath(f, src_dir) for f in files if f.endswith(".cu")
               and not os.path.exists(os.path.join(out_dir, os.path.relpath(f, src_dir)))]
    return {"exit": r.returncode, "seconds": round(time.perf_counter() - t0, 2), "diagnostics": diags[:5],
            "n_diagnostics": len(diags), "not_written": missing, "first_error": errors[0] if errors else None}


def _mirror_others(src_dir: str, out_dir: str) -> None:
    """Files cuport does not translate (.h/.cpp helpers, data) are copied so the tree compiles as a whole;
    translated files already there win."""
    for p in _sources(src_dir):
        rel = os.path.relpath(p, src_dir)
        dst = os.path.join(out_dir, rel)
        if not os.path.exists(dst):
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copy(p, dst)


def run_hipify_perl(tool: str, src_dir: str, out_dir: str) -> None:
    for p in _sources(src_dir):
        rel = os.path.relpath(p, src_dir)
        dst = os.path.join(out_dir, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        try:
            r = subprocess.run(["perl", tool, p], capture_output=True, text=True, errors="replace", timeout=120)
            text = r.stdout if r.returncode == 0 and r.stdout else None
        except subprocess.TimeoutExpired:      # hipify-perl's regexes on a 2 MB header (bm3d's CImg.h)
            text = None
        if text is None:
            with open(p, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        with open(dst, "w", encoding="utf-8") as fh:
            fh.write(text)


def one(root: str, name: str, scratch: str, timeout: int, hipify_perl: str | None) -> dict:
    cuda_dir = os.path.join(root, "src", name + "-cuda")
    hip_dir = os.path.join(root, "src", name + "-hip")
    res = {"program": name}
    cflags = _abs_flags(_flags(cuda_dir), cuda_dir)
    out = os.path.join(scratch, name, "cuport")
    tr = translate_cuport(cuda_dir, out, [f for f in cflags if f.startswith(("-I", "-D"))], timeout)
    res["translate"] = tr
    # --output-dir mirrors the inputs relative to the working directory (src_dir): files land directly in out
    _mirror_others(cuda_dir, out)
    res["cuport"] = hipcc(_units(out), out, cflags, timeout)
    hflags = _abs_flags(_flags(hip_dir), hip_dir)
    res["hand"] = hipcc(_units(hip_dir), hip_dir, hflags, timeout)
    if hipify_perl:
        hp = os.path.join(scratch, name, "hipify-perl")
        run_hipify_perl(hipify_perl, cuda_dir, hp)
        res["hipify_perl"] = hipcc(_units(hp), hp, cflags, timeout)
    res["verdict"] = verdict(res)
    return res


def _guarded(root, name, scratch, timeout, hipify_perl) -> dict:
    """One program; a failure of this script on it is recorded, not fatal to the run."""
    try:
        return one(root, name, scratch, timeout, hipify_perl)
    except Exception as exc:                   # noqa: BLE001 - bench bookkeeping, reported per program
        bad = {"ok": False, "error": f"bench error: {type(exc).__name__}: {exc}"[:300], "library": None}
        return {"program": name, "translate": {}, "cuport": bad, "hand": bad, "verdict": "bench error"}


def verdict(res: dict) -> str:
    c, h = res["cuport"], res["hand"]
    if c["ok"]:
        return "compiles"
    if res["translate"].get("not_written") or (res["translate"].get("exit") == 1 and res["translate"].get("first_error")
                                                and h["ok"]):
        return "refused by cuport"      # exit 1 naming what it could not translate: never a silent wrong one
    if c["library"] and (not h["ok"] or h["library"]):
        return "library absent"
    if c["library"] and re.match(r"(hip|roc|miopen|rccl)", c["library"]):
        return "library absent"
    if not h["ok"]:
        return "hand port fails too"
    return "translation failure"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", required=True, help="a HeCBench checkout (with its -cuda and -hip directories)")
    ap.add_argument("--limit", type=int, default=0, help="first N programs (alphabetical); 0: all")
    ap.add_argument("--every", type=int, default=1, help="every K-th program (alphabetical): an even sample")
    ap.add_argument("--only", nargs="*", default=[], help="these program names")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--hipify-perl", default=None, help="path to HIPIFY's bin/hipify-perl: compare it too")
    ap.add_argument("--json", default=os.path.join(HERE, "results", "hip_programs.json"))
    args = ap.parse_args(argv)
    if not shutil.which("hipcc"):
        print("hip_programs: hipcc not found (scripts/install-system.sh installs it)", file=sys.stderr)
        return 2
    names = args.only or programs(args.root)
    names = names[::max(1, args.every)]
    if args.limit:
        names = names[:args.limit]
    scratch = tempfile.mkdtemp(prefix="cuport-hip-programs-")
    t0 = time.time()
    with ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(lambda n: _guarded(args.root, n, scratch, args.timeout, args.hipify_perl), names))
    shutil.rmtree(scratch, ignore_errors=True)
    summary = {}
    for r in results:
        summary[r["verdict"]] = summary.get(r["verdict"], 0) + 1
        why = (r["translate"].get("first_error") if r["verdict"] == "refused by cuport" else None) or \
            r["cuport"]["error"] or "ok"
        print(f"{r['program']:32s} {r['verdict']:22s} cuport: {why}"[:240])
    hand_ok = sum(1 for r in results if r["hand"]["ok"])
    refused = sum(1 for r in results if r["hand"]["ok"] and r["verdict"] == "refused by cuport")
    both = sum(1 for r in results if r["hand"]["ok"] and r["cuport"]["ok"])
    line = (f"{len(results)} programs; hand-written HIP compiles: {hand_ok}; of those cuport's compiles: {both}; "
            f"refused with a diagnostic: {refused}; verdicts: {json.dumps(summary, sort_keys=True)}")
    if args.hipify_perl:
        hp = sum(1 for r in results if r["hand"]["ok"] and r.get("hipify_perl", {}).get("ok"))
        line += f"; hipify-perl compiles: {hp} of {hand_ok}"
    print(line)
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w", encoding="utf-8") as fh:
        json.dump({"root_revision": _revision(args.root), "seconds": round(time.time() - t0), "summary": line,
                   "programs": results}, fh, indent=1)
    return 0


def _revision(root: str) -> str:
    try:
        return subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


if __name__ == "__main__":
    sys.exit(main())
