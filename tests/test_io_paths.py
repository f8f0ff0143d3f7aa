"""Every I/O path of cuport (issue 10.6, 11.5): outputs never replace inputs, safe in-place writes, every input
kind, stdin/stdout, encodings. Run as a user would (subprocesses), plus in-process CLI calls where a race has
to be staged."""
import hashlib
import os
import stat
import subprocess
import sys

import pytest

from porter.source import ChangedOnDisk, OutputError, read_source, write_output

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BAD = "__global__ void k(float *a) {\n  int lane = threadIdx.x % 32;\n  a[lane] = 1.0f;\n}\n"
FIXED = BAD.replace("% 32", "% warpSize")
OTHER = "__global__ void t(float *a, float s) { a[threadIdx.x] *= s; }\n"
NOVAL = ["--no-validate"]


def cuport(*args, cwd=None, stdin=None):
    r = subprocess.run([sys.executable, "-m", "porter", *args], cwd=cwd, capture_output=True, input=stdin,
                       env=dict(os.environ, NO_COLOR="1"), timeout=180)
    err = r.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err and "internal error" not in err, err
    return r.returncode, r.stdout, err


def sha(path) -> str:
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def errors(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if "error:" in ln]


@pytest.fixture
def k(tmp_path):
    p = tmp_path / "k.cu"
    p.write_text(BAD)
    return p


# --- 10.6: no output option may name an input ---------------------------------------------------------------

@pytest.mark.parametrize("argv", [
    ["lint", "-o", "k.cu", "k.cu"],
    ["lint", "--output-file", "hard.cu", "k.cu"],                 # a hard link is the same file
    ["report", "--no-compile", "-o", "link.cu", "k.cu"],          # so is a symlink
    ["report", "--no-compile", "-o", "k.cu", "k.cu"],
    ["translate", "--to", "hip", "--print-stats", "--o-stats", "k.cu", "k.cu"],
    ["translate", "--to", "hip", "-o", "link.cu", "k.cu"],
    ["translate", "--to", "hip", "--output-dir", ".", "k.cu"],    # ./k.cu is the input itself
    ["translate", "--to", "opencl", "-o", "hard.cu", "k.cu"],
])
def test_an_output_naming_an_input_is_refused_before_anything_runs(k, argv):
    os.link(k, k.parent / "hard.cu")
    os.symlink("k.cu", k.parent / "link.cu")
    before = sha(k)
    rc, out, err = cuport(*argv, cwd=k.parent)
    assert rc == 2
    assert len(errors(err)) == 1 and "names the input file" in err, err
    assert sha(k) == before and os.path.islink(k.parent / "link.cu")
    assert sorted(os.listdir(k.parent)) == ["hard.cu", "k.cu", "link.cu"]      # nothing else was written


def test_an_output_beside_the_input_is_written(k):
    rc, _, err = cuport("lint", "--no-cache", "--output-format", "concise", "-o", "report.txt", "k.cu", cwd=k.parent)
    assert rc == 1, err
    assert "k.cu:2:14: CP102" in (k.parent / "report.txt").read_text()
    assert k.read_text() == BAD


# --- 10.6: --fix / --inplace / --add-noqa: through symlinks, mode kept, atomic, never over a newer file ---------

@pytest.mark.parametrize("argv", [["lint", "--no-cache", "--fix"], ["translate", "--to", "hip", "--inplace"],
                                  ["lint", "--no-cache", "--add-noqa"]])
def test_in_place_writes_go_through_symlinks_and_keep_the_mode(tmp_path, argv):
    real = tmp_path / "src"
    real.mkdir()
    target = real / "k.cu"
    target.write_text(BAD)
    os.chmod(target, 0o640)
    link = tmp_path / "link.cu"
    os.symlink(target, link)
    rc, _, err = cuport(*argv, str(link), cwd=tmp_path)
    assert rc in (0, 1), err
    assert os.path.islink(link) and os.readlink(link) == str(target)
    text = target.read_text()
    if "--fix" in argv:
        assert text == FIXED
    elif "--add-noqa" in argv:
        assert "noqa" in text and "% 32" in text
    else:
        assert "hip/hip_runtime.h" in text and "% CUPORT_WARP_SIZE" in text     # the compile-time warp size
        assert (tmp_path / "link.cu.prehip").read_text() == BAD      # the backup beside the name given
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640
    assert not [f for f in os.listdir(real) if f.startswith(".cuport-")]      # no temporary file left


def _stage_a_concurrent_edit(monkeypatch, module, name, path, new_text):
    real = getattr(module, name)

    def wrapped(*a, **kw):
        result = real(*a, **kw)
        with open(path, "w") as fh:            # the user saves the file while cuport works on it
            fh.write(new_text)
        return result
    monkeypatch.setattr(module, name, wrapped)


