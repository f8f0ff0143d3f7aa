"""The verify spec notation: signatures, shapes, launch expressions, errors with positions, cases."""
import numpy as np
import pytest

from porter.verify.spec import (Case, SpecError, Tol, find_specs, load_spec, parse_expr, parse_launch,
                                parse_signature, uniform, zeros)

FIXTURES = "tests/verify_fixtures"


def test_signature_arrays_scalars_and_directions():
    sig = parse_signature("x: f32[n] in, y: f32[n] inout, a: f32 = 2.5, n: i32, C: f64[m, k * 2] out")
    assert [p.name for p in sig] == ["x", "y", "a", "n", "C"]
    x, y, a, n, c = sig
    assert (x.dtype, x.direction, x.is_array) == ("f32", "in", True)
    assert y.direction == "inout" and c.direction == "out"
    assert not a.is_array and a.default.eval({}) == 2.5
    assert n.default is None and n.np_dtype == np.int32
    assert [e.eval({"m": 3, "k": 5}) for e in c.shape] == [3, 10]
    assert [p.name for p in sig.outputs] == ["y", "C"]


def test_array_without_direction_is_checked_as_inout():
    (p,) = parse_signature("data: u64[n]")
    assert p.direction == "inout" and p.dtype == "u64"


@pytest.mark.parametrize("text, column, fragment", [
    ("x: f32[n] in,, y: f32", 14, "unexpected ','"),
    ("x: f33[n]", 4, "expected a dtype"),
    ("x: f32[n", 9, "unexpected end"),
    ("x f32", 3, "expected ':'"),
    ("n: i32 out", 1, "cannot have a direction"),
    ("x: f32[n] = 3", 1, "cannot have a default"),
    ("x: f32[n], x: f32[n]", 12, "appears twice"),
])
def test_signature_errors_point_at_the_column(text, column, fragment):
    with pytest.raises(SpecError) as err:
        parse_signature(text)
    assert err.value.column == column
    assert fragment in str(err.value)
    assert str(err.value).splitlines()[-1] == "  " + " " * (column - 1) + "^"


def test_launch_expressions():
    env = {"n": 1000, "m": 33}
    assert [e.eval(env) for e in parse_launch("ceil(n / 256)")] == [4]
    assert [e.eval(env) for e in parse_launch("(ceil(n/16), ceil(m/16))")] == [63, 3]
    assert [e.eval(env) for e in parse_launch("(n // 256, cdiv(m, 16), 1)")] == [3, 3, 1]
    assert [e.eval(env) for e in parse_launch(256)] == [256]
    assert parse_expr("0x10 + 2 ** 3 - -1 + min(n, 7) % 4").eval(env) == 28


@pytest.mark.parametrize("text, fragment", [
    ("ceil(n /", "unexpected end"),
    ("(1, 2, 3, 4)", "at most 3"),
    ("n $ 2", "unexpected character '$'"),
    ("foo(n)", "unknown function 'foo'"),
])
def test_launch_errors(text, fragment):
    with pytest.raises(SpecError, match=None) as err:
        parse_launch(text)
    assert fragment in str(err.value)


def _case(**kw):
    base = dict(kernel="saxpy", source="saxpy.cu", signature="n: i32, a: f32 = 2.5, x: f32[n] in, y: f32[n] inout",
                grid="ceil(n / 256)", block="256", reference=lambda a, x, y: {"y": a * x + y},
                sizes=[{"n": 1000}])
    return Case(**{**base, **kw})


def test_case_launch_args_and_reference():
    case = _case(init={"y": zeros()})
    grid, block = case.launch({"n": 1000})
    assert grid == (4, 1, 1) and block == (256, 1, 1)
    args = case.make_args({"n": 1000})
    assert list(args) == ["n", "a", "x", "y"]                   # CUDA parameter order
    assert args["n"].dtype == np.int32 and args["a"].dtype == np.float32
    assert args["x"].shape == (1000,) and not args["y"].any()
    again = case.make_args({"n": 1000})
    assert np.array_equal(args["x"], again["x"])                 # seeded: reproducible
    want = case.expected(args, {"n": 1000})
    assert np.allclose(want["y"], 2.5 * args["x"])


def test_out_arrays_start_poisoned_and_defaults_per_dtype():
    case = _case(signature="x: f32[n] in, o: f32[n] out, k: i32[n] out, n: i32", reference=lambda x: (x, x))
    args = case.make_args({"n": 8})
    assert np.isnan(args["o"]).all() and (args["k"] == np.iinfo(np.int32).max).all()
    assert case.tolerance(case.sig["o"]) == Tol(1e-5, 1e-6) and case.tolerance(case.sig["k"]) == Tol(0, 0)


def test_case_validation_messages():
    with pytest.raises(SpecError, match="scalar 'm' needs a default"):
        _case(signature="x: f32[n] in, m: i32")
    with pytest.raises(SpecError, match="grid uses unknown name"):
        _case(grid="ceil(q / 256)")
    with pytest.raises(SpecError, match="init for unknown parameter"):
        _case(init={"z": uniform()})
    with pytest.raises(SpecError, match="signature: unexpected"):
        _case(signature="x: f32[n] in,")
    with pytest.raises(SpecError, match="not an integer"):
        _case(grid="n / 256").launch({"n": 1000})


def test_defines_are_names_and_expectations_per_variant():
    case = _case(defines={"TILE": 16}, block="(TILE, TILE)", grid="(ceil(n / TILE), 1)",
                 expect={"vulkan/sg8": "fail", "cuda": "fail"})
    assert case.launch({"n": 100}) == ((7, 1, 1), (16, 16, 1))
    assert case.define_flags() == ["-DTILE=16"] and case.id == "saxpy[TILE=16]"
    assert case.expect_for("vulkan", "sg8") == "fail" and case.expect_for("vulkan", "sg16") is None
    assert case.expect_for("cuda", "-") == "fail"


def test_fixture_and_example_specs_load():
    cases = load_spec(f"{FIXTURES}/verify_spec.py")
    assert cases[0].id == "saxpy" and cases[0].translation_for("vulkan", "glsl")[1].name == "saxpy.comp.json"
    found = find_specs(["examples"])
    ids = {c.id for _, cs in found for c in cs}
    assert {"saxpy", "AddKernel", "warp_reduce_fixed", "sgemm_optimized", "matmul_tiled[TILE_SIZE=32]"} <= ids
    only = find_specs(["examples/sgemm/sgemm_fixed.cu"])
    assert [c.id for _, cs in only for c in cs] == ["sgemm_fixed"]
