"""Crash isolation and per-file limits: each file is parsed and analysed in a supervised worker process.

libclang can die natively on ordinary-looking input (an expression of ~20,000 terms from a macro overflows its
parser's stack: SIGSEGV), a file can run for minutes, and a macro bomb can grow the model to gigabytes. In a
worker each of these costs only that file: the supervisor here reads the worker's pickled result from a pipe,
notices a death by signal, kills a worker past its time or memory limit, and gives a Failure for that file,
which the commands report as CP000 at line 1 while every other file keeps its result.

No multiprocessing pool: Pool.map waits forever when a worker dies. The supervisor forks its own workers (a
fork costs about a millisecond; the parent imports the heavy modules first when there are many files), hands
them one file at a time, and replaces a worker that died or was killed. run_each serves `lint` (tasks known up
front, in parallel with -j), call_job the translators' file-by-file loop (one long-lived worker), call
`report` (a fork per file).

Limits: `timeout` seconds of wall time per file (per MiB of source for a file over 1 MiB: a big file is slow,
not stuck) and `memory_mib` MiB of resident memory per file, beyond what a worker shares with its parent at
the fork (0 turns either off), from --timeout /
--memory-limit or the `timeout` / `memory-limit` config keys. Memory is polled from /proc every POLL seconds
(RLIMIT_AS where there is no /proc); a cheap pre-check (check_expansion) refuses a macro bomb before clang
ever sees it.

Test hook: CUPORT_TEST_HANG=NAME makes a worker sleep on the file whose base name is NAME (the timeout's
test); only the worker honours it."""
from __future__ import annotations

import argparse
import functools
import os
import pickle
import re
import selectors
import signal
import sys
import time
from collections import deque
from types import SimpleNamespace

from porter.record import FrozenRecord

DEFAULT_TIMEOUT = 60.0          # seconds per file (per MiB beyond the first): a 1 MB file lints in ~15 s
DEFAULT_MEMORY_MIB = 4096       # MiB per file: linting a 1 MB file of kernels peaks at ~650 MiB
POLL = 0.05                     # seconds between memory and deadline checks
TOKENS_PER_MIB = 256            # macro expansion the pre-check allows per MiB of the memory limit
_BIG_MACRO = 1000               # only uses of macros at least this large are counted by the pre-check


class Limits(FrozenRecord):
    timeout: float
    memory_mib: int

    def __init__(self, timeout=DEFAULT_TIMEOUT, memory_mib=DEFAULT_MEMORY_MIB):
        _set = object.__setattr__
        _set(self, 'timeout', timeout)
        _set(self, 'memory_mib', memory_mib)

    @classmethod
    def of(cls, settings=None, timeout=None, memory_mib=None) -> "Limits":
        """Command-line values first, then the settings (config keys), then the defaults."""
        if timeout is None:
            timeout = getattr(settings, "timeout", DEFAULT_TIMEOUT)
        if memory_mib is None:
            memory_mib = getattr(settings, "memory_limit", DEFAULT_MEMORY_MIB)
        return cls(float(timeout), int(memory_mib))


class Failure(FrozenRecord):
    """A file that got no result: kind is crash | killed | timeout | memory | exit."""
    kind: str
    message: str

    def __init__(self, kind, message):
        _set = object.__setattr__
        _set(self, 'kind', kind)
        _set(self, 'message', message)


# --- command-line types -------------------------------------------------------------------------------------

def seconds(value: str) -> float:
    """argparse type for --timeout: seconds >= 0 (0: no limit)."""
    try:
        v = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got '{value}'") from None
    if not v >= 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number of seconds >= 0 (0: no limit), got '{value}'")
    return v


def mebibytes(value: str) -> int:
    """argparse type for --memory-limit: MiB >= 0 (0: no limit)."""
    try:
        v = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of MiB, got '{value}'") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"expected MiB >= 0 (0: no limit), got '{value}'")
    return v


