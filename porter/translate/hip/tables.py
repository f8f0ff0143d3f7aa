"""CUDA -> HIP mapping tables, loaded lazily from ``rules/hip/<area>.csv``.

Most files are generated from HIPIFY's published tables by ``scripts/import_hipify_tables.py PATH_TO_HIPIFY``
(their ``#`` lines name the source revision; do not edit them). cuport's own rows and corrections live in
``rules/hip/overlay.csv`` (``area,cuda,hip,roc,flags,note,reason``; a reason per row) and win over imported rows;
``cooperative_groups.csv`` is cuport's own. Generated files have the columns of :data:`COLUMNS`; hand-written ones
may use the first five only (``cuda,hip,roc,flags,note``). ``roc`` is the rocBLAS / rocRAND /
rocSPARSE / ... spelling used when translating with ``--roc``; empty means "same as hip" in
areas that have no roc library, and "no roc equivalent" in :data:`ROC_AREAS`. ``flags`` is a
``|``-separated subset of :data:`FLAGS`; ``deprecated`` and ``removed`` describe the CUDA side,
HIP-side deprecations go in the note. The layout follows HIPIFY's ``CUDA2HIP_*`` tables.

A row with an empty ``hip`` must be flagged ``unsupported``, except in the ``headers`` area
where an empty ``hip`` means "drop the include" (``device_launch_parameters.h``).

The version columns (CUDA added/deprecated/removed, HIP added/deprecated/removed, roc added) drive
``--cuda-version`` / ``--hip-version``: see :func:`all_mappings`.
"""

from __future__ import annotations

import csv
import dataclasses
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType

AREAS: tuple[str, ...] = (
    "runtime_api",
    "driver_api",
    "types",
    "device",
    "headers",
    "cublas",
    "curand",
    "cufft",
    "cusparse",
    "cub",
    "cooperative_groups",
    "cusolver",
    "nvrtc",
    "cublaslt",
    "cudnn",
    "caffe2",
)
# generated only from HIPIFY revisions that have the table; loaded when present
OPTIONAL_AREAS: tuple[str, ...] = ("nccl",)
FLAGS: frozenset[str] = frozenset({"unsupported", "deprecated", "experimental", "removed"})
COLUMNS: tuple[str, ...] = ("cuda", "hip", "roc", "flags", "cuda_added", "cuda_deprecated", "cuda_removed",
                            "hip_added", "hip_deprecated", "hip_removed", "roc_added", "note")
SHORT_COLUMNS: tuple[str, ...] = ("cuda", "hip", "roc", "flags", "note")
OVERLAY_COLUMNS: tuple[str, ...] = ("area", "cuda", "hip", "roc", "flags", "note", "reason")
VERSION_FIELDS: tuple[str, ...] = COLUMNS[4:11]
# cuDNN rows: hip = hipDNN, roc = MIOpen (used with --miopen, HIPIFY's flag)
MIOPEN_AREA = "cudnn"
# With --roc these libraries are replaced by rocBLAS / rocRAND / rocSPARSE, whose handles and
# types differ from the hip* ones: a row without a roc name cannot fall back to its hip name.
ROC_AREAS: frozenset[str] = frozenset({"cublas", "curand", "cusparse", "cusolver"})
HEADERS_AREA = "headers"
# names that apply only in files that name caffe2 (a `CUDAContext` class of another project is its own)
SCOPED_AREAS: frozenset[str] = frozenset({"caffe2"})


@dataclass(frozen=True)
class Mapping:
    cuda: str
    hip: str
    roc: str
    area: str
    unsupported: bool = False
    deprecated: bool = False
    experimental: bool = False
    removed: bool = False
    note: str = ""
    cuda_added: str = ""
    cuda_deprecated: str = ""
    cuda_removed: str = ""
    hip_added: str = ""
    hip_deprecated: str = ""
    hip_removed: str = ""
    roc_added: str = ""
    reason: str = ""                # set on overlay rows: why cuport differs from HIPIFY

    def target(self, roc: bool = False) -> str:
        """The name to emit: the roc spelling when asked for and known, else the hip one."""
        if roc and self.roc:
            return self.roc
        return self.hip

    @property
    def flags(self) -> tuple[str, ...]:
        return tuple(f for f in ("unsupported", "deprecated", "removed", "experimental") if getattr(self, f))

    @property
    def removes_include(self) -> bool:
        """For header rows: the include is dropped rather than renamed."""
        return self.area == HEADERS_AREA and not self.hip and not self.unsupported


