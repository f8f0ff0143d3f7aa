#!/usr/bin/env python3
"""Regenerate rules/hip/*.csv from a checkout of ROCm/HIPIFY (nothing is downloaded).

    python scripts/import_hipify_tables.py PATH_TO_HIPIFY [--rules DIR] [--check]

Sources: HIPIFY's published mapping tables ``docs/tables/*.md`` (CUDA name, HIP name, roc*/MIOpen name, the CUDA
versions that added / deprecated / removed it, the HIP version that added / deprecated / removed it, and the
experimental mark), the include map ``CUDA_INCLUDE_MAP`` of ``src/CUDA2HIP.cpp`` (the tables have no headers), the
CAFFE2 names of ``src/CUDA2HIP_CAFFE2_API_*.cpp`` (in no table) and the argument rewrites ``FuncArgCasts`` of
``src/HipifyAction.cpp`` (dropped, moved, added or cast arguments: ``arguments.csv``).
Each generated file starts with ``#`` lines naming the source revision. cuport's own rows and corrections live in
``rules/hip/overlay.csv`` (one reason per row) and ``cooperative_groups.csv``; this script never writes those, and
the loader applies the overlay over the imported rows.

--check: exit 1 when a generated file differs from what is on disk (nothing written)."""
from __future__ import annotations

import argparse
import csv
import io
import os
import re
import subprocess
import sys

COLUMNS = ("cuda", "hip", "roc", "flags", "cuda_added", "cuda_deprecated", "cuda_removed", "hip_added",
           "hip_deprecated", "hip_removed", "roc_added", "note")
# (markdown table, area; None routes by section, see _area_of); the *_and_ROC tables carry both names
TABLES = (
    ("CUDA_Runtime_API_functions_supported_by_HIP.md", None),
    ("CUDA_Driver_API_functions_supported_by_HIP.md", None),
    ("CUDA_Device_API_supported_by_HIP.md", "device"),
    ("cuComplex_API_supported_by_HIP.md", "device"),
    ("CUDA_RTC_API_supported_by_HIP.md", "nvrtc"),
    ("CUBLAS_API_supported_by_HIP_and_ROC.md", None),
    ("CURAND_API_supported_by_HIP_and_ROC.md", "curand"),
    ("CUFFT_API_supported_by_HIP.md", "cufft"),
    ("CUSPARSE_API_supported_by_HIP_and_ROC.md", "cusparse"),
    ("CUSOLVER_API_supported_by_HIP_and_ROC.md", "cusolver"),
    ("CUDNN_API_supported_by_HIP_and_MIOPEN.md", "cudnn"),
    ("CUB_API_supported_by_HIP.md", "cub"),
    ("NCCL_API_supported_by_HIP.md", "nccl"),          # newer HIPIFY revisions only
)
# areas this script writes (cooperative_groups.csv and overlay.csv are cuport's own)
GENERATED = ("runtime_api", "driver_api", "types", "device", "headers", "cublas", "cublaslt", "curand", "cufft",
             "cusparse", "cub", "cusolver", "nvrtc", "cudnn", "nccl", "caffe2")
_ROW = re.compile(r"^\|`([^`]+)`\|")
_INCLUDE = re.compile(r'\{"([^"]+)",\s*\{"([^"]*)",\s*"([^"]*)",\s*\w+,\s*(\w+),\s*\d+(?:,\s*(\w+))?\}\}')


class ImportError_(Exception):
    pass


def _cell(text: str) -> str:
    return text.strip().strip("`").strip()


def _area_of(table: str, section: str, cuda: str) -> str:
    if table.startswith("CUDA_Runtime"):
        return "types" if "Data types" in section else "runtime_api"
    if table.startswith("CUDA_Driver"):
        return "types" if "Data Types" in section else "driver_api"
    if table.startswith("CUBLAS"):
        return "cublaslt" if cuda.startswith(("cublasLt", "CUBLASLT")) or "BLASLt" in section else "cublas"
    raise ImportError_(f"{table}: no area for section {section!r}")


