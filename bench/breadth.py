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
(a second run with the same inputs changes the answer), or failed to run (why). A kernel the sizes assumed for what
the program reads from its command line leave underived (an empty grid, a launch its loop never reaches), with an
empty launch or out of bounds is derived and run again with the arguments its Makefile's `run:` line gives
(`cuport verify --args`, capped as above): agreeing there is agree, marked "program_args" and counted apart; a run
line with no arguments or a non-number among them (a file name) is skipped with the reason ("program_args_run")."""
from __future__ import annotations

import argparse
import collections
import concurrent.futures
import glob
import json
import os
import re
import shlex
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


def _derive_json(path: str, args=None) -> list:
    """Derived verify cases of one file as JSON-able dicts (run in a child: libclang stays out of this process);
    `args`: the program's command-line arguments (`cuport verify --args`)."""
    sys.path.insert(0, ROOT)
    from porter.verify.derive import derive_file
    return [{"kernel": d.kernel, "line": d.line, "case": d.as_dict(portability_fixes=True),
             "problems": [f"{p.what}: {p.message}" for p in d.problems]} for d in derive_file(path, args)]


def cap_sizes(case: dict, cap: int = VERIFY_CAP, fixed_cap: int = FIXED_CAP) -> tuple[dict, str | None]:
    """porter/verify/sizecap.py's cap_sizes (shared with `cuport verify --args`)."""
    sys.path.insert(0, ROOT)
    from porter.verify.sizecap import cap_sizes as capped
    return capped(case, cap, fixed_cap)


def _first_bad(doc: dict) -> str | None:
    bad = [p for p in doc.get("differential", []) if not p["ok"]]
    return f"{bad[0]['a']} vs {bad[0]['b']}: {bad[0]['message']}" if bad else None


INPUTS = os.path.join(ROOT, "bench", "breadth_inputs.json")
PROGRAM_RANGES = "agree, program's input ranges"


def program_inputs(prog: str, kernel: str, path: str | None = None) -> dict | None:
    """The label {"inputs": "--inputs text", "source": "where the program sets them"} of one kernel, or None.
    bench/breadth_inputs.json holds, for kernels whose derived random inputs make the computation itself
    meaningless (a tridiagonal solver without pivoting on random diagonals, a neuron model at 1e30 volts), the
    ranges the program's own host code gives its inputs, each with the line it comes from."""
    try:
        labels = json.load(open(path or INPUTS))
    except (OSError, ValueError):
        return None
    return labels.get(f"{prog}/{kernel.split('<')[0]}")


def verify_kernel(path: str, case: dict, targets: list, timeout: float, label: dict | None = None,
                  args: list | None = None, given: dict | None = None) -> dict:
    """One derived kernel, run on `targets` at capped sizes; twice on disagreement (same inputs, same seed): runs
    that change between the two are nondeterministic, as the CUDA original would be. A disagreement on derived
    inputs is run again on the program's input ranges where `label` (program_inputs) gives them: agreeing there
    counts as agree, marked "program_inputs" and counted apart. `args`: the case was derived with the program's
    command-line arguments (run_args_retry), which verify is given too. `given`: a label whose inputs give a scalar
    derive could not (problems_given): every run takes them, the row marked "program_inputs" too."""
    row = {"file": os.path.basename(path), "sizes": dict(case["sizes"][0]), "targets": targets}
    if not re.search(r"\b(out|inout)\b", case["signature"]) and not case.get("asserts"):
        # a kernel whose device asserts are its only effect is compared on them (porter/verify/asserts.py)
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
    argv = ["--args", shlex.join(args)] if args is not None else []
    cmd += argv
    if given:
        cmd += ["--inputs", given["inputs"]]

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
    extra = ["--inputs", given["inputs"]] if given else []
    if given:
        out = {**out, "program_inputs": given["inputs"],
               "why": f"{out['verdict']} on the program's value ({given['source']})"
                      + (f": {out['why']}" if out.get("why") else "")}
    if label and not given and (out["verdict"] == "disagree"
                                or out["verdict"] == "failed" and "timeout" in out.get("why", "")):
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
        bad = _out_of_bounds(path, case, timeout, out, [*argv, *extra])
        if bad:                         # the case, not the translation: CUDA would access the same addresses
            out = {**out, "verdict": "failed", "first_verdict": out["verdict"],
                   "why": f"out of bounds under the derived sizes (Oclgrind at {bad[0]}: {bad[1]}); the "
                          f"sizes do not fit the kernel's indexing (first: {out['verdict']}: {out.get('why', '')})"}
    return out