@pytest.mark.parametrize("what", ["lint", "hip"])
def test_a_file_changed_while_processing_is_not_overwritten(k, monkeypatch, capsys, what):
    from porter.cli import main
    edited = BAD + "// saved by the user meanwhile\n"
    if what == "lint":
        import porter.lint.run as mod
        _stage_a_concurrent_edit(monkeypatch, mod, "_run", k, edited)
        rc = main(["lint", "--no-cache", "--fix", str(k)])
    else:
        import porter.translate.hip.translator as mod
        _stage_a_concurrent_edit(monkeypatch, mod, "translate", k, edited)
        rc = main(["translate", "--to", "hip", "--inplace", "--no-backup", str(k)])
    err = capsys.readouterr().err
    assert rc == 2
    assert f"{k}: changed while processing, skipped" in err
    assert k.read_text() == edited


def test_an_unchanged_file_is_fixed_in_process(k, capsys):
    from porter.cli import main
    assert main(["lint", "--no-cache", "--fix", str(k)]) == 0
    assert k.read_text() == FIXED


def test_write_output_checks_the_bytes_it_replaces(tmp_path):
    p = tmp_path / "f.cu"
    p.write_bytes(b"old")
    with pytest.raises(ChangedOnDisk, match="changed while processing, skipped"):
        write_output(str(p), b"new", expected_original=b"older")
    assert p.read_bytes() == b"old"
    write_output(str(p), b"new", expected_original=b"old")
    assert p.read_bytes() == b"new"
    assert os.listdir(tmp_path) == ["f.cu"]
    with pytest.raises(OutputError, match="cannot write"):      # a "directory" that is a file
        write_output(str(p / "x.txt"), b"x")
    with pytest.raises(OutputError, match="is a directory"):
        write_output(str(tmp_path), b"x")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes read-only files")
def test_read_only_targets_give_one_line_naming_the_path(k):
    os.chmod(k, 0o444)
    rc, _, err = cuport("lint", "--no-cache", "--fix", "k.cu", cwd=k.parent)
    assert rc == 2 and errors(err) == ["cuport: error: k.cu: cannot write: the file is read-only"]
    assert k.read_text() == BAD


def test_an_output_under_a_file_is_one_line_naming_the_path(k):
    rc, _, err = cuport("lint", "--no-cache", "-o", "k.cu/report.txt", "k.cu", cwd=k.parent)
    assert rc == 2 and len(errors(err)) == 1 and "k.cu/report.txt: cannot write" in err
    assert k.read_text() == BAD


# --- 10.6: inputs with one name from different directories --------------------------------------------------

@pytest.mark.parametrize("target,opt", [("hip", "--output-dir"), ("glsl", "-o"), ("opencl", "-o")])
def test_same_file_names_from_different_directories_keep_their_own_outputs(tmp_path, target, opt):
    for d, body in (("a", BAD), ("b", OTHER.replace("void t", "void k"))):
        (tmp_path / d).mkdir()
        (tmp_path / d / "k.cu").write_text(body)
    rc, _, err = cuport("translate", "--to", target, *NOVAL[: target != "hip"], "a/k.cu", "b/k.cu", opt, "out",
                        cwd=tmp_path)
    assert rc in (0, 1) and not errors(err), err
    outs = sorted(str(p.relative_to(tmp_path / "out")) for p in (tmp_path / "out").rglob("*") if p.is_file())
    assert len(outs) == 2 and outs[0].startswith("a/") and outs[1].startswith("b/"), outs
    a, b = ((tmp_path / "out" / o).read_text() for o in outs)
    assert a != b                            # each input's own translation


def test_two_inputs_with_one_output_name_are_refused_not_overwritten(tmp_path):
    (tmp_path / "k.cu").write_text(BAD)
    (tmp_path / "k.cuh").write_text(OTHER)
    rc, _, err = cuport("translate", "--to", "opencl", *NOVAL, "k.cu", "k.cuh", "-o", "out", cwd=tmp_path)
    assert rc == 2 and len(errors(err)) == 1 and "already written for k.cu" in err, err
    assert "__kernel void k(" in (tmp_path / "out" / "k.cl").read_text()


# --- 10.6: BOM, declarations kept whole ---------------------------------------------------------------------

BOM = b"\xef\xbb\xbf"


