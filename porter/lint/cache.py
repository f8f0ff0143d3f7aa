"""Content-hash cache: .cuport_cache/<version>/<settings-hash>/<sha256(path+content)>.json."""
from __future__ import annotations

import hashlib
import json
import os

from porter import __version__
from porter.diagnostics import Applicability, Diagnostic, Edit, Fix


class Cache:
    def __init__(self, root: str, settings_hash: str):
        self.dir = os.path.join(root, __version__, settings_hash)

    @staticmethod
    def key(path: str, data: bytes) -> str:
        h = hashlib.sha256(os.path.abspath(path).encode())
        h.update(b"\0")
        h.update(data)
        return h.hexdigest()

    def get(self, key: str):
        try:
            with open(os.path.join(self.dir, key + ".json"), encoding="utf-8") as fh:
                raw = json.load(fh)
        except (OSError, ValueError):
            return None
        return [_load(d) for d in raw]

    def put(self, key: str, diags) -> None:
        try:
            os.makedirs(self.dir, exist_ok=True)
            tmp = os.path.join(self.dir, f".{key}.{os.getpid()}.tmp")
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump([_dump(d) for d in diags], fh)
            os.replace(tmp, os.path.join(self.dir, key + ".json"))
        except OSError:
            pass  # a read-only tree just means no cache


def _dump(d: Diagnostic) -> dict:
    fix = None
    if d.fix is not None:
        fix = {"a": d.fix.applicability.value, "m": d.fix.message,
               "e": [[e.start, e.end, e.content] for e in d.fix.edits]}
    return {"c": d.code, "m": d.message, "f": d.filename, "s": d.start, "e": d.end, "r": d.row, "col": d.column,
            "er": d.end_row, "ec": d.end_column, "sev": d.severity, "n": d.name, "u": d.url, "fix": fix}


def _load(r: dict) -> Diagnostic:
    fix = None
    if r["fix"] is not None:
        fix = Fix(Applicability(r["fix"]["a"]), r["fix"]["m"], tuple(Edit(*e) for e in r["fix"]["e"]))
    return Diagnostic(code=r["c"], message=r["m"], filename=r["f"], start=r["s"], end=r["e"], row=r["r"],
                      column=r["col"], end_row=r["er"], end_column=r["ec"], fix=fix, severity=r["sev"],
                      name=r["n"], url=r["u"])
