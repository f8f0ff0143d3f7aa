"""What a rule sees: the file model, the shared analysis, settings, and a report() helper."""
from __future__ import annotations

from porter.diagnostics import Applicability, Diagnostic, Edit, Fix
from porter.analysis.affine import analysis
from porter.frontend.model import Node
from porter.lint.helpers import seen_text
from porter.lint.registry import RULES, diagnostic


class LintContext:
    def __init__(self, model, settings=None):
        self.model = model
        self.source = model.source
        self.settings = settings
        self.diagnostics: list[Diagnostic] = []
        self._an = None

    @property
    def analysis(self):
        if self._an is None:
            self._an = analysis(self.model)
        return self._an

    def report(self, code: str, at, message: str, fix: Fix | None = None, **extra) -> Diagnostic:
        """Report at a Node or a (start, end) offset pair."""
        start, end = (at.start, at.end) if hasattr(at, "start") else at
        RULES[code]                                  # an unknown code is a bug in the rule: KeyError
        d = diagnostic(code, message, self.source.path, start, end, fix=fix, **extra)
        self.diagnostics.append(d)
        return d


def fix(message: str, *edits: Edit, unsafe: bool = False) -> Fix:
    return Fix(Applicability.UNSAFE if unsafe else Applicability.SAFE, message, tuple(edits))


def replace(node_or_span, content: str) -> Edit:
    """Replace a node (the edit records the text the rule read there, checked by lint/fixer.py) or a span."""
    if isinstance(node_or_span, Node):
        return Edit(node_or_span.start, node_or_span.end, content, seen_text(node_or_span))
    start, end = (node_or_span.start, node_or_span.end) if hasattr(node_or_span, "start") else node_or_span
    return Edit(start, end, content)


def insert(offset: int, content: str) -> Edit:
    return Edit(offset, offset, content)
