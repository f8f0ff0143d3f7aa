"""Patterns met on real code (bench/corpus, docs/quality.md): parse recovery for names from headers cuport cannot
see, and cooperative-groups ranks in the race analysis."""
from __future__ import annotations

import subprocess
import sys

from porter.frontend.parse import ParseOptions
from porter.lint.checker import lint_source
from porter.source import SourceFile

UNKNOWN_TYPES = """#include <thrust/device_vector.h>
__global__ void k(half2 *a, dfloat *b) {
  __shared__ float s[64];
  s[threadIdx.x] = b[threadIdx.x];
  a[0] = ((half2 *)b)[threadIdx.x];
  out_of_line(s[63 - threadIdx.x]);
}
void host(int n) {
  thrust::device_vector<int> v(n);
  dfloat x = 0, y = 0;
  k<<<1, 64>>>(0, 0);
}
"""


def _lint(text, recover=True, codes=("CP000", "CP702")):
    src = SourceFile("/tmp/q.cu", text)
    return lint_source(src, enabled=set(codes), parse_options=ParseOptions(recover=recover), ignore_noqa=True)


def test_unknown_types_are_recovered_and_kernels_still_analysed(capsys):
    res = _lint(UNKNOWN_TYPES)
    assert [d.code for d in res.diagnostics if d.code == "CP000"] == []
    races = [(d.code, d.row) for d in res.diagnostics if d.code == "CP702"]
    assert races == [("CP702", 6)]            # the kernel's AST survived: its race is found
    err = capsys.readouterr().err
    assert "thrust/device_vector.h not found" in err and "placeholders" in err and "dfloat" in err


def test_without_recovery_the_same_file_is_parse_errors():
    res = _lint(UNKNOWN_TYPES, recover=False)
    assert any(d.code == "CP000" for d in res.diagnostics)


def test_real_syntax_error_is_still_reported():
    res = _lint("__global__ void k(float *a) { a[threadIdx.x] = 1.0f }\n")
    cp0 = [d for d in res.diagnostics if d.code == "CP000"]
    assert len(cp0) == 1 and cp0[0].row == 1 and "expected ';'" in cp0[0].message


def test_value_used_in_launch_is_not_taken_for_a_type():
    text = ("__global__ void k(float *a) { a[threadIdx.x] = 0; }\n"
            "void h(float *a) { dim3 b(THREADS, 1); k<<<1, THREADS>>>(a); k<<<THREADS, 1>>>(a); }\n")
    res = _lint(text)
    assert [d for d in res.diagnostics if d.code == "CP000"] == []


def test_recovery_classifies_uses():
    from porter.frontend import recovery as R
    t = "thrust::device_vector<int> v; (half2 *)p; x = THREADS + 1; cub::BlockScan<int, 128> s; if (a > N) {}"
    assert R._kind_at(t, t.index("device_vector") + len("device_vector")) == "template"
    assert R._kind_at(t, t.index("half2") + 5, t.index("half2")) == "type"
    assert R._vote([R._kind_at(t, t.index("THREADS") + 7, t.index("THREADS"))]) == "value"
    assert R._kind_at(t, t.index("N)") + 1, t.index("N)")) == "value"


def test_cli_note_once_and_exit_status(tmp_path):
    f = tmp_path / "t.cu"
    f.write_text(UNKNOWN_TYPES)
    out = subprocess.run([sys.executable, "-m", "porter", "lint", "--no-cache", "--select", "CP000", str(f)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stderr.count("cuport: note:") == 1 and "may be incomplete" in out.stderr


CG = """#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void k(float *out) {
  __shared__ float sums[4];
  cg::thread_block b = cg::this_thread_block();
  cg::thread_block_tile<16> t = cg::tiled_partition<16>(b);
  if (t.thread_rank() == 0) sums[t.meta_group_rank()] = out[b.thread_rank()];
  b.sync();
  out[b.thread_rank()] = sums[t.meta_group_rank()];
  if (t.thread_rank() == 0) sums[t.meta_group_rank() ^ 1] = 0;
}
void h(float *o) { k<<<1, 64>>>(o); }
"""


def test_tile_of_16_ranks_are_exact():
    res = _lint(CG, codes=("CP000", "CP702"))
    got = [(d.code, d.row, d.severity) for d in res.diagnostics]
    # the write at line 10 races with the reads of line 9 (no barrier): tile 1's lane 0 writes sums[0]
    assert got == [("CP702", 10, "error")]
    assert "thread 0 reads sums[0]" in res.diagnostics[0].message
    assert "thread 16 writes it through `sums[t.meta_group_rank() ^ 1]`" in res.diagnostics[0].message


def test_uses_of_a_name_from_the_identifier_index():
    # recovery reads every use of an unknown name: from one identifier index per text (a regex scan of the whole
    # file per clang error was most of HeCBench's lint time); member accesses and other scopes are not uses
    from porter.frontend import recovery as R
    text = "dfloat a; s.dfloat = 1; p->dfloat; x::dfloat b; dfloat_t c; ns :: inner::dfloat d; dfloat(e);"
    assert [text[s:e] for s, e in R._uses(text, "dfloat")] == ["dfloat", "dfloat"]
    assert [text[s:e] for s, e in R._uses(text, "ns::inner::dfloat")] == ["ns :: inner::dfloat"]
    assert [text[s:e] for s, e in R._uses(text, "x::dfloat")] == ["x::dfloat"]
    assert R._uses(text, "y::dfloat") == []