def rules_dir() -> Path:
    """Directory holding ``hip/*.csv``: ``porter/rules`` in a wheel, the repo's ``rules/`` otherwise."""
    return _rules_dir()


@lru_cache(maxsize=1)
def _rules_dir() -> Path:
    from porter.resources import data_dir
    candidate = data_dir("rules")
    if (candidate / "hip").is_dir():
        return candidate
    raise FileNotFoundError(f"no rules/hip directory in {candidate}")


def table_path(area: str) -> Path:
    _check_area(area)
    return rules_dir() / "hip" / f"{area}.csv"


def _check_area(area: str) -> None:
    if area not in AREAS and area not in OPTIONAL_AREAS:
        raise ValueError(f"unknown HIP mapping area {area!r}; known areas: {', '.join(AREAS)}")


def areas() -> tuple[str, ...]:
    """Every area with a table on disk (optional areas only when their file exists)."""
    return AREAS + tuple(a for a in OPTIONAL_AREAS if table_path(a).is_file())


def load(area: str) -> "MappingProxyType[str, Mapping]":
    """All rows of one area, keyed by CUDA name (read-only), overlay applied."""
    _check_area(area)
    return _load(area)


def _records(path: Path):
    """(line, header, record) of a CSV whose leading `#` lines are provenance comments."""
    with path.open(newline="", encoding="utf-8") as fh:
        lines = fh.read().splitlines(keepends=True)
    skip = 0
    while skip < len(lines) and lines[skip].startswith("#"):
        skip += 1
    reader = csv.reader(lines[skip:])
    header = next(reader, None)
    header = tuple(h.strip() for h in header) if header else None
    return skip, header, reader


def source_revision(area: str) -> str:
    """The `# source:` line of a generated table ("" for hand-written ones)."""
    path = table_path(area)
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if not line.startswith("#"):
                break
            if line.startswith("# source:"):
                return line[len("# source:"):].strip()
    return ""


def _flag_set(path, line, cuda, flags):
    flag_set = {f.strip() for f in flags.split("|") if f.strip()} if flags else set()
    unknown = flag_set - FLAGS
    if unknown:
        raise ValueError(f"{path}:{line}: unknown flag(s) {', '.join(sorted(unknown))} for {cuda!r};"
                         f" allowed: {', '.join(sorted(FLAGS))}")
    return flag_set


def _mapping(area, cuda, hip, roc, flag_set, note, versions=None, reason=""):
    return Mapping(cuda=cuda, hip=hip, roc=roc, area=area, unsupported="unsupported" in flag_set,
                   deprecated="deprecated" in flag_set, experimental="experimental" in flag_set,
                   removed="removed" in flag_set, note=note, reason=reason, **(versions or {}))


@lru_cache(maxsize=None)
def _load(area: str) -> "MappingProxyType[str, Mapping]":
    path = table_path(area)
    rows: dict[str, Mapping] = {}
    first_line: dict[str, int] = {}
    skip, header, reader = _records(path)
    if header not in (COLUMNS, SHORT_COLUMNS):
        raise ValueError(f"{path}:{skip + 1}: header must be {','.join(COLUMNS)!r} or "
                         f"{','.join(SHORT_COLUMNS)!r}, got {header!r}")
    for record in reader:
        line = reader.line_num + skip
        if not record or all(not field.strip() for field in record):
            continue
        if len(record) != len(header):
            raise ValueError(f"{path}:{line}: expected {len(header)} fields, got {len(record)}")
        fields = dict(zip(header, (field.strip() for field in record)))
        cuda, hip = fields["cuda"], fields["hip"]
        if not cuda:
            raise ValueError(f"{path}:{line}: empty cuda name")
        if cuda in rows:
            raise ValueError(
                f"{path}:{line}: duplicate cuda name {cuda!r} (first defined on line {first_line[cuda]})"
            )
        flag_set = _flag_set(path, line, cuda, fields["flags"])
        if not hip and "unsupported" not in flag_set and area != HEADERS_AREA:
            raise ValueError(f"{path}:{line}: {cuda!r} has no hip name but is not flagged unsupported")
        versions = {k: fields.get(k, "") for k in VERSION_FIELDS}
        rows[cuda] = _mapping(area, cuda, hip, fields["roc"], flag_set, fields["note"], versions)
        first_line[cuda] = line
    for cuda, (line, over) in _overlay().get(area, {}).items():
        base = rows.get(cuda)
        keep = "=" in (over["hip"], over["roc"], over["flags"])
        if keep and base is None:
            raise ValueError(f"{overlay_path()}:{line}: {cuda!r} keeps imported values (`=`) but {area}.csv "
                             f"has no such row")
        hip = base.hip if over["hip"] == "=" else over["hip"]
        roc = base.roc if over["roc"] == "=" else over["roc"]
        flag_set = set(base.flags) if over["flags"] == "=" else _flag_set(overlay_path(), line, cuda, over["flags"])
        if not hip and "unsupported" not in flag_set and area != HEADERS_AREA:
            raise ValueError(f"{overlay_path()}:{line}: {cuda!r} has no hip name but is not flagged unsupported")
        versions = {k: getattr(base, k) for k in VERSION_FIELDS} if base is not None else None
        note = over["note"] or (base.note if base is not None else "")
        rows[cuda] = _mapping(area, cuda, hip, roc, flag_set, note, versions, over["reason"])
    return MappingProxyType(rows)