def parse_table(path: str) -> list[tuple[str, dict]]:
    """[(section, {column: value})] for every mapping row of one HIPIFY markdown table."""
    rows: list[tuple[str, dict]] = []
    section, header = "", None
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            line = line.rstrip("\n")
            if line.startswith("## "):
                section, header = line.strip("# *"), None
            elif line.startswith("|**"):
                header = [_cell(c).strip("*") for c in line.strip("|").split("|")]
                if header[:5] != ["CUDA", "A", "D", "C", "R"] or len(header) not in (11, 17):
                    raise ImportError_(f"{path}:{n}: unexpected table header {line!r}")
            elif _ROW.match(line):
                if header is None:
                    raise ImportError_(f"{path}:{n}: row before any table header")
                cells = [_cell(c) for c in line.strip("|").split("|")]
                if len(cells) != len(header):
                    raise ImportError_(f"{path}:{n}: {len(cells)} cells, header has {len(header)}")
                row = {"cuda": cells[0], "cuda_added": cells[1], "cuda_deprecated": cells[2],
                       "cuda_removed": cells[4], "hip": cells[5], "hip_added": cells[6], "hip_deprecated": cells[7],
                       "hip_removed": cells[9], "experimental": cells[10], "roc": "", "roc_added": ""}
                if len(cells) == 17:
                    row.update(roc=cells[11], roc_added=cells[12])
                    row["experimental"] = row["experimental"] or cells[16]
                rows.append((section, row))
    return rows


def _csv_row(r: dict) -> list[str]:
    flags = []
    if not r["hip"]:
        flags.append("unsupported")
    if r["cuda_deprecated"]:
        flags.append("deprecated")
    if r["experimental"]:
        flags.append("experimental")
    if r["cuda_removed"]:
        flags.append("removed")
    note = f"experimental in HIP {r['experimental']}" if r["experimental"] and r["hip"] else ""
    return [r["cuda"], r["hip"], r["roc"], "|".join(flags), r["cuda_added"], r["cuda_deprecated"],
            r["cuda_removed"], r["hip_added"], r["hip_deprecated"], r["hip_removed"], r["roc_added"], note]


def parse_includes(path: str) -> list[list[str]]:
    """CUDA_INCLUDE_MAP of src/CUDA2HIP.cpp as header rows (CAFFE2's are paths under caffe2/, no clash)."""
    text = open(path, encoding="utf-8").read()
    start = text.find("CUDA_INCLUDE_MAP")
    if start < 0:
        raise ImportError_(f"{path}: no CUDA_INCLUDE_MAP")
    body = text[start:text.find("};", start)]
    out = []
    for cuda, hip, roc, api, mark in _INCLUDE.findall(body):
        flags = "unsupported" if mark == "UNSUPPORTED" else ""
        out.append([cuda, hip, roc, flags] + [""] * 7 + [""])
    if not out:
        raise ImportError_(f"{path}: CUDA_INCLUDE_MAP has no entries this script understands")
    return out


_CAFFE2_ROW = re.compile(r'\{"([^"]+)",\s*\{"([^"]*)",\s*"([^"]*)",\s*\w+,\s*API_CAFFE2,\s*\d+(?:,\s*(\w+))?\}\}')


def parse_caffe2(src: str) -> list[list[str]]:
    """The CAFFE2 type and function maps (src/CUDA2HIP_CAFFE2_API_*.cpp): in no published table. The translator
    applies them only in files that name caffe2 (its own `CUDAContext` elsewhere is left alone)."""
    out = []
    for name in ("CUDA2HIP_CAFFE2_API_types.cpp", "CUDA2HIP_CAFFE2_API_functions.cpp"):
        path = os.path.join(src, name)
        if not os.path.isfile(path):
            continue
        for cuda, hip, roc, mark in _CAFFE2_ROW.findall(open(path, encoding="utf-8").read()):
            flags = "unsupported" if mark == "UNSUPPORTED" or not hip else ""
            out.append([cuda, hip, roc, flags] + [""] * 7 + [""])
    return out


