"""Breadth of the GLSL and OpenCL translators on real programs (HeCBench's `*-cuda` versions, read from a local
checkout that is never committed), run as a new user would: `cuport translate --to T PROGRAM_DIR -o OUT
--timeout S` per program and target.

    .venv/bin/python bench/breadth.py HECBENCH_PATH [--programs N] [--to glsl,opencl] [--timeout 120]
                                      [-j 1] [--json bench/results/breadth.json] [--markdown]

HECBENCH_PATH holds src/<prog>-cuda and the sibling directories the programs' Makefiles name with -I
(`-I../debayer-sycl`); without them those headers are missing and the kernels using them are refused. Extract
the lists' programs with their siblings from a HeCBench git directory (bench/hec_extract.py; revision f27000a5
is the one the results in bench/results/ were taken at):

    .venv/bin/python bench/hec_extract.py GIT_DIR /tmp/hec10 bench/breadth_programs*.txt --rev f27000a5
    .venv/bin/python bench/breadth.py /tmp/hec10 --list bench/breadth_programs.txt ...

Per program and target: kernels found (unique `__global__` names in any file of the program, headers included),
translated (an output was produced: written, or rejected by the validator), valid (written: the translators
validate by default and drop what glslangValidator/spirv-val or the PoCL build rejects), refused grouped by
reason (CP code + the first words of the message), and kernels left out with no diagnostic at all (`silent`;
`silent_exit0` when the command also exited 0 -- the worst case).

--verify (opt-in) also runs what is valid: for every valid kernel of a program's `*.cu` files whose verify case
derives without a spec (porter/verify/derive.py), `cuport verify FILE --portability-fixes` (cuport's translated
output, what is counted) on the valid targets (Vulkan at lavapipe's subgroups 4/8/16, OpenCL on PoCL), the runs
compared with each other; the derived sizes are halved until every buffer and the grid stay <= VERIFY_CAP
elements / threads. Where OpenCL is valid the kernel also runs under Oclgrind at sizes <= 4096 (65536 where the
sizes' powers of two do not allow 4096): a read or write
outside the buffers means the derived sizes do not fit the kernel (CUDA would do the same), and the kernel is
"failed" whatever the runs said. Per kernel: agree, disagree (first differing index and values), nondeterministic
(a second run with the same inputs changes the answer), or failed to run (why)."""
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


def _match(name: str, found: dict) -> str | None:
    """The found kernel an output is named after: the exact name, else the longest whose instances it names
    (`NAME_ARGS`); the names as the translators spell them too (`_nqmv<32>` -> `nqmv_32`: no leading `_`)."""
    if name in found:
        return name
    hit = max((k for k in found if name.startswith(k + "_")), key=len, default=None)
    if hit is None:
        spelled = {re.sub(r"\W+", "_", k).strip("_"): k for k in found}
        hit = spelled.get(name) or max((k for s, k in spelled.items() if s and name.startswith(s + "_")),
                                       key=len, default=None)
    return hit


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
                hit = _match(cand, found)
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
                names.add(_match(n, found) or n)
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


VERIFY_CAP = 1 << 20            # elements per buffer and threads per launch in --verify
# a case whose every size the program fixes (no size to halve: ldpc's buffers of MCW * CW * ROW * BLK_COL floats
# under a (BLK_ROW, MCW) grid) is the program's own: it runs at that size up to this many elements or threads
FIXED_CAP = 1 << 22
# --verify-large-cap (a GPU's memory): a case that does not come under VERIFY_CAP because the program fixes its
# sizes (linearprobing's 2^27-slot hash table) is tried again under this cap instead of failing
LARGE_CAP = 0


def _derive_json(path: str) -> list:
    """Derived verify cases of one file as JSON-able dicts (run in a child: libclang stays out of this process)."""
    sys.path.insert(0, ROOT)
    from porter.verify.derive import derive_file
    return [{"kernel": d.kernel, "line": d.line, "case": d.as_dict(portability_fixes=True),
             "problems": [f"{p.what}: {p.message}" for p in d.problems]} for d in derive_file(path)]


