"""The one codes table (ruff codes.rs style). Adding a rule: its file in rules/, a row here, its fixture."""
from __future__ import annotations

import importlib

from porter.record import FrozenRecord

# code, name, severity class from the catalog (C wrong result, P performance, B build), module under lint/rules
CODES: list[tuple[str, str, str, str]] = [
    ("CP000", "parse-error", "B", "parse_error"),
    ("CP001", "unused-suppression", "P", "unused_suppression"),
    ("CP002", "unknown-suppression-code", "B", "unknown_suppression_code"),
    ("CP101", "warp-size-constant", "C", "warp_size_constant"),
    ("CP102", "hardcoded-lane-arithmetic", "C", "hardcoded_lane_arithmetic"),
    ("CP103", "shuffle-offset-assumes-32", "C", "shuffle_offset_assumes_32"),
    ("CP104", "per-warp-storage-assumes-32", "C", "per_warp_storage_assumes_32"),
    ("CP105", "host-launch-assumes-32", "C", "host_launch_assumes_32"),
    ("CP106", "warpsize-as-constexpr", "B", "warpsize_as_constexpr"),
    ("CP201", "lane-mask-truncation", "C", "lane_mask_truncation"),
    ("CP202", "32-bit-lane-mask", "C", "lane_mask_32bit"),
    ("CP203", "partial-sync-mask", "C", "partial_sync_mask"),
    ("CP301", "volatile-warp-synchronous", "C", "volatile_warp_synchronous"),
    ("CP302", "unsynchronized-warp-exchange", "C", "unsynchronized_warp_exchange"),
    ("CP401", "shared-bank-conflict", "P", "shared_bank_conflict"),
    ("CP402", "padding-unused", "P", "padding_unused"),
    ("CP501", "shared-over-nvidia-default", "B", "shared_over_nvidia_default"),
    ("CP502", "shared-over-amd-lds", "B", "shared_over_amd_lds"),
    ("CP601", "block-not-multiple-of-64", "P", "block_not_multiple_of_64"),
    ("CP602", "launch-bounds-semantics", "P", "launch_bounds_semantics"),
    ("CP701", "barrier-divergence", "C", "barrier_divergence"),
    ("CP702", "shared-memory-race", "C", "shared_memory_race"),
    ("CP703", "shared-index-out-of-bounds", "C", "shared_index_out_of_bounds"),
    ("CP801", "lane-divergent-branch", "P", "lane_divergent_branch"),
    ("CP802", "uncoalesced-global-access", "P", "uncoalesced_global_access"),
    ("CP901", "inline-ptx", "B", "inline_ptx"),
    ("CP902", "warp-matrix-api", "B", "warp_matrix_api"),
    ("CP903", "cg-tile-over-32", "C", "cg_tile_over_32"),
    ("CP904", "target-specific-intrinsic", "B", "target_specific_intrinsic"),
    ("CP905", "dynamic-parallelism", "B", "dynamic_parallelism"),
    ("CP906", "vulkan-optional-feature", "B", "vulkan_optional_feature"),
    ("CP907", "untranslatable-construct", "B", "untranslatable_construct"),
]

_MODULES: dict = {}      # slug -> imported rule module (import_module costs microseconds per call)
SEVERITY_LEVEL = {"C": "error", "B": "error", "P": "warning"}
DOCS_URL = "https://cuport.dev/rules/{code}"


class RuleInfo(FrozenRecord):
    """A row of the codes table; the rule module is imported on first use."""
    code: str
    name: str
    sev: str
    slug: str

    def __init__(self, code, name, sev, slug):
        _set = object.__setattr__
        _set(self, 'code', code)
        _set(self, 'name', name)
        _set(self, 'sev', sev)
        _set(self, 'slug', slug)

    @property
    def level(self) -> str:
        return SEVERITY_LEVEL[self.sev]

    @property
    def url(self) -> str:
        return DOCS_URL.format(code=self.code)

    @property
    def module(self):
        m = _MODULES.get(self.slug)
        if m is None:
            m = _MODULES[self.slug] = importlib.import_module(f"porter.lint.rules.{self.slug}")
        return m

    @property
    def doc(self) -> str:
        return (self.module.__doc__ or "").strip()

    @property
    def summary(self) -> str:
        return self.doc.splitlines()[0] if self.doc else self.name


RULES: dict[str, RuleInfo] = {c: RuleInfo(c, n, s, m) for c, n, s, m in CODES}
BY_NAME: dict[str, RuleInfo] = {r.name: r for r in RULES.values()}


class UnknownCode(ValueError):
    def __init__(self, code: str):
        import difflib
        close = difflib.get_close_matches(code.upper(), list(RULES), n=1, cutoff=0.3) or \
            difflib.get_close_matches(code, list(BY_NAME), n=1, cutoff=0.3)
        hint = f" (did you mean {close[0]}?)" if close else ""
        super().__init__(f"unknown rule code or name '{code}'{hint}")
        self.code = code


def resolve(selector: str) -> set[str]:
    """Codes matched by a selector: a full code, a prefix (CP1, CP10), a name, or ALL."""
    sel = selector.strip()
    if sel.upper() == "ALL":
        return set(RULES)
    if sel in BY_NAME:
        return {BY_NAME[sel].code}
    up = sel.upper()
    if up.startswith("CP"):
        hits = {c for c in RULES if c.startswith(up)}
        if hits:
            return hits
    raise UnknownCode(sel)


def get(code: str) -> RuleInfo:
    return RULES[code]


def diagnostic(code: str, message: str, filename: str, start: int, end: int, *, fix=None, severity: str | None = None,
               source=None, **extra):
    """The one way to build a Diagnostic of a known code: name, URL and default severity from the codes table;
    located (row/column) when the SourceFile it points into is given."""
    from porter.diagnostics import Diagnostic
    info = RULES.get(code)
    d = Diagnostic(code=code, message=message, filename=filename, start=start, end=end, fix=fix,
                   severity=severity or (info.level if info else "error"), name=info.name if info else "",
                   url=info.url if info else "", extra=extra)
    return source.locate(d) if source is not None else d
