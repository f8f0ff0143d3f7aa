"""Breadth of the GLSL and OpenCL translators on real programs (HeCBench's `*-cuda` versions, read from a local
checkout that is never committed), run as a new user would: `cuport translate --to T PROGRAM_DIR -o OUT
--timeout S` per program and target.

    .venv/bin/python bench/breadth.py HECBENCH_PATH [--programs N] [--to glsl,opencl] [--timeout 120]
                                      [-j 1] [--json bench/results/breadth.json] [--markdown]

Per program and target: kernels found (unique `__global__` names in any file of the program, headers included),
translated (an output was produced: written, or rejected by the validator), valid (written: the translators
validate by default and drop what glslangValidator/spirv-val or the PoCL build rejects), refused grouped by
reason (CP code + the first words of the message), and kernels left out with no diagnostic at all (`silent`;
`silent_exit0` when the command also exited 0 -- the worst case)."""
from __future__ import annotations

import argparse
import collections
import concurrent.futures
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCES = (".cu", ".cuh", ".h", ".hpp", ".cpp", ".cc", ".inl")
KERNEL_RE = re.compile(r"__global__\s+(?:[\w:<>,\s\*&()]*?\s)?(\w+)\s*\(", re.S)
DIAG_RE = re.compile(r"^(?P<file>.*?):(?P<row>\d+):(?P<col>\d+): (?P<code>CP\d+) \[(?P<sev>\w+)\] (?P<msg>.*)$")
NOT_TRANSLATED = re.compile(r"kernel `(?P<label>[^`]+)` (?:not translated: )?(?P<why>.*)")


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def kernels_found(prog_dir: str) -> dict:
    """{kernel name: file} for every `__global__` function defined (not only declared) in the program."""
    found = {}
    for path in sorted(glob.glob(os.path.join(prog_dir, "**", "*"), recursive=True)):
        if not path.endswith(SOURCES) or not os.path.isfile(path):
            continue
        try:
            text = strip_comments(open(path, encoding="utf-8", errors="replace").read())
        except OSError:
            continue
        for m in KERNEL_RE.finditer(text):
            # a definition: the parameter list is followed by `{` (declarations end with `;`)
            depth, i = 0, m.end() - 1
            while i < len(text):
                depth += {"(": 1, ")": -1}.get(text[i], 0)
                i += 1
                if depth == 0:
                    break
            rest = text[i:i + 200].lstrip()
            if rest.startswith("{") or re.match(r"(__launch_bounds__\s*\([^)]*\)\s*)?\{", rest):
                found.setdefault(m.group(1), os.path.relpath(path, prog_dir))
    return found


def base_name(label: str) -> str:
    return label.split("<")[0].strip()


def reason_key(code: str, why: str, words: int = 6) -> str:
    why = re.sub(r": not expressible in .*$", "", why)
    why = re.sub(r"`[^`]*`", "X", why)            # names differ from kernel to kernel, the reason does not
    why = re.sub(r"\([^)]*\)", "", why)
    return f"{code} " + " ".join(why.split()[:words]).rstrip(":,;")


def outputs(out_dir: str, target: str, found: dict) -> set:
    names = set()
    if target == "glsl":
        for p in glob.glob(os.path.join(out_dir, "**", "*.comp"), recursive=True):
            stem = os.path.basename(p)[:-5]
            # NAME.comp, or FILESTEM.NAME.comp when several inputs; template labels are made safe (`_`)
            parts = [stem] + [stem.split(".", 1)[1]] if "." in stem else [stem]
            for cand in parts:
                # an exact name first: `mean_shift_tiling` is not an instance of `mean_shift`
                # the longest prefix: `moe_sum_kernel_vec4_2` is `moe_sum_kernel_vec4`, not `moe_sum_kernel`
                hit = cand if cand in found else max((k for k in found if cand.startswith(k + "_")), key=len,
                                                     default=None)
                if hit:
                    names.add(hit)
                    break
            else:
                names.add(stem)
    else:
        for p in glob.glob(os.path.join(out_dir, "**", "*.cl"), recursive=True):
            text = open(p, encoding="utf-8", errors="replace").read()
            for m in re.finditer(r"__kernel\s+void\s+(\w+)\s*\(", text):
                n = m.group(1)
                hit = n if n in found else max((k for k in found if n.startswith(k + "_")), key=len, default=n)
                names.add(hit)
    return names


