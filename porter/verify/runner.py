"""Runs verify cases in worker processes so that a crash, illegal address or hang fails only its case.

One worker per (case, target, variant) handles that job's problem sizes in order; when it dies or
overruns the per-case timeout it is killed (with its process group) and a fresh worker takes the
remaining sizes.
"""
from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

from porter.verify.backends import TARGETS, Skip, Variant, load, translation_target
from porter.verify.spec import Case
from porter.verify.worker import MARK, worker_env

FAILING = {"FAIL", "crash", "timeout", "XPASS"}


@dataclass
class Result:
    case: str
    kernel: str
    spec: str
    target: str
    variant: str
    sizes: dict | None
    status: str                  # pass FAIL crash timeout skipped xfail XPASS
    message: str = ""
    kernel_ms: float | None = None
    device: str = ""
    subgroup_size: int | None = None
    gbps: float | None = None
    gflops: float | None = None
    info: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class Job:
    case: Case
    target: str
    variant: Variant
    sizes: list[dict | None]
    repeat: int = 1


def _sizes_for(case: Case, overrides: list[dict[str, int]] | None, bench: bool) -> list[dict]:
    if overrides:
        # Each override updates the spec's first size with the names this case knows.
        out = []
        for o in overrides:
            s = {**case.sizes[0], **{k: v for k, v in o.items() if k in case.sizes[0]}}
            if s not in out:
                out.append(s)
        return out
    if bench:
        return [case.bench_sizes or case.sizes[-1]]
    return list(case.sizes)


class Runner:
    def __init__(self, targets: list[str], subgroups: list[int] | None = None,
                 sizes: list[dict[str, int]] | None = None, timeout: float = 60.0, bench: bool = False,
                 repeat: int = 1, jobs: int = 1, progress=None):
        unknown = [t for t in targets if t not in TARGETS]
        if unknown:
            raise ValueError(f"unknown target(s) {', '.join(unknown)} (known: {', '.join(TARGETS)})")
        self.targets, self.subgroups, self.sizes = targets, subgroups, sizes
        self.timeout, self.bench, self.repeat, self.jobs = timeout, bench, repeat, max(1, jobs)
        self.progress = progress
        self.dump_dir: str | None = None    # where workers save outputs of cases with reference=None

    # -- planning -------------------------------------------------------------------------------
    def plan(self, cases: list[Case]) -> tuple[list[Job], list[Result]]:
        jobs: list[Job] = []
        skipped: list[Result] = []
        for target in self.targets:
            backend = load(target)
            ok, reason = backend.available()
            variants = None
            if ok:
                try:
                    variants = backend.variants(self.subgroups) if hasattr(backend, "variants") else [Variant()]
                except Skip as e:           # e.g. a Vulkan loader without a usable driver
                    ok, reason = False, str(e)
                except Exception as e:      # a probe that failed: report it, do not trace back
                    ok, reason = False, f"{e.__class__.__name__}: {e}"
            compile_only = getattr(backend, "compile_only", lambda: False)()
            for case in cases:
                why = None if ok else reason
                if case.targets is not None and target not in case.targets:
                    why = f"spec limits this case to {', '.join(case.targets)}"
                elif target in case.skip:
                    why = case.skip[target]
                elif translation_target(target) and not case.translation_for(target, translation_target(target)):
                    why = translator_missing(translation_target(target)) or why   # a backend missing stays said
                if why is not None:
                    skipped.append(Result(case.id, case.kernel, case.spec_path, target, "-", None, "skipped", why))
                    continue
                sizes = [None] if compile_only else _sizes_for(case, self.sizes, self.bench)
                if getattr(backend, "SMALLEST_SIZE_ONLY", False) and not self.sizes:
                    sizes = sizes[:1]
                repeat = self.repeat if self.bench else 1
                for v in variants:
                    jobs.append(Job(case, target, v, sizes, repeat))
        return jobs, skipped

    def run(self, cases: list[Case]) -> list[Result]:
        jobs, results = self.plan(cases)
        with ThreadPoolExecutor(self.jobs) as pool:
            for job_results in pool.map(self.run_job, jobs):
                results.extend(job_results)
        order = {(c.spec_path, c.id): i for i, c in enumerate(cases)}
        tidx = {t: i for i, t in enumerate(self.targets)}
        results.sort(key=lambda r: (order.get((r.spec, r.case), 0), tidx.get(r.target, 0)))
        return results

    # -- one job --------------------------------------------------------------------------------
    def run_job(self, job: Job) -> list[Result]:
        remaining = list(job.sizes)
        raw: list[tuple[dict | None, dict]] = []
        while remaining:
            done = self._worker(job, remaining)
            raw.extend(done)
            remaining = remaining[len(done):]
        if len(raw) > 1 and len({(r["status"], r.get("message")) for _, r in raw}) == 1 \
                and raw[0][1]["status"] == "skipped":
            raw = [(None, raw[0][1])]          # one row when the whole job was skipped for one reason
        results = [self._result(job, sizes, r) for sizes, r in raw]
        if self.progress:
            for r in results:
                self.progress(r)
        return results

    def _worker(self, job: Job, sizes_list: list) -> list[tuple[Any, dict]]:
        """Start one worker for these sizes; return the results it gave (at least one)."""
        request = {"spec": job.case.spec_path, "case": job.case.index, "target": job.target,
                   "variant": job.variant.as_dict(), "sizes": sizes_list, "repeat": job.repeat}
        if getattr(job.case, "derived", None):      # spec-less: the worker rebuilds the case from this
            request["derived"] = job.case.derived
        if self.dump_dir and job.case.reference is None:
            request["dump"] = self.dump_dir         # outputs kept for the differential comparison
        cmd, env = [sys.executable, "-m", "porter.verify.worker"], worker_env(job.variant.env)
        backend = load(job.target)
        if hasattr(backend, "wrap_command"):
            cmd = backend.wrap_command(cmd, env)
        try:
            return self._supervise(job, sizes_list, request, cmd, env)
        finally:
            _cleanup(env)

    def _supervise(self, job: Job, sizes_list: list, request: dict, cmd: list, env: dict):
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=env, start_new_session=True)
        lines: queue.Queue = queue.Queue()
        stderr: list[str] = []
        threading.Thread(target=_pump, args=(proc.stdout, lines), daemon=True).start()
        err_thread = threading.Thread(target=lambda: stderr.extend(proc.stderr), daemon=True)
        err_thread.start()
        try:
            proc.stdin.write(json.dumps(request))
            proc.stdin.close()
        except BrokenPipeError:
            pass
        done: list[tuple[Any, dict]] = []
        for sizes in sizes_list:
            deadline = time.monotonic() + self.timeout
            result = None
            while result is None:
                try:
                    line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    _kill(proc)
                    done.append((sizes, {"status": "timeout",
                                         "message": f"no result within {self.timeout:g} s (hang?); worker killed"}))
                    return done
                if line is None:             # stdout closed: the worker ended
                    rc = proc.wait()
                    err_thread.join(timeout=2)
                    done.append((sizes, {"status": "crash", "message": _death(rc, stderr)}))
                    return done
                if line.startswith(MARK):
                    result = json.loads(line[len(MARK):])
            done.append((sizes, result))
            if result.get("fatal"):
                break
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            _kill(proc)
        return done

    def _result(self, job: Job, sizes, r: dict) -> Result:
        status, message = r.get("status", "crash"), r.get("message", "")
        compile_only = sizes is None
        expect = job.case.expect_for(job.target, job.variant.label)
        inherit = getattr(load(job.target), "EXPECT_AS", None)
        if expect is None and inherit:
            expect = job.case.expect_for(inherit, job.variant.label)
        if expect == "fail" and not compile_only and job.case.reference is not None:   # else: differential.py
            if status in ("FAIL", "crash", "timeout"):
                status, message = "xfail", f"expected failure ({r.get('status')}): {message}"
            elif status == "pass":
                status, message = "XPASS", "marked expect='fail' but passed: " + message
        info = r.get("info") or {}
        return Result(job.case.id, job.case.kernel, job.case.spec_path, job.target, job.variant.label, sizes,
                      status, message, r.get("kernel_ms"), r.get("device", "") or info.get("device", ""),
                      r.get("subgroup_size") or info.get("subgroup_size"), r.get("gbps"), r.get("gflops"), info)


