"""Data shipped with the package: templates/ and rules/ live at the repo top level and inside the wheel as
porter/templates and porter/rules. Never resolved relative to the current directory."""
from __future__ import annotations

from pathlib import Path

_PKG = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    inside = _PKG / name
    if inside.is_dir():
        return inside
    return _PKG.parent / name
