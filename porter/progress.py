"""A progress bar on stderr for runs over many files, and the one-line summary that ends them.

Shown only where a person watches: stderr is a terminal, no -q, and not under pre-commit (PRE_COMMIT=1, which
pre-commit sets for its hooks) nor CUPORT_NO_PROGRESS=1. Everything else (pipes, CI logs, editors) gets the same
bytes as before. The bar redraws at most 10 times a second and is erased before anything else is printed, so it
never mixes with the report on stdout or the diagnostics on stderr.
"""
from __future__ import annotations

import os
import sys
import time
from collections import Counter

REFRESH_S = 0.1
MIN_FILES = 2          # one file needs no bar (the summary is still printed)


def wanted(quiet: bool = False, stream=None) -> bool:
    """True when progress and summary belong on `stream` (default: sys.stderr)."""
    stream = sys.stderr if stream is None else stream
    if quiet or os.environ.get("PRE_COMMIT") == "1" or os.environ.get("CUPORT_NO_PROGRESS") == "1":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):      # a closed or fake stream
        return False


class Progress:
    """`with Progress(total, "lint") as bar: ... bar.advance(name)`; a no-op object when not wanted()."""

    def __init__(self, total: int, verb: str, *, quiet: bool = False, stream=None, enabled: bool | None = None):
        self.stream = sys.stderr if stream is None else stream
        self.enabled = wanted(quiet, self.stream) if enabled is None else enabled
        self.total, self.verb, self.done = max(0, total), verb, 0
        self.start = time.monotonic()
        self._last = 0.0
        self._shown = False
        self._item = ""

    def __enter__(self):
        self.draw(force=True)
        return self

    def __exit__(self, *exc):
        self.clear()
        return False

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def advance(self, item: str = "", n: int = 1) -> None:
        self.done = min(self.total, self.done + n) if self.total else self.done + n
        self._item = item
        self.draw(force=self.done >= self.total)

    def draw(self, force: bool = False) -> None:
        if not self.enabled or self.total < MIN_FILES:
            return
        now = time.monotonic()
        if not force and now - self._last < REFRESH_S:
            return
        self._last = now
        self.stream.write("\r" + self.line() + "\x1b[K")
        self.stream.flush()
        self._shown = True

    def line(self, width: int | None = None) -> str:
        """`lint [#########---------] 12/40  3.1s  kernels/a.cu`, cut to the terminal's width."""
        if not width:
            import shutil
            width = shutil.get_terminal_size((80, 24)).columns
        frac = self.done / self.total if self.total else 0.0
        bar_w = 20
        full = int(frac * bar_w)
        head = f"{self.verb} [{'#' * full}{'-' * (bar_w - full)}] {self.done}/{self.total} {self.elapsed:5.1f}s"
        text = f"{head}  {self._item}" if self._item else head
        return text[: max(10, width - 1)]

    def clear(self) -> None:
        """Erase the bar (before other output, and at the end)."""
        if self._shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._shown = False

    def summary(self, text: str) -> None:
        """The closing line (only when enabled: piped output stays exactly as it was)."""
        if not self.enabled:
            return
        self.clear()
        self.stream.write(text.rstrip("\n") + "\n")
        self.stream.flush()


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def by_code(codes) -> str:
    """'CP102 x3, CP202 x1' (most frequent first)."""
    counts = Counter(codes)
    return ", ".join(f"{c} x{n}" for c, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def findings_summary(verb: str, files: int, codes, seconds: float) -> str:
    """`cuport lint: 12 files, 7 findings (CP102 x4, CP202 x3) in 1.4 s`."""
    codes = list(codes)
    found = f"{plural(len(codes), 'finding')} ({by_code(codes)})" if codes else "no findings"
    return f"cuport {verb}: {plural(files, 'file')}, {found} in {seconds:.1f} s"


def outcome_summary(verb: str, files: int, outcomes: dict, seconds: float) -> str:
    """`cuport translate: 5 files: 4 translated, 1 refused in 2.0 s` (zero counts left out)."""
    parts = ", ".join(f"{n} {k}" for k, n in outcomes.items() if n)
    return f"cuport {verb}: {plural(files, 'file')}: {parts or 'nothing done'} in {seconds:.1f} s"
