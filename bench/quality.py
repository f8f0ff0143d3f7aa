"""cuport's lint quality on real code (bench/corpus): parse rate, per-code precision, per-family recall.

    python bench/quality.py --root cuda-samples=DIR --root hecbench=DIR parse [--corpus hecbench]
    python bench/quality.py --root cuda-samples=DIR --root hecbench=DIR score [--no-makefile-flags]

`parse`: lints every file of the corpus and counts files with a CP000 error, first with no flags (a bare
pre-commit run), then those files again with the -I/-D of their Makefile (what compile_commands.json gives).
`score`: lints the labelled files (bench/corpus/labels.jsonl) and compares:
  - a finding row {"file","line","code","verdict":"tp"|"fp","reason"} judges one finding; precision per code is
    tp / (tp + fp), and false positives per 10,000 lines of the labelled files of each corpus;
  - a hazard row {"file","line","family":"CP1"|"CP2"|"CP3","hazard","reason"} is a real hazard of the code; it
    is found when a finding of that family is on that line; recall per family is found / hazards;
  - a file row {"file","lines"} says the file was reviewed: every CP1/CP2/CP3/CP7 finding in it must be judged
    (an unjudged one is listed, and counts against the run's exit status).
Exit 0 when every finding is judged, 1 otherwise."""
from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "corpus"))
import load  # noqa: E402

LABELS = os.path.join(HERE, "corpus", "labels.jsonl")
JUDGED = ("CP1", "CP2", "CP3", "CP7")        # codes whose findings are judged in reviewed files


def lint(paths: list[str], flags=(), jobs: int = 2, select: str | None = None) -> tuple[list[dict], str]:
    cmd = [sys.executable, "-m", "porter", "lint", "--output-format", "json-lines", "--no-cache", "--exit-zero",
           "-q", "-j", str(jobs), *flags, *(["--select", select] if select else []), *paths]
    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()], out.stderr


def _cp000_files(rows) -> set[str]:
    return {r["filename"] for r in rows if r["code"] == "CP000" and r.get("severity") == "error"}


def parse_rate(roots: dict, names: list[str], jobs: int) -> dict:
    report = {}
    for name in names:
        c = load.corpora()[name]
        root = roots[name]
        files = [os.path.join(root, f) for f in load.files(root, c)]
        rows, err = lint(files, jobs=jobs, select="CP000")
        bad = sorted(_cp000_files(rows))
        latin1 = sum(1 for line in err.splitlines() if "read as Latin-1" in line)
        placeholders = sum(1 for line in err.splitlines() if "parsed as placeholders" in line or
                           "parsed with the system headers" in line)
        skipped = sum(1 for line in err.splitlines() if line.startswith("cuport: error:"))
        by_flags = collections.defaultdict(list)
        for f in bad:
            by_flags[tuple(load.flags_for(root, os.path.relpath(f, root)))].append(f)
        still = []
        for flags, group in by_flags.items():
            if flags:
                rows2, _ = lint(group, flags=list(flags), jobs=jobs, select="CP000")
                still += sorted(_cp000_files(rows2))
            else:
                still += group
        n = len(files)
        report[name] = {"files": n, "cp000_files": len(bad), "clean_pct": round(100 * (n - len(bad)) / n, 2),
                        "cp000_with_makefile_flags": len(still),
                        "clean_pct_with_makefile_flags": round(100 * (n - len(still)) / n, 2),
                        "latin1_notes": latin1, "recovered_notes": placeholders, "skipped": skipped,
                        "cp000": [os.path.relpath(f, root) for f in still]}
    return report


def read_labels(path: str = LABELS) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip() and not line.startswith("#")]


