"""Near-linear primitives (issue 11, item 4): the lexer never backtracks on unterminated literals, fix selection
and application agree with the plain quadratic definitions on many random edits, and the HIP changed-lines
statistic agrees with difflib. Assertions are on results; an alarm only guards against a hang."""
from __future__ import annotations

import difflib
import random
import signal

import pytest

from porter.diagnostics import Edit
from porter.frontend.lexer import tokenize
from porter.source import OverlappingEdits, apply_edits, select_edits
from porter.textdiff import changed_line_count


@pytest.fixture
def hang_guard():
    """Fail instead of hanging (the old lexer took hours on these inputs)."""
    def boom(*_):
        raise TimeoutError("took far too long: catastrophic backtracking?")
    old = signal.signal(signal.SIGALRM, boom)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


LINE = b"  float x = a[i] + b[i] * 2.0f; // comment\n"


@pytest.mark.parametrize("head, kind", [
    (b'auto s = R"(', "LITERAL"),            # unterminated raw string: hours before
    (b'auto s = u8R"delim(', "LITERAL"),
    (b"/* never closed ", "COMMENT"),
])
def test_unterminated_literal_runs_to_end_of_data(hang_guard, head, kind):
    data = head + LINE * 3000
    toks = tokenize(data)
    assert toks[-1].kind == kind
    assert toks[-1].end == len(data)            # one token from the opening to the end
    assert len(toks) <= 5


def test_raw_string_with_its_delimiter_ends_there(hang_guard):
    data = b'auto s = R"xy(a )" b)xy"; int k;\n'
    toks = tokenize(data)
    raw = [t for t in toks if t.spelling.startswith('R"')]
    assert [t.spelling for t in raw] == ['R"xy(a )" b)xy"']
    assert [t.spelling for t in toks[-3:]] == ["int", "k", ";"]


@pytest.mark.parametrize("head", [b'const char *s = "open', b"char c = 'x"])
def test_unterminated_string_and_char_stop_at_end_of_line(hang_guard, head):
    data = head + b"\n" + LINE * 3000
    toks = tokenize(data)
    assert toks[len(tokenize(head)) - 1].end == len(head)      # the literal ends with its line
    assert sum(1 for t in toks if t.kind == "COMMENT") == 3000   # and the rest lexes normally


def test_backslash_newlines_and_long_lines(hang_guard):
    data = b'"' + b"\\\\\\\n" * 20000                          # string of escaped backslashes and splices
    assert len(tokenize(data)) == 1
    data = b"// a comment \\\n" * 20000 + b"end\nint x;\n"      # one comment spliced over 20,001 lines
    toks = tokenize(data)
    assert toks[0].kind == "COMMENT" and [t.spelling for t in toks[1:]] == ["int", "x", ";"]
    data = b"int a = " + b"x + " * 200000 + b"1;\n"            # an 800 KB line
    assert len(tokenize(data)) == 3 + 2 * 200000 + 2


# -- fix selection and application ---------------------------------------------------------------------------------
def naive_select(fix_lists):
    """The original pairwise definition (quadratic)."""
    taken = []
    for edits in fix_lists:
        if all(e.end <= t.start or e.start >= t.end or e == t for e in edits for t in taken):
            taken.extend(e for e in edits if e not in taken)
    return taken


def naive_apply(data: bytes, edits) -> bytes:
    for e in reversed(sorted(dict.fromkeys(edits), key=lambda e: (e.start, e.end))):
        data = data[:e.start] + e.content.encode() + data[e.end:]
    return data


def random_fixes(rng, length, count):
    fixes = []
    for _ in range(count):
        f = []
        for _ in range(rng.randint(1, 3)):
            s = rng.randint(0, length)
            f.append(Edit(s, min(length, s + rng.choice([0, 0, 1, 2, 3, 7])), rng.choice(["", "x", "yy"])))
        # a fix whose own edits overlap is a rule bug: apply_edits refuses it (tested below)
        if all(a.end <= b.start or a.start >= b.end or a == b for a in f for b in f if a is not b):
            fixes.append(f)
    return fixes


