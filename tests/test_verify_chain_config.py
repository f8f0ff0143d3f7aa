"""Session 11 (s11-derive): `chain()` inputs for kernels that follow the links of a linked list, and breadth's
labels for a kernel only the program's other configuration launches (bench/breadth.py configured)."""
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from porter.verify.backends import opencl, vulkan
from porter.verify.spec import SpecError, chain
from verify_fixtures.helpers import LAVAPIPE_ICD

ROOT = Path(__file__).resolve().parents[1]
needs_cpu_targets = pytest.mark.skipif(
    not (vulkan.available()[0] and os.path.exists(LAVAPIPE_ICD) and opencl.available()[0]),
    reason="needs Vulkan on lavapipe and OpenCL (PoCL)")


def _walk(nxt):
    """The order of a list's elements from element 0, following nxt until -1 (None on a cycle)."""
    seen, i = [], 0
    while i != -1:
        if i in seen:
            return None
        seen.append(int(i))
        i = int(nxt[i])
    return seen


def test_chain_is_one_list_through_every_element_from_the_head():
    rng = np.random.default_rng(3)
    nxt = chain()(rng, (500,), np.dtype(np.int32))
    assert sorted(_walk(nxt)) == list(range(500)) and (nxt == -1).sum() == 1
    assert _walk(np.arange(1, 4).tolist() + [0]) is None         # the helper sees a cycle (random links make them)
    packed = chain(32)(np.random.default_rng(3), (500,), np.dtype(np.int64))
    links, rank = packed >> 32, packed & 0xFFFFFFFF
    assert sorted(_walk(links)) == list(range(500))
    assert rank.tolist() == [0 if n == -1 else 1 for n in links.tolist()]   # list ranking's rank: 1, the tail 0
    assert np.array_equal(links, chain()(np.random.default_rng(3), (500,), np.dtype(np.int64)))


@pytest.mark.parametrize("shift,dtype,n,why", [(None, np.float32, 8, "signed integers"),
                                               (3, np.int64, 9, "cannot hold a rank of 9"),
                                               (32, np.int32, 8, "cannot hold")])
def test_chain_refuses_what_cannot_hold_the_links(shift, dtype, n, why):
    with pytest.raises(SpecError, match=why):
        chain(shift)(np.random.default_rng(0), (n,), np.dtype(dtype))


def test_chain_parses_as_inputs():
    from porter.verify.nospec import parse_inputs
    assert parse_inputs("list=chain(32),nxt=chain()") == {"list": ("chain", (32,)), "nxt": ("chain", ())}
    for bad, why in [("l=chain(1.5)", "integer shift"), ("l=chain(1, 2)", "takes 0 or 1"), ("l=chain(x)", "numbers")]:
        with pytest.raises(ValueError, match=why):
            parse_inputs(bad)


RANK = """__global__ void rank_of(const int *nxt, int *rank, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    int c = 0;
    for (int j = i; nxt[j] != -1; j = nxt[j]) c++;
    rank[i] = c;
  }
}
int main() {
  const int n = 1000; int *nxt, *rank;
  cudaMalloc(&nxt, n * sizeof(int)); cudaMalloc(&rank, n * sizeof(int));
  rank_of<<<(n + 255) / 256, 256>>>(nxt, rank, n);
}
"""


