"""`json-lines`: one JSON object per diagnostic per line (same fields as `json`)."""
from __future__ import annotations

import json

from porter.lint.output.json_ import to_dict


def render(diagnostics, sources, *, color=False, show_fixes=False, fix_available=True, **_) -> str:
    return "".join(json.dumps(to_dict(d, sources), ensure_ascii=False) + "\n" for d in diagnostics)