def test_select_edits_matches_the_pairwise_definition():
    rng = random.Random(11)
    for _ in range(2000):
        length = rng.randint(1, 40)
        fixes = random_fixes(rng, length, rng.randint(0, 14))
        got = select_edits(fixes)
        assert list(got) == naive_select(fixes), fixes
        data = bytes(range(97, 97 + 26)) * 2
        assert apply_edits(data[:length], got) == naive_apply(data[:length], got)


def test_select_edits_on_many_edits():
    rng = random.Random(12)
    fixes = random_fixes(rng, 400_000, 20_000)
    got = select_edits(fixes)
    # every taken fix is whole, no two taken edits conflict, every skipped fix conflicts with a taken edit
    taken = [f for f in fixes if all(e in got for e in f)]
    assert sum(len(set(f)) for f in taken) >= len(got) > 10_000
    spans = sorted((e.start, e.end) for e in got)
    assert all(a[1] <= b[0] or a[0] == a[1] or b[0] == b[1] for a, b in zip(spans, spans[1:]))
    first = naive_select(fixes[:3000])
    assert list(select_edits(fixes[:3000])) == first
    data = bytes(400_000)
    out = apply_edits(data, got)
    assert len(out) == len(data) + sum(len(e.content) - (e.end - e.start) for e in got)


def test_select_edits_conflicts():
    a, b = Edit(10, 20, "a"), Edit(15, 25, "b")
    assert list(select_edits([[a], [b]])) == [a]                      # overlap: the later fix waits
    assert list(select_edits([[a], [Edit(20, 30, "c")]])) == [a, Edit(20, 30, "c")]   # touching is fine
    assert list(select_edits([[a], [Edit(15, 15, "i")]])) == [a]       # an insertion inside a replaced range
    assert list(select_edits([[a], [Edit(10, 10, "i")]])) == [a, Edit(10, 10, "i")]   # at its edge: fine
    assert list(select_edits([[Edit(5, 5, "p")], [Edit(5, 5, "q")]])) == [Edit(5, 5, "p"), Edit(5, 5, "q")]
    assert list(select_edits([[a], [a, Edit(30, 31, "z")]])) == [a, Edit(30, 31, "z")]   # identical: no conflict
    assert list(select_edits([[a], [Edit(10, 20, "other")]])) == [a]  # same range, other text: conflict


def test_apply_edits_refuses_overlaps_and_merges_duplicates():
    data = b"0123456789"
    assert apply_edits(data, [Edit(3, 3, "x"), Edit(3, 3, "y"), Edit(3, 4, "R")]) == b"012xyR456789"
    assert apply_edits(data, [Edit(3, 3, "y"), Edit(3, 3, "x")]) == b"012yx3456789"
    assert apply_edits(data, [Edit(2, 4, "ab"), Edit(2, 4, "ab"), Edit(8, 8, "!")]) == b"01ab4567!89"
    with pytest.raises(OverlappingEdits):
        apply_edits(data, [Edit(2, 5, "x"), Edit(4, 6, "y")])


# -- HIP changed-lines statistic -----------------------------------------------------------------------------------
def difflib_count(before: str, after: str) -> int:
    sm = difflib.SequenceMatcher(None, before.splitlines(), after.splitlines(), autojunk=False)
    return sum(max(a1 - a0, b1 - b0) for op, a0, a1, b0, b1 in sm.get_opcodes() if op != "equal")


KERNEL = """__global__ void k{i}(float *a, int n) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = __shfl_down_sync(0xffffffff, a[i], 1);
}}

"""


