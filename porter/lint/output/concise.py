"""`concise`: one `path:row:col: CODE [*] message` line per diagnostic, then the summary."""
from __future__ import annotations

from porter.lint.output import BOLD, CYAN, RED, YELLOW, applicable, paint, summary


def render(diagnostics, sources, *, color=False, show_fixes=False, fix_available=True,
           unsafe_fixes=False, fixed=0) -> str:
    out = []
    for d in diagnostics:
        level = RED if d.severity == "error" else YELLOW
        mark = " " + paint("[*]", CYAN, color=color) if fix_available and applicable(d, unsafe_fixes) else ""
        out.append(f"{paint(d.filename, BOLD, color=color)}:{d.row}:{d.column}: "
                   f"{paint(d.code, BOLD, level, color=color)}{mark} {d.message}\n")
    out.append(summary(diagnostics, color=color, fix_available=fix_available,
                       unsafe_fixes=unsafe_fixes, fixed=fixed))
    return "".join(out)
