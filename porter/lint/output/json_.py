"""`json`: an array of objects with ruff's field names (also the shape `json-lines` prints one per line)."""
from __future__ import annotations

import json

from porter.lint.output import rule_name, rule_url


def render(diagnostics, sources, *, color=False, show_fixes=False, fix_available=True, **_) -> str:
    return json.dumps([to_dict(d, sources) for d in diagnostics], indent=2, ensure_ascii=False) + "\n"


def to_dict(d, sources) -> dict:
    return {
        "code": d.code,
        "name": d.name or rule_name(d.code),
        "filename": d.filename,
        "location": {"row": d.row, "column": d.column},
        "end_location": {"row": d.end_row, "column": d.end_column},
        "message": d.message,
        "severity": d.severity,
        "fix": _fix(d, sources.get(d.filename)),
        "url": d.url or rule_url(d.code),
        # The row `--add-noqa` writes to and `// noqa` is checked on.
        "noqa_row": d.row,
    }


def _fix(d, src):
    if d.fix is None:
        return None
    return {
        "applicability": d.fix.applicability.value,
        "message": d.fix.message,
        "edits": [_edit(e, d, src) for e in d.fix.edits],
    }


def _edit(e, d, src) -> dict:
    if src is not None:
        (r0, c0), (r1, c1) = src.position(e.start), src.position(e.end)
    elif (e.start, e.end) == (d.start, d.end):
        (r0, c0), (r1, c1) = (d.row, d.column), (d.end_row, d.end_column)
    else:  # without the text an offset cannot be turned into a row
        (r0, c0), (r1, c1) = (None, None), (None, None)
    return {"content": e.content, "location": {"row": r0, "column": c0},
            "end_location": {"row": r1, "column": c1}}
