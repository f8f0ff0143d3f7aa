"""Issue 14 item 2: pointers to arrays over the arrays' elements (HeCBench bitpermute's
`fr_t (*xchg)[Z][Z] = reinterpret_cast<decltype(xchg)>(exchange)`, array_pointers.py): `xchg[a][b][c]` becomes an
element offset into the array it points into. Fixture: tests/fixtures/breadth/pointers/array_pointers.cu, checked
against NumPy on lavapipe (subgroups 4/8/16) and PoCL; what is not an element access stays refused at its line."""
import os

import pytest

from porter.translate.api import translate_file
from kernel_helpers import assert_fixture_valid, assert_spec_passes, outputs, refusal, translate_text

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "breadth", "pointers")
KERNELS = {"tile_transpose", "row_sums"}


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_fixture_translates_every_kernel_to_valid_output(target):
    assert_fixture_valid(os.path.join(FIX, "array_pointers.cu"), target, KERNELS)


def test_fixture_matches_numpy_on_lavapipe_and_pocl(monkeypatch):
    assert_spec_passes(monkeypatch, os.path.join(FIX, "array_pointers_spec.py"), KERNELS)


def test_spellings():
    res = translate_file(os.path.join(FIX, "array_pointers.cu"), "glsl", validate=False)
    assert "exchange[(g * 8u + j) * 8u + i] = in_[t * Z + j];" in res.shaders["tile_transpose"]
    assert "m[r * 5 + 4] = -m[r * 5 + 0];" in res.shaders["row_sums"]
    o = translate_file(os.path.join(FIX, "array_pointers.cu"), "opencl", validate=False).text
    assert "__local long* xchg = exchange;" in o and "out[t * Z + j] = xchg[(g * 8u + i) * 8u + j];" in o
    assert "__global float* mat = m;" in o


H = "__global__ void k(float *out, float *m) {\n"
REFUSED = [
    # a reinterpretation: the pointer made from another element type
    ("__global__ void k(float *out, int *m) {\n  float (*p)[4] = (float (*)[4])m;\n  out[0] = p[0][0];\n}\n",
     2, "not a pointer to its elements `float`"),
    # a row taken as a pointer, the pointer moved, compared whole, reassigned
    (H + "  float (*p)[4] = (float (*)[4])m;\n  float *row = p[1];\n  out[0] = row[0];\n}\n", 3, "used other than"),
    (H + "  float (*p)[4] = (float (*)[4])m;\n  out[0] = (p + 1)[0][0];\n}\n", 3, "used other than"),
    (H + "  float (*p)[4] = (float (*)[4])m;\n  p = (float (*)[4])out;\n  out[0] = p[0][0];\n}\n", 2,
     "reassigned"),
    # no value: bound by nothing
    (H + "  float (*p)[4];\n  out[0] = 0.f;\n}\n", 2, "declared without a value"),
]


@pytest.mark.parametrize("target", ["glsl", "opencl"])
@pytest.mark.parametrize("code,line,what", REFUSED)
def test_what_is_not_an_element_access_stays_refused(tmp_path, target, code, line, what):
    res = translate_text(tmp_path, target, code)
    assert "k" not in outputs(res)
    d = refusal(res)
    assert d.row == line and what in d.message, (d.row, d.message)
