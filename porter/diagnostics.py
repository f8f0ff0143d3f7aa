"""Diagnostics, edits and fixes (the shapes follow ruff's edit.rs / fix.rs)."""
from __future__ import annotations

import enum

from porter.record import FrozenRecord, Record


class Applicability(str, enum.Enum):
    SAFE = "safe"
    UNSAFE = "unsafe"
    DISPLAY_ONLY = "display-only"


class Edit(FrozenRecord):
    """Replace text[start:end] (byte offsets into the source) with `content`. `seen`: the text the rule read at
    that range, when it edits a node (not compared: the fix engine checks it against the file, lint/fixer.py)."""
    start: int
    end: int
    content: str
    seen: str | None

    _hidden = ('seen',)
    _uncompared = ('seen',)

    def __init__(self, start, end, content, seen=None):
        _set = object.__setattr__
        _set(self, 'start', start)
        _set(self, 'end', end)
        _set(self, 'content', content)
        _set(self, 'seen', seen)


class Fix(FrozenRecord):
    """A fix: its edits, their applicability and a title."""
    applicability: Applicability
    message: str
    edits: tuple[Edit, ...]

    def __init__(self, applicability, message, edits):
        _set = object.__setattr__
        _set(self, 'applicability', applicability)
        _set(self, 'message', message)
        _set(self, 'edits', edits)


class Diagnostic(Record):
    """One finding: code, message, span (byte offsets; row/column once located) and optional fix."""
    code: str
    message: str
    filename: str
    start: int            # offset of the span in the source
    end: int
    row: int              # 1-based, filled by SourceFile.locate
    column: int
    end_row: int
    end_column: int
    fix: Fix | None
    severity: str             # error | warning | info (SARIF level)
    name: str
    url: str
    extra: dict

    def __init__(self, code, message, filename, start, end, row=0, column=0, end_row=0, end_column=0, fix=None,
                 severity="error", name="", url="", extra=None):
        self.code = code
        self.message = message
        self.filename = filename
        self.start = start
        self.end = end
        self.row = row
        self.column = column
        self.end_row = end_row
        self.end_column = end_column
        self.fix = fix
        self.severity = severity
        self.name = name
        self.url = url
        self.extra = {} if extra is None else extra

    @property
    def fixable(self) -> bool:
        return self.fix is not None and self.fix.applicability != Applicability.DISPLAY_ONLY

    def sort_key(self):
        return (self.filename, self.row, self.column, self.code)