def add_arguments(add) -> None:
    """--timeout and --memory-limit through `add(*names, **kw)` (a parser's add_argument or a wrapper)."""
    add("--timeout", dest="timeout", type=seconds, default=None, metavar="SECONDS",
        help=f"give up on a file after SECONDS (CP000; default {DEFAULT_TIMEOUT:g}, config key timeout, 0: none)")
    add("--memory-limit", dest="memory_limit", type=mebibytes, default=None, metavar="MiB",
        help=f"give up on a file that needs more than MiB of memory (CP000; default {DEFAULT_MEMORY_MIB}, config "
             "key memory-limit, 0: none)")


# --- the diagnostic -----------------------------------------------------------------------------------------

def diagnostic(path: str, message: str):
    """CP000 at line 1 of `path` (reported whatever the rule selection: the file has no other result)."""
    from porter.lint.registry import diagnostic
    d = diagnostic("CP000", message, path, 0, 0, severity="error", gave_up=True)
    d.row = d.column = d.end_row = d.end_column = 1
    return d


# --- the supervisor -----------------------------------------------------------------------------------------
# Workers are forked children that take jobs from a pipe and answer with length-prefixed pickles, one job at a
# time, so a worker keeps its warm state (libclang's index, the PCH, the rules' and the HIP tables) from file
# to file as a pool's would; the supervisor knows which job each worker is on, so a worker that dies, overruns
# the timeout or the memory limit costs that job only, and a fresh worker takes its place. A job is a task
# number (run_each: the tasks are in the worker's memory since the fork) or a pickled call (call_job: a
# long-lived worker that serves a command's per-file loop one file at a time).

_HEADER = 8                                          # frame: 8-byte length, then the pickle


class _Worker:
    __slots__ = ("pid", "to_fd", "from_fd", "buf", "job", "start", "allowed", "base")

    def __init__(self, pid, to_fd, from_fd, base=0.0):
        self.pid, self.to_fd, self.from_fd, self.buf = pid, to_fd, from_fd, bytearray()
        self.job, self.start, self.allowed = None, 0.0, 0.0
        # the parent's resident memory at the fork: a forked worker's RSS counts the pages it shares with its
        # parent, which the file did not cost (a test run's 300 MB parent made every worker "exceed 300 MiB")
        self.base = base


