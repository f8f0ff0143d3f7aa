#!/usr/bin/env python3
"""HIPIFY's lit unit tests (tests/unit_tests/**) through cuport's HIP translation and LLVM FileCheck.

    .venv/bin/python bench/hipify_conformance.py HIPIFY_PATH [--cuda-version 12.3] [--tool cuport|hipify-perl|both]
                                                 [--only SUBSTR] [--filecheck PATH]

Each test file is translated with the options of its `// RUN:` line (--roc, --miopen, --hip-kernel-execution-syntax,
-D...), the output's `//` comments are blanked as HIPIFY's run_test.sh does (`sed -Ee 's|//.+|// |g'`) and FileCheck
checks it against the test file. Files lit.cfg excludes for the chosen CUDA version are skipped, as lit would.
Either ROCm library-header layout passes, per library (output and CHECK lines are also tried with
`hipblas/hipblas.h` written `hipblas.h`: HIPIFY's own tests mix the two). Prints pass rates per
directory and the first failing CHECK of each failing file. Exit 0 after a run, 2 when HIPIFY_PATH or FileCheck is
missing. Not part of `make test` (tests/test_hip_conformance.py runs it on synthetic lit files)."""
from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

SUFFIXES = (".cu", ".cuh", ".cpp", ".c", ".hpp", ".h")
ALWAYS_EXCLUDED = {"cmdparser.hpp", "spatial_batch_norm_op.h", "common_cudnn.h", "inc.h"}
_RUN = re.compile(r"^//\s*RUN:(.*)$", re.M)
_COMMENT = re.compile(r"//.+")
_INCLUDE = re.compile(r'^((?://\s*CHECK[-A-Z]*:)?\s*#\s*include\s*[<"])([^>"]+)([>"])', re.M)


def lit_excludes(cuda: tuple[int, int], cudnn_major: int = 9, llvm_major: int = 18) -> set[str]:
    """The files HIPIFY's tests/lit.cfg excludes for this CUDA (cuDNN and CUB present, as in a full setup)."""
    major, minor = cuda
    ex = set(ALWAYS_EXCLUDED)
    rules = [
        (major < 9, "cuSPARSE_04 cuSPARSE_05 cuSPARSE_06 cuSPARSE_07 benchmark_curand_kernel.cpp reinterpret_cast "
                    "half2_allocators cub_01 cub_02 cub_03 runtime_functions_9000"),
        (major < 9 or (major == 9 and minor < 2), "cusparse2rocsparse_9020 cusparse2rocsparse_9020_12000"),
        (major < 10, "cuSPARSE_08 cuSPARSE_09 cuSPARSE_10 cuSPARSE_11 simple_mechs cusparse2rocsparse_10000"),
        (major < 10 or (major == 10 and minor < 1), "cusparse2rocsparse_10010 cublaslt2hipblaslt"),
        (major < 10 or (major == 10 and minor < 1) or major >= 12, "cusparse2rocsparse_10010_12000"),
        (not (major == 10 and minor in (1, 2)), "cublaslt2hipblaslt_10010_10020"),
        (major < 11 or (major == 11 and minor <= 1) or major >= 12, "cusparse2rocsparse_11010_12000"),
        (major < 11 or (major == 11 and minor <= 3) or major >= 12,
         "cusparse2rocsparse_11030_12000 cusparse2hipsparse_11030_12000"),
        (major <= 10, "headers_test_12_SOLVER_10010"),
        (major > 10, "cudnn_convolution_forward cuSPARSE_01 cuSPARSE_02 cuSPARSE_12"),
        (major < 11 or (major == 11 and minor < 1), "runtime_functions_11010"),
        (major >= 11, "cusparse2rocsparse_before_11000"),
        (major < 12, "headers_test_06_12000 headers_test_07_12000 headers_test_08_12000 headers_test_09_12000 "
                     "runtime_functions_12000 cusparse2rocsparse_12000 cusparse2hipsparse_12000"),
        (major >= 12, "headers_test_06 headers_test_07 headers_test_08 headers_test_09 tex2dKernel.cpp cuSPARSE_11 "
                      "cublas_0_based_indexing cublas_0_based_indexing_rocblas cusparse2rocsparse_9020_12000 "
                      "cusparse2rocsparse_before_12000"),
        (major == 12 and minor >= 6, "cub_01 cub_02 cub_03"),
        (cudnn_major >= 9, "cudnn2miopen_before_9000"),
        (llvm_major < 10, "pp_if_else_conditionals_LLVM_10 pp_if_else_conditionals_01_LLVM_10"),
    ]
    for cond, names in rules:
        if cond:
            ex.update(n if "." in n else n + ".cu" for n in names.split())
    return ex


