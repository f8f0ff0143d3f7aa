"""Delta debugging (Zeller's ddmin) over lines, then over bytes: the smallest input that still fails the same way."""
from __future__ import annotations

import re
import time


def ddmin(items: list, fails, budget) -> list:
    """Shrink `items` while `fails(items)` holds. `budget()` is False once tests or time ran out."""
    n = 2
    while len(items) >= 2 and budget():
        chunk = max(1, len(items) // n)
        parts = [items[j:j + chunk] for j in range(0, len(items), chunk)]
        reduced = False
        for j in range(len(parts)):
            if not budget():
                return items
            rest = [x for k, p in enumerate(parts) if k != j for x in p]
            if rest and fails(rest):
                items, n, reduced = rest, max(n - 1, 2), True
                break
        if not reduced:
            if chunk == 1:
                break
            n = min(len(items), 2 * n)
    return items


def minimize(data: bytes, still_fails, max_tests: int = 200, max_seconds: float = 600.0) -> tuple[bytes, int]:
    """`still_fails(bytes) -> bool`; returns (smallest failing input found, tests run)."""
    tests = [0]
    t_end = time.monotonic() + max_seconds

    def budget():
        return tests[0] < max_tests and time.monotonic() < t_end

    def fails(candidate: bytes) -> bool:
        tests[0] += 1
        return still_fails(candidate)

    lines = data.splitlines(True)
    lines = ddmin(lines, lambda ls: fails(b"".join(ls)), budget)
    data = b"".join(lines)
    if len(lines) <= 64 and len(data) > 4096:    # few long lines: by words (a 250 KB expression on one line)
        words = [w for w in re.split(rb"(\s+)", data) if w]
        data = b"".join(ddmin(words, lambda ws: fails(b"".join(ws)), budget))
    if len(data) <= 4096:      # bytes only once the lines are few: ddmin is quadratic in the worst case
        data = bytes(ddmin(list(data), lambda bs: fails(bytes(bs)), budget))
    return data, tests[0]
