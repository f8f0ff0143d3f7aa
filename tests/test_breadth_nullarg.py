"""OpenCL: a null pointer constant passed for a pointer parameter (secp256k1's `gej_add_ge_var(&sum, &sum,
&ge[i], 0)`), an array field passed as a pointer (`fe_sqr_inner(r->n, a->n)`), a local array of structs (its
struct declared). GLSL has no null pointer to bind: refused at the argument. Fixture: tests/fixtures/breadth/
nullarg/ (verify_spec.py checks it against NumPy on PoCL)."""
import os

import pytest

from porter.translate.api import translate_file
from kernel_helpers import (assert_refused_at, can_validate, expected_runs, failures, outputs, ran_keys, run_spec)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "breadth", "nullarg")
SRC = os.path.join(FIX, "nullarg.cu")


def test_opencl_translates_to_valid_output():
    res = translate_file(SRC, "opencl", validate=can_validate("opencl"))
    assert outputs(res) == {"fe_sums"}, [d.message for d in res.diagnostics]
    if res.extra.get("validation"):
        assert all(v["ok"] for v in res.extra["validation"].values()), res.extra["validation"]
    o = res.text
    assert "typedef struct" in o and "Pair p[2];" in o
    assert "add_limbs_ppp((*r).n, (*x).n, (*y).n);" in o.replace("r->n", "(*r).n").replace("x->n", "(*x).n") \
        .replace("y->n", "(*y).n")
    assert ", 0);" in o and "if (carry != 0) {" in o


def test_glsl_refuses_the_null_argument_at_its_line(tmp_path):
    with open(SRC) as f:
        code = f.read()
    line = code.splitlines().index("  combine(&s, &p[0].a, &p[1].b, 0);") + 1
    assert_refused_at(tmp_path, "glsl", code, line, "a null pointer", kernel="fe_sums")


def test_matches_numpy_on_pocl(monkeypatch):
    results = run_spec(monkeypatch, os.path.join(FIX, "verify_spec.py"), targets=("opencl",))
    assert not failures(results), failures(results)
    want = expected_runs({"fe_sums"}, targets=("opencl",))
    assert want <= ran_keys(results), sorted(want - ran_keys(results))
