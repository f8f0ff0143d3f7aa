"""Inline-expectation fixtures (clang-tidy CHECK-MESSAGES style): a line ending in `// expect: CP102` must get
exactly that diagnostic (optionally `CP102:col` and `CP401 "32-way"` for a message fragment); every other line
must get none from the rule under test (`// OK` marks the deliberate negatives)."""
from __future__ import annotations

import re

from porter.lint.checker import lint_source
from porter.source import SourceFile

_EXPECT = re.compile(r'(CP\d{3})(?::(\d+))?(?:\s+"([^"]*)")?')


def expectations(text: str, code: str | None = None):
    exp = []
    for row, line in enumerate(text.splitlines(), 1):
        m = re.search(r"//\s*expect:\s*(.*)$", line)
        if not m:
            continue
        for cm in _EXPECT.finditer(m.group(1)):
            if code is None or cm.group(1) == code:
                exp.append((row, cm.group(1), int(cm.group(2)) if cm.group(2) else None, cm.group(3)))
    return exp


def check_fixture(path: str, codes: set[str], defines=()):
    from porter.frontend.parse import ParseOptions
    text = open(path, encoding="utf-8").read()
    src = SourceFile(path, text)
    res = lint_source(src, enabled=set(codes) | {"CP000"}, parse_options=ParseOptions(defines=list(defines)),
                      ignore_noqa=True)
    got = [(d.row, d.code, d.column, d.message) for d in res.diagnostics if d.code in codes or d.code == "CP000"]
    exp = [e for c in codes for e in expectations(text, c)]
    problems = []
    for row, code, col, frag in exp:
        hits = [g for g in got if g[0] == row and g[1] == code and (col is None or g[2] == col)
                and (frag is None or frag in g[3])]
        if not hits:
            problems.append(f"line {row}: expected {code}{':' + str(col) if col else ''}"
                            f"{' ' + repr(frag) if frag else ''}, got {[g for g in got if g[0] == row]}")
    exp_rows = {(r, c) for r, c, _, _ in exp}
    for g in got:
        if (g[0], g[1]) not in exp_rows:
            problems.append(f"line {g[0]}: unexpected {g[1]}: {g[3]}")
    return problems, res