def cap_sizes(case: dict, cap: int = VERIFY_CAP, fixed_cap: int = FIXED_CAP) -> tuple[dict, str | None]:
    """The derived sizes, the largest halved (keeping the power of two it is a multiple of, up to 256) until every
    buffer and the launch fit `cap`; a case with no size to halve (the program fixes every one) as it is, up to
    FIXED_CAP. Returns (sizes, None) or (sizes, why they cannot be brought under the cap)."""
    sys.path.insert(0, ROOT)
    from porter.verify.derive import case_from_dict
    from porter.verify.notation import eval_int
    sizes = dict(case["sizes"][0])
    try:
        c = case_from_dict(case)
    except Exception as e:              # what was derived does not make a case
        return sizes, f"{type(e).__name__}: {e}"

    def largest(sz):
        env = c.env(sz)
        grid, block = c.launch(sz)
        counts = [grid[0] * grid[1] * grid[2] * block[0] * block[1] * block[2]]
        for p in c.sig:
            if p.is_array:
                n = 1
                for e in p.shape:
                    n *= eval_int(e, env, p.name)
                counts.append(n)
        return max(counts)

    try:
        n = largest(sizes)
    except Exception as e:              # the derived sizes themselves cannot be evaluated
        return sizes, f"sizes {sizes}: {type(e).__name__}: {e}"
    if not sizes and n <= max(cap, fixed_cap):
        return sizes, None              # nothing to halve: run as the program does (Oclgrind too)
    # the power of two each size is a multiple of (up to 256) stays; a size that is a power of two itself may go
    # down to 32 (fpc's block `wgs` = 256 sizes its buffers as wgs^3 / 4)
    even = {k: (32 if v > 32 and v & (v - 1) == 0 else max(1, min(v & -v, 256))) for k, v in sizes.items()}
    while n > cap:
        names = sorted((k for k, v in sizes.items() if v > even[k]), key=lambda k: sizes[k], reverse=True)
        top = [k for k in names if sizes[k] == sizes[names[0]]] if names else []
        # sizes of one value shrink together (hypterm's L, M, N are one cube: its guards compare j and k with N),
        # then the largest alone; a halving that empties the launch is not taken
        for group in ([top] if len(top) > 1 else []) + [[k] for k in names]:
            trial = {**sizes, **{k: _half(sizes[k], even[k]) for k in group}}
            try:
                n = largest(trial)
            except Exception:
                continue
            sizes = trial
            break
        else:
            if not sizes:               # marchingCubes' Lv1: N, voxelZLv1 are constants its kernel reads too
                return sizes, f"cannot bring the buffers or the launch under {cap} elements: the program fixes " \
                              f"every size of this launch ({n} elements or threads)"
            return sizes, f"cannot bring the buffers or the launch under {cap} elements (sizes {sizes})"
    return sizes, None