ALONE = "no other target ran this case"


def _bounds_lost(results: list) -> list[str]:
    """Why Oclgrind's bounds check gave no answer for some runs ([] when every case's `bounds+races` run came
    back). Only that variant checks bounds: the `uninit` one may be skipped (Oclgrind 21.10 does not know LLVM's
    `freeze`), and a run alone in its call has nothing to compare with ("skipped", differential.py) but ran under
    the sanitizer all the same (vadd's bounds run beside an uninit run that failed)."""
    runs = [r for r in results if r.get("variant") in ("bounds+races", "-", None)]
    lost = [f"{r.get('case', '')} {r.get('variant')}: {r.get('status')}".strip() for r in runs
            if r.get("status") not in ("pass", "FAIL")
            and not (r.get("status") == "skipped" and (r.get("message") or "").startswith(ALONE))]
    return lost or ([] if runs else ["no runs"])


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
    lost = _bounds_lost(doc.get("results", []))
    if lost:
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
        # device asserts are compared as an outcome (porter/verify/asserts.py): the row says which
        note = next((p["message"] for p in doc.get("differential", []) if "assert" in p["message"]), None)
        return {**row, "verdict": "agree", **({"asserts": note} if note else {})}
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


def verify_program(prog_dir: str, res: dict, timeout: float, wanted=("vulkan", "opencl"),
                   run_args: bool = False) -> dict:
    """{kernel: verify row} for the valid kernels of the program's .cu files that derive; the others say why.
    `run_args` (--verify-run-args): every kernel at its Makefile's run arguments only (a GPU, where no Oclgrind
    finds the assumed sizes out of bounds: vadd's vectorized kernel, only valid in OpenCL)."""
    out, tgt = {}, {}
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
            tgt[k] = targets
            if run_args:
                out[k] = {"file": rel, "verdict": "underived", "why": "not run at the assumed sizes "
                                                                       "(--verify-run-args)"}
                continue
            label = program_inputs(os.path.basename(prog_dir), k)
            given = label if problems_given(ds, label) else None
            bad = [d for d in ds if d["problems"] and not given]
            if label and "spec" in label:       # the derived case is not the program's: its spec is
                out[k] = {**verify_spec(prog_dir, k, label, targets, timeout), "file": rel}
                _progress(prog_dir, k, out[k])
                continue
            if bad and label and "configuration" in label:
                out[k] = {**configured(prog_dir, rel, k, label, targets, timeout), "file": rel}
                _progress(prog_dir, k, out[k])
                continue
            if bad:                     # an instance that does not derive leaves the kernel underived
                out[k] = {"file": rel, "verdict": "underived", "why": bad[0]["problems"][0]}
                continue
            out[k] = _verify_instances(prog_dir, path, k, ds, targets, timeout, given=given)
            out[k]["file"] = rel
    for k, row in out.items():          # a case the assumed sizes do not make: the program's own arguments
        if _sizes_failure(row) or run_args:
            out[k] = run_args_retry(prog_dir, os.path.join(prog_dir, row["file"]), k, row, tgt[k], timeout)
    return out