def discover(hipify: str, cuda: tuple[int, int]) -> tuple[str, list[str]]:
    """(the unit_tests directory, its test files for this CUDA version)."""
    base = hipify
    for cand in (os.path.join(hipify, "tests", "unit_tests"), os.path.join(hipify, "unit_tests"), hipify):
        if os.path.isdir(cand) and glob.glob(os.path.join(cand, "**", "*.cu"), recursive=True):
            base = cand
            break
    else:
        raise FileNotFoundError(f"{hipify}: no HIPIFY lit tests (tests/unit_tests) there")
    excluded = lit_excludes(cuda)
    files = []
    for p in sorted(glob.glob(os.path.join(base, "**", "*"), recursive=True)):
        if p.endswith(SUFFIXES) and os.path.isfile(p) and os.path.basename(p) not in excluded:
            files.append(p)
    return base, files


def run_options(text: str) -> dict | None:
    """cuport options for the `// RUN:` line (None: the file has none, lit would not run it)."""
    m = _RUN.search(text)
    if not m:
        return None
    line = m.group(1)
    words = line.replace('"', " ").split()
    opts = {"roc": "--roc" in words or "-roc" in words, "miopen": "--miopen" in words,
            "launch_syntax": "hip" if "--hip-kernel-execution-syntax" in words else "cuda",
            "defines": [w[2:] for w in words if w.startswith("-D") and len(w) > 2],
            "experimental": "--experimental" in words}
    return opts


def blank_comments(text: str) -> str:
    return "\n".join(_COMMENT.sub("// ", line) for line in text.split("\n"))


def flatten_includes(text: str) -> str:
    from porter.translate.hip.tables import flat_header
    return _INCLUDE.sub(lambda m: m.group(1) + flat_header(m.group(2)) + m.group(3), text)


def newest_hip() -> str:
    """HIPIFY's tests are written for its newest HIP (HIP_LATEST, recorded by the table import): translate for
    that one, not for whatever HIP this machine has (hip_math_constants.h exists from 6.1 on)."""
    from porter.translate.hip.tables import _arguments
    return _arguments()[0] or "6.3"


def translate_cuport(path: str, text: str, opts: dict) -> str:
    from porter.translate.hip.translator import translate
    res = translate(path, text, portability_fixes=False, launch_syntax=opts["launch_syntax"], roc=opts["roc"],
                    miopen=opts["miopen"], defines=opts["defines"], hip_version=newest_hip())
    if res.extra.get("refused"):
        raise RuntimeError(f"refused: {res.extra['refused']}")
    return res.text


def translate_perl(path: str, text: str, opts: dict, hipify: str) -> str:
    script = os.path.join(hipify, "bin", "hipify-perl")
    args = ["perl", script, "-quiet-warnings"]
    if opts["roc"]:
        args.append("-roc")
    if opts["launch_syntax"] == "hip":
        args.append("-hip-kernel-execution-syntax")
    if opts["experimental"]:
        args.append("-experimental")
    out = subprocess.run(args + [path], capture_output=True, timeout=120)
    if out.returncode != 0:
        raise RuntimeError(f"hipify-perl exit {out.returncode}: {out.stderr.decode('utf-8', 'replace')[:200]}")
    return out.stdout.decode("utf-8", "replace")


def filecheck(filecheck_bin: str, check_file: str, output: str) -> tuple[bool, str]:
    """(passed, first failure: FileCheck's first error line and the CHECK it names)."""
    out = subprocess.run([filecheck_bin, check_file], input=output.encode("utf-8", "surrogateescape"),
                         capture_output=True, timeout=120)
    if out.returncode == 0:
        return True, ""
    err = out.stderr.decode("utf-8", "replace").splitlines()
    first = next((i for i, l in enumerate(err) if "error:" in l), None)
    if first is None:
        return False, (err[0] if err else f"FileCheck exit {out.returncode}")
    msg = err[first].split("error:", 1)[1].strip()
    where = re.search(r":(\d+):\d+: error:", err[first])
    check = err[first + 1].strip() if first + 1 < len(err) else ""
    return False, f"line {where.group(1) if where else '?'}: {msg}: {check}"