class _Pool:
    """Supervised workers; run() hands out jobs and gives a result or a Failure for each; idle workers are
    kept for the next run() until close()."""

    def __init__(self, limits: Limits, fn=None, tasks=()):
        self.limits, self.fn, self.tasks = limits, fn, tasks
        self.workers: dict[int, _Worker] = {}        # from_fd -> worker
        self.sel = selectors.DefaultSelector()

    def run(self, jobs: list, width: int = 1, on_done=None) -> list:
        """jobs: [(payload, allowed seconds)]; at most `width` workers; on_done(j) when job j has its outcome."""
        limits = self.limits
        out: list = _Outcomes(len(jobs), on_done) if on_done else [None] * len(jobs)
        pending = deque(range(len(jobs)))
        busy = lambda: any(w.job is not None for w in self.workers.values())   # noqa: E731
        while pending or busy():
            for w in [w for w in self.workers.values() if w.job is None]:
                if pending and self._assign(w, pending[0], jobs[pending[0]]):
                    pending.popleft()
                elif pending:
                    self._retire(w)                  # it died idle: the job waits for another worker
            while pending and len(self.workers) < max(1, width):
                w = self._spawn()
                j = pending.popleft()
                if not self._assign(w, j, jobs[j]):  # a worker that dies before its first job: no retry loop
                    self._retire(w)
                    out[j] = Failure("exit", "the worker for this file could not start")
            for key, _ in self.sel.select(_wait(self.workers, limits)):
                w = key.data
                chunk = os.read(w.from_fd, 1 << 20)
                if chunk:
                    w.buf += chunk
                    frame = _frame(w)
                    if frame is not None:
                        j, w.job = w.job, None
                        if limits.memory_mib and _rss_mib(w.pid) - w.base > limits.memory_mib / 2:
                            self._retire(w)          # what a big file left behind must not count against the next
                        out[j] = _result(frame, limits)
                    continue
                j = w.job
                self._retire(w, reap=False)
                _, status, usage = os.wait4(w.pid, 0)
                if j is not None:
                    out[j] = _death(status, usage, limits, w.base)
            now = time.monotonic()
            for w in list(self.workers.values()):
                failure = _over_limit(w, limits, now) if w.job is not None else None
                if failure is not None:
                    out[w.job] = failure
                    self._retire(w)
        return out

    def close(self, wait: bool = False) -> None:
        for w in list(self.workers.values()):
            self._retire(w, wait=wait)
        self.sel.close()

    def _spawn(self) -> _Worker:
        sys.stdout.flush()                           # a child must not inherit (and later repeat) buffered output
        sys.stderr.flush()
        job_r, job_w = os.pipe()
        res_r, res_w = os.pipe()
        base = _rss_mib(os.getpid())
        pid = os.fork()
        if pid == 0:                                 # the worker: never returns
            code = 70
            try:
                os.close(job_w)
                os.close(res_r)
                for other in self.workers.values():  # the other workers' pipes: theirs alone
                    os.close(other.to_fd)
                    os.close(other.from_fd)
                _worker(self.fn, self.tasks, self.limits, job_r, res_w)
                code = 0
            finally:
                os._exit(code)                       # no atexit, no libclang teardown: the parent owns the run
        os.close(job_r)
        os.close(res_w)
        w = _Worker(pid, job_w, res_r, base)
        self.workers[res_r] = w
        self.sel.register(res_r, selectors.EVENT_READ, w)
        return w

    def _assign(self, w, j: int, job) -> bool:
        payload, allowed = job
        try:
            _write_all(w.to_fd, len(payload).to_bytes(_HEADER, "little") + payload)
        except BrokenPipeError:
            return False
        w.job, w.start, w.allowed = j, time.monotonic(), allowed
        return True

    def _retire(self, w, reap: bool = True, wait: bool = False) -> None:
        """Stop using a worker: unregister and close its pipes; with reap, kill it and wait for it then (wait)
        or later (tearing down a process with libclang loaded takes milliseconds nobody needs to wait for)."""
        self.sel.unregister(w.from_fd)
        del self.workers[w.from_fd]
        os.close(w.to_fd)
        os.close(w.from_fd)
        if reap:
            try:
                os.kill(w.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            if wait:
                os.waitpid(w.pid, 0)
            else:
                _KILLED.append(w.pid)


class _Outcomes(list):
    """The outcome list of _Pool.run that tells on_done(j) as each outcome is set (a progress bar)."""

    def __init__(self, n: int, on_done):
        super().__init__([None] * n)
        self.on_done = on_done

    def __setitem__(self, j, value):
        super().__setitem__(j, value)
        self.on_done(j)


# --- the pre-forked worker (one-file `cuport lint`, the pre-commit case) ------------------------------------
# A cold one-file run spends about as long importing the linter and loading libclang as the parent spends
# importing argparse, reading the settings and finding the file. `cuport lint FILE` forks its worker first thing
# when a core is spare (cli.main; the load average says), and the worker imports what it will need on that
# core while the parent does the rest (~13 ms of the parent's ~30 ms before it hands out the job); the
# first run_each of a single task hands it its job. Nothing else changes: the job, its limits and its failures
# are the ones a worker forked at that point would have. Not used (more files, a cache hit, an error): killed.

_PREFORK: list = []


def prefork() -> None:
    """Fork a worker now that preloads the linter and then waits for a pickled call job."""
    if _PREFORK or not hasattr(os, "fork"):
        return
    sys.stdout.flush()
    sys.stderr.flush()
    job_r, job_w = os.pipe()
    res_r, res_w = os.pipe()
    base = _rss_mib(os.getpid())
    pid = os.fork()
    if pid == 0:                                     # the worker: never returns
        code = 70
        try:
            os.close(job_w)
            os.close(res_r)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            try:
                preload()
            except BaseException:                    # the job itself meets the same failure and reports it
                pass
            _worker(None, (), Limits(), job_r, res_w)
            code = 0
        finally:
            os._exit(code)
    os.close(job_r)
    os.close(res_w)
    _PREFORK.append(_Worker(pid, job_w, res_r, base))


def discard_prefork() -> None:
    """Kill the pre-forked worker if nothing used it (reaped later, or by init when this process ends)."""
    while _PREFORK:
        w = _PREFORK.pop()
        for fd in (w.to_fd, w.from_fd):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            os.kill(w.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        _KILLED.append(w.pid)


def run_one(fn, task, limits: Limits = Limits(), name: str | None = None, size: int = 0):
    """fn(task) in a supervised child: its result, or a Failure."""
    return run_each(fn, [task], limits, 1, (lambda _t: name) if name else None, lambda _t: size)[0]


def run_each(fn, tasks, limits: Limits = Limits(), jobs: int = 1, name=None, size=None, on_done=None) -> list:
    """[fn(task) or Failure] in the order of `tasks`, on at most `jobs` workers. An exception fn raises in a
    worker is raised here (an internal error stays one); a death by signal, the timeout or the memory limit
    gives a Failure for that task only. name(task) is the base name the CUPORT_TEST_HANG hook matches;
    size(task) the bytes of source, which scale the timeout (_allowed). on_done(i): task i is done (progress)."""
    tasks = list(tasks)
    if not hasattr(os, "fork"):                      # no fork (Windows): in-process, unprotected
        return [fn(t) for t in tasks]
    _reap_killed()
    pool = _Pool(limits, fn, tasks)
    work = None
    if _PREFORK and len(tasks) == 1:
        try:                                         # the pre-forked worker has no tasks list: a call job
            work = [(pickle.dumps(("call", fn, (tasks[0],), {}, name(tasks[0]) if name else None),
                                  pickle.HIGHEST_PROTOCOL), _allowed(limits, size(tasks[0]) if size else 0))]
        except Exception:
            work = None
        if work is not None:
            w = _PREFORK.pop()
            pool.workers[w.from_fd] = w
            pool.sel.register(w.from_fd, selectors.EVENT_READ, w)
    discard_prefork()
    if work is None:
        work = [(pickle.dumps(("task", i, name(t) if name else None)), _allowed(limits, size(t) if size else 0))
                for i, t in enumerate(tasks)]
    try:
        out = pool.run(work, jobs, on_done)
    except BaseException:
        pool.close(wait=True)                        # an exception or ^C: leave no child behind
        raise
    pool.close()
    return out


_SESSION: dict = {}             # limits -> the _Pool that serves call_job
_ATEXIT: list = []


def call_job(fn, args, kwargs, limits: Limits, name: str | None = None, size: int = 0):
    """fn(*args, **kwargs) (fn and its arguments picklable) on a long-lived supervised worker: its result or a
    Failure. Calls made one after another reuse the worker and its warm state."""
    if not hasattr(os, "fork"):
        return fn(*args, **kwargs)
    try:
        payload = pickle.dumps(("call", fn, args, kwargs, name), pickle.HIGHEST_PROTOCOL)
    except Exception:           # a local function (a test's stand-in) or an argument pickle refuses: its own fork
        return run_one(lambda _t: fn(*args, **kwargs), None, limits, name, size)
    _reap_killed()
    pool = _SESSION.get(limits)
    if pool is None:
        for old in _SESSION.values():
            old.close()
        _SESSION.clear()
        pool = _SESSION[limits] = _Pool(limits)
        if not _ATEXIT:
            import atexit
            atexit.register(_close_session)
            _ATEXIT.append(True)
    try:
        return pool.run([(payload, _allowed(limits, size))])[0]
    except BaseException:
        _close_session(wait=True)
        raise


def _close_session(wait: bool = False) -> None:
    for pool in _SESSION.values():
        pool.close(wait=wait)
    _SESSION.clear()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _read_exactly(fd: int, n: int) -> bytes | None:
    parts, got = [], 0
    while got < n:
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk:
            return None
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def _worker(fn, tasks, limits, job_r, res_w) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)     # ^C is the parent's: it kills the workers
    import faulthandler
    faulthandler.disable()                           # a crash is the parent's CP000, not a Python stack dump
    if limits.memory_mib and not os.path.exists("/proc/self/statm"):
        _rlimit_as(limits.memory_mib)
    while True:
        head = _read_exactly(job_r, _HEADER)
        body = _read_exactly(job_r, int.from_bytes(head, "little")) if head else None
        if body is None:
            return                                   # the parent closed the pipe (or is gone): done
        try:
            job = pickle.loads(body)
            name = job[-1]
            if name and os.environ.get("CUPORT_TEST_HANG") == name:
                time.sleep(10 ** 6)
            value = fn(tasks[job[1]]) if job[0] == "task" else job[1](*job[2], **job[3])
            payload = pickle.dumps(("ok", value), protocol=pickle.HIGHEST_PROTOCOL)
        except MemoryError:
            payload = pickle.dumps(("memory", None))
        except BaseException as exc:                 # raised again in the parent
            if os.environ.get("CUPORT_DEBUG"):
                import traceback
                traceback.print_exc()
            payload = _pickled_exception(exc)
        sys.stdout.flush()
        sys.stderr.flush()
        _write_all(res_w, len(payload).to_bytes(_HEADER, "little") + payload)


def _allowed(limits, nbytes) -> float:
    """The timeout is per file up to 1 MiB of source, per MiB beyond (a big file is slow, not stuck)."""
    return limits.timeout * max(1.0, (nbytes or 0) / (1 << 20))


def _frame(w):
    if len(w.buf) < _HEADER:
        return None
    size = int.from_bytes(w.buf[:_HEADER], "little")
    if len(w.buf) < _HEADER + size:
        return None
    frame = bytes(w.buf[_HEADER:_HEADER + size])
    del w.buf[:_HEADER + size]
    return frame


def _result(frame: bytes, limits):
    tag, value = pickle.loads(frame)
    if tag == "ok":
        return value
    if tag == "memory":
        return Failure("memory", f"gave up: out of memory (--memory-limit {limits.memory_mib} MiB)")
    raise value


def _pickled_exception(exc) -> bytes:
    try:
        payload = pickle.dumps(("raise", exc))
        pickle.loads(payload)
        return payload
    except Exception:                                # an exception that does not survive pickling: its text
        return pickle.dumps(("raise", RuntimeError(f"{type(exc).__name__}: {exc}")))


def _rlimit_as(mib: int) -> None:
    try:
        import resource
        size = (mib + 1024) << 20                   # address space runs ahead of resident memory
        resource.setrlimit(resource.RLIMIT_AS, (size, size))
    except (ImportError, ValueError, OSError):
        pass


def _wait(workers, limits) -> float | None:
    busy = [w for w in workers.values() if w.job is not None]
    if not busy:
        return 0
    if limits.memory_mib:
        return POLL
    if limits.timeout:
        first = min(w.start + w.allowed for w in busy)
        return max(0.0, first - time.monotonic()) + 0.001
    return None


def _over_limit(w, limits, now) -> Failure | None:
    if limits.timeout and now - w.start > w.allowed:
        per = "" if w.allowed == limits.timeout else f" {limits.timeout:g} s per MiB of source"
        return Failure("timeout", f"gave up after {w.allowed:.0f} s (--timeout{per}): this file took too long"
                       if per else f"gave up after {w.allowed:g} s (--timeout): this file took too long")
    if limits.memory_mib and _rss_mib(w.pid) - w.base > limits.memory_mib:
        return _memory(limits)
    return None


def _memory(limits) -> Failure:
    return Failure("memory", f"gave up: exceeded {limits.memory_mib} MiB (--memory-limit) while parsing and "
                             f"analysing this file")


_PAGE_MIB = os.sysconf("SC_PAGE_SIZE") / (1 << 20) if hasattr(os, "sysconf") else 4096 / (1 << 20)


def _rss_mib(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/statm", "rb") as fh:
            return int(fh.read().split()[1]) * _PAGE_MIB
    except (OSError, IndexError, ValueError):
        return 0.0


_KILLED: list[int] = []         # workers killed but not yet waited for (reaped by the next run)


def _reap_killed() -> None:
    for pid in list(_KILLED):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            _KILLED.remove(pid)


_CRASH_SIGNALS = {getattr(signal, n) for n in ("SIGSEGV", "SIGBUS", "SIGABRT", "SIGILL", "SIGFPE", "SIGTRAP",
                                                "SIGSYS") if hasattr(signal, n)}


def _death(status, usage, limits, base: float = 0.0) -> Failure:
    """What a worker that died on a task says about that task's file. Its peak RSS counts the pages shared with
    the parent at the fork (`base` MiB), which the file did not cost: a segfault under a 300 MB parent (the test
    suite's) had been reported as out of memory."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if limits.memory_mib and usage.ru_maxrss / 1024 - base >= limits.memory_mib:
            return _memory(limits)
        try:
            sname = f", {signal.Signals(sig).name}"
        except ValueError:
            sname = ""
        if sig in _CRASH_SIGNALS:
            return Failure("crash", f"clang crashed while parsing this file (signal {sig}{sname}); "
                                    f"its other findings are unknown")
        return Failure("killed", f"the worker for this file was killed (signal {sig}{sname})")
    return Failure("exit", f"the worker for this file exited with status {os.waitstatus_to_exitcode(status)} "
                           f"and no result")


# --- the macro-bomb pre-check ---------------------------------------------------------------------------------

_CAP = 10 ** 15


@functools.cache
def _re() -> SimpleNamespace:
    """The pre-check's expressions, compiled on first use (a file with no #define never needs them)."""
    return SimpleNamespace(
        define=re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)(\([^)\n]*\))?((?:[^\n\\]|\\.)*)", re.M | re.S),
        directive=re.compile(r"^[ \t]*#(?:[^\n\\]|\\.)*", re.M | re.S),
        comment_or_string=re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|//[^\n]*|/\*[\s\S]*?(?:\*/|\Z)'),
        token=re.compile(r"[A-Za-z_]\w*|\d[\w.]*|\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|##|\S"),
        ident=re.compile(r"[A-Za-z_]\w*"))


