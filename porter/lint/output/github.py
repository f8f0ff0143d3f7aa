"""`github`: GitHub Actions workflow commands, one annotation per diagnostic."""
from __future__ import annotations

LEVELS = {"error": "error", "warning": "warning", "info": "notice"}


def render(diagnostics, sources, *, color=False, show_fixes=False, fix_available=True, **_) -> str:
    out = []
    for d in diagnostics:
        props = {
            "title": f"cuport ({d.code})",
            "file": d.filename,
            "line": d.row,
            "col": d.column,
            "endLine": max(d.end_row, d.row),
            "endColumn": d.end_column,
        }
        level = LEVELS.get(d.severity, "error")
        joined = ",".join(f"{k}={escape_property(str(v))}" for k, v in props.items())
        out.append(f"::{level} {joined}::{escape_data(f'{d.code} {d.message}')}\n")
    return "".join(out)


def escape_data(s: str) -> str:
    # The runner un-escapes exactly these (actions/toolkit command.ts).
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(s: str) -> str:
    return escape_data(s).replace(":", "%3A").replace(",", "%2C")
