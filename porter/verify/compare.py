"""One comparison helper for every backend: error norms, the first bad element and a readable message."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Comparison.how of an output whose element order depends on scheduling (spec.Case.unordered)
MULTISET = "compared as a multiset (positions claimed by atomics)"


@dataclass(frozen=True)
class Comparison:
    name: str
    ok: bool
    max_abs: float
    max_rel: float
    rel_l2: float
    n_bad: int
    size: int
    first_bad: tuple[int, ...] | None
    got_value: float | None
    want_value: float | None
    rtol: float
    atol: float
    problem: str = ""          # shape / dtype trouble that made element-wise comparison impossible
    how: str = ""              # MULTISET: both sides were sorted first (first_bad is a position in sorted order)

    @property
    def label(self) -> str:
        """The output's name, and how it was compared when not position by position."""
        return f"{self.name} ({self.how})" if self.how else self.name

    @property
    def where(self) -> str:
        idx = self.first_bad if len(self.first_bad or ()) != 1 else self.first_bad[0]
        return f"{'sorted ' if self.how else ''}[{_fmt_index(idx)}]"

    @property
    def message(self) -> str:
        if self.problem:
            return f"{self.label}: {self.problem}"
        norms = f"max abs {self.max_abs:.3g}, max rel {self.max_rel:.3g}, rel l2 {self.rel_l2:.3g}"
        if self.ok:
            return f"{self.label}: ok ({norms})"
        tol = f"rtol {self.rtol:g}, atol {self.atol:g}" if self.rtol or self.atol else "exact"
        return (f"{self.label}: {self.n_bad} of {self.size} elements differ "
                f"({tol}); first at {self.where}: "
                f"got {_fmt(self.got_value)}, expected {_fmt(self.want_value)}; {norms}")

    def as_dict(self) -> dict:
        return {"name": self.name, "ok": self.ok, "max_abs": self.max_abs, "max_rel": self.max_rel,
                "rel_l2": self.rel_l2, "n_bad": self.n_bad, "first_bad": self.first_bad,
                "got": self.got_value, "expected": self.want_value, "message": self.message,
                **({"how": self.how} if self.how else {})}


def _fmt(v) -> str:
    if v is None:
        return "-"
    return repr(v) if isinstance(v, (int, np.integer)) else f"{v:.9g}"


def _fmt_index(idx) -> str:
    return ", ".join(map(str, idx)) if isinstance(idx, tuple) else str(idx)


def compare(name: str, got, want, rtol: float = 1e-5, atol: float = 1e-6, how: str = "") -> Comparison:
    """Element-wise |got - want| <= atol + rtol * |want|; NaN matches NaN, inf matches the same inf. `how` says how
    the arrays were brought to one order first (MULTISET), for the message."""
    got = np.asarray(got)
    want = np.asarray(want)
    if got.shape != want.shape:
        if got.size == want.size:
            got = got.reshape(want.shape)          # a flat device buffer holding an n-d result
        else:
            return Comparison(name, False, np.inf, np.inf, np.inf, want.size, want.size, None, None, None,
                              rtol, atol, problem=f"shape {got.shape} but expected {want.shape}", how=how)
    exact = got.dtype.kind in "iub" and want.dtype.kind in "iub"
    if exact:
        common = np.result_type(got.dtype, want.dtype)
        bad = got.astype(common) != want.astype(common)
        g64, w64 = got.astype(np.float64), want.astype(np.float64)
        diff = np.abs(g64 - w64)
    else:
        g64, w64 = got.astype(np.float64), want.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            diff = np.abs(g64 - w64)
            same_special = (np.isnan(g64) & np.isnan(w64)) | (np.isinf(g64) & (g64 == w64))
            # inf - inf is not within any tolerance: non-finite values must match exactly
            close = (diff <= atol + rtol * np.abs(w64)) & np.isfinite(g64) & np.isfinite(w64)
            bad = ~(close | same_special)
        # a NaN where a number was expected (or the reverse) counts as an infinite error
        diff = np.where(same_special, 0.0, np.where(np.isnan(diff), np.inf, diff))
    finite = np.isfinite(diff)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        max_abs = float(diff.max()) if diff.size else 0.0
        rel = diff / np.maximum(np.abs(w64), np.finfo(np.float64).tiny)
        max_rel = float(np.where(diff == 0, 0.0, rel).max()) if diff.size else 0.0
        fin_w = w64[np.isfinite(w64)]
        denom = float(np.linalg.norm(fin_w)) if fin_w.size else 0.0
        num = float(np.linalg.norm(np.where(finite, diff, 0.0))) if diff.size else 0.0
        rel_l2 = (num / denom if denom else num) if finite.all() else np.inf
    n_bad = int(bad.sum())
    first = got_v = want_v = None
    if n_bad:
        flat = int(np.flatnonzero(bad.reshape(-1))[0])
        first = tuple(int(i) for i in np.unravel_index(flat, want.shape)) if want.ndim else ()
        got_v, want_v = got.reshape(-1)[flat].item(), want.reshape(-1)[flat].item()
    if exact:
        rtol = atol = 0.0
    return Comparison(name, n_bad == 0, max_abs, max_rel, rel_l2, n_bad, int(want.size), first, got_v, want_v,
                      rtol, atol, how=how)


def compare_fields(name: str, got, want, tol_of, how: str = "") -> Comparison:
    """Structured arrays (structs) field by field: each scalar field (nested ones as `p.a.b`) compared as its own
    array with tol_of(path, dtype) -> (rtol, atol) or a Tol; the first field that differs, else the largest
    errors of all. Padding bytes are not compared."""
    from porter.verify.notation import leaves
    got, want = np.asarray(got), np.asarray(want)
    if got.dtype != want.dtype:
        return Comparison(name, False, np.inf, np.inf, np.inf, want.size, want.size, None, None, None, 0.0, 0.0,
                          problem=f"struct dtype {got.dtype} but expected {want.dtype}", how=how)
    results = []
    for path, dt, _off in leaves(want.dtype):
        g, w = got, want
        for part in path.split("."):
            g, w = g[part], w[part]
        tol = tol_of(path, dt)
        rtol, atol = (tol.rtol, tol.atol) if hasattr(tol, "rtol") else tol
        c = compare(f"{name}.{path}", g, w, rtol, atol, how=how)
        if not c.ok:
            return c
        results.append(c)
    if not results:
        return Comparison(name, True, 0.0, 0.0, 0.0, 0, int(want.size), None, None, None, 0.0, 0.0, how=how)
    worst = max(results, key=lambda c: c.max_abs)
    return Comparison(name, True, worst.max_abs, max(c.max_rel for c in results), max(c.rel_l2 for c in results),
                      0, int(want.size), None, None, None, worst.rtol, worst.atol, how=how)