def test_changed_line_count_agrees_with_difflib():
    rng = random.Random(13)
    before = "".join(KERNEL.format(i=i) for i in range(300))              # 1,500 lines: the anchored path
    lines = []
    for ln in before.splitlines():
        if rng.random() < 0.05:
            lines.append("// cuport: inserted note")
        lines.append(ln.replace("0xffffffff", "0xffffffffffffffffull") if rng.random() < 0.5 else ln)
    after = "#include <hip/hip_runtime.h>\n" + "\n".join(lines) + "\n"
    assert len(before.splitlines()) * len(after.splitlines()) > 200_000
    # by construction: per run of changed lines, the longer side (notes and new lines match nothing)
    expected, dele, ins = 0, 0, 1
    k = 0
    out = lines
    for ln in before.splitlines():
        while out[k] == "// cuport: inserted note":
            ins += 1
            k += 1
        if out[k] != ln:
            dele, ins = dele + 1, ins + 1
        else:
            expected, dele, ins = expected + max(dele, ins), 0, 0
        k += 1
    expected += max(dele, ins)
    assert changed_line_count(before, after) == expected
    assert difflib_count(before, after) >= expected     # difflib is greedy, not minimal
    assert changed_line_count(before, before) == 0
    assert changed_line_count("", "a\nb\n") == 2
    for _ in range(200):                                                  # small inputs: difflib itself
        a = [rng.choice(["}", "", "x", f"u{rng.randint(0, 9)}"]) for _ in range(rng.randint(0, 30))]
        b = [x if rng.random() < 0.8 else "y" for x in a]
        assert changed_line_count("\n".join(a), "\n".join(b)) == difflib_count("\n".join(a), "\n".join(b))


def test_changed_line_count_on_many_kernels_is_fast_enough_to_finish(hang_guard):
    before = "".join(KERNEL.format(i=i) for i in range(8000))             # 40,000 lines (difflib: minutes)
    after = before.replace("0xffffffff", "0xffffffffffffffffull")
    assert changed_line_count(before, after) == 8000


# --- lint --fix --diff: difflib's diff on ordinary files, an anchored near-linear one past them ---------------