def _half(v: int, step: int) -> int:
    """About v / 2, still a multiple of `step` (the source's `nPerRng` must stay even, a width a multiple of 16),
    never below `step` itself: mt's nPerRng = 1 read past Rand under Oclgrind."""
    return max(step, v // 2 // step * step)


def _first_bad(doc: dict) -> str | None:
    bad = [p for p in doc.get("differential", []) if not p["ok"]]
    return f"{bad[0]['a']} vs {bad[0]['b']}: {bad[0]['message']}" if bad else None


INPUTS = os.path.join(ROOT, "bench", "breadth_inputs.json")
PROGRAM_RANGES = "agree, program's input ranges"


def program_inputs(prog: str, kernel: str, path: str = INPUTS) -> dict | None:
    """The label {"inputs": "--inputs text", "source": "where the program sets them"} of one kernel, or None.
    bench/breadth_inputs.json holds, for kernels whose derived random inputs make the computation itself
    meaningless (a tridiagonal solver without pivoting on random diagonals, a neuron model at 1e30 volts), the
    ranges the program's own host code gives its inputs, each with the line it comes from."""
    try:
        labels = json.load(open(path))
    except (OSError, ValueError):
        return None
    return labels.get(f"{prog}/{kernel.split('<')[0]}")


def verify_kernel(path: str, case: dict, targets: list, timeout: float, label: dict | None = None) -> dict:
    """One derived kernel, run on `targets` at capped sizes; twice on disagreement (same inputs, same seed): runs
    that change between the two are nondeterministic, as the CUDA original would be. A disagreement on derived
    inputs is run again on the program's input ranges where `label` (program_inputs) gives them: agreeing there
    counts as agree, marked "program_inputs" and counted apart."""
    row = {"file": os.path.basename(path), "sizes": dict(case["sizes"][0]), "targets": targets}
    if not re.search(r"\b(out|inout)\b", case["signature"]):
        return {**row, "verdict": "failed", "why": "no output buffer: nothing to compare"}
    sizes, why = cap_sizes(case)
    if why and why.startswith("cannot bring") and LARGE_CAP > VERIFY_CAP:
        sizes, why = cap_sizes(case, LARGE_CAP, LARGE_CAP)
        row["cap"] = LARGE_CAP
    row["sizes"] = sizes
    if why:
        return {**row, "verdict": "failed", "why": why}
    cmd = [sys.executable, "-m", "porter", "verify", path, "--kernels", case["kernel"], "--portability-fixes",
           "--targets", ",".join(targets), "--output-format", "json", "-j", "1", "--timeout", str(timeout),
           "--sizes", ",".join(f"{k}={v}" for k, v in sizes.items())] if sizes else None
    if cmd is None:
        cmd = [sys.executable, "-m", "porter", "verify", path, "--kernels", case["kernel"], "--portability-fixes",
               "--targets", ",".join(targets), "--output-format", "json", "-j", "1", "--timeout", str(timeout)]

    def once(extra=()):
        try:
            p = subprocess.run(cmd + list(extra), cwd=ROOT, capture_output=True, text=True,
                               timeout=timeout * 6 + 60)
        except subprocess.TimeoutExpired:
            return None, "the verify command timed out"
        try:
            return json.loads(p.stdout), p.stderr
        except ValueError:
            return None, (p.stderr.strip().splitlines() or ["no output"])[-1]

    doc, err = once()
    if doc is None:
        return {**row, "verdict": "failed", "why": err}
    out = _judge_runs(doc, once, row)
    if out["verdict"] == "disagree" and any(v[0] == "special" for v in case.get("init", {}).values()):
        # inf, NaN and DBL_MAX inputs overflow an elementwise stencil in an order the compiler decides (fma
        # contraction): agreeing on finite inputs is the translation's agreement; the special-value run is kept
        finite, _ = once(["--finite-inputs"])
        if finite is not None:
            again = _judge_runs(finite, lambda: once(["--finite-inputs"]), dict(row))
            if again["verdict"] == "agree":
                out = {**again, "finite_inputs": True,
                       "why": f"agree with finite inputs (--finite-inputs); with special values: {out['why']}"}
    extra = []
    if label and (out["verdict"] == "disagree" or out["verdict"] == "failed" and "timeout" in out.get("why", "")):
        # a loop whose end the data decides (sampling's draws of k distinct columns out of ncols) hangs on random
        # inputs as it does in CUDA: the program's inputs are the case
        labelled, err = once(["--inputs", label["inputs"]])
        if labelled is None:
            out["program_inputs_run"] = f"failed: {err}"
        else:
            again = _judge_runs(labelled, lambda: once(["--inputs", label["inputs"]]), dict(row))
            if again["verdict"] == "agree":
                extra = ["--inputs", label["inputs"]]
                out = {**again, "program_inputs": label["inputs"],
                       "why": f"agree on the program's input ranges ({label['source']}); with derived inputs: "
                              f"{out['why']}"}
            else:
                out["program_inputs_run"] = f"{again['verdict']}: {again.get('why', '')}"
    if "opencl" in targets:             # agreeing runs of a case that reads past its buffers prove nothing either
        bad = _out_of_bounds(path, case, timeout, out, extra)
        if bad:                         # the case, not the translation: CUDA would access the same addresses
            out = {**out, "verdict": "failed", "first_verdict": out["verdict"],
                   "why": f"out of bounds under the derived sizes (Oclgrind at {bad[0]}: {bad[1]}); the "
                          f"sizes do not fit the kernel's indexing (first: {out['verdict']}: {out.get('why', '')})"}
    return out


def _out_of_bounds(path: str, case: dict, timeout: float, row: dict | None = None, extra=()):
    """(sizes, first report) when the OpenCL translation, run under Oclgrind at small sizes, reads or writes
    outside its buffers; None when clean or when Oclgrind cannot run. `row` gets "bounds": "checked at SIZES",
    or "unchecked: why" when Oclgrind gave no answer (no small sizes, a timeout: meanshift's mean_shift_tiling
    at its fixed N = 10000 agrees, but Oclgrind never finishes and its threads past N read past `data`)."""
    def unchecked(why):
        if row is not None:
            row["bounds"] = f"unchecked: {why}"
    sizes, why = cap_sizes(case, cap=1 << 12)
    if why:                             # sizes that keep their powers of two may not get that small
        sizes, why = cap_sizes(case, cap=1 << 16)
    if why:
        unchecked(why)
        return None
    cmd = [sys.executable, "-m", "porter", "verify", path, "--kernels", case["kernel"], "--portability-fixes",
           "--targets", "oclgrind", "--output-format", "json", "-j", "1", "--timeout", str(timeout), *extra]
    if sizes:
        cmd += ["--sizes", ",".join(f"{k}={v}" for k, v in sizes.items())]
    shown = ",".join(f"{k}={v}" for k, v in sizes.items()) or "-"
    try:
        p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout * 2 + 60)
        doc = json.loads(p.stdout)
    except (subprocess.TimeoutExpired, ValueError):
        unchecked(f"the Oclgrind run at {shown} gave no report")
        return None
    for r in doc.get("results", []):
        msg = r.get("message") or ""
        if r.get("status") == "FAIL" and re.search(r"Invalid (read|write)", msg):
            return shown, msg.splitlines()[0][:200]
    lost = [f"{r.get('variant')}: {r.get('status')}" for r in doc.get("results", [])
            if r.get("status") not in ("pass", "FAIL")]
    if lost or not doc.get("results"):
        unchecked(f"Oclgrind at {shown}: {', '.join(lost) or 'no runs'}")
    elif row is not None:
        row["bounds"] = f"checked at {shown}"
    return None


