"""bench/breadth.py --verify: derived cases run at capped sizes, and each kernel's verdict."""
import importlib.util
import json
import os
import re
import shutil
import subprocess

import pytest

from porter.verify.backends import opencl, vulkan
from verify_fixtures.helpers import LAVAPIPE_ICD

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROG = os.path.join(ROOT, "tests", "fixtures", "breadth", "verify", "prog")
needs_cpu_targets = pytest.mark.skipif(
    not (vulkan.available()[0] and os.path.exists(LAVAPIPE_ICD) and opencl.available()[0]),
    reason="needs Vulkan on lavapipe and OpenCL (PoCL)")


def _breadth():
    spec = importlib.util.spec_from_file_location("breadth", os.path.join(ROOT, "bench", "breadth.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _case(grid, block, signature, sizes):
    return {"path": os.path.join(PROG, "main.cu"), "kernel": "k", "signature": signature, "grid": grid,
            "block": block, "shared_mem": "0", "sizes": [sizes], "init": {}, "tol": {}, "translate": {}}


def test_cap_sizes_halves_the_largest_size_until_buffers_and_launch_fit():
    b = _breadth()
    sizes, why = b.cap_sizes(_case("cdiv(n, 256)", "256", "x: f32[n] in, y: f32[n] out, n: i32", {"n": 1 << 22}))
    assert (sizes, why) == ({"n": 1 << 20}, None)
    # the grid alone can be over the cap: w * h threads although each buffer is w * h too
    sizes, why = b.cap_sizes(_case("(cdiv(w, 16), cdiv(h, 16))", "(16, 16)", "a: f32[w * h] inout, w: i32, h: i32",
                                   {"w": 4096, "h": 2048}), cap=1 << 16)
    assert why is None and sizes["w"] * sizes["h"] <= 1 << 16 and sizes["w"] * sizes["h"] * 4 > 1 << 16
    # a halving that would empty the launch (g // 128 == 0) is not taken: the other size shrinks instead, and
    # each keeps the power of two it was a multiple of (mt's nPerRng must stay even: an odd one reads past the end)
    sizes, why = b.cap_sizes(_case("g // 128", "128", "r: f32[4096 * m] inout, m: i32",
                                   {"m": 100, "g": 384}), cap=1 << 16)
    assert why is None and sizes == {"m": 12, "g": 128}          # 100 = 4 * 25 -> 48 -> 24 -> 12
    sizes, why = b.cap_sizes(_case("cdiv(m, 128)", "128", "r: f32[4096 * m] inout, m: i32", {"m": 5860}),
                             cap=1 << 20)
    assert why is None and sizes == {"m": 180}                   # 5860 -> 2928 -> 1464 -> 732 -> 364 -> 180
    # equal sizes shrink together (hypterm: L = M = N, its guards compare all three indices with N)
    sizes, why = b.cap_sizes(_case("(cdiv(N, 16), cdiv(M, 4), cdiv(L, 4))", "(16, 4, 4)", "f: f64[L * M * N] inout",
                                   {"L": 1000, "M": 1000, "N": 1000}), cap=1 << 12)
    assert why is None and sizes["L"] == sizes["M"] == sizes["N"] == 8     # 1000 -> 496 -> ... -> 24 -> 8
    # mt: nPerRng = 5860 stays a multiple of 4, so 4096 * nPerRng cannot get under 4096: said, not forced odd
    sizes, why = b.cap_sizes(_case("cdiv(m, 128)", "128", "r: f32[4096 * m] inout, m: i32", {"m": 5860}), cap=1 << 12)
    assert sizes == {"m": 4} and "cannot bring" in why
    # fpc: the block `wgs` (256 assumed: read from argv) sizes the buffer as wgs^3 / 4; a power of two may halve
    # down to 32 (it was kept at 256, "cannot bring the buffers under the cap")
    sizes, why = b.cap_sizes(_case("((wgs * wgs) * wgs // 4) // wgs", "wgs", "v: u64[((wgs * wgs) * wgs) // 4] in",
                                   {"wgs": 256}))
    assert (sizes, why) == ({"wgs": 128}, None)
    # nothing left to shrink: said, not hidden
    sizes, why = b.cap_sizes(_case("1", "1", "r: f32[8388608] inout", {}), cap=1 << 16)
    assert why == "cannot bring the buffers or the launch under 65536 elements: the program fixes every size of " \
                  "this launch (8388608 elements or threads)"
    # ... unless it is at most FIXED_CAP: the program's own case, run (and checked by Oclgrind) as it is (ldpc's
    # 2211840-float buffers under a fixed grid: halving their sizes only made buffers the kernel read past)
    for cap in (1 << 12, 1 << 16, 1 << 20):
        assert b.cap_sizes(_case("(12, 40)", "(96, 2)", "r: f32[2211840] inout", {}), cap=cap) == ({}, None)
    sizes, why = b.cap_sizes(_case("1", "1", "r: f32[4194304] inout, n: i32", {"n": 3}), cap=1 << 16)
    assert why == "cannot bring the buffers or the launch under 65536 elements (sizes {'n': 1})"
    # on a GPU (--verify-large-cap): the program's fixed sizes run under the larger cap, the others still halve
    # (linearprobing's 2^27-slot hash table beside a batch size that stays capped)
    assert b.cap_sizes(_case("1", "1", "r: f32[8388608] inout", {}), 1 << 16, 1 << 24) == ({}, None)
    sizes, why = b.cap_sizes(_case("cdiv(n, 256)", "256", "t: u64[134217728] inout, k: u32[n] in, n: i32",
                                   {"n": 1 << 22}), 1 << 28, 1 << 28)
    assert (sizes, why) == ({"n": 1 << 22}, None)


def _doc(ok, values=None):
    runs = [{"target": "vulkan", "variant": f"sg{s}", "status": "pass" if ok or s != 16 else "FAIL",
             "message": ""} for s in (4, 8, 16)] + [{"target": "opencl", "variant": "-", "status": "pass",
                                                    "message": ""}]
    diff = [{"a": "vulkan/sg4", "b": "vulkan/sg16", "ok": ok, "message": "out: 1 of 8 elements differ",
             "values": values}]
    return {"results": runs, "differential": diff}


@pytest.mark.parametrize("second,verdict", [([1.0, 2.0], "disagree"), ([1.0, 5.0], "nondeterministic")])
def test_a_disagreement_is_run_again_to_tell_nondeterminism(monkeypatch, second, verdict):
    b = _breadth()
    docs = [_doc(False, [1.0, 2.0]), _doc(False, second)]
    calls = []

    def fake_run(cmd, **kw):
        calls.append(cmd)
        return subprocess.CompletedProcess(cmd, 1, json.dumps(docs[len(calls) - 1]), "")
    monkeypatch.setattr(b.subprocess, "run", fake_run)
    row = b.verify_kernel(os.path.join(PROG, "main.cu"),
                          _case("cdiv(n, 256)", "256", "y: f32[n] out, n: i32", {"n": 1 << 21}), ["vulkan"], 5)
    assert len(calls) == 2 and row["verdict"] == verdict and "vulkan/sg4 vs vulkan/sg16" in row["why"]
    assert "--portability-fixes" in calls[0] and calls[0][calls[0].index("--sizes") + 1] == "n=1048576"


def test_a_crash_is_a_failure_to_run_not_an_agreement(monkeypatch):
    b = _breadth()
    doc = {"results": [{"target": "vulkan", "variant": "sg4", "status": "pass", "message": ""},
                       {"target": "opencl", "variant": "-", "status": "crash", "message": "exited with status 139"}],
           "differential": []}
    monkeypatch.setattr(b.subprocess, "run",
                        lambda cmd, **kw: subprocess.CompletedProcess(cmd, 1, json.dumps(doc), ""))
    row = b.verify_kernel(os.path.join(PROG, "main.cu"),
                          _case("cdiv(n, 256)", "256", "y: f32[n] out, n: i32", {"n": 64}), ["vulkan", "opencl"], 5)
    assert row["verdict"] == "failed" and "opencl: crash" in row["why"]


@needs_cpu_targets
def test_verify_program_runs_what_derives_and_says_why_the_rest_does_not(tmp_path, monkeypatch):
    monkeypatch.setenv("VK_ICD_FILENAMES", LAVAPIPE_ICD)
    b = _breadth()
    prog = tmp_path / "prog-cuda"
    shutil.copytree(PROG, prog)
    res = {"glsl": {"kernels": {"scale": "valid", "shift": "valid", "negate": "valid", "tail": "valid"}},
           "opencl": {"kernels": {"scale": "valid", "shift": "CP907 something", "negate": "valid", "tail": "valid"}}}
    rows = b.verify_program(str(prog), res, 120)
    assert rows["scale"]["verdict"] == "agree", rows["scale"]
    assert rows["scale"]["sizes"] == {"n": 1 << 20} and rows["scale"]["targets"] == ["vulkan", "opencl"]
    # launched in a host wrapper: derived from its call `run_shift(d_v, n, 128)`; valid in GLSL only: lavapipe's
    # three subgroup sizes agree, but with no second implementation that is not counted as verified
    assert rows["shift"]["verdict"] == "failed" and rows["shift"]["targets"] == ["vulkan"], rows["shift"]
    assert rows["shift"]["why"].startswith("only vulkan ran")
    assert rows["shift"]["runs"] == {"vulkan/sg4": "pass", "vulkan/sg8": "pass", "vulkan/sg16": "pass"}
    # passed from an offset (`d_x + 1`): the allocation less the offset
    assert rows["negate"]["verdict"] == "agree", rows["negate"]
    # past the end of its buffers at the derived size: the runs agree (Vulkan drops the stores, PoCL's land past
    # the end) but the case is at fault: said so, not counted as agreeing
    assert rows["tail"]["verdict"] == "failed" and rows["tail"]["first_verdict"] == "agree", rows["tail"]
    assert rows["tail"]["why"].startswith("out of bounds under the derived sizes (Oclgrind at m=1000: ")
    # a kernel valid on no target is not run at all
    res["glsl"]["kernels"]["scale"] = "CP907 something"
    res["opencl"]["kernels"]["scale"] = "CP907 something"
    assert "scale" not in b.verify_program(str(prog), res, 120)
    tot = b.verify_totals({"p": {"verify": rows}})
    assert (tot["derived"], tot["agree"], tot["failed"], tot.get("underived", 0)) == (4, 2, 2, 0)


def test_a_hand_investigation_is_shown_beside_the_verdict_never_instead(tmp_path):
    b = _breadth()
    notes = tmp_path / "notes.json"
    notes.write_text(json.dumps({"p-cuda/k": "false alarm: why", "p-cuda/ok": "not used"}))
    results = {"p-cuda": {"verify": {"k": {"verdict": "disagree", "why": "sg4 vs opencl: x differs"},
                                     "ok": {"verdict": "agree"}, "j": {"verdict": "disagree", "why": "y"}}}}
    b.explain(results, str(notes))
    rows = results["p-cuda"]["verify"]
    assert rows["k"] == {"verdict": "disagree", "why": "sg4 vs opencl: x differs", "explained": "false alarm: why"}
    assert "explained" not in rows["ok"] and "explained" not in rows["j"]
    tot = b.verify_totals(results)
    assert (tot["disagree"], tot["disagree, explained"], tot["agree"]) == (2, 1, 1)
    md = b.verify_markdown(results)
    assert "| p-cuda | k |" in md and "investigated: false alarm: why" in md and "explained by hand: 1" in md
    # the committed notes name kernels of the benchmark's lists
    lists = [os.path.join(ROOT, "bench", f) for f in ("breadth_programs.txt", "breadth_programs_b.txt")]
    progs = {ln.strip() for f in lists for ln in open(f) if ln.strip() and not ln.startswith("#")}
    committed = json.load(open(os.path.join(ROOT, "bench", "breadth_verify_notes.json")))
    assert all(k.split("/")[0] in progs for k in committed if not k.startswith("_"))


def test_a_disagreement_out_of_bounds_under_oclgrind_is_the_cases_fault(monkeypatch):
    b = _breadth()
    oob = {"results": [{"target": "oclgrind", "variant": "-", "status": "FAIL",
                        "message": "oclgrind: Invalid read of size 4 at global memory address 0x30 at k.cu:3:20"}]}
    clean = {"results": [{"target": "oclgrind", "variant": "-", "status": "pass", "message": ""}]}
    for sanitizer, verdict in ((oob, "failed"), (clean, "disagree")):
        docs = [_doc(False, [1.0, 2.0]), _doc(False, [1.0, 2.0]), sanitizer]   # run, run again, Oclgrind
        calls = []

        def fake_run(cmd, **kw):
            calls.append(cmd)
            return subprocess.CompletedProcess(cmd, 1, json.dumps(docs[len(calls) - 1]), "")
        monkeypatch.setattr(b.subprocess, "run", fake_run)
        row = b.verify_kernel(os.path.join(PROG, "main.cu"), _case("cdiv(n, 256)", "256", "y: f32[n] out, n: i32",
                                                                    {"n": 1 << 14}), ["vulkan", "opencl"], 5)
        assert row["verdict"] == verdict and calls[2][calls[2].index("--targets") + 1] == "oclgrind"
        assert calls[2][calls[2].index("--sizes") + 1] == "n=4096"          # small sizes under Oclgrind
        if verdict == "failed":
            assert row["first_verdict"] == "disagree" and "Invalid read of size 4" in row["why"]
        else:
            assert row["bounds"] == "checked at n=4096"


def test_an_agreement_oclgrind_could_not_check_says_its_bounds_are_unchecked(monkeypatch):
    # meanshift's mean_shift_tiling at its fixed N = 10000: the targets agree, Oclgrind times out (its threads past
    # N read past `data`): the row says so instead of passing for a case found in bounds
    b = _breadth()
    agree = {"results": [{"target": "vulkan", "variant": "sg4", "status": "pass", "message": ""},
                         {"target": "opencl", "variant": "-", "status": "pass", "message": ""}],
             "differential": [{"a": "vulkan/sg4", "b": "opencl", "ok": True, "message": "agree"}]}
    late = {"results": [{"target": "oclgrind", "variant": "bounds+races", "status": "timeout",
                         "message": "no result within 120 s (hang?); worker killed"}]}
    clean = {"results": [{"target": "oclgrind", "variant": "bounds+races", "status": "pass", "message": ""}]}
    # the bounds run alone in its call (its uninit partner failed, or Oclgrind could not run that plugin: LLVM's
    # `freeze`) has nothing to compare with but ran under the sanitizer: checked; the uninit run alone is not
    alone = {"results": [{"target": "oclgrind", "variant": "bounds+races", "status": "skipped",
                          "message": "no other target ran this case: nothing to compare with (no reference in the spec)"},
                         {"target": "oclgrind", "variant": "uninit", "status": "FAIL",
                          "message": "Uninitialized value written to c8"}]}
    freeze = {"results": [{"target": "oclgrind", "variant": "bounds+races", "status": "pass", "message": ""},
                          {"target": "oclgrind", "variant": "uninit", "status": "skipped",
                           "message": "oclgrind cannot run this check on this kernel (--uninitialized): `freeze`"}]}
    uninit_only = {"results": [freeze["results"][1]]}
    for sanitizer, bounds in ((late, "unchecked: Oclgrind at n=4096: bounds+races: timeout"),
                              (clean, "checked at n=4096"), (alone, "checked at n=4096"),
                              (freeze, "checked at n=4096"), (uninit_only, "unchecked: Oclgrind at n=4096: no runs")):
        docs = [agree, sanitizer]
        monkeypatch.setattr(b.subprocess, "run", lambda cmd, **kw: subprocess.CompletedProcess(
            cmd, 0, json.dumps(docs.pop(0)), ""))
        row = b.verify_kernel(os.path.join(PROG, "main.cu"), _case("cdiv(n, 256)", "256", "y: f32[n] out, n: i32",
                                                                    {"n": 1 << 14}), ["vulkan", "opencl"], 5)
        assert (row["verdict"], row["bounds"]) == ("agree", bounds)
        totals = b.verify_totals({"p": {"verify": {"k": row}}})
        assert totals.get("agree, bounds unchecked", 0) == (1 if bounds.startswith("unchecked") else 0)


def test_runs_outside_the_launch_contract_are_left_out_not_failed(monkeypatch):
    b = _breadth()
    refused = "compile error: launch refused: the translation needs subgroups of at least 16 lanes"
    doc = {"results": [{"target": "vulkan", "variant": "sg4", "status": "FAIL", "message": refused},
                       {"target": "vulkan", "variant": "sg16", "status": "pass", "message": ""},
                       {"target": "opencl", "variant": "-", "status": "pass", "message": ""}],
           "differential": [{"a": "vulkan/sg16", "b": "opencl", "ok": True, "message": "agree"}]}
    row = b._judge_runs(doc, None, {})
    assert row["verdict"] == "agree" and row["outside_contract"] == ["vulkan/sg4"]
    doc["results"] = doc["results"][:2]
    row = b._judge_runs(doc, None, {})
    assert row["verdict"] == "failed" and "vulkan/sg4 outside the launch contract" in row["why"]
    doc["results"][0]["message"] = "compile error: something else"
    assert b._judge_runs(doc, None, {})["verdict"] == "failed"


def test_a_template_kernels_instances_make_one_row_the_first_that_does_not_agree_decides():
    b = _breadth()
    ok = {"verdict": "agree", "runs": {"opencl": "pass"}}
    bad = {"verdict": "disagree", "why": "vulkan/sg4 vs opencl: out differs"}
    row = b._combine({"k<float>": ok, "k<int>": bad, "k<double>": ok})
    assert row["verdict"] == "disagree" and row["why"] == "k<int>: vulkan/sg4 vs opencl: out differs"
    assert row["instances"] == {"k<float>": "agree", "k<int>": "disagree", "k<double>": "agree"}
    row = b._combine({"k<float>": ok, "k<double>": ok})
    assert row["verdict"] == "agree" and row["instances"] == {"k<float>": "agree", "k<double>": "agree"}
    assert b._combine({"plain": bad}) is bad                    # a kernel that is no template: its row


def test_verify_totals_count_every_valid_kernel_and_a_failure_can_be_explained(tmp_path):
    # a valid kernel no .cu file's derivation reaches (a header nobody includes) is "not reached", not left out
    # of the denominator; an investigated failure (lavapipe's LLVM aborting) is shown beside its verdict
    b = _breadth()
    results = {"p-cuda": {"glsl": {"kernels": {"a": "valid", "b": "valid", "c": "CP907 x"}},
                          "opencl": {"kernels": {"a": "valid", "c": "valid", "h": "valid"}},
                          "verify": {"a": {"verdict": "agree"}, "b": {"verdict": "failed", "why": "crash"},
                                     "c": {"verdict": "underived", "why": "grid: ..."}}}}
    notes = tmp_path / "notes.json"
    notes.write_text(json.dumps({"p-cuda/b": "lavapipe aborts"}))
    b.explain(results, str(notes))
    assert results["p-cuda"]["verify"]["b"]["explained"] == "lavapipe aborts"
    tot = b.verify_totals(results)
    assert (tot["valid kernels"], tot["not reached"], tot["derived"], tot["failed, explained"]) == (4, 1, 2, 1)
    assert "(valid kernels: 4; reached by a `.cu` file's derivation: 3)" in b.verify_markdown(results)


def test_verify_targets_add_the_cuda_original_on_a_gpu(tmp_path, monkeypatch):
    # `--verify-targets cuda,vulkan` (bench/gpu): the CUDA original beside each valid translation; OpenCL left
    # out when not asked for, and a kernel with no valid translation among the asked targets is not run
    b = _breadth()
    prog = tmp_path / "prog-cuda"
    shutil.copytree(PROG, prog)
    seen = {}
    monkeypatch.setattr(b, "verify_kernel", lambda path, case, targets, timeout, label=None, given=None: seen.setdefault(
        case["kernel"], list(targets)) and {"verdict": "agree"})
    res = {"glsl": {"kernels": {"scale": "valid", "shift": "CP907 x"}},
           "opencl": {"kernels": {"scale": "valid", "shift": "valid"}}}
    rows = b.verify_program(str(prog), res, 60, ("cuda", "vulkan"))
    assert seen == {"scale": ["cuda", "vulkan"]} and "shift" not in rows
    seen.clear()
    b.verify_program(str(prog), res, 60)
    assert seen == {"scale": ["vulkan", "opencl"], "shift": ["opencl"]}


@pytest.mark.parametrize("finite_ok,verdict", [(True, "agree"), (False, "disagree")])
def test_a_disagreement_on_special_inputs_is_run_again_with_finite_ones(monkeypatch, finite_ok, verdict):
    # hypterm: inf / NaN / DBL_MAX inputs overflow a stencil in an order the compiler decides; the translations
    # agree on finite inputs (--finite-inputs), which is what counts, and the special-value difference is kept
    b = _breadth()
    docs = [_doc(False, [1.0, 2.0]), _doc(False, [1.0, 2.0]), _doc(finite_ok, [1.0, 2.0]),
            _doc(finite_ok, [1.0, 2.0])]
    calls = []

    def fake_run(cmd, **kw):
        calls.append(cmd)
        return subprocess.CompletedProcess(cmd, 1, json.dumps(docs[len(calls) - 1]), "")
    monkeypatch.setattr(b.subprocess, "run", fake_run)
    case = _case("cdiv(n, 256)", "256", "x: f32[n] in, y: f32[n] out, n: i32", {"n": 64})
    case["init"] = {"x": ["special", [0.02]]}
    row = b.verify_kernel(os.path.join(PROG, "main.cu"), case, ["vulkan"], 5)
    assert "--finite-inputs" not in calls[0] and "--finite-inputs" in calls[2]
    assert row["verdict"] == verdict
    if finite_ok:
        assert row["finite_inputs"] and row["why"].startswith("agree with finite inputs (--finite-inputs); "
                                                             "with special values: vulkan/sg4 vs vulkan/sg16")
    # without special inputs there is nothing to take away: no second kind of run
    calls.clear()
    docs[:] = [_doc(False, [1.0, 2.0]), _doc(False, [1.0, 2.0])]
    case["init"] = {"x": ["uniform", [-1.0, 1.0]]}
    row = b.verify_kernel(os.path.join(PROG, "main.cu"), case, ["vulkan"], 5)
    assert row["verdict"] == "disagree" and len(calls) == 2


@pytest.mark.parametrize("labelled_ok,verdict", [(True, "agree"), (False, "disagree")])
def test_a_disagreement_is_run_again_on_the_programs_input_ranges(monkeypatch, tmp_path, labelled_ok, verdict):
    # tridiagonal: random diagonals make a solver without pivoting amplify rounding; the program's own generator
    # (bench/breadth_inputs.json) gives dominant systems, and agreeing there counts, marked and counted apart
    b = _breadth()
    labels = tmp_path / "labels.json"
    labels.write_text(json.dumps({"p-cuda/k": {"inputs": "b=uniform(4,5)", "source": "main.cu:9"}}))
    label = b.program_inputs("p-cuda", "k<float>", str(labels))
    assert label == {"inputs": "b=uniform(4,5)", "source": "main.cu:9"}
    assert b.program_inputs("p-cuda", "other", str(labels)) is None
    assert b.program_inputs("p-cuda", "k", str(tmp_path / "none.json")) is None
    docs = [_doc(False, [1.0, 2.0]), _doc(False, [1.0, 2.0]), _doc(labelled_ok, [1.0, 2.0]),
            _doc(labelled_ok, [1.0, 2.0])]
    calls = []

    def fake_run(cmd, **kw):
        calls.append(cmd)
        return subprocess.CompletedProcess(cmd, 1, json.dumps(docs[min(len(calls), len(docs)) - 1]), "")
    monkeypatch.setattr(b.subprocess, "run", fake_run)
    case = _case("cdiv(n, 256)", "256", "b: f32[n] in, y: f32[n] out, n: i32", {"n": 64})
    row = b.verify_kernel(os.path.join(PROG, "main.cu"), case, ["vulkan"], 5, label)
    assert "--inputs" not in calls[0] and calls[2][-2:] == ["--inputs", "b=uniform(4,5)"]
    assert row["verdict"] == verdict
    if labelled_ok:
        assert row["program_inputs"] == "b=uniform(4,5)" and row["why"].startswith(
            "agree on the program's input ranges (main.cu:9); with derived inputs: vulkan/sg4 vs vulkan/sg16")
        tot = b.verify_totals({"p-cuda": {"glsl": {"kernels": {"k": "valid"}}, "verify": {"k": row}}})
        assert tot[b.PROGRAM_RANGES] == 1 and tot["agree"] == 1
    else:
        assert "program_inputs" not in row and row["program_inputs_run"].startswith("disagree")
    calls.clear()                       # no label: no third run
    row = b.verify_kernel(os.path.join(PROG, "main.cu"), case, ["vulkan"], 5)
    assert row["verdict"] == "disagree" and len(calls) == 2


def test_a_hang_on_derived_inputs_is_run_again_on_the_programs_inputs(monkeypatch):
    # sampling: each block loops until it has drawn nsamples[b] distinct columns, forever when the derived
    # nsamples exceed ncols (in CUDA too); on the program's nsamples (10 or 11) it ends. A failure that is not a
    # hang (a crash) is not retried
    b = _breadth()
    hang = {"results": [{"target": "opencl", "variant": "-", "status": "timeout", "message": "no result"},
                        {"target": "vulkan", "variant": "sg4", "status": "timeout", "message": "no result"}],
            "differential": []}
    docs = [hang, _doc(True, [1.0])]
    calls = []

    def fake_run(cmd, **kw):
        calls.append(cmd)
        return subprocess.CompletedProcess(cmd, 1, json.dumps(docs[min(len(calls), len(docs)) - 1]), "")
    monkeypatch.setattr(b.subprocess, "run", fake_run)
    case = _case("cdiv(n, 256)", "256", "k: i32[n] in, y: f32[n] out, n: i32", {"n": 64})
    label = {"inputs": "k=uniform(10,12)", "source": "main.cu:94"}
    row = b.verify_kernel(os.path.join(PROG, "main.cu"), case, ["vulkan"], 5, label)
    assert row["verdict"] == "agree" and row["program_inputs"] == "k=uniform(10,12)" and len(calls) == 2
    assert "with derived inputs: opencl: timeout" in row["why"]
    calls.clear()
    for r in hang["results"]:
        r["status"] = "crash"
    docs[:] = [hang]
    row = b.verify_kernel(os.path.join(PROG, "main.cu"), case, ["vulkan"], 5, label)
    assert row["verdict"] == "failed" and len(calls) == 1


def test_a_case_over_the_cap_by_the_programs_fixed_sizes_runs_under_the_large_cap(monkeypatch):
    b = _breadth()
    calls = []

    def fake_run(cmd, **kw):
        calls.append(cmd)
        return subprocess.CompletedProcess(cmd, 0, json.dumps(_doc(True, [1.0])), "")
    monkeypatch.setattr(b.subprocess, "run", fake_run)
    case = _case("cdiv(n, 256)", "256", "t: u64[134217728] inout, n: i32", {"n": 1000})
    row = b.verify_kernel(os.path.join(PROG, "main.cu"), case, ["vulkan"], 5)
    assert row["verdict"] == "failed" and row["why"].startswith("cannot bring") and not calls
    monkeypatch.setattr(b, "LARGE_CAP", 1 << 28)
    row = b.verify_kernel(os.path.join(PROG, "main.cu"), case, ["vulkan"], 5)
    assert (row["verdict"], row["cap"], row["sizes"]) == ("agree", 1 << 28, {"n": 1000}) and len(calls) == 1


def test_the_input_labels_name_kernels_and_parse():
    # every label names PROGRAM/KERNEL, says where the program sets its inputs, and parses as --inputs
    from porter.verify.nospec import parse_inputs
    labels = json.load(open(os.path.join(ROOT, "bench", "breadth_inputs.json")))
    for key, label in labels.items():
        if key.startswith("_") or "configuration" in label:    # tests/test_verify_chain_config.py
            continue
        assert re.fullmatch(r"[\w.+-]+-cuda/\w+", key) and re.search(r"\.(cu|h|cuh):\d+", label["source"])
        if "spec" in label:             # a hand-written spec in bench/specs/ instead of inputs
            assert os.path.isfile(os.path.join(ROOT, label["spec"])) and "inputs" not in label
            continue
        assert parse_inputs(label["inputs"])


def test_runs_of_one_implementation_alone_are_not_an_agreement():
    # lavapipe's subgroup sizes share one compiler (which ends every loop after 65535 iterations in all, at each
    # size alike): three agreeing lavapipe runs with OpenCL refused prove less than two implementations agreeing
    b = _breadth()
    runs = [{"target": "vulkan", "variant": f"sg{s}", "status": "pass", "message": ""} for s in (4, 8, 16)]
    doc = {"results": runs, "differential": [{"a": "vulkan/sg4", "b": "vulkan/sg8", "ok": True, "message": ""}]}
    row = b._judge_runs(doc, None, {})
    assert row["verdict"] == "failed" and row["why"].startswith("only vulkan ran")
    doc["results"] = runs + [{"target": "opencl", "variant": "-", "status": "pass", "message": ""}]
    assert b._judge_runs(doc, None, {})["verdict"] == "agree"


def _union_module():
    spec = importlib.util.spec_from_file_location("breadth_union", os.path.join(ROOT, "bench", "breadth_union.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_union_counts_either_side_but_not_a_gpu_agreement_on_a_case_out_of_bounds(tmp_path):
    u = _union_module()

    def write(name, rows):
        path = tmp_path / name
        path.write_text(json.dumps({"results": {p: {"verify": {k: {"verdict": v, "why": w} for k, (v, w) in ks.items()}}
                                                for p, ks in rows.items()}}))
        return str(path)
    oob = "out of bounds under the derived sizes (Oclgrind at n=8: invalid read)"
    cpu_old = write("cpu7.json", {"p": {"a": ("agree", ""), "b": ("failed", "x")}, "q": {"c": ("disagree", "d")},
                                  "t": {"e": ("agree", ""), "f": ("nondeterministic", "a second run changed")}})
    cpu_new = write("cpu8.json", {"p": {"a": ("failed", oob), "b": ("agree", "")}, "t": {}})   # replaces p only
    gpu = write("gpu.json", {"p": {"a": ("agree", "")}, "q": {"c": ("agree", "")}, "t": {"f": ("agree", "")}})
    (tmp_path / "gpu.err").write_text("  verify q c<float>: failed cuda: crash\n  verify r k<int, 3>: agree \n")
    got = u.union(u.latest([cpu_old, cpu_new]), u.latest([gpu, str(tmp_path / "gpu.err")]))
    assert got[("p", "b")] == "cpu" and got[("r", "k")] == "gpu"
    assert got[("p", "a")].startswith("CPU: failed out of bounds")     # the GPU's agreement proves nothing there
    assert got[("q", "c")].startswith("CPU: disagree d | GPU: failed")  # the log's row replaced the JSON's
    assert got[("t", "e")] == "cpu" and len(got) == 6        # t: not verified in the later CPU run: kept
    assert got[("t", "f")].startswith("CPU: nondeterministic")         # one agreeing GPU run of a race: luck


def test_union_never_counts_a_kernel_the_notes_veto(tmp_path):
    # myocyte: a race found in the original; one CPU round saw it change between runs, the next did not, and the
    # GPU agreed: the notes' "_veto" keeps it from counting whatever the runs say
    u = _union_module()
    notes = tmp_path / "notes.json"
    notes.write_text(json.dumps({"_veto": {"m-cuda/kernel": "a race in the original"}, "m-cuda/other": "x"}))
    veto = u.known_wrong(str(notes))
    assert veto == {("m-cuda", "kernel"): "a race in the original"}
    assert u.known_wrong(str(tmp_path / "missing.json")) == {}
    cpu = {("m-cuda", "kernel"): ("disagree", "NaN vs 3.2"), ("m-cuda", "other"): ("agree", "")}
    gpu = {("m-cuda", "kernel"): ("agree", "")}
    assert u.union(cpu, gpu)[("m-cuda", "kernel")] == "gpu"            # without the veto it would count
    got = u.union(cpu, gpu, veto)
    assert got[("m-cuda", "kernel")] == "vetoed: a race in the original" and got[("m-cuda", "other")] == "cpu"
    shipped = u.known_wrong()                                           # the repository's own notes
    assert ("myocyte-cuda", "kernel") in shipped


def test_a_kernel_labelled_with_a_spec_is_verified_on_it_and_counted_apart(monkeypatch, tmp_path):
    # dpid's derived Params draw the patch sizes at random and read past the image: its label names a hand-written
    # spec with the program's values; every case must pass on two targets and run clean under Oclgrind
    b = _breadth()
    label = {"spec": "bench/specs/x_spec.py", "source": "main.cu:56"}

    def res(case, target, variant, status, message=""):
        return {"case": case, "target": target, "variant": variant, "status": status, "message": message}
    agree = {"results": [res(c, t, v, "pass") for c in ("a", "b") for t, v in (("vulkan", "sg4"), ("opencl", "-"))]}
    clean = {"results": [res(c, "oclgrind", "bounds+races", "pass") for c in ("a", "b")]}
    oob = {"results": [res("a", "oclgrind", "bounds+races", "FAIL", "Invalid read of size 4 at global address")]}
    wrong = {"results": agree["results"][:3] + [res("b", "opencl", "-", "FAIL", "out: 3 of 8 differ")]}
    lone = {"results": [res("a", "vulkan", "sg4", "pass")]}
    calls = []
    for docs, verdict, want in (([agree, clean], "agree", "checked on the spec's 2 cases"),
                                ([agree, oob], "failed", "out of bounds under the spec's sizes"),
                                ([wrong], "disagree", "b opencl/-: FAIL: out: 3 of 8 differ"),
                                ([lone], "failed", "fewer than two targets ran")):
        def run(cmd, docs=docs, **kw):
            calls.append((cmd, kw.get("env", {}).get("CUPORT_HEC_SRC")))
            return subprocess.CompletedProcess(cmd, 0, json.dumps(docs.pop(0)), "")
        monkeypatch.setattr(b.subprocess, "run", run)
        row = b.verify_spec(str(tmp_path / "src" / "p-cuda"), "k", label, ["vulkan", "opencl"], 5)
        assert row["verdict"] == verdict and want in (row.get("bounds", "") + row.get("why", "")), row
    cmd, src = calls[0]
    assert cmd[cmd.index("--kernels") + 1] == "k" and cmd[4].endswith("bench/specs/x_spec.py")
    assert src == str(tmp_path / "src")                 # the spec finds the program in this corpus
    totals = b.verify_totals({"p": {"verify": {"k": {"verdict": "agree", "spec": label["spec"]}}}})
    assert totals["agree, hand-written spec"] == 1


def test_outputs_are_matched_to_kernels_as_the_translators_name_them(tmp_path):
    # `_nqmv<32>` is written as `nqmv_32` (no leading `_`): still the kernel `_nqmv` (lut-gemm's rows said
    # silent_exit0); an exact name first, the longest instance prefix next
    b = _breadth()
    found = {"_nqmv": "mv_fp16.h", "_nqmv_bias": "mv_fp16.h", "mean_shift": "a.cu", "mean_shift_tiling": "a.cu"}
    for name in ("kernels.nqmv_32", "kernels.nqmv_bias_64", "mean_shift_tiling", "mean_shift_2"):
        (tmp_path / f"{name}.comp").write_text("")
    assert b.outputs(str(tmp_path), "glsl", found) == {"_nqmv", "_nqmv_bias", "mean_shift", "mean_shift_tiling"}
    (tmp_path / "k.cl").write_text("__kernel void nqmv_bias_32(int a) {}\n__kernel void other(int a) {}\n")
    assert b.outputs(str(tmp_path), "opencl", found) == {"_nqmv_bias", "other"}