def _verify_instances(prog_dir, path, k, ds, targets, timeout, args=None, given=None) -> dict:
    label = program_inputs(os.path.basename(prog_dir), k)
    rows = {}
    for d in ds[:INSTANCES]:
        rows[d["kernel"]] = verify_kernel(path, d["case"], targets, timeout,
                                          label if label and "inputs" in label else None,
                                          **({"args": args} if args is not None else {}),
                                          **({"given": given} if given else {}))
        _progress(prog_dir, d["kernel"], rows[d["kernel"]])
    return _combine(rows)


def _progress(prog_dir: str, kernel: str, row: dict) -> None:
    """`  verify P K: verdict why` on stderr: the log breadth_union.py reads of a GPU run cut short."""
    print(f"  verify {os.path.basename(prog_dir)} {kernel}: {row['verdict']} {row.get('why', '')}"[:300],
          file=sys.stderr, flush=True)


RUN_ARGS = "agree, program's run arguments"
# failures of the sizes assumed for what the program reads at run time (1000), not of the translation: an empty
# grid (adjacent's `nelems / (256 * 4)`), a launch whose loop does not run (ga), a case out of bounds (vadd's
# vectorized kernel reads 16 bytes past n unless n is a multiple of its 2048-element block)
_SIZES_FAILURE = re.compile(r"is empty at the derived sizes|false at the derived sizes|: empty launch grid|"
                            r"out of bounds under the derived sizes")


def _sizes_failure(row: dict) -> bool:
    return row["verdict"] in ("underived", "failed") and bool(_SIZES_FAILURE.search(row.get("why", "")))


def run_args_retry(prog_dir: str, path: str, k: str, row: dict, targets: list, timeout: float) -> dict:
    """`row` (underived or failed at the assumed sizes) run again with the arguments the program's Makefile `run:`
    target gives it (`cuport verify --args`, sizes capped as usual): agreeing there counts as agree, marked
    "program_args" and counted apart (RUN_ARGS); otherwise the row stays, with what the retry gave
    ("program_args_run"). Skipped, with the reason, when there is no such line or an argument is not a number (a
    file name: `StoneRGB.ppm`)."""
    sys.path.insert(0, ROOT)
    from porter.frontend.makeflags import run_line
    run = run_line(prog_dir)
    bad = next((a for a in run.args or () if not re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", a)),
               None)
    why = run.why or ("its run line passes no arguments" if not run.args else
                      f"its run line passes `{bad}`, not a number" if bad is not None else None)
    if why:
        return {**row, "program_args_run": f"skipped: {os.path.basename(run.path or 'Makefile')}: {why}"}
    try:
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--derive", path, "--args",
                            shlex.join(run.args)], cwd=ROOT, capture_output=True, text=True, timeout=timeout * 2 + 60)
        derived = json.loads(p.stdout) if p.returncode == 0 else []
    except (subprocess.TimeoutExpired, ValueError):
        derived = []
    ds = [d for d in derived if d["kernel"].split("<")[0] == k]
    problems = [d["problems"][0] for d in ds if d["problems"]]
    if not ds or problems:
        return {**row, "program_args_run": f"underived: {problems[0] if problems else 'no case derived'}"}
    again = _verify_instances(prog_dir, path, k, ds, targets, timeout, run.args)
    shown = " ".join(run.args)
    if again["verdict"] != "agree":     # the bounds too: in bounds there, a GPU run against CUDA can decide
        bounds = f" (bounds {again['bounds']})" if again.get("bounds") else ""
        return {**row, "program_args_run": f"{again['verdict']} at {shown}: {again.get('why', '')}{bounds}"}
    return {**again, "file": row.get("file"), "program_args": shown,
            "why": f"agree at the program's run arguments `{shown}` (Makefile `run:`: {run.line}); at the assumed "
                   f"sizes: {row['verdict']}: {row.get('why', '')}"}


def problems_given(ds: list, label: dict | None) -> bool:
    """Whether the label's inputs give every scalar the derivation could not (streamcluster's `x`, a point index
    the program takes from its data: `--inputs` sets it and `cuport verify` drops the problem); instances with no
    problem at all do not count."""
    if not label or "inputs" not in label or not any(d["problems"] for d in ds):
        return False
    sys.path.insert(0, ROOT)
    from porter.verify.nospec import parse_inputs
    named = {k for k, v in parse_inputs(label["inputs"]).items() if not isinstance(v, tuple)}
    return all(p.split(":")[0] in named for d in ds for p in d["problems"])