def _judge_runs(doc: dict, once, row: dict) -> dict:
    runs = {f"{r['target']}/{r['variant']}" if r["variant"] not in ("-", "") else r["target"]: r
            for r in doc["results"]}
    row["runs"] = {k: r["status"] for k, r in runs.items()}
    # a subgroup size outside the translation's launch contract (manifest min_subgroup_size) is refused by the
    # host, as the translation asks: not a failure, and not a run to compare
    outside = [k for k, r in runs.items() if r["status"] == "FAIL" and "launch refused" in (r["message"] or "")]
    if outside:
        row["outside_contract"] = outside
    broken = [f"{k}: {r['status']}: {(r['message'] or '').strip().splitlines()[0][:200] if r['message'] else ''}"
              for k, r in runs.items() if k not in outside and (r["status"] in ("crash", "timeout", "skipped")
                                                                  or (r["status"] == "FAIL" and not _first_bad(doc)))]
    if broken:
        return {**row, "verdict": "failed", "why": "; ".join(broken)}
    bad = _first_bad(doc)
    if bad is None:
        if sum(r["status"] == "pass" for r in runs.values()) < 2:
            return {**row, "verdict": "failed", "why": "fewer than two runs to compare" +
                    (f" ({', '.join(outside)} outside the launch contract)" if outside else "")}
        passed = {k.split("/")[0] for k, r in runs.items() if r["status"] == "pass"}
        if len(passed) < 2:             # lavapipe's subgroup sizes share one compiler: it ends every loop after
            return {**row, "verdict": "failed",     # 65535 iterations in all, the same way at each size
                    "why": f"only {next(iter(passed))} ran: its runs agree with each other, no second "
                           "implementation to compare with"}
        return {**row, "verdict": "agree"}
    again, _ = once()                   # the same inputs again: does any target change its own answer?
    moved = []
    if again is not None:
        first = {(p["a"], p["b"]): p for p in doc.get("differential", [])}
        for p in again.get("differential", []):
            q = first.get((p["a"], p["b"]))
            if q is not None and (q["ok"] != p["ok"] or q.get("values") != p.get("values")):
                moved.append(f"{p['a']} vs {p['b']}")
    if moved:
        return {**row, "verdict": "nondeterministic", "why": f"{bad}; a second run with the same inputs "
                f"changed {', '.join(moved[:3])}"}
    return {**row, "verdict": "disagree", "why": bad}