ARG_COLUMNS = ("cuda", "target", "arg", "action", "value", "to", "count", "warning")
# HIPIFY's CastTypes -> cuport's action names (casts keep HIPIFY's spelling of the cast in `value`)
_CASTS = {"e_HIP_SYMBOL": ("wrap", "HIP_SYMBOL"), "e_reinterpret_cast": ("wrap", "reinterpret_cast<const void*>"),
          "e_reinterpret_cast_size_t": ("wrap", "reinterpret_cast<size_t*>"),
          "e_static_cast_uint64_t": ("wrap", "static_cast<uint64_t>"), "e_int32_t": ("wrap", "int32_t"),
          "e_int64_t": ("wrap", "int64_t"), "e_remove_argument": ("remove", ""),
          "e_add_const_argument": ("add", None), "e_add_var_argument": ("copy", ""),
          "e_move_argument": ("move", ""), "e_replace_argument_with_const": ("replace", None)}
_CXX_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{},]|[^\s{},"]+')


def _braces(tokens: list[str], i: int):
    """Parse `{ a, {b, c}, ... }` starting at tokens[i] == "{": (nested list, index after the `}`)."""
    out, i = [], i + 1
    while tokens[i] != "}":
        if tokens[i] == "{":
            item, i = _braces(tokens, i)
        else:
            j = i
            while tokens[j] not in (",", "}"):
                j += 1
            item, i = " ".join(tokens[i:j]), j
        out.append(item)
        if tokens[i] == ",":
            i += 1
    return out, i + 1


def parse_arg_casts(path: str) -> tuple[str, list[list[str]]]:
    """(the newest HIP version HIPIFY knows, FuncArgCasts rows). `hip_version` in a value stands for the chosen
    HIP version as major*100+minor (HIPIFY writes its HIP_LATEST there: cudaGetDriverEntryPoint)."""
    text = open(path, encoding="utf-8").read()
    names = dict(re.findall(r'(?:std::string|StringRef)\s+(s\w+)\s*=\s*"([^"]+)"', text))
    start = text.find("FuncArgCasts {")
    if start < 0:
        raise ImportError_(f"{path}: no FuncArgCasts")
    body = text[start + len("FuncArgCasts "):]
    tokens = _CXX_TOKEN.findall(body[:body.find("\n};") + 3])
    entries, _ = _braces(tokens, 0)
    rows = []
    for name_sym, variants in entries:
        name = names.get(name_sym)
        if name is None:
            raise ImportError_(f"{path}: FuncArgCasts names {name_sym}, defined nowhere")
        for var in variants:
            cmap = var[0]
            roc = len(var) > 1 and var[1] == "true"
            miopen = len(var) > 2 and var[2] == "true"
            target = "miopen" if miopen else "roc" if roc else ""
            for idx, info in cmap:
                kind, warn = info[0], info[1]
                if kind not in _CASTS:
                    raise ImportError_(f"{path}: {name}: unknown cast {kind}")
                action, value = _CASTS[kind]
                const = info[2].strip('"') if len(info) > 2 else ""
                if value is None:
                    value = "hip_version" if "HIP_LATEST" in const else const
                to = info[3] if len(info) > 3 else ""
                count = info[4] if len(info) > 4 else ""
                rows.append([name, target, idx, action, value, to, count,
                             "data-loss" if warn == "cw_DataLoss" else ""])
    stats = open(os.path.join(os.path.dirname(path), "Statistics.h"), encoding="utf-8").read() \
        if os.path.isfile(os.path.join(os.path.dirname(path), "Statistics.h")) else ""
    m = re.search(r"HIP_LATEST\s*=\s*HIP_(\d)(\d)(\d)(\d)", stats)
    latest = f"{m.group(1)}.{int(m.group(2) + m.group(3))}.{m.group(4)}" if m else ""
    return latest, rows


def revision(root: str) -> str:
    try:
        out = subprocess.run(["git", "-C", root, "log", "-1", "--format=%H %cs"], capture_output=True, text=True,
                             timeout=30)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    marker = os.path.join(root, "REVISION")       # an exported tree: `git archive` + a REVISION file
    if os.path.isfile(marker):
        return open(marker, encoding="utf-8").read().strip()
    return "unknown revision"


def build(root: str) -> dict[str, tuple[list[str], list[list[str]]]]:
    """{area: (source files, rows)}; a name claimed by two areas stays in the first (runtime/driver/types first)."""
    tables_dir = os.path.join(root, "docs", "tables")
    if not os.path.isdir(tables_dir):
        raise ImportError_(f"{root}: no docs/tables directory (not a HIPIFY checkout?)")
    areas: dict[str, tuple[list[str], list[list[str]]]] = {a: ([], []) for a in GENERATED}
    owner: dict[str, str] = {}
    for table, fixed in TABLES:
        path = os.path.join(tables_dir, table)
        if not os.path.isfile(path):
            if table.startswith(("NCCL",)):
                continue
            raise ImportError_(f"{path}: missing")
        for section, r in parse_table(path):
            area = fixed or _area_of(table, section, r["cuda"])
            if r["cuda"] in owner:
                continue
            owner[r["cuda"]] = area
            srcs, rows = areas[area]
            if table not in srcs:
                srcs.append(table)
            rows.append(_csv_row(r))
    areas["headers"] = (["src/CUDA2HIP.cpp (CUDA_INCLUDE_MAP)"],
                        parse_includes(os.path.join(root, "src", "CUDA2HIP.cpp")))
    areas["caffe2"] = (["src/CUDA2HIP_CAFFE2_API_types.cpp", "src/CUDA2HIP_CAFFE2_API_functions.cpp"],
                       parse_caffe2(os.path.join(root, "src")))
    # every area is written (an empty table is still a table); nccl only when this revision has its table
    return {a: v for a, v in areas.items() if v[1] or a != "nccl"}


def render_arguments(rows: list[list[str]], latest: str, rev: str) -> str:
    buf = io.StringIO()
    buf.write(f"# source: ROCm/HIPIFY {rev}: src/HipifyAction.cpp (FuncArgCasts)\n")
    buf.write(f"# hip_latest: {latest}\n")
    buf.write("# generated by scripts/import_hipify_tables.py; do not edit: corrections go in overlay.csv\n")
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(ARG_COLUMNS)
    for row in sorted(rows, key=lambda r: (r[0], r[1], int(r[2]))):
        w.writerow(row)
    return buf.getvalue()


def render(area: str, sources: list[str], rows: list[list[str]], rev: str) -> str:
    buf = io.StringIO()
    buf.write(f"# source: ROCm/HIPIFY {rev}: {', '.join(sources) or '(no rows in this revision)'}\n")
    buf.write("# generated by scripts/import_hipify_tables.py; do not edit: corrections go in overlay.csv\n")
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    for row in sorted(rows, key=lambda r: r[0]):
        w.writerow(row)
    return buf.getvalue()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="import_hipify_tables.py", description=__doc__.splitlines()[0])
    ap.add_argument("hipify", metavar="PATH_TO_HIPIFY")
    ap.add_argument("--rules", default=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                                    "rules", "hip"))
    ap.add_argument("--check", action="store_true", help="report stale files, write nothing")
    args = ap.parse_args(argv)
    try:
        rev = revision(args.hipify)
        areas = build(args.hipify)
        latest, arg_rows = parse_arg_casts(os.path.join(args.hipify, "src", "HipifyAction.cpp"))
    except (ImportError_, OSError, UnicodeDecodeError) as e:
        print(f"cuport: error: {e}", file=sys.stderr)
        return 2
    stale = 0
    outputs = [(f"{area}.csv", render(area, sources, rows, rev), len(rows))
               for area, (sources, rows) in sorted(areas.items())]
    outputs.append(("arguments.csv", render_arguments(arg_rows, latest, rev), len(arg_rows)))
    for fname, text, nrows in outputs:
        path = os.path.join(args.rules, fname)
        old = open(path, encoding="utf-8").read() if os.path.isfile(path) else None
        if old == text:
            continue
        stale += 1
        if args.check:
            print(f"stale: {path}")
            continue
        os.makedirs(args.rules, exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        print(f"wrote {path}: {nrows} rows")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