def test_bom_stays_at_byte_0_after_fix_and_translate(tmp_path):
    # (`lane`: named a lane id, so the CP102 fix is safe and applied)
    (tmp_path / "k.cu").write_bytes(BOM + b"__global__ void k(float *a) { int lane = threadIdx.x % 32; a[lane] = 1; }\n")
    (tmp_path / "plain.cu").write_bytes(b"__global__ void k(float *a) { int lane = threadIdx.x % 32; a[lane] = 1; }\n")
    rc, out, _ = cuport("lint", "--no-cache", "--output-format", "concise", "k.cu", "plain.cu", cwd=tmp_path)
    assert rc == 1 and "k.cu:1:42: CP102" in out.decode() and "plain.cu:1:42: CP102" in out.decode()
    rc, out, err = cuport("translate", "--to", "hip", "k.cu", cwd=tmp_path)
    assert rc == 0, err
    assert out.startswith(BOM + b"\n#include <hip/hip_runtime.h>") and b"threadIdx.x % CUPORT_WARP_SIZE" in out
    rc, _, err = cuport("lint", "--no-cache", "--fix", "k.cu", cwd=tmp_path)
    data = (tmp_path / "k.cu").read_bytes()
    assert rc == 0 and data.startswith(BOM + b"__global__") and b"% warpSize" in data


@pytest.mark.parametrize("decl", ["__device__ /* c */ double atomicAdd(double* a, double b)",
                                  "/* c */ __device__ double atomicAdd(double* a, double b)"])
def test_platform_guards_never_split_a_declaration(tmp_path, decl):
    (tmp_path / "k.cu").write_text(decl + " { return *a; }\n__global__ void k(double *a) { atomicAdd(a, 1.0); }\n")
    rc, out, err = cuport("translate", "--to", "hip", "k.cu", cwd=tmp_path)
    lines = out.decode().splitlines()
    assert rc == 0, err
    i = lines.index(decl + " { return *a; }")
    assert lines[i - 1].startswith("#if !defined(__HIP_PLATFORM_AMD__)") and lines[i + 1] == "#endif"
    assert lines.index('#include <hip/hip_runtime.h>') < i - 1          # the include is never inside the guard


# --- 10.6: encodings -----------------------------------------------------------------------------------------

def test_latin1_input_is_linted_with_a_note_and_written_back_in_latin1(tmp_path):
    p = tmp_path / "latin.cu"
    p.write_bytes("// caf\xe9\n".encode("latin-1") + BAD.encode())
    rc, out, err = cuport("lint", "--no-cache", "--output-format", "concise", "latin.cu", cwd=tmp_path)
    assert rc == 1 and "latin.cu:3:14: CP102" in out.decode()
    assert "note: latin.cu: not valid UTF-8 (byte 6): read as Latin-1" in err
    rc, _, err = cuport("lint", "--no-cache", "--fix", "latin.cu", cwd=tmp_path)
    assert rc == 0 and p.read_bytes() == "// caf\xe9\n".encode("latin-1") + FIXED.encode()
    (tmp_path / "utf8.cu").write_text("// café\n" + BAD, encoding="utf-8")      # UTF-8 stays UTF-8, no note
    rc, _, err = cuport("lint", "--no-cache", "--fix", "utf8.cu", cwd=tmp_path)
    assert rc == 0 and "note" not in err
    assert (tmp_path / "utf8.cu").read_bytes() == ("// café\n" + FIXED).encode("utf-8")


def test_read_source_never_opens_special_files_and_keeps_the_encoding(tmp_path):
    from porter.source import SourceError, digest
    os.mkfifo(tmp_path / "p.cu")
    with pytest.raises(SourceError, match="a FIFO, not a source file, skipped"):
        read_source(str(tmp_path / "p.cu"))                     # returns at once: never opened
    with pytest.raises(SourceError, match="a device"):
        read_source("/dev/null")
    raw = "// caf\xe9\n".encode("latin-1")
    (tmp_path / "l.cu").write_bytes(raw)
    src = read_source(str(tmp_path / "l.cu"))
    assert (src.encoding, src.digest, src.encode(src.text)) == ("latin-1", digest(raw), raw)
    (tmp_path / "u.cu").write_text("// café\n")
    assert (read_source(str(tmp_path / "u.cu")).encoding, read_source(str(tmp_path / "u.cu")).note) == ("utf-8", None)


# --- 11.5: every input kind -------------------------------------------------------------------------------------

@pytest.mark.parametrize("argv", [["lint", "--no-cache", "--output-format", "concise"],
                                  ["translate", "--to", "opencl", *NOVAL, "-o", "out"],
                                  ["translate", "--to", "hip", "--output-dir", "out"],
                                  ["report", "--no-compile"]])
def test_a_fifo_is_skipped_with_one_line_and_the_others_go_on(k, argv):
    os.mkfifo(k.parent / "pipe.cu")
    rc, out, err = cuport(*argv, "pipe.cu", "k.cu", cwd=k.parent)      # opening the FIFO would block forever
    assert rc == 2
    assert errors(err) == [next(ln for ln in err.splitlines() if "pipe.cu: a FIFO, not a source file, skipped" in ln)]
    produced = out.decode() + "".join(p.read_text() for p in (k.parent / "out").rglob("*") if p.is_file()) \
        if (k.parent / "out").exists() else out.decode()
    assert "k" in produced and ("CP102" in produced or "__kernel" in produced or "hip_runtime" in produced
                                or "k  (k.cu:1)" in produced)