def overlay_path() -> Path:
    return rules_dir() / "hip" / "overlay.csv"


@lru_cache(maxsize=1)
def _overlay() -> dict[str, dict[str, tuple[int, dict]]]:
    """{area: {cuda: (line, row)}} of rules/hip/overlay.csv (empty when there is none)."""
    path = overlay_path()
    if not path.is_file():
        return {}
    skip, header, reader = _records(path)
    if header != OVERLAY_COLUMNS:
        raise ValueError(f"{path}:{skip + 1}: header must be {','.join(OVERLAY_COLUMNS)!r}, got {header!r}")
    out: dict[str, dict[str, tuple[int, dict]]] = {}
    for record in reader:
        line = reader.line_num + skip
        if not record or all(not f.strip() for f in record):
            continue
        if len(record) != len(OVERLAY_COLUMNS):
            raise ValueError(f"{path}:{line}: expected {len(OVERLAY_COLUMNS)} fields, got {len(record)}")
        row = dict(zip(OVERLAY_COLUMNS, (f.strip() for f in record)))
        if row["area"] not in AREAS and row["area"] not in OPTIONAL_AREAS:
            raise ValueError(f"{path}:{line}: unknown area {row['area']!r}")
        if not row["cuda"] or not row["reason"]:
            raise ValueError(f"{path}:{line}: every overlay row needs a cuda name and a reason")
        if row["cuda"] in out.setdefault(row["area"], {}):
            raise ValueError(f"{path}:{line}: duplicate overlay row for {row['cuda']!r}")
        out[row["area"]][row["cuda"]] = (line, row)
    return out


def headers(hip_version: str | None = None, miopen: bool = False) -> "MappingProxyType[str, Mapping]":
    """Include-file mappings (``cuda_runtime.h`` -> ``hip/hip_runtime.h``), kept out of identifier lookup, in the
    header layout of the chosen ROCm (default: the newest, ``hipblas/hipblas.h``)."""
    return _headers(_layout(hip_version), bool(miopen))


def _layout(hip_version: str | None) -> str:
    return "flat" if hip_version and version_key(hip_version) < version_key(NESTED_LAYOUT_SINCE) else "nested"


# ROCm 5.2 moved the library headers into per-library directories (the flat ones stayed as deprecated
# wrappers until ROCm 6.x dropped them); HIPIFY's tables still spell some of them flat
NESTED_LAYOUT_SINCE = "5.2.0"
LIBRARY_HEADERS = ("hipblas.h", "rocblas.h", "hipsparse.h", "rocsparse.h", "hipsolver.h", "hipblaslt.h",
                   "hipfft.h", "hiprand.h", "rocrand.h")


def nested_header(name: str) -> str:
    """`hipblas.h` -> `hipblas/hipblas.h` (other names unchanged)."""
    return f"{name[:-2]}/{name}" if name in LIBRARY_HEADERS else name


def flat_header(name: str) -> str:
    """`hipblas/hipblas.h` -> `hipblas.h` (other names unchanged)."""
    d, _, base = name.partition("/")
    return base if base in LIBRARY_HEADERS and d == base[:-2] else name