def translator_missing(lang: str) -> str | None:
    """Why porter.translate cannot give `lang` yet (it is being written alongside), or None."""
    try:
        from porter.translate import api
    except ImportError as e:
        return f"no {lang} translation: porter.translate.api is not available ({e})"
    if lang not in getattr(api, "TARGETS", {}):
        return f"no {lang} translation: the translator has no '{lang}' target yet"
    module = api.TARGETS[lang].entry.partition(":")[0]
    import importlib.util
    try:
        found = importlib.util.find_spec(module) is not None
    except ImportError:
        found = False
    return None if found else f"no {lang} translation: {module} is not available"


def _cleanup(env: dict) -> None:
    """Remove the per-job log a wrapping tool wrote (its path is the only *_LOG entry a wrapper sets)."""
    from porter.verify.backends.oclgrind import LOG_ENV
    log = env.get(LOG_ENV)
    if log and os.path.exists(log):
        os.unlink(log)


def _pump(stream, lines: queue.Queue) -> None:
    for line in stream:
        lines.put(line.rstrip("\n"))
    lines.put(None)


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)      # the worker leads its own session: take its children too
    except ProcessLookupError:
        pass
    proc.wait()


def _death(rc: int, stderr: list[str]) -> str:
    if rc < 0:
        try:
            how = f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            how = f"killed by signal {-rc}"
    else:
        how = f"exited with status {rc}"
    tail = [ln.rstrip() for ln in stderr if ln.strip()][-5:]
    return f"worker {how} before reporting" + (": " + " | ".join(tail) if tail else "")


def exit_code(results: list[Result]) -> int:
    return 1 if any(r.status in FAILING for r in results) else 0