@pytest.mark.parametrize("argv,expect", [
    (["translate", "--to", "hip", "missing.cu", "k.cu"], b"hip/hip_runtime.h"),
    (["translate", "--to", "glsl", *NOVAL, "empty", "k.cu"], b"#version 450"),
    (["translate", "--to", "opencl", *NOVAL, "empty", "missing.cu", "k.cu"], b"__kernel void k("),
    (["report", "--no-compile", "missing.cu", "k.cu", "empty"], b"k  (k.cu:1)"),
    (["lint", "--no-cache", "--output-format", "concise", "missing.cu", "empty", "k.cu"], b"k.cu:2:14: CP102"),
])
def test_a_missing_or_empty_input_is_exit_2_and_the_others_are_processed(k, argv, expect):
    (k.parent / "empty").mkdir()
    rc, out, err = cuport(*argv, cwd=k.parent)
    assert rc == 2
    bad = [a for a in argv if a in ("missing.cu", "empty")]
    assert len(errors(err)) == len(bad) and all(any(b in ln for ln in errors(err)) for b in bad), err
    assert expect in out


def test_verify_reports_each_bad_path_on_one_line(tmp_path):
    (tmp_path / "empty").mkdir()
    rc, _, err = cuport("verify", "empty", "missing.cu", "-", cwd=tmp_path)
    assert rc == 2
    assert errors(err) == ["cuport verify: error: empty: no verify_spec.py found",
                           "cuport verify: error: missing.cu: no such file or directory",
                           "cuport verify: error: -: standard input cannot be verified (a verify spec names its "
                           "source files)"]


# --- 11.5: stdin and stdout ------------------------------------------------------------------------------------

def test_stdin_for_lint_with_stdin_filename(tmp_path):
    rc, out, err = cuport("lint", "--no-cache", "--output-format", "concise", "--stdin-filename", "dir/mine.cu", "-",
                          cwd=tmp_path, stdin=BAD.encode())
    assert rc == 1 and "dir/mine.cu:2:14: CP102" in out.decode(), err
    rc, out, err = cuport("lint", "--no-cache", "--fix", "-", cwd=tmp_path, stdin=BAD.encode())
    assert rc == 0 and out.decode() == FIXED              # the fixed source on stdout, the report on stderr
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("argv", [["lint"], ["translate", "--to", "hip"], ["translate", "--to", "opencl", *NOVAL],
                                  ["report", "--no-compile"]])
def test_invalid_utf8_on_stdin_is_one_line(tmp_path, argv):
    rc, out, err = cuport(*argv, "-", cwd=tmp_path, stdin=b"__global__ void k() {} // \xff\xfe\n")
    assert rc == 2 and errors(err) == [next(ln for ln in err.splitlines() if "error:" in ln)]
    assert "standard input is not valid UTF-8 (byte 26)" in err


@pytest.mark.parametrize("argv,expect", [
    (["translate", "--to", "hip", "--stdin-filename", "s.cu", "-"], b"% CUPORT_WARP_SIZE"),
    (["translate", "--to", "opencl", *NOVAL, "-"], b"__kernel void k("),
    (["report", "--no-compile", "--stdin-filename", "s.cu", "-"], b"k  (s.cu:1)"),
])
def test_stdin_for_every_subcommand(tmp_path, argv, expect):
    rc, out, err = cuport(*argv, cwd=tmp_path, stdin=BAD.encode())
    assert rc == 0 and expect in out, err


@pytest.mark.parametrize("argv,expect", [
    (["lint", "--no-cache", "--output-format", "concise"], b"k.cu:2:14: CP102"),
    (["translate", "--to", "hip"], b"hip/hip_runtime.h"),
    (["translate", "--to", "opencl", *NOVAL], b"__kernel void k("),
    (["translate", "--to", "glsl", *NOVAL], b"#version 450"),
    (["report", "--no-compile"], b"k  (k.cu:1)"),
])
def test_dash_o_dash_is_standard_output(k, argv, expect):
    rc, out, err = cuport(*argv, "-o", "-", "k.cu", cwd=k.parent)
    assert rc in (0, 1) and expect in out, err
    assert sorted(os.listdir(k.parent)) == ["k.cu"]            # no file named "-"


@pytest.mark.parametrize("target,name", [("hip", "k.cu"), ("opencl", "k.cl")])
def test_dash_o_directory_for_one_input_writes_into_it(k, target, name):
    (k.parent / "outdir").mkdir()
    rc, _, err = cuport("translate", "--to", target, *NOVAL[: target != "hip"], "-o", "outdir", "k.cu",
                        cwd=k.parent)
    assert rc == 0, err
    assert os.listdir(k.parent / "outdir") == [name] and k.read_text() == BAD