@lru_cache(maxsize=4)
def _headers(layout: str, miopen: bool) -> "MappingProxyType[str, Mapping]":
    conv = nested_header if layout == "nested" else flat_header
    out = {}
    for k, m in load(HEADERS_AREA).items():
        hip, roc = m.hip, m.roc
        if k in DNN_HEADERS:            # its roc column is MIOpen's: --miopen selects it, --roc does not
            hip, roc = (roc or hip) if miopen else hip, ""
        out[k] = dataclasses.replace(m, hip=conv(hip), roc=conv(roc))
    return MappingProxyType(out)


DNN_HEADERS = frozenset({"cudnn.h"})


def version_key(v: str) -> tuple[int, ...]:
    """'12.0' / '12' / '5.7.1' -> a comparable tuple; ValueError for anything else."""
    v = v.strip()
    if not v or not all(p.isdigit() for p in v.split(".")):
        raise ValueError(f"not a version number: {v!r}")
    parts = tuple(int(p) for p in v.split("."))
    return parts + (0,) * (3 - len(parts))


def unavailable(m: Mapping, cuda_version: str | None = None, hip_version: str | None = None,
                roc: bool = False) -> str:
    """Why a mapping does not apply to the chosen versions ("" when it does)."""
    if cuda_version and m.cuda_removed and version_key(m.cuda_removed) <= version_key(cuda_version):
        return f"removed in CUDA {m.cuda_removed}"
    if hip_version:
        hv = version_key(hip_version)
        added = m.roc_added if roc and m.roc else m.hip_added
        lib = "ROCm" if roc and m.roc else "HIP"
        if added and version_key(added) > hv:
            return f"{lib} has it from {added} on, not in {hip_version}"
        if not (roc and m.roc) and m.hip_removed and version_key(m.hip_removed) <= hv:
            return f"removed in HIP {m.hip_removed}"
    return ""


def all_mappings(roc: bool = False, miopen: bool = False, cuda_version: str | None = None,
                 hip_version: str | None = None) -> "MappingProxyType[str, Mapping]":
    """Identifier mappings of every area except headers, merged into one read-only dict.

    With ``roc=True`` rows of :data:`ROC_AREAS` that have no roc spelling come back flagged
    unsupported, because their hip* replacement would not mix with rocBLAS/rocRAND/rocSPARSE code.
    cuDNN maps to hipDNN, or with ``miopen=True`` to MIOpen. A row removed in ``cuda_version`` or not (yet)
    in ``hip_version`` comes back unsupported with the reason in its note, so it is reported, not renamed.
    """
    if cuda_version:
        version_key(cuda_version)
    if hip_version:
        version_key(hip_version)
    return _all_mappings(bool(roc), bool(miopen), cuda_version or None, hip_version or None)


@lru_cache(maxsize=8)
def _all_mappings(roc: bool, miopen: bool, cuda_version, hip_version) -> "MappingProxyType[str, Mapping]":
    merged: dict[str, Mapping] = {}
    for area in areas():
        if area == HEADERS_AREA:
            continue
        for name, mapping in load(area).items():
            if name in merged:
                other = merged[name]
                raise ValueError(
                    f"{table_path(area)}: {name!r} is also defined in {table_path(other.area)}"
                )
            if area == MIOPEN_AREA:
                if miopen:
                    mapping = dataclasses.replace(mapping, hip=mapping.roc, roc="", hip_added=mapping.roc_added,
                                                  unsupported=not mapping.roc)
                else:
                    mapping = dataclasses.replace(mapping, roc="")
            elif roc and area in ROC_AREAS and mapping.roc and mapping.unsupported and not mapping.hip:
                # HIPIFY's "unsupported" is hipSPARSE's (`cusparseContext`): rocSPARSE has `_rocsparse_handle`
                mapping = dataclasses.replace(mapping, unsupported=False)
            elif roc and area in ROC_AREAS and not mapping.roc and not mapping.unsupported:
                note = "no roc equivalent" if not mapping.note else f"{mapping.note}; no roc equivalent"
                mapping = dataclasses.replace(mapping, unsupported=True, note=note)
            why = unavailable(mapping, cuda_version, hip_version, roc) if not mapping.unsupported else ""
            if why:
                note = why if not mapping.note else f"{why}; {mapping.note}"
                mapping = dataclasses.replace(mapping, unsupported=True, note=note)
            merged[name] = mapping
    return MappingProxyType(merged)