def macro_sizes(text: str) -> dict[str, int]:
    """Tokens each #define'd macro expands to, its macros expanded in turn (parameters count one token; a
    macro that reaches itself stops there, as the preprocessor does). Iterative: a chain of thousands of
    macros is no recursion."""
    rx = _re()
    bodies: dict[str, list[str]] = {}
    for m in rx.define.finditer(text):
        params = set(rx.ident.findall(m.group(2) or ""))
        body = rx.comment_or_string.sub(lambda c: c.group() if c.group()[0] in "\"'" else " ", m.group(3))
        bodies[m.group(1)] = [t if t not in params else "" for t in rx.token.findall(body.replace("\\\n", " "))]
    sizes: dict[str, int] = {}
    for root in bodies:
        if root in sizes:
            continue
        stack, active = [(root, iter(bodies[root]))], {root}
        while stack:
            name, rest = stack[-1]
            nxt = next((t for t in rest if t in bodies and t not in sizes and t not in active), None)
            if nxt is not None:
                stack.append((nxt, iter(bodies[nxt])))
                active.add(nxt)
                continue
            # every macro in the body is sized now, or active (it reaches itself: one token)
            sizes[name] = min(_CAP, sum(sizes.get(t, 1) for t in bodies[name]))
            stack.pop()
            active.discard(name)
    return sizes


