"""The pre-forked worker of a one-file `cuport lint` (porter/isolate.py prefork): it serves the single task as a
call job, with the same result, limits and failures as a worker forked later; unused, it is killed."""
from __future__ import annotations

import os
import subprocess
import sys
import time

from porter import isolate

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _square(x):
    return x * x


def _crash(_x):
    os.kill(os.getpid(), 11)


def test_prefork_serves_one_task_and_is_then_gone():
    isolate.prefork()
    pid = isolate._PREFORK[0].pid
    assert isolate.run_each(_square, [7]) == [49]
    assert not isolate._PREFORK
    for _ in range(500):                 # killed after its job; reaped by the next run or here
        isolate._reap_killed()
        if pid not in isolate._KILLED:
            break
        time.sleep(0.01)
    try:
        os.kill(pid, 0)
        alive = True
    except ProcessLookupError:
        alive = False
    assert not alive


def test_prefork_crash_is_a_failure_of_that_task():
    isolate.prefork()
    out = isolate.run_each(_crash, [1])
    assert isinstance(out[0], isolate.Failure) and out[0].kind == "crash"


def test_prefork_not_used_for_several_tasks_and_discarded():
    isolate.prefork()
    pid = isolate._PREFORK[0].pid
    assert isolate.run_each(_square, [2, 3]) == [4, 9]
    assert not isolate._PREFORK and pid in isolate._KILLED


def test_cli_one_file_with_cache_hit_and_miss(tmp_path):
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k(int *p) { int lane = threadIdx.x % 32; p[lane] = 0; }\n")
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("CUPORT_OUTPUT_FORMAT", None)
    runs = [subprocess.run([sys.executable, "-m", "porter", "lint", "--output-format", "concise", str(src)],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120) for _ in range(2)]
    assert runs[0].stdout == runs[1].stdout and "CP102" in runs[0].stdout      # miss (pre-forked), then hit
    assert runs[0].returncode == runs[1].returncode == 1