INSTANCES = 3                   # instances of a template kernel run (derive.py gives up to 4)
ALTERNATIVE = "agree, program's alternative configuration"


SPEC = "agree, hand-written spec"


def verify_spec(prog_dir: str, kernel: str, label: dict, targets: list, timeout: float) -> dict:
    """The row of a kernel whose derived case is not one the program makes (dpid's by-value `Params` with random
    patch sizes reads past the image) verified on the hand-written spec the label names (bench/specs/: the
    program's own values, each citing its line; a NumPy reference where the spec has one). The spec finds the
    program under $CUPORT_HEC_SRC (this corpus's src/). Agree: every run of every case passes on at least two
    targets, and the OpenCL translation runs clean under Oclgrind; marked "spec" and counted apart."""
    spec = os.path.join(ROOT, label["spec"])
    env = {**os.environ, "CUPORT_HEC_SRC": os.path.dirname(os.path.abspath(prog_dir))}

    def once(tgts):
        cmd = [sys.executable, "-m", "porter", "verify", spec, "--kernels", kernel, "--targets", ",".join(tgts),
               "--output-format", "json", "-j", "1", "--timeout", str(timeout)]
        try:
            p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout * 8 + 60)
        except subprocess.TimeoutExpired:
            return None, f"no report within {timeout * 8 + 60} s"
        try:
            return json.loads(p.stdout), None
        except ValueError:
            return None, (p.stderr.strip().splitlines() or [f"exit {p.returncode}, no report"])[-1][:300]
    row = {"spec": label["spec"], "targets": targets}
    doc, err = once(targets)
    if doc is None or not doc.get("results"):
        return {**row, "verdict": "failed", "why": f"spec {label['spec']}: {err or 'no runs'}"}
    res = doc["results"]
    row["runs"] = {f"{r['case']}: {r['target']}/{r['variant']}": r["status"] for r in res}
    fail = next((r for r in res if r["status"] == "FAIL"), None)
    broken = next((r for r in res if r["status"] not in ("pass", "FAIL")), None)
    ran = {r["target"] for r in res if r["status"] == "pass"}
    if fail or broken:
        r = fail or broken
        msg = (r.get("message") or "").strip().splitlines()
        return {**row, "verdict": "disagree" if fail else "failed",
                "why": f"spec {label['spec']}: {r['case']} {r['target']}/{r['variant']}: {r['status']}: "
                       f"{msg[0][:200] if msg else ''}"}
    if len(ran) < 2:
        return {**row, "verdict": "failed", "why": f"spec {label['spec']}: fewer than two targets ran ({ran})"}
    row.update(verdict="agree", why=f"agree on the hand-written spec {label['spec']} ({len({r['case'] for r in res})} "
                                    f"cases; {label['source']})")
    if "opencl" in targets:             # the spec's sizes must be in bounds too
        g, gerr = once(["oclgrind"])
        hits = [r for r in (g or {}).get("results", []) if r.get("status") == "FAIL"
                and re.search(r"Invalid (read|write)", r.get("message") or "")]
        if hits:
            return {**row, "verdict": "failed", "first_verdict": "agree",
                    "why": f"out of bounds under the spec's sizes (Oclgrind: {hits[0]['message'].splitlines()[0][:200]})"}
        lost = _bounds_lost((g or {}).get("results", []))
        row["bounds"] = (f"unchecked: Oclgrind: {gerr or ', '.join(lost[:3])}" if g is None or lost
                         else f"checked on the spec's {len({r['case'] for r in g['results']})} cases")
    return row