def score(roots: dict, jobs: int, makefile_flags: bool = True) -> tuple[dict, int]:
    labels = read_labels()
    reviewed = {(r["corpus"], r["file"]): r for r in labels if "lines" in r}
    findings = {}
    for name in sorted({c for c, _ in reviewed}):
        root = roots[name]
        paths = [os.path.join(root, f) for c, f in reviewed if c == name]
        # each program with its build's -I/-D (HeCBench sptrsv: -DWARP_SIZE=32), as compile_commands.json would
        # give them; --no-makefile-flags for a bare pre-commit run
        groups = collections.defaultdict(list)
        for p in paths:
            key = tuple(load.flags_for(root, os.path.relpath(p, root))) if makefile_flags else ()
            groups[key].append(p)
        rows = []
        for flags, group in sorted(groups.items()):
            rows += lint(group, flags=list(flags), jobs=jobs)[0]
        for r in rows:
            rel = os.path.relpath(r["filename"], root)
            findings.setdefault((name, rel), []).append(r)
    judged = {(r["corpus"], r["file"], r["line"], r["code"]): r for r in labels if "verdict" in r}
    per_code = collections.defaultdict(lambda: {"tp": 0, "fp": 0})
    fp_lines = collections.Counter()
    unjudged, stale = [], []
    seen = set()
    for key, rows in findings.items():
        for r in rows:
            code = r["code"]
            if not code.startswith(JUDGED):
                continue
            k = (key[0], key[1], r["location"]["row"], code)
            if k in seen:
                continue
            seen.add(k)
            lab = judged.get(k)
            if lab is None:
                unjudged.append(f"{key[0]}:{key[1]}:{k[2]}: {code} {r['message'][:100]}")
                continue
            per_code[code][lab["verdict"]] += 1
            if lab["verdict"] == "fp":
                fp_lines[(key[0], code)] += 1
    for k, lab in judged.items():
        if k not in seen:
            stale.append(f"{k[0]}:{k[1]}:{k[2]}: {k[3]} labelled {lab['verdict']} but not reported now")
    per_family = collections.defaultdict(lambda: {"hazards": 0, "found": 0, "missed": []})
    for h in (r for r in labels if "family" in r):
        fam = per_family[h["family"]]
        fam["hazards"] += 1
        got = [r for r in findings.get((h["corpus"], h["file"]), [])
               if r["code"].startswith(h["family"]) and r["location"]["row"] == h["line"]]
        if got:
            fam["found"] += 1
        else:
            fam["missed"].append(f"{h['corpus']}:{h['file']}:{h['line']} {h['hazard']}")
    lines = collections.Counter()
    for (c, _), r in reviewed.items():
        lines[c] += r["lines"]
    out = {
        "reviewed_files": {c: sum(1 for k in reviewed if k[0] == c) for c in lines},
        "reviewed_lines": dict(lines),
        "precision": {c: {**v, "precision": round(v["tp"] / (v["tp"] + v["fp"]), 3) if v["tp"] + v["fp"] else None}
                      for c, v in sorted(per_code.items())},
        "fp_per_10k_lines": {f"{c}:{code}": round(n * 10000 / lines[c], 2) for (c, code), n in sorted(fp_lines.items())},
        "recall": {f: {**v, "recall": round(v["found"] / v["hazards"], 3) if v["hazards"] else None}
                   for f, v in sorted(per_family.items())},
        "unjudged": unjudged, "stale_labels": stale,
    }
    return out, 1 if unjudged else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", action="append", default=[], help="NAME=DIR: local checkout of a corpus")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("-o", "--output", help="also write the JSON here")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("parse")
    p.add_argument("--corpus", action="append")
    s = sub.add_parser("score")
    s.add_argument("--no-makefile-flags", action="store_true", help="lint every file with no flags")
    args = ap.parse_args(argv)
    roots = load.parse_roots(args.root)
    cs = load.corpora()
    names = args.corpus if args.cmd == "parse" and args.corpus else [n for n in cs if n in roots]
    missing = [n for n in names if n not in roots or n not in cs]
    if missing or not names:
        print(f"quality.py: error: needs --root NAME=DIR for {', '.join(missing) or 'a corpus'}", file=sys.stderr)
        return 2
    for n in names:
        load.check_revision(roots[n], cs[n])
    if args.cmd == "parse":
        result, status = parse_rate(roots, names, args.jobs), 0
    else:
        result, status = score(roots, args.jobs, makefile_flags=not args.no_makefile_flags)
    text = json.dumps(result, indent=1)
    print(text)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
