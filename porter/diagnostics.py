"""Diagnostics, edits and fixes (the shapes follow ruff's edit.rs / fix.rs)."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Applicability(str, enum.Enum):
    SAFE = "safe"
    UNSAFE = "unsafe"
    DISPLAY_ONLY = "display-only"


@dataclass(frozen=True)
class Edit:
    """Replace text[start:end] (byte offsets into the source) with `content`. `seen`: the text the rule read at
    that range, when it edits a node (not compared: the fix engine checks it against the file, lint/fixer.py)."""
    start: int
    end: int
    content: str
    seen: str | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Fix:
    """A fix: its edits, their applicability and a title."""
    applicability: Applicability
    message: str
    edits: tuple[Edit, ...]


@dataclass
class Diagnostic:
    """One finding: code, message, span (byte offsets; row/column once located) and optional fix."""
    code: str
    message: str
    filename: str
    start: int            # offset of the span in the source
    end: int
    row: int = 0          # 1-based, filled by SourceFile.locate
    column: int = 0
    end_row: int = 0
    end_column: int = 0
    fix: Fix | None = None
    severity: str = "error"   # error | warning | info (SARIF level)
    name: str = ""
    url: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def fixable(self) -> bool:
        return self.fix is not None and self.fix.applicability != Applicability.DISPLAY_ONLY

    def sort_key(self):
        return (self.filename, self.row, self.column, self.code)
