"""Translation statistics in the shape of hipify-clang's --print-stats: converted and unconverted references,
conversion %, bytes and lines changed, per-area and per-API counts, time. Text (hipify-clang's labels), CSV
and JSON renderings; per file and in total."""
from __future__ import annotations

import csv
import io
import json
from collections import Counter
from dataclasses import dataclass, field


@dataclass
class FileStats:
    path: str
    converted: Counter = field(default_factory=Counter)        # CUDA name -> references converted
    unconverted: Counter = field(default_factory=Counter)      # CUDA name -> references left (unsupported)
    areas: dict = field(default_factory=dict)                  # CUDA name -> area (runtime, device, blas, ...)
    replaced_bytes: int = 0
    total_bytes: int = 0
    changed_lines: int = 0
    total_lines: int = 0
    seconds: float = 0.0
    parse_errors: int = 0
    fixes: Counter = field(default_factory=Counter)            # portability fixes applied, by code
    notes: Counter = field(default_factory=Counter)            # `// cuport: CPxxx` comments left, by code

    def add(self, name: str, area: str, converted: bool, n: int = 1) -> None:
        (self.converted if converted else self.unconverted)[name] += n
        self.areas.setdefault(name, area)

    @property
    def converted_refs(self) -> int:
        return sum(self.converted.values())

    @property
    def unconverted_refs(self) -> int:
        return sum(self.unconverted.values())

    @property
    def complete(self) -> bool:
        """Everything was seen and converted. A file with parse errors is never complete: code clang could not
        parse may hold references nobody counted."""
        return self.parse_errors == 0 and self.unconverted_refs == 0

    @property
    def conversion_percent(self) -> float:
        total = self.converted_refs + self.unconverted_refs
        pct = 100.0 * self.converted_refs / total if total else 100.0
        if self.parse_errors and pct > 99.9:
            pct = 99.9          # never claim 100% for a file that did not parse
        return round(pct, 1)

    def by_area(self, converted: bool = True) -> Counter:
        c = Counter()
        for name, n in (self.converted if converted else self.unconverted).items():
            c[self.areas.get(name, "other")] += n
        return c

    def merge(self, other: "FileStats") -> None:
        self.converted.update(other.converted)
        self.unconverted.update(other.unconverted)
        for k, v in other.areas.items():
            self.areas.setdefault(k, v)
        self.replaced_bytes += other.replaced_bytes
        self.total_bytes += other.total_bytes
        self.changed_lines += other.changed_lines
        self.total_lines += other.total_lines
        self.seconds += other.seconds
        self.parse_errors += other.parse_errors
        self.fixes.update(other.fixes)
        self.notes.update(other.notes)


def total(stats: list[FileStats]) -> FileStats:
    t = FileStats("TOTAL")
    for s in stats:
        t.merge(s)
    return t


def _pct(part: int, whole: int) -> float:
    return round(100.0 * part / whole, 1) if whole else 0.0


def _summary(s: FileStats) -> list[tuple[str, object]]:
    rows = [("CONVERTED refs count", s.converted_refs),
            ("UNCONVERTED refs count", s.unconverted_refs),
            ("CONVERSION %", s.conversion_percent),
            ("REPLACED bytes", s.replaced_bytes),
            ("TOTAL bytes", s.total_bytes),
            ("CHANGED lines of code", s.changed_lines),
            ("TOTAL lines of code", s.total_lines),
            ("CODE CHANGED (in bytes) %", _pct(s.replaced_bytes, s.total_bytes)),
            ("CODE CHANGED (in lines) %", _pct(s.changed_lines, s.total_lines)),
            ("PORTABILITY fixes applied", sum(s.fixes.values())),
            ("PORTABILITY notes left", sum(s.notes.values())),
            ("PARSE errors", s.parse_errors),
            ("TIME ELAPSED s", round(s.seconds, 3))]
    return rows


def _sections(s: FileStats) -> list[tuple[str, Counter]]:
    return [("CONVERTED refs by area", s.by_area(True)),
            ("CONVERTED refs by names", s.converted),
            ("UNCONVERTED refs by area", s.by_area(False)),
            ("UNCONVERTED refs by names", s.unconverted),
            ("PORTABILITY fixes by code", s.fixes),
            ("PORTABILITY notes by code", s.notes)]


def _sorted(c: Counter):
    return sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))


def format_text(stats: list[FileStats]) -> str:
    out = []
    blocks = list(stats)
    if len(stats) > 1:
        blocks.append(total(stats))
    for s in blocks:
        head = "TOTAL statistics" if s.path == "TOTAL" else f"file '{s.path}' statistics"
        out.append(f"[cuport] info: {head}:")
        if s.path == "TOTAL":
            out.append(f"  CONVERTED files: {sum(1 for x in stats if x.converted_refs or x.fixes)}")
            out.append(f"  PROCESSED files: {len(stats)}")
        for k, v in _summary(s):
            out.append(f"  {k}: {v}")
        if s.parse_errors:
            out.append(f"  WARNING: {s.parse_errors} parse error(s): translation is partial (CP000)")
        for title, c in _sections(s):
            if c:
                out.append(f"[cuport] info: {title}:")
                out.extend(f"  {k}: {v}" for k, v in _sorted(c))
    return "\n".join(out) + "\n"


def format_csv(stats: list[FileStats]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["file", "section", "key", "value"])
    blocks = list(stats) + ([total(stats)] if len(stats) > 1 else [])
    for s in blocks:
        for k, v in _summary(s):
            w.writerow([s.path, "summary", k, v])
        w.writerow([s.path, "summary", "COMPLETE", "yes" if s.complete else "no"])
        for title, c in _sections(s):
            for k, v in _sorted(c):
                w.writerow([s.path, title, k, v])
    return buf.getvalue()


def as_dict(s: FileStats) -> dict:
    return {"file": s.path,
            "converted": s.converted_refs,
            "unconverted": s.unconverted_refs,
            "conversion_percent": s.conversion_percent,
            "complete": s.complete,
            "parse_errors": s.parse_errors,
            "replaced_bytes": s.replaced_bytes,
            "total_bytes": s.total_bytes,
            "changed_lines": s.changed_lines,
            "total_lines": s.total_lines,
            "code_changed_bytes_percent": _pct(s.replaced_bytes, s.total_bytes),
            "code_changed_lines_percent": _pct(s.changed_lines, s.total_lines),
            "time_s": round(s.seconds, 4),
            "converted_by_area": dict(_sorted(s.by_area(True))),
            "converted_by_api": dict(_sorted(s.converted)),
            "unconverted_by_area": dict(_sorted(s.by_area(False))),
            "unconverted_by_api": dict(_sorted(s.unconverted)),
            "portability_fixes": dict(_sorted(s.fixes)),
            "portability_notes": dict(_sorted(s.notes))}


def format_json(stats: list[FileStats]) -> str:
    t = as_dict(total(stats))
    t["files_processed"] = len(stats)
    t["files_converted"] = sum(1 for x in stats if x.converted_refs or x.fixes)
    return json.dumps({"files": [as_dict(s) for s in stats], "total": t}, indent=2) + "\n"


FORMATS = {"text": format_text, "csv": format_csv, "json": format_json}


def render(stats: list[FileStats], fmt: str = "text") -> str:
    return FORMATS[fmt](stats)