def check_one(path: str, tool: str, hipify: str, fc: str) -> tuple[str, str]:
    """('pass' | 'fail' | 'skip', detail)"""
    raw = open(path, "rb").read()
    text = raw.decode("utf-8", "surrogateescape")
    opts = run_options(text)
    if opts is None:
        return "skip", "no RUN line"
    try:
        out = translate_cuport(path, text, opts) if tool == "cuport" else translate_perl(path, text, opts, hipify)
    except Exception as e:          # a crash is a failure of this file, reported on one line
        return "fail", f"translation failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    ok, why = filecheck(fc, path, blank_comments(out))
    if not ok:
        # either layout, per library (HIPIFY's own tests mix `hipblas.h` with `hiprand/hiprand.h`): the output
        # and the CHECK lines both flattened
        flat = flatten_includes(out)
        flat_checks = flatten_includes(text)
        if flat != out or flat_checks != text:
            with tempfile.NamedTemporaryFile("w", suffix=os.path.splitext(path)[1], encoding="utf-8",
                                             errors="surrogateescape", delete=False) as tmp:
                tmp.write(flat_checks)
            try:
                flat_ok, flat_why = filecheck(fc, tmp.name, blank_comments(flat))
            finally:
                os.unlink(tmp.name)
            if flat_ok:
                return "pass", "flat header layout"
            # report the layout that got further: its first failing CHECK is the real next gap
            if _check_line(flat_why) > _check_line(why):
                why = flat_why
    return ("pass", "") if ok else ("fail", why)


def _check_line(why: str) -> int:
    m = re.match(r"line (\d+):", why)
    return int(m.group(1)) if m else 0


def find_filecheck(explicit: str | None) -> str | None:
    if explicit:
        return explicit if os.path.isfile(explicit) else None
    found = shutil.which("FileCheck")
    if found:
        return found
    cands = sorted(glob.glob("/usr/lib/llvm-*/bin/FileCheck"), key=lambda p: int(re.search(r"llvm-(\d+)", p).group(1)))
    return cands[-1] if cands else None


def run(hipify: str, tools: list[str], cuda: tuple[int, int], fc: str, only: str | None = None,
        stream=None) -> dict:
    base, files = discover(hipify, cuda)
    if only:
        files = [f for f in files if only in os.path.relpath(f, base)]
    results: dict = {t: {} for t in tools}
    for tool in tools:
        t0 = time.perf_counter()
        for f in files:
            results[tool][os.path.relpath(f, base)] = check_one(f, tool, hipify, fc)
        results[tool]["__seconds__"] = time.perf_counter() - t0
    report(results, stream or sys.stdout)
    return results


def report(results: dict, stream) -> None:
    for tool, res in results.items():
        secs = res.get("__seconds__", 0.0)
        files = {k: v for k, v in res.items() if k != "__seconds__"}
        dirs: dict[str, list[int]] = {}
        for rel, (status, _) in files.items():
            if status == "skip":
                continue
            d = os.path.dirname(rel) or "."
            d = "/".join(d.split("/")[:2]) if d.startswith("libraries") or d.startswith("synthetic") else \
                d.split("/")[0]
            c = dirs.setdefault(d, [0, 0])
            c[1] += 1
            c[0] += status == "pass"
        passed = sum(c[0] for c in dirs.values())
        total = sum(c[1] for c in dirs.values())
        print(f"== {tool}: {passed}/{total} files pass ({100.0 * passed / max(total, 1):.1f}%) in {secs:.0f}s",
              file=stream)
        for d in sorted(dirs):
            p, n = dirs[d]
            print(f"  {d:<28} {p:>3}/{n:<3} {100.0 * p / n:5.1f}%", file=stream)
        for rel in sorted(files):
            status, why = files[rel]
            if status == "fail":
                print(f"  FAIL {rel}: {why[:300]}", file=stream)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="hipify_conformance.py", description=__doc__.splitlines()[0])
    ap.add_argument("hipify", metavar="HIPIFY_PATH", help="a HIPIFY checkout (or its tests/unit_tests directory)")
    ap.add_argument("--tool", choices=("cuport", "hipify-perl", "both"), default="cuport")
    ap.add_argument("--cuda-version", default="12.3",
                    help="the CUDA lit.cfg's version excludes are computed for (default 12.3)")
    ap.add_argument("--only", metavar="SUBSTR", help="only test files whose path contains SUBSTR")
    ap.add_argument("--filecheck", metavar="PATH", help="FileCheck binary (default: PATH, then /usr/lib/llvm-*)")
    args = ap.parse_args(argv)
    fc = find_filecheck(args.filecheck)
    if fc is None:
        print("cuport: error: FileCheck not found (Debian: apt-get install llvm-14-tools)", file=sys.stderr)
        return 2
    m = re.fullmatch(r"(\d+)(?:\.(\d+))?", args.cuda_version)
    if not m:
        print(f"cuport: error: --cuda-version: not a version: {args.cuda_version!r}", file=sys.stderr)
        return 2
    tools = ["cuport", "hipify-perl"] if args.tool == "both" else [args.tool]
    if "hipify-perl" in tools and not os.path.isfile(os.path.join(args.hipify, "bin", "hipify-perl")):
        print(f"cuport: error: {args.hipify}/bin/hipify-perl not found", file=sys.stderr)
        return 2
    try:
        run(args.hipify, tools, (int(m.group(1)), int(m.group(2) or 0)), fc, args.only)
    except FileNotFoundError as e:
        print(f"cuport: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