def verify_program(prog_dir: str, res: dict, timeout: float, wanted=("vulkan", "opencl")) -> dict:
    """{kernel: verify row} for the valid kernels of the program's .cu files that derive; the others say why."""
    out = {}
    for path in sorted(glob.glob(os.path.join(prog_dir, "**", "*.cu"), recursive=True)):
        try:
            p = subprocess.run([sys.executable, os.path.abspath(__file__), "--derive", path], cwd=ROOT,
                               capture_output=True, text=True, timeout=timeout * 2 + 60)
            derived = json.loads(p.stdout) if p.returncode == 0 else []
        except (subprocess.TimeoutExpired, ValueError):
            derived = []
        by_kernel: dict = {}            # a template kernel's instances (`k<float>`, `k<int>`) count as one kernel
        for d in derived:
            by_kernel.setdefault(d["kernel"].split("<")[0], []).append(d)
        for k, ds in by_kernel.items():
            targets = [v for t, v in (("glsl", "vulkan"), ("opencl", "opencl"))
                       if res.get(t, {}).get("kernels", {}).get(k) == "valid" and v in wanted]
            if k in out or not targets:
                continue
            if "cuda" in wanted:        # on a GPU: the CUDA original (NVRTC) beside the valid translations
                targets = ["cuda"] + targets
            rel = os.path.relpath(path, prog_dir)
            bad = [d for d in ds if d["problems"]]
            if bad:                     # an instance that does not derive leaves the kernel underived
                out[k] = {"file": rel, "verdict": "underived", "why": bad[0]["problems"][0]}
                continue
            rows = {}
            for d in ds[:INSTANCES]:
                rows[d["kernel"]] = verify_kernel(path, d["case"], targets, timeout,
                                                  program_inputs(os.path.basename(prog_dir), k))
                print(f"  verify {os.path.basename(prog_dir)} {d['kernel']}: {rows[d['kernel']]['verdict']} "
                      f"{rows[d['kernel']].get('why', '')}"[:300], file=sys.stderr, flush=True)
            out[k] = _combine(rows)
            out[k]["file"] = rel
    return out


INSTANCES = 3                   # instances of a template kernel run (derive.py gives up to 4)


def _combine(rows: dict) -> dict:
    """One kernel's row from its instances' rows: the first that does not agree decides (failed, disagree,
    nondeterministic), else agree; a plain kernel's row as it is."""
    if len(rows) == 1 and "<" not in next(iter(rows)):
        return next(iter(rows.values()))
    worst = next((r for r in rows.values() if r["verdict"] != "agree"), next(iter(rows.values())))
    inst = next(k for k, r in rows.items() if r is worst)
    out = {**worst, "instances": {k: r["verdict"] for k, r in rows.items()}}
    if worst["verdict"] != "agree":
        out["why"] = f"{inst}: {worst.get('why', '')}"
    return out


VERDICTS = ("agree", "disagree", "nondeterministic", "failed")
NOTES = os.path.join(ROOT, "bench", "breadth_verify_notes.json")


def explain(results: dict, notes_path: str = NOTES) -> None:
    """Attach the hand investigation of a disagreement (bench/breadth_verify_notes.json) to its row; the
    verdict is left as it is."""
    try:
        notes = json.load(open(notes_path))
    except (OSError, ValueError):
        return
    for prog, r in results.items():
        for k, row in r.get("verify", {}).items():
            if row["verdict"] in ("disagree", "nondeterministic", "failed") and f"{prog}/{k}" in notes:
                row["explained"] = notes[f"{prog}/{k}"]


def verify_totals(results: dict) -> dict:
    """Verdict counts over every kernel valid on a target: a valid kernel no .cu file's derivation reaches (a
    header nobody includes, a file that does not parse for derive) counts as "not reached"."""
    tot = collections.Counter()
    for r in results.values():
        rows = r.get("verify")
        if rows is None:
            continue
        valid = {k for t in ("glsl", "opencl") for k, v in r.get(t, {}).get("kernels", {}).items() if v == "valid"}
        tot["valid kernels"] += len(valid | set(rows))
        tot["not reached"] += len(valid - set(rows))
        for row in rows.values():
            tot["valid kernels in .cu files"] += 1
            if row["verdict"] != "underived":
                tot["derived"] += 1
            tot[row["verdict"]] += 1
            if row.get("finite_inputs"):
                tot["agree, finite inputs only"] += 1
            if row.get("program_inputs"):
                tot[PROGRAM_RANGES] += 1
            if row["verdict"] == "agree" and str(row.get("bounds", "")).startswith("unchecked"):
                tot["agree, bounds unchecked"] += 1     # Oclgrind gave no answer: not "found in bounds"
            if row.get("explained"):
                tot[row["verdict"] + ", explained"] += 1
    return dict(tot)


