"""CUDA -> HIP mapping tables, loaded lazily from ``rules/hip/<area>.csv``.

Each CSV has the header ``cuda,hip,roc,flags,note``. ``roc`` is the rocBLAS / rocRAND /
rocSPARSE / ... spelling used when translating with ``--roc``; empty means "same as hip" in
areas that have no roc library, and "no roc equivalent" in :data:`ROC_AREAS`. ``flags`` is a
``|``-separated subset of :data:`FLAGS`; ``deprecated`` and ``removed`` describe the CUDA side,
HIP-side deprecations go in the note. The layout follows HIPIFY's ``CUDA2HIP_*`` tables.

A row with an empty ``hip`` must be flagged ``unsupported``, except in the ``headers`` area
where an empty ``hip`` means "drop the include" (``device_launch_parameters.h``).

The runtime, driver and type rows were seeded from AMD's HIPIFY-derived CUDA interop layer of
HIP Python (hip-python-interop, MIT) and the library rows checked against the hipBLAS, hipSPARSE,
hipFFT and hipRAND declarations shipped with hip-python 6.3; edit the CSV files directly.
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
)
FLAGS: frozenset[str] = frozenset({"unsupported", "deprecated", "experimental", "removed"})
COLUMNS: tuple[str, ...] = ("cuda", "hip", "roc", "flags", "note")
# With --roc these libraries are replaced by rocBLAS / rocRAND / rocSPARSE, whose handles and
# types differ from the hip* ones: a row without a roc name cannot fall back to its hip name.
ROC_AREAS: frozenset[str] = frozenset({"cublas", "curand", "cusparse", "cusolver"})
HEADERS_AREA = "headers"


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
    package = Path(__file__).resolve().parent.parent  # .../porter
    for candidate in (package / "rules", package.parent / "rules"):
        if (candidate / "hip").is_dir():
            return candidate
    raise FileNotFoundError(f"no rules/hip directory next to {package} or inside it")


def table_path(area: str) -> Path:
    _check_area(area)
    return rules_dir() / "hip" / f"{area}.csv"


def _check_area(area: str) -> None:
    if area not in AREAS:
        raise ValueError(f"unknown HIP mapping area {area!r}; known areas: {', '.join(AREAS)}")


def load(area: str) -> "MappingProxyType[str, Mapping]":
    """All rows of one area, keyed by CUDA name (read-only)."""
    _check_area(area)
    return _load(area)


@lru_cache(maxsize=None)
def _load(area: str) -> "MappingProxyType[str, Mapping]":
    path = table_path(area)
    rows: dict[str, Mapping] = {}
    first_line: dict[str, int] = {}
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header is None or tuple(h.strip() for h in header) != COLUMNS:
            raise ValueError(f"{path}:1: header must be {','.join(COLUMNS)!r}, got {header!r}")
        for record in reader:
            line = reader.line_num
            if not record or all(not field.strip() for field in record):
                continue
            if len(record) != len(COLUMNS):
                raise ValueError(f"{path}:{line}: expected {len(COLUMNS)} fields, got {len(record)}")
            cuda, hip, roc, flags, note = (field.strip() for field in record)
            if not cuda:
                raise ValueError(f"{path}:{line}: empty cuda name")
            if cuda in rows:
                raise ValueError(
                    f"{path}:{line}: duplicate cuda name {cuda!r} (first defined on line {first_line[cuda]})"
                )
            flag_set = {f.strip() for f in flags.split("|") if f.strip()} if flags else set()
            unknown = flag_set - FLAGS
            if unknown:
                raise ValueError(
                    f"{path}:{line}: unknown flag(s) {', '.join(sorted(unknown))} for {cuda!r};"
                    f" allowed: {', '.join(sorted(FLAGS))}"
                )
            if not hip and "unsupported" not in flag_set and area != HEADERS_AREA:
                raise ValueError(f"{path}:{line}: {cuda!r} has no hip name but is not flagged unsupported")
            rows[cuda] = Mapping(
                cuda=cuda,
                hip=hip,
                roc=roc,
                area=area,
                unsupported="unsupported" in flag_set,
                deprecated="deprecated" in flag_set,
                experimental="experimental" in flag_set,
                removed="removed" in flag_set,
                note=note,
            )
            first_line[cuda] = line
    return MappingProxyType(rows)


def headers() -> "MappingProxyType[str, Mapping]":
    """Include-file mappings (``cuda_runtime.h`` -> ``hip/hip_runtime.h``), kept out of identifier lookup."""
    return load(HEADERS_AREA)


def all_mappings(roc: bool = False) -> "MappingProxyType[str, Mapping]":
    """Identifier mappings of every area except headers, merged into one read-only dict.

    With ``roc=True`` rows of :data:`ROC_AREAS` that have no roc spelling come back flagged
    unsupported, because their hip* replacement would not mix with rocBLAS/rocRAND/rocSPARSE code.
    """
    return _all_mappings(bool(roc))


@lru_cache(maxsize=2)
def _all_mappings(roc: bool) -> "MappingProxyType[str, Mapping]":
    merged: dict[str, Mapping] = {}
    for area in AREAS:
        if area == HEADERS_AREA:
            continue
        for name, mapping in load(area).items():
            if name in merged:
                other = merged[name]
                raise ValueError(
                    f"{table_path(area)}: {name!r} is also defined in {table_path(other.area)}"
                )
            if roc and area in ROC_AREAS and not mapping.roc and not mapping.unsupported:
                note = "no roc equivalent" if not mapping.note else f"{mapping.note}; no roc equivalent"
                mapping = dataclasses.replace(mapping, unsupported=True, note=note)
            merged[name] = mapping
    return MappingProxyType(merged)


def clear_cache() -> None:
    """Forget loaded tables (for tests that edit the CSV files)."""
    _rules_dir.cache_clear()
    _load.cache_clear()
    _all_mappings.cache_clear()
