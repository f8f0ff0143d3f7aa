"""Issue 14 item 2: structs with one non-virtual base class (struct_bases.py): the base's fields first, then the
struct's own. Fixture: tests/fixtures/breadth/bases/ (verify_spec.py against NumPy on lavapipe 4/8/16 and PoCL);
what C cannot lay out as C++ does stays refused at the struct's definition."""
import json
import os

import pytest

from porter.translate.api import translate_file
from kernel_helpers import assert_fixture_valid, assert_spec_passes, outputs, refusal, translate_text

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "breadth", "bases")
KERNELS = {"gather_strided", "triple_sums"}


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_fixture_translates_every_kernel_to_valid_output(target):
    assert_fixture_valid(os.path.join(FIX, "bases.cu"), target, KERNELS)


def test_fixture_matches_numpy_on_lavapipe_and_pocl(monkeypatch):
    assert_spec_passes(monkeypatch, os.path.join(FIX, "verify_spec.py"), KERNELS)


@pytest.mark.parametrize("target", ["glsl", "opencl"])
def test_base_fields_come_first(target):
    res = translate_file(os.path.join(FIX, "bases.cu"), target, validate=False)
    man = res.manifests["gather_strided"]
    man = json.loads(man) if isinstance(man, str) else man
    assert [p["name"] for p in man["params"]] == ["view_data", "view_n", "view_stride", "out"]
    text = res.shaders["triple_sums"] if target == "glsl" else res.text
    body = "    int a;\n    float b;\n    float c;\n"
    assert body in text, text


S = "__global__ void k(D d, float *out) {\n  out[0] = d.y;\n}\n"
REFUSED = [
    # a vtable in the base: the base is not its fields (refused at the base, whose layout leads the struct's)
    ("struct B { float x; __device__ virtual float f() const { return x; } };\nstruct D : B { float y; };\n" + S,
     1, "struct `B`: field `x` is at byte 8 in CUDA, at 0"),
    # a virtual base, two bases: the struct keeps only its own fields, which are not its bytes
    ("struct B { float x; };\nstruct D : virtual B { float y; };\n" + S, 2, "field `y` is at byte 8 in CUDA, at 0"),
    ("struct B { float x; };\nstruct C { float z; };\nstruct D : B, C { float y; };\n" + S, 3, "at 0 in the"),
    # C++ does not reuse a POD base's tail padding, C packs `y` right after `c`
    ("struct B { int x; char c; };\nstruct D : B { char y; };\n__global__ void k(D d, float *out) {\n"
     "  out[0] = d.y;\n}\n", 2, "field `y` is at byte 8 in CUDA, at 5"),
    # a field named like the base's: two members of one name
    ("struct B { float y; };\nstruct D : B { float y; };\n" + S, 2, "at 0 in the"),
]


@pytest.mark.parametrize("target", ["glsl", "opencl"])
@pytest.mark.parametrize("code,line,what", REFUSED)
def test_what_c_cannot_lay_out_stays_refused_at_the_struct(tmp_path, target, code, line, what):
    res = translate_text(tmp_path, target, code)
    assert "k" not in outputs(res)
    d = refusal(res)
    assert d.row == line and what in d.message, (d.row, d.message)
