"""bench/hec_extract.py: a program is extracted with the sibling directories its Makefile's -I flags name; a
mirror with a missing object loses only that file, and says so."""
import importlib.util
import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
pytestmark = pytest.mark.skipif(shutil.which("git") is None or shutil.which("tar") is None,
                                reason="needs git and tar")


def _mod():
    spec = importlib.util.spec_from_file_location("hec_extract", os.path.join(ROOT, "bench", "hec_extract.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _write(root, rel, text):
    p = os.path.join(root, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "w") as fh:
        fh.write(text)


def _repo(tmp_path):
    work = str(tmp_path / "work")
    _write(work, "src/a-cuda/Makefile", "CC = nvcc\nCFLAGS := -O3 -I../b-sycl\nifeq ($(X),1)\n"
           "  CFLAGS += -I ../d-omp\nendif\n")
    _write(work, "src/a-cuda/main.cu", '#include "h.h"\n__global__ void k(float *x) { x[0] = H; }\n')
    _write(work, "src/a-cuda/data.bin", "payload\n")
    _write(work, "src/b-sycl/h.h", "#define H 1.0f\n")
    _write(work, "src/c-cuda/main.cu", "__global__ void c() {}\n")
    _write(work, "src/d-omp/x.h", "\n")
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@t")
    for cmd in (["git", "init", "-q"], ["git", "add", "."], ["git", "commit", "-qm", "c"]):
        subprocess.run(cmd, cwd=work, check=True, env=env, capture_output=True)
    return work


def test_program_and_its_include_siblings(tmp_path):
    mod = _mod()
    work = _repo(tmp_path)
    dest = str(tmp_path / "out")
    res = mod.extract(os.path.join(work, ".git"), dest, ["a-cuda"], log=lambda *_: None)
    assert sorted(os.listdir(os.path.join(dest, "src"))) == ["a-cuda", "b-sycl", "d-omp"]   # not c-cuda
    assert res["siblings"] == {"a-cuda": ["b-sycl", "d-omp"]}     # d-omp: under an undecided ifeq, still named
    assert open(os.path.join(dest, "src/b-sycl/h.h")).read() == "#define H 1.0f\n"
    assert res["failed"] == {} and res["missing_files"] == {}
    # a second run finds everything there and extracts nothing
    assert mod.extract(os.path.join(work, ".git"), dest, ["a-cuda"], log=lambda *_: None)["extracted"] == []


def test_missing_object_loses_only_that_file(tmp_path):
    mod = _mod()
    work = _repo(tmp_path)
    git_dir = os.path.join(work, ".git")
    sha = subprocess.run(["git", "rev-parse", "HEAD:src/a-cuda/data.bin"], cwd=work, capture_output=True,
                         text=True, check=True).stdout.strip()
    os.remove(os.path.join(git_dir, "objects", sha[:2], sha[2:]))
    dest = str(tmp_path / "out")
    res = mod.extract(git_dir, dest, ["a-cuda", "nope-cuda"], log=lambda *_: None)
    assert set(res["missing_files"]) == {"src/a-cuda/data.bin"}
    assert sha in res["missing_files"]["src/a-cuda/data.bin"]
    assert sorted(os.listdir(os.path.join(dest, "src/a-cuda"))) == ["Makefile", "main.cu"]
    assert os.path.isdir(os.path.join(dest, "src/b-sycl"))        # the Makefile was read from the partial copy
    assert list(res["failed"]) == ["src/nope-cuda"]               # not in the tree at all: failed, reported
    assert not os.path.exists(os.path.join(dest, "src/nope-cuda"))