def configured(prog_dir: str, rel: str, kernel: str, label: dict, targets: list, timeout: float) -> dict:
    """The row of a kernel that only the program's other configuration launches (recursiveGaussian's
    SimpleRecursiveRGBA, under `#if USE_SIMPLE_FILTER`, which main.h sets to 0): the program copied (its
    siblings linked, for the Makefile's -I ../x) with the one line the label names changed as the program's own
    comment offers, derived and verified there. The line must read as the label expects; an agreement is marked
    "configuration" and counted apart."""
    import shutil
    import tempfile
    conf = label["configuration"]
    src = os.path.join(prog_dir, conf["file"])
    lines = open(src).read().split("\n")
    if lines[conf["line"] - 1].strip() != conf["from"]:
        return {"verdict": "underived", "why": f"configuration: {conf['file']} line {conf['line']} is not "
                f"`{conf['from']}`: {lines[conf['line'] - 1].strip()!r}"}
    with tempfile.TemporaryDirectory(prefix="breadth-conf-") as tmp:
        parent = os.path.dirname(os.path.abspath(prog_dir))
        for sib in os.listdir(parent):
            if sib != os.path.basename(prog_dir):
                os.symlink(os.path.join(parent, sib), os.path.join(tmp, sib))
        copy = os.path.join(tmp, os.path.basename(prog_dir))
        shutil.copytree(prog_dir, copy, symlinks=True)
        lines[conf["line"] - 1] = conf["to"]
        with open(os.path.join(copy, conf["file"]), "w") as f:
            f.write("\n".join(lines))
        path = os.path.join(copy, rel)
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--derive", path], cwd=ROOT,
                           capture_output=True, text=True, timeout=timeout * 2 + 60)
        ds = [d for d in (json.loads(p.stdout) if p.returncode == 0 else []) if d["kernel"].split("<")[0] == kernel]
        where = f"{conf['file']}:{conf['line']} `{conf['to']}`"
        if not ds or any(d["problems"] for d in ds):
            why = ds[0]["problems"][0] if ds else "not derived"
            return {"verdict": "underived", "why": f"with {where}: {why}"}
        rows = {d["kernel"]: verify_kernel(path, d["case"], targets, timeout) for d in ds[:INSTANCES]}
        row = _combine(rows)
    row = {**row, "configuration": where}
    if row["verdict"] == "agree":
        row["why"] = f"agree in the program's alternative configuration {where} ({label['source']})"
    return row


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
            if row.get("program_args"):
                tot[RUN_ARGS] += 1
            if row.get("configuration") and row["verdict"] == "agree":
                tot[ALTERNATIVE] += 1
            if row.get("spec") and row["verdict"] == "agree":
                tot[SPEC] += 1
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
             f"(bench/breadth_inputs.json) only: {t.get(PROGRAM_RANGES, 0)}; at the program's run arguments (its "
             f"Makefile's `run:`) only: {t.get(RUN_ARGS, 0)}; in the program's alternative configuration "
             f"(bench/breadth_inputs.json): {t.get(ALTERNATIVE, 0)}; on a hand-written spec (bench/specs/): "
             f"{t.get(SPEC, 0)}; agree with bounds unchecked by "
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
    ap.add_argument("--verify-run-args", action="store_true",
                    help="--verify at each program's Makefile `run:` arguments only (cuport verify --args), not at "
                         "the assumed sizes first: for a GPU run of kernels the CPU found out of bounds at the "
                         "assumed sizes and in bounds at the program's arguments")
    ap.add_argument("--reuse", metavar="RESULTS.json", help="take the translation results from an earlier --json "
                    "of the same list and commit instead of translating again (for --verify)")
    if argv is None and sys.argv[1:2] == ["--derive"]:
        given = shlex.split(sys.argv[4]) if sys.argv[3:4] == ["--args"] and len(sys.argv) > 4 else None
        json.dump(_derive_json(sys.argv[2], given), sys.stdout)
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
                                                  tuple(t.strip() for t in args.verify_targets.split(",")),
                                                  args.verify_run_args)
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
