"""`full`: code, message, location, the source snippet with a `^^^` span, the fix title (ruff's default)."""
from __future__ import annotations

from porter.lint.output import BLUE, BOLD, CYAN, GREEN, RED, YELLOW, applicable, paint, summary
from porter.source import OverlappingEdits, apply_edits

MAX_SNIPPET_LINES = 6  # long spans are cut: the first lines carry the point


def render(diagnostics, sources, *, color=False, show_fixes=False, fix_available=True,
           unsafe_fixes=False, fixed=0) -> str:
    out = []
    for d in diagnostics:
        out.append(_one(d, sources.get(d.filename), color, show_fixes, fix_available, unsafe_fixes))
    out.append(summary(diagnostics, color=color, fix_available=fix_available,
                       unsafe_fixes=unsafe_fixes, fixed=fixed))
    return "".join(out)


def _one(d, src, color, show_fixes, fix_available, unsafe_fixes) -> str:
    level = RED if d.severity == "error" else YELLOW
    mark = " " + paint("[*]", CYAN, color=color) if fix_available and applicable(d, unsafe_fixes) else ""
    head = f"{paint(d.code, BOLD, level, color=color)}{mark} {paint(d.message, BOLD, color=color)}"
    end_row = max(d.end_row, d.row)
    rows = list(range(d.row, min(end_row, d.row + MAX_SNIPPET_LINES - 1) + 1))
    w = len(str(rows[-1]))
    bar = paint(" " * (w + 1) + "|", BOLD, BLUE, color=color)
    lines = [head, paint(" " * w + "-->", BOLD, BLUE, color=color) + f" {d.filename}:{d.row}:{d.column}"]
    if src is not None:
        lines.append(bar)
        for row in rows:
            text = src.line(row)
            lines.append(paint(f"{row:>{w}} |", BOLD, BLUE, color=color) + _tail(text))
            first = d.column if row == d.row else 1
            last = d.end_column if row == end_row else len(text) + 1
            pad = len(_expand(text[: first - 1]))
            width = max(1, len(_expand(text[first - 1: last - 1])))
            lines.append(bar + " " + " " * pad + paint("^" * width, BOLD, level, color=color))
        if end_row > rows[-1]:
            lines.append(bar + " ...")
        lines.append(bar)
    if d.fix is not None:
        lines.append(paint("help", BOLD, CYAN, color=color) + f": {d.fix.message}")
        if show_fixes and src is not None:
            lines.extend(_diff(d.fix, src, color))
    return "\n".join(lines) + "\n\n"


def _tail(text: str) -> str:
    return " " + _expand(text) if text else ""


def _expand(text: str) -> str:
    # Tabs render at unknown widths; fixed spaces keep the carets aligned.
    return text.replace("\t", "    ")


def _diff(fix, src, color) -> list[str]:
    """The fix as `-`/`+` lines over the rows it touches."""
    if not fix.edits:
        return []
    lo = min(e.start for e in fix.edits)
    hi = max(e.end for e in fix.edits)
    first, _ = src.position(lo)
    last, _ = src.position(hi)
    a = src.line_starts[first - 1]
    b = a + len("\n".join(src.line(r) for r in range(first, last + 1)).encode("utf-8"))
    if first == 1 and src.data.startswith(b"\xef\xbb\xbf"):
        b += 3                      # line() leaves out a BOM
    b = max(b, hi)
    try:
        new = apply_edits(src.data[a:b], [type(e)(e.start - a, e.end - a, e.content) for e in fix.edits])
    except OverlappingEdits:
        return []
    old_lines = src.data[a:b].decode("utf-8", "replace").splitlines() or [""]
    new_lines = new.decode("utf-8", "replace").splitlines()
    w = len(str(last))
    out = [paint(f"{first + i:>{w}} -", RED, color=color) + _tail(t) for i, t in enumerate(old_lines)]
    out += [paint(f"{first + i:>{w}} +", GREEN, color=color) + _tail(t) for i, t in enumerate(new_lines)]
    return out