def expansion(text: str) -> tuple[int, str | None, int]:
    """(tokens the macros add to the code, the largest macro used, its size); uses of macros under
    _BIG_MACRO tokens are not counted (cheap: no #define means nothing to do)."""
    if "define" not in text:
        return 0, None, 0
    big = {n: s for n, s in macro_sizes(text).items() if s >= _BIG_MACRO}
    if not big:
        return 0, None, 0
    code = _re().comment_or_string.sub(" ", _re().directive.sub("", text))
    pattern = re.compile(r"\b(?:" + "|".join(sorted(map(re.escape, big), key=len, reverse=True)) + r")\b")
    total, top = 0, None
    for m in pattern.finditer(code):
        name = m.group()
        total = min(_CAP, total + big[name] - 1)
        if top is None or big[name] > big[top]:
            top = name
    return total, top, big.get(top, 0)


def check_expansion(text: str, memory_mib: int) -> str | None:
    """A CP000 message when the macros would grow the file past what the memory limit allows, else None."""
    if not memory_mib:
        return None
    budget = memory_mib * TOKENS_PER_MIB
    total, top, size = expansion(text)
    if total <= budget:
        return None
    return (f"gave up: macros expand to about {total:,} tokens here ({top} alone to {size:,}), more than the "
            f"{budget:,} that --memory-limit {memory_mib} MiB allows ({TOKENS_PER_MIB} per MiB)")