@dataclass(frozen=True)
class ArgRewrite:
    """One row of rules/hip/arguments.csv (HIPIFY's FuncArgCasts): what happens to argument `arg` of a call.
    action: wrap (`value(arg)`), remove, add (the constant `value` at position `arg`), copy (argument `arg` again
    at position `to`), move (`count` arguments from `arg` to position `to`), replace (by the constant `value`).
    target: "" for HIP, "roc" (--roc), "miopen" (--miopen). `value` "hip_version" is the chosen HIP version as
    major*100+minor."""
    cuda: str
    target: str
    arg: int
    action: str
    value: str = ""
    to: int | None = None
    count: int = 1
    warning: str = ""


ARG_COLUMNS: tuple[str, ...] = ("cuda", "target", "arg", "action", "value", "to", "count", "warning")
ARG_ACTIONS = frozenset({"wrap", "remove", "add", "copy", "move", "replace"})
ARG_TARGETS = frozenset({"", "roc", "miopen"})


def arguments_path() -> Path:
    return rules_dir() / "hip" / "arguments.csv"


@lru_cache(maxsize=1)
def _arguments() -> tuple[str, "MappingProxyType[str, tuple[ArgRewrite, ...]]"]:
    """(newest HIP version of the import, {cuda name: rows})."""
    path = arguments_path()
    if not path.is_file():
        return "", MappingProxyType({})
    latest = ""
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if not line.startswith("#"):
                break
            if line.startswith("# hip_latest:"):
                latest = line.split(":", 1)[1].strip()
    skip, header, reader = _records(path)
    if header != ARG_COLUMNS:
        raise ValueError(f"{path}:{skip + 1}: header must be {','.join(ARG_COLUMNS)!r}, got {header!r}")
    out: dict[str, list[ArgRewrite]] = {}
    for record in reader:
        line = reader.line_num + skip
        if not record:
            continue
        if len(record) != len(ARG_COLUMNS):
            raise ValueError(f"{path}:{line}: expected {len(ARG_COLUMNS)} fields, got {len(record)}")
        f = dict(zip(ARG_COLUMNS, (x.strip() for x in record)))
        if f["action"] not in ARG_ACTIONS or f["target"] not in ARG_TARGETS:
            raise ValueError(f"{path}:{line}: unknown action {f['action']!r} or target {f['target']!r}")
        try:
            row = ArgRewrite(f["cuda"], f["target"], int(f["arg"]), f["action"], f["value"],
                             int(f["to"]) if f["to"] else None, int(f["count"]) if f["count"] else 1, f["warning"])
        except ValueError:
            raise ValueError(f"{path}:{line}: arg, to and count must be numbers") from None
        if row.action in ("move", "copy") and row.to is None:
            raise ValueError(f"{path}:{line}: {row.action} needs a `to` position")
        out.setdefault(row.cuda, []).append(row)
    return latest, MappingProxyType({k: tuple(v) for k, v in out.items()})


def arg_rewrites(name: str, roc: bool = False, miopen: bool = False) -> tuple[ArgRewrite, ...]:
    """The argument rewrites of a call of `name` for this translation: the MIOpen rows with --miopen, the roc rows
    with --roc, else the HIP rows, which do not apply where the option sends the library elsewhere (hipSPARSE's
    argument order is not rocSPARSE's)."""
    rows = _arguments()[1].get(name, ())
    if not rows:
        return ()
    area = next((load(a)[name].area for a in (MIOPEN_AREA, *ROC_AREAS) if name in load(a)), None)
    if miopen and area == MIOPEN_AREA:
        want = "miopen"
    elif roc and area in ROC_AREAS:
        want = "roc"
    else:
        want = ""
    return tuple(r for r in rows if r.target == want)


def hip_version_code(hip_version: str | None = None) -> str:
    """major*100+minor of the chosen HIP (default: the newest the imported tables know), as HIPIFY writes it
    for hipGetProcAddress's version argument."""
    v = hip_version or _arguments()[0] or "6.3"
    parts = version_key(v)
    return str(parts[0] * 100 + parts[1])


def clear_cache() -> None:
    """Forget loaded tables (for tests that edit the CSV files)."""
    _arguments.cache_clear()
    _rules_dir.cache_clear()
    _load.cache_clear()
    _overlay.cache_clear()
    _headers.cache_clear()
    _all_mappings.cache_clear()
