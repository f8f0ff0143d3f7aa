"""Issue 10 item 3: no translation from a broken AST. Every clang error is a CP000; a kernel whose code or any
declaration it uses holds one is refused (exit 1, no output written); host code no kernel uses may be broken;
unknown names are named with how to supply them. Fixtures: tests/fixtures/broken_ast/."""
import os
import subprocess
import sys

import pytest

from porter.frontend.build import build_model
from porter.lint.checker import lint_source, syntax_error_count
from porter.source import SourceFile
from porter.translate.api import translate_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "broken_ast")
TARGETS = ("glsl", "opencl")


def cuport(*args, cwd=None):
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("CUPORT_TEST_REJECT", None)
    return subprocess.run([sys.executable, "-m", "porter", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def fx(name):
    return os.path.join(FIX, name)


def errors(res, code="CP000"):
    return [(d.row, d.severity, d.message) for d in res.diagnostics if d.code == code]


def refusal(res, kernel):
    return [d for d in res.diagnostics if d.code == "CP000" and f"kernel `{kernel}` not translated" in d.message]


def outputs(res):
    return set(res.shaders) if res.target == "glsl" else set(res.manifests)


def test_parse_has_no_error_limit():
    model = build_model(SourceFile("m.cu", open(fx("many_errors.cu")).read()))
    assert len(model.errors) == 61 and model.errors[-1].line == 67      # clang's limit would stop at 50
    assert syntax_error_count(model) == 61


@pytest.mark.parametrize("target", TARGETS)
def test_syntax_error_inside_kernel_refuses_it(target, tmp_path):
    res = translate_file(fx("syntax_in_kernel.cu"), target)
    assert outputs(res) == {"clean"} and set(res.failed_kernels) == {"broken"}
    d = refusal(res, "broken")
    assert len(d) == 1 and d[0].row == 3 and d[0].severity == "error" and "line 4: expected expression" in d[0].message
    assert (4, "error", "expected expression") in errors(res)
    r = cuport("translate", "--to", target, fx("syntax_in_kernel.cu"), "-o", str(tmp_path / "out"))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "syntax_in_kernel.cu:3:17: CP000 [error] kernel `broken` not translated" in r.stderr
    written = sorted(os.listdir(tmp_path / "out"))
    if target == "glsl":
        assert written == ["clean.comp"]                   # no file for the refused kernel
    else:
        text = (tmp_path / "out" / "syntax_in_kernel.cl").read_text()
        assert "__kernel void clean" in text and "broken" not in text


@pytest.mark.parametrize("target", TARGETS)
def test_semantic_error_in_called_device_function(target):
    res = translate_file(fx("device_fn_error.cu"), target)
    assert outputs(res) == {"independent"} and set(res.failed_kernels) == {"uses_scale"}
    d = refusal(res, "uses_scale")
    assert d[0].row == 6 and "line 3: use of undeclared identifier 'undeclared_gain'" in d[0].message
    name = [m for row, sev, m in errors(res) if row == 3]
    assert name and name[0].startswith("unknown name `undeclared_gain`") and "-I DIR" in name[0]


@pytest.mark.parametrize("target", TARGETS)
def test_error_in_unused_host_code_does_not_block(target, tmp_path):
    res = translate_file(fx("host_error.cu"), target)
    assert outputs(res) == {"fill"} and not res.failed_kernels
    got = errors(res)
    assert (7, "warning", "expected expression (in code no kernel uses: kernels are still translated)") in got
    assert all(sev == "warning" for _r, sev, _m in got)
    r = cuport("translate", "--to", target, fx("host_error.cu"), "-o", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    assert os.listdir(tmp_path / "o")


@pytest.mark.parametrize("target", TARGETS)
def test_late_error_after_fifty_others_refuses_the_kernel(target):
    res = translate_file(fx("many_errors.cu"), target)
    assert not outputs(res) and set(res.failed_kernels) == {"late"}
    assert refusal(res, "late")[0].row == 66 and "line 67" in refusal(res, "late")[0].message
    got = errors(res)
    assert (67, "error", "expected expression") in got              # the blocking error is always shown
    count = [(row, sev, m) for row, sev, m in got if "clang errors in all" in m]
    assert count == [(13, "warning", "61 clang errors in all (61 distinct); 10 are reported, this is the first "
                                     "of the others")]
    assert len(got) == 12                                          # 9 host errors + the kernel's + count + refusal


@pytest.mark.parametrize("target", TARGETS)
def test_unknown_uint_is_named_with_how_to_supply_it(target, tmp_path):
    res = translate_file(fx("unknown_uint.cu"), target)
    assert not outputs(res) and set(res.failed_kernels) == {"scaled"}
    msg = [m for row, sev, m in errors(res) if row == 4]
    assert len(msg) == 1 and msg[0].startswith("unknown type name `u32` (2 uses)")
    assert "-D 'u32=TYPE'" in msg[0] and "-I DIR" in msg[0] and "include-dirs / defines" in msg[0]
    r = cuport("translate", "--to", target, fx("unknown_uint.cu"), "-o", str(tmp_path / "no"))
    assert r.returncode == 1 and "unknown type name `u32`" in r.stderr
    assert not os.path.exists(tmp_path / "no") or not os.listdir(tmp_path / "no")
    # supplied with -D: translated and valid
    r = cuport("translate", "--to", target, fx("unknown_uint.cu"), "-D", "u32=unsigned int", "-o",
               str(tmp_path / "yes"))
    assert r.returncode == 0, r.stderr
    assert "CP000" not in r.stderr and os.listdir(tmp_path / "yes")


@pytest.mark.parametrize("target", TARGETS)
def test_declarations_a_kernel_uses(target):
    res = translate_file(fx("uses_broken_decls.cu"), target)
    assert outputs(res) == {"clean"}
    assert set(res.failed_kernels) == {"uses_typedef", "uses_global", "uses_macro"}
    assert "line 2: unknown type name 'missing_t'" in refusal(res, "uses_typedef")[0].message
    assert "line 3: use of undeclared identifier 'missing_value'" in refusal(res, "uses_global")[0].message
    assert "line 8: use of undeclared identifier 'MISSING_FACTOR'" in refusal(res, "uses_macro")[0].message


@pytest.mark.parametrize("target", TARGETS)
def test_error_no_declaration_owns_refuses_the_file(target, tmp_path):
    res = translate_file(fx("stray_brace.cu"), target)
    assert not outputs(res) and set(res.failed_kernels) == {"first", "second"}
    assert res.extra.get("refused")
    assert (3, "error", "extraneous closing brace ('}')") in errors(res)
    r = cuport("translate", "--to", target, fx("stray_brace.cu"), "-o", str(tmp_path / "o"))
    assert r.returncode == 1
    assert not os.path.exists(tmp_path / "o") or not os.listdir(tmp_path / "o")


def test_missing_header_and_header_with_an_error(tmp_path):
    inc = os.path.join(FIX, "include")
    res = translate_file(fx("header_error.cu"), "glsl", include_dirs=[inc])
    assert not res.shaders and set(res.failed_kernels) == {"uses_vendor", "plain"}
    got = errors(res)
    assert (2, "warning", "'vendor.h' file not found: pass its directory with -I DIR (or config include-dirs)") \
        in got
    assert (3, "error", f"expected expression (in {inc}/bad.h:3:24)") in got        # shown at its #include
    assert "the file has a clang error no declaration owns" in refusal(res, "plain")[0].message
    # without the broken header, only the kernel using the missing header's name is refused
    res = translate_file(fx("header_error.cu"), "glsl", include_dirs=[inc], defines=["real=float"],
                         text=open(fx("header_error.cu")).read().replace('#include "bad.h"', ""))
    assert set(res.shaders) == {"plain"} and set(res.failed_kernels) == {"uses_vendor"}
    assert any(m.startswith("unknown name `VENDOR_SCALE`") and "-D VENDOR_SCALE=VALUE" in m
               for _r, _s, m in errors(res))


def test_emitters_never_see_the_broken_code():
    """No exception, no refused kernel in any output, every output valid: the broken fixtures on both targets."""
    from porter.translate.kernel.validate import opencl_context, tool, validate_glsl, validate_opencl
    for name in sorted(n for n in os.listdir(FIX) if n.endswith(".cu")):
        for target in TARGETS:
            res = translate_file(fx(name), target)
            assert not set(res.failed_kernels) & outputs(res)
            for k in res.failed_kernels:
                assert k not in res.text and k not in res.shaders
            if target == "glsl" and tool("glslangValidator"):
                for k, text in res.shaders.items():
                    assert validate_glsl(text, k).ok, (name, k)
            if target == "opencl" and res.text and opencl_context() is not None:
                assert validate_opencl(res.text).ok, name


def test_hip_refuses_a_file_whose_kernel_lost_code(tmp_path):
    out = tmp_path / "k.hip"
    r = cuport("translate", "--to", "hip", fx("syntax_in_kernel.cu"), "-o", str(out))
    assert r.returncode == 1 and not out.exists()
    assert "syntax_in_kernel.cu:3:1: CP000 kernel `broken` not translated: it uses code clang could not parse " \
           "(line 4: expected expression); the file is not written" in r.stderr
    # a syntax error in host code only: written (the kernels are intact), exit 1 for the CP000
    r = cuport("translate", "--to", "hip", fx("host_error.cu"), "-o", str(out))
    assert r.returncode == 1 and out.exists() and "not translated" not in r.stderr
    assert "fill<<<1, 64>>>" in out.read_text() or "hipLaunchKernelGGL(fill" in out.read_text()
    # names from headers cuport lacks do not refuse HIP (its output is the source text with token edits)
    r = cuport("translate", "--to", "hip", fx("unknown_uint.cu"), "-o", str(out))
    assert r.returncode == 0 and "u32 i = threadIdx.x;" in out.read_text()


def test_lint_reports_syntax_errors_capped_with_count():
    text = "__global__ void k(float *a) {\n" + "".join(f"  int v{i} = ;\n" for i in range(14)) + "}\n"
    res = lint_source(SourceFile("t.cu", text), enabled={"CP000"})
    d = [x for x in res.diagnostics if x.code == "CP000"]
    assert len(d) == 11 and [x.row for x in d[:10]] == list(range(2, 12))
    assert d[10].row == 12 and d[10].message.startswith("14 parse errors in all; the first 10 are reported")
    # semantic errors (names from headers lint cannot see) are not lint findings
    res = lint_source(SourceFile("t.cu", "__global__ void k(uint *a) { a[0] = 1; }\n"), enabled={"CP000"})
    assert not res.diagnostics


def test_fix_safety_counts_semantic_errors():
    """lint --fix (and the translators' fix loop) roll back a round that adds any clang error: the count they
    compare includes semantic errors, not missing headers."""
    text = "__global__ void k(float *a) { a[threadIdx.x] = 1.0f; }\n"
    m = build_model(SourceFile("t.cu", text))
    assert syntax_error_count(m) == 0
    m2 = build_model(SourceFile("t.cu", text.replace("1.0f", "undeclared_thing")))
    assert syntax_error_count(m2) == 1
    m3 = build_model(SourceFile("t.cu", '#include "not_here.cuh"\n' + text))
    assert len(m3.errors) == 1 and syntax_error_count(m3) == 0


def test_clean_kernels_still_exit_zero(tmp_path):
    for target in TARGETS:
        r = cuport("translate", "--to", target, os.path.join(ROOT, "examples", "saxpy", "saxpy.cu"),
                   "-o", str(tmp_path / target))
        assert r.returncode == 0, r.stderr
        assert "CP000" not in r.stderr and os.listdir(tmp_path / target)


def test_translators_fall_back_to_the_system_headers_when_the_stubs_lack_a_declaration(tmp_path):
    """`clock_t` is in <ctime> but not in the light stubs: the translators parse again with the system headers
    (real declarations, unlike lint's placeholders) and report what the kernel really cannot do (CP907 `clock` in
    OpenCL), not a CP000 about a type the stubs lack. A file the stubs parse gets no second parse and no note."""
    p = tmp_path / "fb.cu"
    p.write_text("#include <ctime>\n__global__ void k(long *p) { clock_t t = clock(); p[threadIdx.x] = (long)t; }\n")
    r = cuport("translate", "--to", "opencl", str(p), "-o", str(tmp_path / "fb.cl"))
    assert r.returncode == 1
    assert "parsed with the system headers" in r.stderr
    assert ":2:42: CP907" in r.stderr and "`clock`" in r.stderr and "CP000" not in r.stderr
    ok = tmp_path / "ok.cu"
    ok.write_text("__global__ void k(long *p) { p[threadIdx.x] = 1; }\n")
    r = cuport("translate", "--to", "opencl", str(ok), "-o", str(tmp_path / "ok.cl"))
    assert r.returncode == 0 and "system headers" not in r.stderr


@pytest.mark.parametrize("target", TARGETS)
def test_error_in_a_host_namespace_blocks_only_its_users(target, tmp_path):
    # clang drops `trimr` (unknown std:: type in its parameter): the errors lie in no declaration, but inside
    # namespace hostlib, which closes at its own `}` (HeCBench bmf's clipp.h under the light stubs)
    res = translate_file(fx("ns_host_lib.cu"), target)
    assert outputs(res) == {"fill"} and set(res.failed_kernels) == {"padded"}
    assert not res.extra.get("refused")
    d = refusal(res, "padded")
    assert len(d) == 1 and d[0].row == 17 and "it uses code clang could not compile (line 4:" in d[0].message
    assert (5, "error", "expected unqualified-id") in errors(res)     # blocks `padded`: an error, at its line
    r = cuport("translate", "--to", target, fx("ns_host_lib.cu"), "-o", str(tmp_path / "o"))
    assert r.returncode == 1 and "ns_host_lib.cu:17:17: CP000 [error] kernel `padded` not translated" in r.stderr
    assert os.listdir(tmp_path / "o")


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name, kernels, row", [
    ("ns_using.cu", {"fill", "padded"}, 12),       # `using namespace hostlib;`: the dropped name could be any
    ("ns_kernel_inside.cu", {"fill"}, 8),          # the kernel is in the namespace: it names members unqualified
    ("ns_unclosed.cu", {"fill"}, 8),               # the namespace does not close at its `}`: structure lost
])
def test_error_in_a_namespace_still_blocks(target, name, kernels, row):
    res = translate_file(fx(name), target)
    assert not outputs(res) and set(res.failed_kernels) == kernels
    first = sorted(kernels)[0]
    assert refusal(res, first)[0].row == row
