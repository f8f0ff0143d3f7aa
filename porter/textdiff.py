"""Line diffs of two versions of a file that stay near-linear on large inputs: the changed-line count of the HIP
statistics and the unified diff of `cuport lint --diff` (difflib's output, anchored on lines unique to both sides)."""
from __future__ import annotations

from collections import Counter

# difflib's SequenceMatcher counts them exactly but is quadratic on the repeated lines (`}`, blank lines) of
# hundreds of similar kernels (800 small kernels: 400 s). The count below aligns on lines that occur once on each
# side (patience diff) and runs difflib only on the short stretches between those anchors: near-linear.
_DIFFLIB_CELLS = 200_000      # a stretch of a x b lines at most this big goes to difflib


def changed_line_count(before: str, after: str) -> int:
    """Lines changed from `before` to `after`, counted as difflib's opcodes would be: per differing block, the
    longer side. A stretch over _DIFFLIB_CELLS with no line unique to both sides is estimated from the lines
    the two sides share (a lower bound on what is unchanged can only be that many)."""
    a, b = before.splitlines(), after.splitlines()
    if len(a) * len(b) <= _DIFFLIB_CELLS:
        return _difflib_count(a, b)
    total = 0
    work = [(0, len(a), 0, len(b))]
    while work:
        a0, a1, b0, b1 = work.pop()
        while a0 < a1 and b0 < b1 and a[a0] == b[b0]:      # common prefix
            a0 += 1
            b0 += 1
        while a0 < a1 and b0 < b1 and a[a1 - 1] == b[b1 - 1]:  # common suffix
            a1 -= 1
            b1 -= 1
        na, nb = a1 - a0, b1 - b0
        if not na or not nb:
            total += na + nb
            continue
        if na * nb <= _DIFFLIB_CELLS:
            total += _difflib_count(a[a0:a1], b[b0:b1])
            continue
        anchors = _anchors(a, a0, a1, b, b0, b1)
        if not anchors:
            common = sum((Counter(a[a0:a1]) & Counter(b[b0:b1])).values())
            total += max(na, nb) - common
            continue
        pa, pb = a0, b0
        for i, j in anchors:
            work.append((pa, i, pb, j))
            pa, pb = i + 1, j + 1
        work.append((pa, a1, pb, b1))
    return total


def _difflib_count(a: list, b: list) -> int:
    import difflib
    sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return sum(max(a1 - a0, b1 - b0) for op, a0, a1, b0, b1 in sm.get_opcodes() if op != "equal")


def _anchors(a, a0, a1, b, b0, b1) -> list[tuple[int, int]]:
    """(i, j) pairs of lines unique in a[a0:a1] and in b[b0:b1] and equal, the longest run increasing in both
    (patience sorting: O(k log k))."""
    import bisect
    ca, cb = Counter(a[a0:a1]), Counter(b[b0:b1])
    where_b = {b[j]: j for j in range(b0, b1) if cb[b[j]] == 1}
    pairs = [(i, where_b[a[i]]) for i in range(a0, a1) if ca[a[i]] == 1 and a[i] in where_b]
    if not pairs:
        return []
    tails, tail_idx, prev = [], [], [-1] * len(pairs)
    for k, (_i, j) in enumerate(pairs):
        p = bisect.bisect_left(tails, j)
        if p == len(tails):
            tails.append(j)
            tail_idx.append(k)
        else:
            tails[p] = j
            tail_idx[p] = k
        prev[k] = tail_idx[p - 1] if p else -1
    out, k = [], tail_idx[-1]
    while k >= 0:
        out.append(pairs[k])
        k = prev[k]
    return out[::-1]


# --- unified diff (lint --fix --diff) ----------------------------------------------------------------------------

_DIFF_EXACT_LINES = 20_000    # files of at most this many lines (both sides together) go to difflib as they are


def unified_diff(a: list, b: list, fromfile: str = "", tofile: str = "", n: int = 3):
    """difflib.unified_diff(a, b, fromfile, tofile, n=n), line for line, for files up to _DIFF_EXACT_LINES. Past
    that the matching lines come from the anchored alignment above (lines unique to both sides, difflib between
    them), so a diff of a many-megabyte file with thousands of fixes stays near-linear; it is still a valid
    unified diff of a into b, formatted and grouped into hunks by difflib's own code."""
    import difflib
    if len(a) + len(b) <= _DIFF_EXACT_LINES:
        yield from difflib.unified_diff(a, b, fromfile, tofile, n=n)
        return
    sm = difflib.SequenceMatcher(None, (), ())
    sm.matching_blocks = matching_blocks(a, b)
    started = False
    for group in sm.get_grouped_opcodes(n):
        if not started:
            started = True
            yield f"--- {fromfile}\n"
            yield f"+++ {tofile}\n"
        first, last = group[0], group[-1]
        yield f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n"
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                for line in a[i1:i2]:
                    yield " " + line
                continue
            if tag in ("replace", "delete"):
                for line in a[i1:i2]:
                    yield "-" + line
            if tag in ("replace", "insert"):
                for line in b[j1:j2]:
                    yield "+" + line


def _range(start: int, stop: int) -> str:
    """difflib's _format_range_unified: 'start,length' (1-based; an empty range names the line before it)."""
    beginning, length = start + 1, stop - start
    if length == 1:
        return f"{beginning}"
    if not length:
        beginning -= 1
    return f"{beginning},{length}"


def matching_blocks(a: list, b: list) -> list:
    """SequenceMatcher.get_matching_blocks() for a and b in near-linear time: common prefix and suffix, lines
    unique to both sides as anchors, difflib on the stretches between anchors up to _DIFFLIB_CELLS; a bigger
    stretch without an anchor counts as replaced. Adjacent blocks are merged and the list ends with the
    (len(a), len(b), 0) sentinel, as difflib's does."""
    import difflib
    blocks = []
    work = [(0, len(a), 0, len(b))]
    while work:
        a0, a1, b0, b1 = work.pop()
        k = 0
        while a0 + k < a1 and b0 + k < b1 and a[a0 + k] == b[b0 + k]:       # common prefix
            k += 1
        if k:
            blocks.append((a0, b0, k))
            a0, b0 = a0 + k, b0 + k
        k = 0
        while a0 < a1 - k and b0 < b1 - k and a[a1 - 1 - k] == b[b1 - 1 - k]:   # common suffix
            k += 1
        if k:
            blocks.append((a1 - k, b1 - k, k))
            a1, b1 = a1 - k, b1 - k
        na, nb = a1 - a0, b1 - b0
        if not na or not nb:
            continue
        if na * nb <= _DIFFLIB_CELLS:
            sm = difflib.SequenceMatcher(None, a[a0:a1], b[b0:b1], autojunk=False)
            blocks.extend((a0 + i, b0 + j, size) for i, j, size in sm.get_matching_blocks() if size)
            continue
        anchors = _anchors(a, a0, a1, b, b0, b1)
        pa, pb = a0, b0
        for i, j in anchors:
            blocks.append((i, j, 1))
            work.append((pa, i, pb, j))
            pa, pb = i + 1, j + 1
        if anchors:
            work.append((pa, a1, pb, b1))
    blocks.sort()
    out = []
    for i, j, size in blocks:
        if out and out[-1][0] + out[-1][2] == i and out[-1][1] + out[-1][2] == j:
            out[-1] = (out[-1][0], out[-1][1], out[-1][2] + size)
        else:
            out.append((i, j, size))
    out.append((len(a), len(b), 0))
    return [difflib.Match(*m) for m in out]