# --- per-file helpers for the translators and report -------------------------------------------------------------

_PRELOADED = False


def preload() -> None:
    """Import the frontend, the checker, every rule and libclang once in the parent, so that each forked child
    starts with them instead of importing them again."""
    global _PRELOADED
    if _PRELOADED:
        return
    from porter.frontend.parse import _cindex
    from porter.lint.checker import lint_source  # noqa: F401
    from porter.lint.registry import RULES
    for info in RULES.values():
        info.module
    _cindex().conf.lib
    _PRELOADED = True


def call(fn, path: str, limits: Limits, text: str | None = None):
    """fn() for the file at `path` in a supervised child, after the macro pre-check (on `text`, or on the file
    read in the child): its result, or a Failure. Exceptions fn raises are raised here."""
    def child(_):
        src = text
        if src is None:
            try:
                from porter.source import read_source
                src = read_source(path).text
            except Exception:                        # fn reads it again and reports the error its own way
                src = ""
        bomb = check_expansion(src, limits.memory_mib)
        return Failure("memory", bomb) if bomb else fn()
    preload()
    nbytes = len(text) if text is not None else file_size(path)
    return run_one(child, None, limits, name=os.path.basename(path), size=nbytes)


def file_size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def limits_for(args, paths) -> Limits:
    """--timeout / --memory-limit, else the config keys of the configuration the inputs fall under (a command
    that loads no settings of its own; ConfigError propagates: exit 2)."""
    timeout, memory = getattr(args, "timeout", None), getattr(args, "memory_limit", None)
    if timeout is not None and memory is not None:
        return Limits(timeout, memory)
    from porter.config import load_settings
    first = next((p for p in paths if p != "-" and os.path.exists(p)), ".")
    start = first if os.path.isdir(first) else (os.path.dirname(os.path.abspath(first)) or ".")
    settings = load_settings(start, getattr(args, "config", None), bool(getattr(args, "isolated", False)))
    return Limits.of(settings, timeout, memory)