def _apply_unified(a: list, diff: str) -> list:
    """Apply a unified diff to the lines `a` (a strict reader: every context and removed line must match)."""
    import re
    lines = diff.splitlines(True)
    assert lines[0].startswith("--- ") and lines[1].startswith("+++ ")
    out, pos, k = [], 0, 2
    while k < len(lines):
        m = re.match(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@\n", lines[k])
        assert m, lines[k]
        start, alen = int(m[1]), int(m[2] or 1)
        blen = int(m[4] or 1)
        start = start - 1 if alen else start           # an empty range names the line before it
        assert start >= pos
        out += a[pos:start]
        pos = start
        k += 1
        seen_a = seen_b = 0
        while k < len(lines) and not lines[k].startswith("@@"):
            tag, body = lines[k][0], lines[k][1:]
            if tag in " -":
                assert a[pos] == body
                pos += 1
                seen_a += 1
            if tag in " +":
                out.append(body)
                seen_b += 1
            k += 1
        assert (seen_a, seen_b) == (alen, blen)
    return out + a[pos:]


def _mutated(rng, a):
    b = []
    for x in a:
        r = rng.random()
        if r < 0.1:
            continue
        b.append(x if r < 0.8 else "y\n")
        if rng.random() < 0.05:
            b.append("new\n")
    return b


def test_unified_diff_is_difflibs_on_ordinary_files():
    from porter.textdiff import unified_diff
    rng = random.Random(5)
    for _ in range(300):
        a = [rng.choice(["}\n", "\n", "x\n", f"u{rng.randint(0, 9)}\n"]) for _ in range(rng.randint(0, 40))]
        b = _mutated(rng, a)
        if rng.random() < 0.2 and b:
            b[-1] = b[-1].rstrip("\n")                  # no newline at the end
        got = "".join(unified_diff(a, b, "a/k.cu", "b/k.cu"))
        assert got == "".join(difflib.unified_diff(a, b, "a/k.cu", "b/k.cu"))
    # a file of kernels with fixes, 3,000 lines: still difflib's own diff, to the byte
    before = "".join(KERNEL.format(i=i) for i in range(600)).splitlines(True)
    after = [ln.replace("0xffffffff", "0xffffffffffffffffull") if i % 7 == 0 else ln for i, ln in enumerate(before)]
    got = "".join(unified_diff(before, after, "a/k.cu", "b/k.cu"))
    assert got == "".join(difflib.unified_diff(before, after, "a/k.cu", "b/k.cu"))
    assert "".join(unified_diff(before, before, "a", "b")) == ""


def test_anchored_unified_diff_applies_and_is_minimal_on_local_fixes(monkeypatch, hang_guard):
    from porter import textdiff as stats
    monkeypatch.setattr(stats, "_DIFF_EXACT_LINES", 0)      # the anchored path on every input
    rng = random.Random(8)
    for _ in range(300):
        a = [rng.choice(["}\n", "\n", "x\n", f"u{rng.randint(0, 9)}\n"]) for _ in range(rng.randint(0, 40))]
        b = _mutated(rng, a)
        d = "".join(stats.unified_diff(a, b, "a/k.cu", "b/k.cu"))
        assert (d == "") == (a == b)
        if d:
            assert _apply_unified(a, d) == b
    # 40,000 lines, every fifth kernel's mask widened: exactly those lines change, in hunks of difflib's shape
    before = "".join(KERNEL.format(i=i) for i in range(8000)).splitlines(True)
    after = [ln.replace("0xffffffff", "0xffffffffffffffffull") if i % 25 == 2 else ln for i, ln in enumerate(before)]
    d = "".join(stats.unified_diff(before, after, "a/k.cu", "b/k.cu"))
    assert _apply_unified(before, d) == after
    body = d.splitlines()[2:]
    assert sum(ln.startswith("-") for ln in body) == sum(ln.startswith("+") for ln in body) == 1600
    # 25 lines apart: one hunk per fix, 3 lines of context each side (line 3 has only 2 before it)
    heads = [ln for ln in body if ln.startswith("@@")]
    assert heads == ["@@ -1,6 +1,6 @@"] + [f"@@ -{25 * k},7 +{25 * k},7 @@" for k in range(1, 1600)]


# --- whole-file analysis: the work per kernel does not grow with the number of kernels in the file --------------

def _generated(groups: int) -> str:
    """`groups` groups of 8 kernels and functions from the scaling benchmark's generator (bench/scaling.py)."""
    import importlib.util
    import os
    import tempfile
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location("_scaling", os.path.join(here, "..", "bench", "scaling.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "k.cu")
        mod.generate(path, groups * 3300)          # a group is ~3.3 KB
        with open(path) as fh:
            return fh.read()


def _call_counts(fn, text: str):
    """Python function calls made by fn(SourceFile) per (file, function): an operation count, not a time."""
    import sys
    from collections import Counter
    from porter.source import SourceFile
    counts = Counter()

    def prof(frame, event, _arg):
        if event == "call":
            counts[(frame.f_code.co_filename.rsplit("/", 1)[-1], frame.f_code.co_name)] += 1
    sys.setprofile(prof)
    try:
        fn(SourceFile("k.cu", text))
    finally:
        sys.setprofile(None)
    return counts


def _superlinear(run, groups):
    """Functions called more than ~twice as often for twice the kernels, and the total growth."""
    small, big = _call_counts(run, _generated(groups)), _call_counts(run, _generated(2 * groups))
    worse = {k: (small[k], n) for k, n in big.items() if n >= 300 and n > 2.25 * small[k] + 20}
    return worse, sum(big.values()) / sum(small.values())


@pytest.mark.parametrize("mode, groups", [("lint", 10), ("fix", 6)])
def test_calls_per_function_grow_linearly_with_the_number_of_kernels(mode, groups):
    """Twice the kernels, at most ~twice the calls of every function: before, kernel_static_shared was called
    once per kernel per padded array (CP301's fix), site_kernel once per launch per kernel, and the dataclass
    __eq__ of `arr in arrays` per pair (x3.7-4 for x2 kernels)."""
    from porter.lint import checker
    worse, total = _superlinear(checker.lint_source if mode == "lint" else checker.fix_source, groups)
    assert worse == {}
    assert total <= 2.1


def test_call_count_sees_a_scan_of_every_kernel_per_array(monkeypatch):
    """The negative case: CP301's old scan of every kernel per padded array is caught by the same count."""
    from porter.analysis.shared_access import kernel_static_shared
    from porter.lint import checker
    from porter.lint.rules import shared_bank_conflict
    monkeypatch.setattr(shared_bank_conflict, "kernels_using", lambda model, arr: [
        k for k in model.kernels if arr in kernel_static_shared(model, k).arrays])
    worse, _ = _superlinear(checker.lint_source, 10)
    assert ("shared_access.py", "kernel_static_shared") in worse