@needs_cpu_targets
def test_a_kernel_following_links_runs_on_a_chain(tmp_path):
    # derived inputs would be random links (cycles: the walk never ends); on one list it ends, and each element's
    # distance to the tail is a permutation of 0..n-1 on both targets
    src = tmp_path / "rank.cu"
    src.write_text(RANK)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "VK_ICD_FILENAMES": LAVAPIPE_ICD}
    p = subprocess.run([sys.executable, "-m", "porter", "verify", str(src), "--targets", "vulkan,opencl",
                        "--subgroup-sizes", "4", "--inputs", "nxt=chain()", "--output-format", "json",
                        "--timeout", "60"], capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert [r["status"] for r in doc["results"]] == ["pass", "pass"], doc["results"]
    from porter.verify.nospec import derived_cases, parse_inputs
    ((_, (case,)),), _ = derived_cases(str(src), False, inputs=parse_inputs("nxt=chain()"))
    args = case.make_args(case.sizes[0])
    order = _walk(args["nxt"])
    assert sorted(order) == list(range(case.sizes[0]["n"]))


# ------------------------------------------------------------------------------------------------------------
# breadth: a kernel launched only in the program's other configuration

HEADER = """// 0 runs the full filter, 1 the simple one
#define USE_SIMPLE {value}
"""
PROG = """#include "conf.h"
__global__ void simple(const float *x, float *y, int n, int m) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i % m] + 1.0f;
}
__global__ void full(const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * x[i];
}
int main() {
  const int n = 4096; float *x, *y;
  cudaMalloc(&x, n * sizeof(float)); cudaMalloc(&y, n * sizeof(float));
#if USE_SIMPLE
  simple<<<(n + 255) / 256, 256>>>(x, y, n, n / 2);
#else
  full<<<(n + 255) / 256, 256>>>(x, y, n);
#endif
}
"""


def _breadth():
    spec = importlib.util.spec_from_file_location("breadth", ROOT / "bench" / "breadth.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _program(tmp_path):
    prog = tmp_path / "src" / "conf-cuda"
    prog.mkdir(parents=True)
    (prog / "conf.h").write_text(HEADER.format(value=0))
    (prog / "main.cu").write_text(PROG)
    return prog


@needs_cpu_targets
def test_a_kernel_of_the_other_configuration_is_verified_in_a_copy_and_counted_apart(tmp_path, monkeypatch):
    monkeypatch.setenv("VK_ICD_FILENAMES", LAVAPIPE_ICD)
    b = _breadth()
    prog = _program(tmp_path)
    labels = tmp_path / "labels.json"
    conf = {"file": "conf.h", "line": 2, "from": "#define USE_SIMPLE 0", "to": "#define USE_SIMPLE 1"}
    labels.write_text(json.dumps({"conf-cuda/simple": {"configuration": conf, "source": "conf.h:1-2"}}))
    monkeypatch.setattr(b, "INPUTS", str(labels))
    res = {t: {"kernels": {"simple": "valid", "full": "valid"}} for t in ("glsl", "opencl")}
    rows = b.verify_program(str(prog), res, 120)
    assert rows["full"]["verdict"] == "agree" and "configuration" not in rows["full"], rows["full"]
    row = rows["simple"]
    assert row["verdict"] == "agree" and row["configuration"] == "conf.h:2 `#define USE_SIMPLE 1`", row
    assert row["why"].startswith("agree in the program's alternative configuration conf.h:2") and row["bounds"]
    assert (prog / "conf.h").read_text() == HEADER.format(value=0)        # the program itself is left as it was
    tot = b.verify_totals({"conf-cuda": {**res, "verify": rows}})
    assert (tot["agree"], tot[b.ALTERNATIVE]) == (2, 1)
    # the line is not what the label expects (another revision of the program): underived, saying so
    (prog / "conf.h").write_text(HEADER.format(value="(0)"))
    row = b.verify_program(str(prog), res, 120)["simple"]
    assert row["verdict"] == "underived" and "conf.h line 2 is not `#define USE_SIMPLE 0`" in row["why"], row
    # without a label the kernel stays underived with derive's reason
    labels.write_text("{}")
    row = b.verify_program(str(prog), res, 120)["simple"]
    assert row["verdict"] == "underived" and "preprocessor leaves out" in row["why"], row


def test_the_configuration_labels_name_a_line_and_where_the_program_offers_it():
    labels = json.load(open(ROOT / "bench" / "breadth_inputs.json"))
    confs = {k: v for k, v in labels.items() if not k.startswith("_") and "configuration" in v}
    assert "recursiveGaussian-cuda/SimpleRecursiveRGBA" in confs
    for key, label in confs.items():
        c = label["configuration"]
        assert set(c) == {"file", "line", "from", "to"} and c["from"] != c["to"] and "inputs" not in label
        assert re.search(rf"{re.escape(c['file'])}:[\d-]*\b{c['line']}\b", label["source"]), label["source"]


# ------------------------------------------------------------------------------------------------------------
# a scalar the source takes from the program's data (streamcluster's `x = feasible[x]`): the label gives it

PICK = """__global__ void pick(const float *c, float *y, long x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = c[i] - c[x];
}
int main() {
  const int n = 1000; float *c, *y;
  int *feasible = (int *)malloc(n * sizeof(int));
  for (int i = 0; i < n; i++) feasible[i] = i;
  cudaMalloc(&c, n * sizeof(float)); cudaMalloc(&y, n * sizeof(float));
  for (int j = 0; j < 3; j++) pick<<<(n + 255) / 256, 256>>>(c, y, feasible[j], n);
}
"""


def test_inputs_give_a_scalar_derive_could_not_and_nothing_else(tmp_path, capsys):
    from porter.verify.nospec import derived_cases, parse_inputs
    src = tmp_path / "pick.cu"
    src.write_text(PICK)
    assert derived_cases(str(src), False) == ([], True)                 # `x` is not a size the source gives
    assert derived_cases(str(src), False, inputs=parse_inputs("c=uniform(0,1)")) == ([], True)
    ((_, (case,)),), refused = derived_cases(str(src), False, inputs=parse_inputs("x=7"))
    assert not refused and case.make_args(case.sizes[0])["x"] == 7
    assert "'x' = 7 from --inputs ('x': cannot express `feasible[j]` as a size)" in capsys.readouterr().err


def test_breadth_runs_a_kernel_whose_label_gives_its_underived_scalar(monkeypatch):
    b = _breadth()
    ds = [{"kernel": "k", "problems": ["x: 'x': cannot express `feasible[j]` as a size"]}]
    assert b.problems_given(ds, {"inputs": "x=1", "source": "main.cu:9"})
    assert not b.problems_given(ds, {"inputs": "y=1", "source": "main.cu:9"})
    assert not b.problems_given(ds, {"inputs": "x=uniform(0,4)", "source": "main.cu:9"})    # a scalar's value
    assert not b.problems_given([{"kernel": "k", "problems": []}], {"inputs": "x=1", "source": "main.cu:9"})
    assert not b.problems_given(ds + [{"kernel": "k2", "problems": ["grid: no launch"]}],
                                {"inputs": "x=1", "source": "main.cu:9"})
    calls = []
    doc = {"results": [{"target": t, "variant": v, "status": "pass", "message": None}
                       for t, v in (("vulkan", "sg4"), ("opencl", "-"))], "differential": []}

    def fake_run(cmd, **kw):
        calls.append(cmd)
        return subprocess.CompletedProcess(cmd, 0, json.dumps(doc), "")
    monkeypatch.setattr(b.subprocess, "run", fake_run)
    case = {"path": "/x/main.cu", "kernel": "k", "signature": "c: f32[n] in, y: f32[n] out, x: i64 = 1, n: i32",
            "grid": "cdiv(n, 256)", "block": "256", "shared_mem": "0", "sizes": [{"n": 64}], "init": {}, "tol": {},
            "translate": {}}
    given = {"inputs": "x=1", "source": "main.cu:9"}
    row = b.verify_kernel("/x/main.cu", case, ["vulkan", "opencl"], 5, given, given=given)
    assert all(c[c.index("--inputs") + 1] == "x=1" for c in calls) and len(calls) == 2     # the runs and Oclgrind
    assert row["verdict"] == "agree" and row["program_inputs"] == "x=1"
    assert row["why"] == "agree on the program's value (main.cu:9)"
