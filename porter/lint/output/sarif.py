"""`sarif`: SARIF 2.1.0 for GitHub code scanning (upload with github/codeql-action/upload-sarif)."""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from urllib.parse import quote

import porter
from porter.lint.output import rule_name, rule_url

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://cuport.dev"
LEVELS = {"error": "error", "warning": "warning", "info": "note"}


def render(diagnostics, sources, *, color=False, show_fixes=False, fix_available=True,
           root: str | None = None, **_) -> str:
    root = os.path.abspath(root or os.getcwd())
    codes = sorted({d.code for d in diagnostics})
    index = {c: i for i, c in enumerate(codes)}
    names = {d.code: d.name for d in diagnostics if d.name}
    seen: dict[tuple[str, str], int] = {}
    results = []
    for d in diagnostics:
        src = sources.get(d.filename)
        results.append(_result(d, src, index[d.code], _artifact(d.filename, root), seen))
    doc = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "cuport",
                "informationUri": INFORMATION_URI,
                "version": porter.__version__,
                "rules": [_rule(c, names.get(c)) for c in codes],
            }},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": Path(root).as_uri() + "/"}},
            # Our columns count characters, not UTF-16 units (the SARIF default).
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def _rule(code: str, name: str | None) -> dict:
    from porter.lint.registry import RULES
    info = RULES.get(code)
    name = name or rule_name(code)
    level = info.level if info else "error"
    try:
        doc = info.doc if info else ""
        short = info.summary if info else name
    except ImportError:  # rule module not written yet: the name still identifies it
        doc, short = "", name
    doc = doc or short
    return {
        "id": code,
        "name": name,
        "shortDescription": {"text": short},
        "fullDescription": {"text": doc},
        "help": {"text": doc, "markdown": doc},
        "helpUri": rule_url(code),
        "defaultConfiguration": {"level": LEVELS.get(level, "error")},
    }


def _artifact(filename: str, root: str) -> dict:
    path = os.path.abspath(filename)
    rel = os.path.relpath(path, root)
    if rel.startswith(".."):  # outside the checkout: GitHub cannot map it anyway, keep it absolute
        return {"uri": Path(path).as_uri()}
    return {"uri": quote(Path(rel).as_posix()), "uriBaseId": "%SRCROOT%"}


def _region(src, start: int, end: int) -> dict:
    (r0, c0), (r1, c1) = src.position(start), src.position(max(start, end))
    return {"startLine": r0, "startColumn": c0, "endLine": r1, "endColumn": c1}


def _result(d, src, rule_index: int, artifact: dict, seen: dict) -> dict:
    line = src.line(d.row) if src is not None else ""
    digest = hashlib.sha256(f"{line.strip()}\0{d.code}".encode("utf-8")).hexdigest()[:16]
    # Identical lines with the same code are told apart by their order in the file.
    key = (d.filename, digest)
    seen[key] = seen.get(key, 0) + 1
    result = {
        "ruleId": d.code,
        "ruleIndex": rule_index,
        "level": LEVELS.get(d.severity, "error"),
        "message": {"text": d.message},
        "locations": [{"physicalLocation": {
            "artifactLocation": artifact,
            "region": {"startLine": d.row, "startColumn": d.column,
                       "endLine": max(d.end_row, d.row), "endColumn": d.end_column},
        }}],
        "partialFingerprints": {"primaryLocationLineHash": f"{digest}:{seen[key]}"},
    }
    if d.fix is not None and src is not None:  # edit offsets need the text to become regions
        result["fixes"] = [{
            "description": {"text": d.fix.message},
            "artifactChanges": [{
                "artifactLocation": artifact,
                "replacements": [{"deletedRegion": _region(src, e.start, e.end),
                                  "insertedContent": {"text": e.content}} for e in d.fix.edits],
            }],
        }]
    return result
