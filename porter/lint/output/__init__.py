"""Output formats (ruff's names). Only the chosen format module is imported: startup time matters."""
from __future__ import annotations

import importlib
import os
from collections import Counter

from porter.diagnostics import Applicability

FORMATS: dict[str, str] = {
    "full": "porter.lint.output.full",
    "concise": "porter.lint.output.concise",
    "json": "porter.lint.output.json_",
    "json-lines": "porter.lint.output.json_lines",
    "github": "porter.lint.output.github",
    "sarif": "porter.lint.output.sarif",
}
# Machine-readable formats never get ANSI codes, whatever --color says.
COLOR_FORMATS = frozenset({"full", "concise"})

BOLD, RED, YELLOW, GREEN, CYAN, BLUE, RESET = "1", "31", "33", "32", "36", "34", "0"


def render(fmt: str, diagnostics, sources, *, color: bool = False, show_fixes: bool = False,
           fix_available: bool = True, **kwargs) -> str:
    """Render located, sorted diagnostics; `sources` maps filename -> SourceFile."""
    try:
        module = importlib.import_module(FORMATS[fmt])
    except KeyError:
        raise ValueError(f"unknown output format '{fmt}' (choose from {', '.join(FORMATS)})") from None
    return module.render(diagnostics, sources, color=color and fmt in COLOR_FORMATS,
                         show_fixes=show_fixes, fix_available=fix_available, **kwargs)


def use_color(choice: str, stream) -> bool:
    """--color auto|always|never, then NO_COLOR, FORCE_COLOR, TERM=dumb, then isatty."""
    if choice == "always":
        return True
    if choice == "never":
        return False
    if choice != "auto":
        raise ValueError(f"invalid --color value '{choice}' (auto, always, never)")
    if os.environ.get("NO_COLOR"):  # no-color.org: any non-empty value
        return False
    if os.environ.get("FORCE_COLOR", "") not in ("", "0", "false"):
        return True
    if os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # closed or not a real file
        return False


def paint(text: str, *codes: str, color: bool) -> str:
    return f"\x1b[{';'.join(codes)}m{text}\x1b[0m" if color and codes else text


def applicable(d, unsafe_fixes: bool = False) -> bool:
    """Would --fix (with or without --unsafe-fixes) apply this diagnostic's fix?"""
    if d.fix is None:
        return False
    a = d.fix.applicability
    return a == Applicability.SAFE or (unsafe_fixes and a == Applicability.UNSAFE)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}es" if word.endswith("x") else f"{n} {word}s"


def summary(diagnostics, *, color: bool = False, fix_available: bool = True,
            unsafe_fixes: bool = False, fixed: int = 0) -> str:
    """The closing lines of the full/concise formats (ruff's wording)."""
    remaining = len(diagnostics)
    if remaining == 0 and fixed == 0:
        return paint("All checks passed!", BOLD, GREEN, color=color) + "\n"
    if fixed:
        head = f"Found {_plural(remaining + fixed, 'error')} ({fixed} fixed, {remaining} remaining)."
    else:
        head = f"Found {_plural(remaining, 'error')}."
    lines = [head]
    if fix_available:
        n_fix = sum(applicable(d, unsafe_fixes) for d in diagnostics)
        hidden = 0 if unsafe_fixes else sum(
            d.fix is not None and d.fix.applicability == Applicability.UNSAFE for d in diagnostics)
        if n_fix:
            lines.append(paint("[*]", CYAN, color=color) + f" {n_fix} fixable with the --fix option.")
        if hidden:
            lines.append(f"({_plural(hidden, 'hidden fix')} can be enabled with the --unsafe-fixes option)")
    return "\n".join(lines) + "\n"


def statistics(diagnostics, *, unsafe_fixes: bool = False) -> str:
    """--statistics: one row per code, most frequent first (ruff's table)."""
    counts = Counter(d.code for d in diagnostics)
    if not counts:
        return ""
    fixable = {d.code for d in diagnostics if applicable(d, unsafe_fixes)}
    names = {d.code: d.name or rule_name(d.code) for d in diagnostics}
    rows = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    cw = max(len(str(n)) for n in counts.values())
    kw = max(len(c) for c in counts)
    out = []
    for code, n in rows:
        mark = ("[*] " if code in fixable else "[ ] ") if fixable else ""
        out.append(f"{n:>{cw}}\t{code:<{kw}}\t{mark}{names[code]}")
    return "\n".join(out) + "\n"


def fixed_summary(fixed: dict, *, color: bool = False) -> str:
    """--show-fixes after --fix: `fixed` maps filename -> Counter(code -> count)."""
    total = sum(sum(c.values()) for c in fixed.values())
    if not total:
        return ""
    lines = [f"Fixed {_plural(total, 'error')}:"]
    for filename in sorted(fixed):
        lines.append(f"- {paint(filename, BOLD, color=color)}:")
        for code, n in sorted(fixed[filename].items()):
            lines.append(f"    {n} × {paint(code, BOLD, RED, color=color)} ({rule_name(code)})")
    return "\n".join(lines) + "\n"


def rule_name(code: str) -> str:
    from porter.lint.registry import RULES
    r = RULES.get(code)
    return r.name if r else code


def rule_url(code: str) -> str:
    from porter.lint.registry import RULES
    r = RULES.get(code)
    return r.url if r else ""