def run_one(prog_dir: str, target: str, timeout: float) -> dict:
    found = kernels_found(prog_dir)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="breadth-") as out:
        cmd = [sys.executable, "-m", "porter", "translate", "--to", target, prog_dir, "-o", out,
               "--timeout", str(timeout)]
        try:
            p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout * 4 + 60)
            rc, err = p.returncode, p.stderr
        except subprocess.TimeoutExpired as exc:
            rc, err = "timeout", (exc.stderr or b"").decode("utf-8", "replace") if isinstance(exc.stderr, bytes) \
                else (exc.stderr or "")
        written = outputs(out, target, found)
    seconds = time.perf_counter() - t0
    refused, rejected, messages = {}, set(), {}
    file_errors = []
    for line in err.splitlines():
        m = DIAG_RE.match(line)
        if not m:
            continue
        nt = NOT_TRANSLATED.search(m["msg"]) if m["sev"] == "error" else None
        if nt:
            k = base_name(nt["label"])
            if "output was rejected" in nt["why"]:
                rejected.add(k)
            if k not in written:
                refused.setdefault(k, reason_key(m["code"], nt["why"]))
                messages.setdefault(k, f'{m["code"]} {nt["why"]}')
        elif m["code"] == "CP000" and m["sev"] == "error":
            file_errors.append((m["file"], m["msg"]))
    translated = written | rejected
    rows = {}
    for k, f in found.items():
        if k in written:
            rows[k] = "valid"
        elif k in refused:
            rows[k] = refused[k]
        elif file_errors:
            rows[k] = "CP000 clang error blocks the file"
        elif rc == 0:
            rows[k] = "silent_exit0"
        else:
            rows[k] = "silent"
    return {"found": len(found), "translated": len(translated & set(found)), "valid": len(written & set(found)),
            "kernels": rows, "messages": messages, "files": found, "exit": rc, "seconds": round(seconds, 2)}


def summarize(results: dict, target: str) -> dict:
    tot = collections.Counter()
    reasons = collections.Counter()
    for prog, r in results.items():
        t = r[target]
        tot["programs"] += 1
        tot["found"] += t["found"]
        tot["translated"] += t["translated"]
        tot["valid"] += t["valid"]
        if t["found"] and t["exit"] == 0 and t["valid"] < t["found"]:
            tot["exit0_with_kernel_left_out"] += 1
        for k, why in t["kernels"].items():
            if why != "valid":
                reasons[why] += 1
    return {"totals": dict(tot), "reasons": reasons.most_common()}


def markdown(results: dict, targets) -> str:
    lines = ["| program | kernels | " + " | ".join(f"{t} translated / valid" for t in targets) + " |",
             "|---|---:|" + "---:|" * len(targets)]
    for prog, r in results.items():
        cells = [f"{r[t]['translated']} / {r[t]['valid']}" + (" (exit 0!)" if r[t]["exit"] == 0 and
                                                                  r[t]["valid"] < r[t]["found"] else "")
                 for t in targets]
        lines.append(f"| {prog} | {r[targets[0]]['found']} | " + " | ".join(cells) + " |")
    for t in targets:
        s = summarize(results, t)
        tt = s["totals"]
        lines += ["", f"**{t}**: {tt.get('found', 0)} kernels in {tt.get('programs', 0)} programs, "
                  f"{tt.get('translated', 0)} translated, {tt.get('valid', 0)} valid; "
                  f"{tt.get('exit0_with_kernel_left_out', 0)} programs exit 0 with a kernel left out", "",
                  "| count | reason |", "|---:|---|"]
        lines += [f"| {n} | {why} |" for why, n in s["reasons"]]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("hecbench", help="HeCBench checkout (holding src/) or its src directory")
    ap.add_argument("--programs", type=int, default=None, help="only the first N programs of the list")
    ap.add_argument("--list", default=os.path.join(ROOT, "bench", "breadth_programs.txt"))
    ap.add_argument("--to", default="glsl,opencl")
    ap.add_argument("--timeout", type=float, default=120.0, help="cuport's per-file --timeout (seconds)")
    ap.add_argument("-j", type=int, default=1, help="programs in parallel (default 1)")
    ap.add_argument("--json", default=None, help="write all results here")
    ap.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    args = ap.parse_args(argv)
    src = os.path.join(args.hecbench, "src") if os.path.isdir(os.path.join(args.hecbench, "src")) \
        else args.hecbench
    progs = [ln.strip() for ln in open(args.list) if ln.strip() and not ln.startswith("#")]
    progs = progs[:args.programs] if args.programs else progs
    missing = [p for p in progs if not os.path.isdir(os.path.join(src, p))]
    if missing:
        print(f"breadth: error: not in {src}: {', '.join(missing)}", file=sys.stderr)
        return 2
    targets = [t.strip() for t in args.to.split(",") if t.strip()]
    jobs = [(p, t) for p in progs for t in targets]
    results = {p: {} for p in progs}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.j)) as ex:
        futs = {ex.submit(run_one, os.path.join(src, p), t, args.timeout): (p, t) for p, t in jobs}
        for f in concurrent.futures.as_completed(futs):
            p, t = futs[f]
            r = results[p][t] = f.result()
            print(f"{p:28s} {t:7s} found {r['found']:3d} translated {r['translated']:3d} valid {r['valid']:3d} "
                  f"exit {r['exit']} {r['seconds']:.1f}s", file=sys.stderr, flush=True)
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump({"command": " ".join(sys.argv), "results": results,
                       "summary": {t: summarize(results, t) for t in targets}}, f, indent=1, default=str)
    if args.markdown:
        print(markdown(results, targets))
    else:
        for t in targets:
            s = summarize(results, t)
            print(t, json.dumps(s["totals"]))
            for why, n in s["reasons"]:
                print(f"  {n:4d}  {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
