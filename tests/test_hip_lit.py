"""hipify-clang lit tests in miniature: each tests/fixtures/hip_lit/*.cu is translated and its `// CHECK:` lines
must appear, in order, in the output (a CHECK matches a substring of one output line, leading whitespace of
both stripped); `// CHECK-NOT:` text must not appear between the previous and the next match. Like HIPIFY's
run_test, comments are stripped from the output before matching (the CHECK lines themselves survive the
translation as comments).

The first line may say `// RUN: <options>`: `--launch-syntax hip` (hipify-clang's hipLaunchKernelGGL form),
`--roc`. Lit runs always use `--no-portability-fixes`: hipify-clang only renames, so that is what is compared.

Intentional differences from hipify-clang (not checked here, see tests/test_translate_hip.py):
- *_sync warp intrinsics get 64-bit masks (0xffffffff -> 0xffffffffffffffff): HIP's static_assert wants 64 bits;
- with portability fixes on (the default), warp-size assumptions are fixed and `// cuport:` notes added."""
from __future__ import annotations

import glob
import os
import re

import pytest

from porter.translate.hip.translator import translate

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = sorted(glob.glob(os.path.join(ROOT, "tests", "fixtures", "hip_lit", "*.cu")))

_CHECK = re.compile(r"//\s*CHECK(-NOT)?:\s?(.*)$")


def strip_comments(text: str) -> list[str]:
    """Output lines without `//` comments (outside string literals), as HIPIFY's run_test does (`sed s|//.+|// |`)."""
    out = []
    for line in text.splitlines():
        res, i, quote = [], 0, None
        while i < len(line):
            c = line[i]
            if quote:
                res.append(c)
                if c == "\\" and i + 1 < len(line):
                    res.append(line[i + 1])
                    i += 2
                    continue
                if c == quote:
                    quote = None
            elif c in "\"'":
                quote = c
                res.append(c)
            elif line.startswith("//", i):
                break
            else:
                res.append(c)
            i += 1
        out.append("".join(res).strip())
    return out


def checks_of(source: str) -> list[tuple[bool, str, int]]:
    """[(is_not, pattern, source line)]"""
    out = []
    for n, line in enumerate(source.splitlines(), 1):
        m = _CHECK.search(line)
        if m:
            out.append((bool(m.group(1)), m.group(2).strip(), n))
    return out


def file_check(source: str, output: str) -> list[str]:
    """FileCheck-like: the failures (empty when every CHECK matched in order and no CHECK-NOT was seen)."""
    lines = strip_comments(output)
    failures = []
    pos = 0
    pending_not: list[tuple[str, int]] = []
    for is_not, pat, n in checks_of(source):
        if is_not:
            pending_not.append((pat, n))
            continue
        k = next((i for i in range(pos, len(lines)) if pat in lines[i]), None)
        if k is None:
            near = [l for l in lines if pat.split("(")[0] and pat.split("(")[0] in l][:2]
            failures.append(f"line {n}: CHECK not found: {pat!r}" + (f" (near: {near})" if near else ""))
            continue
        for npat, nn in pending_not:
            if any(npat in l for l in lines[pos:k]):
                failures.append(f"line {nn}: CHECK-NOT found: {npat!r}")
        pending_not = []
        pos = k + 1
    for npat, nn in pending_not:
        if any(npat in l for l in lines[pos:]):
            failures.append(f"line {nn}: CHECK-NOT found: {npat!r}")
    return failures


def run_options(source: str) -> dict:
    first = source.splitlines()[0] if source else ""
    opts = dict(portability_fixes=False)
    if first.startswith("// RUN:"):
        if "--launch-syntax hip" in first or "--hip-kernel-execution-syntax" in first:
            opts["launch_syntax"] = "hip"
        if "--roc" in first:
            opts["roc"] = True
    return opts


def test_fixtures_exist():
    assert len(FIXTURES) >= 10
    assert sum(len(checks_of(open(f).read())) for f in FIXTURES) >= 300


def test_checker_itself():
    src = "// CHECK: b(1);\n// CHECK-NOT: z\n// CHECK: d\n"
    assert file_check(src, "a\n  b(1); // c\nd\n") == []
    assert file_check(src, "d\nb(1);\n") != []                  # order
    assert file_check(src, "b(1);\nz\nd\n") != []               # CHECK-NOT between
    assert file_check("// CHECK: x\n", "// x\n") != []          # comments do not count


@pytest.mark.parametrize("path", FIXTURES, ids=[os.path.basename(f) for f in FIXTURES])
def test_lit(path):
    source = open(path).read()
    res = translate(path, source, **run_options(source))
    failures = file_check(source, res.text)
    assert not failures, "\n".join(failures)