def verify_markdown(results: dict) -> str:
    t = verify_totals(results)
    explained = sum(t.get(f"{v}, explained", 0) for v in ("disagree", "nondeterministic", "failed"))
    lines = ["", f"**verify** (valid kernels: {t.get('valid kernels', 0)}; reached by a `.cu` file's derivation: "
             f"{t.get('valid kernels in .cu files', 0)}): derived {t.get('derived', 0)}, "
             + ", ".join(f"{v} {t.get(v, 0)}" for v in VERDICTS) + f" (explained by hand: {explained}; agree on "
             f"finite inputs only: {t.get('agree, finite inputs only', 0)}; on the program's input ranges "
             f"(bench/breadth_inputs.json) only: {t.get(PROGRAM_RANGES, 0)}; agree with bounds unchecked by "
             f"Oclgrind: {t.get('agree, bounds unchecked', 0)})", "",
             "| program | kernel | targets | sizes | verdict | detail |", "|---|---|---|---|---|---|"]
    for prog, r in results.items():
        for k, row in r.get("verify", {}).items():
            if row["verdict"] == "underived":
                continue
            sizes = ",".join(f"{a}={b}" for a, b in row.get("sizes", {}).items()) or "-"
            why = row.get("why", "") + (f" -- investigated: {row['explained']}" if row.get("explained") else "")
            if str(row.get("bounds", "")).startswith("unchecked"):
                why = f"{why}; bounds {row['bounds']}" if why else f"bounds {row['bounds']}"
            why = why.replace("|", "\\|")
            lines.append(f"| {prog} | {k} | {'+'.join(row.get('targets', []))} | {sizes} | {row['verdict']} | "
                         f"{why[:900]} |")
    return "\n".join(lines) + "\n"


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
    ap.add_argument("--verify", action="store_true",
                    help="also run the valid kernels whose verify case derives (lavapipe 4/8/16 and PoCL, compared "
                         "with each other)")
    ap.add_argument("--verify-timeout", type=float, default=120.0, help="seconds per kernel and run in --verify")
    ap.add_argument("--verify-large-cap", type=int, default=0, metavar="N",
                    help="--verify on a GPU: a case the program's fixed sizes keep over the cap runs under N elements "
                         "instead (default: it fails)")
    ap.add_argument("--verify-targets", default="vulkan,opencl",
                    help="targets --verify runs where the translation is valid; cuda adds the original (a GPU)")
    ap.add_argument("--reuse", metavar="RESULTS.json", help="take the translation results from an earlier --json "
                    "of the same list and commit instead of translating again (for --verify)")
    if argv is None and sys.argv[1:2] == ["--derive"]:
        json.dump(_derive_json(sys.argv[2]), sys.stdout)
        return 0
    if argv is None and sys.argv[1:2] == ["--explain"]:
        # `breadth.py --explain RESULTS.json`: re-read bench/breadth_verify_notes.json into saved results (the
        # notes written after the run) and print the verify table; the runs themselves are not repeated
        with open(sys.argv[2]) as f:
            doc = json.load(f)
        explain(doc["results"])
        doc["verify"] = verify_totals(doc["results"])
        with open(sys.argv[2], "w") as f:
            json.dump(doc, f, indent=1, default=str)
        print(verify_markdown(doc["results"]))
        return 0
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
    if args.reuse:
        old = json.load(open(args.reuse))["results"]
        results = {p: {t: old[p][t] for t in targets} for p in progs}
        jobs = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.j)) as ex:
        futs = {ex.submit(run_one, os.path.join(src, p), t, args.timeout): (p, t) for p, t in jobs}
        for f in concurrent.futures.as_completed(futs):
            p, t = futs[f]
            r = results[p][t] = f.result()
            print(f"{p:28s} {t:7s} found {r['found']:3d} translated {r['translated']:3d} valid {r['valid']:3d} "
                  f"exit {r['exit']} {r['seconds']:.1f}s", file=sys.stderr, flush=True)
    global LARGE_CAP
    LARGE_CAP = args.verify_large_cap
    if args.verify:                     # after translation: one kernel at a time (lavapipe takes every core)
        for p in progs:
            results[p]["verify"] = verify_program(os.path.join(src, p), results[p], args.verify_timeout,
                                                  tuple(t.strip() for t in args.verify_targets.split(",")))
        explain(results)
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump({"command": " ".join(sys.argv), "results": results,
                       "summary": {t: summarize(results, t) for t in targets},
                       **({"verify": verify_totals(results)} if args.verify else {})}, f, indent=1, default=str)
    if args.markdown:
        print(markdown(results, targets) + (verify_markdown(results) if args.verify else ""))
    else:
        for t in targets:
            s = summarize(results, t)
            print(t, json.dumps(s["totals"]))
            for why, n in s["reasons"]:
                print(f"  {n:4d}  {why}")
        if args.verify:
            print("verify", json.dumps(verify_totals(results)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
