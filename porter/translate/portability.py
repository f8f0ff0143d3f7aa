"""The lint + fix prelude every translator runs on the CUDA text before translating it: the safe fixes of the
warp-size families (CP1xx, CP2xx, CP3xx) through the one fix engine (porter.lint.fixer), keeping the model of
the last round so that the translator does not parse again."""
from __future__ import annotations

import importlib.util
import re
from typing import NamedTuple

from porter.diagnostics import Diagnostic
from porter.frontend.build import build_model
from porter.source import SourceFile

PORTABILITY_FAMILIES = ("CP1", "CP2", "CP3")
# fixed in the prelude too, not reported by it: an early return before a block barrier (CP701's safe fix) hangs
# AMD GPUs and is undefined in Vulkan and OpenCL (PoCL aborts on HeCBench bsearch's kernel_BS4)
PRELUDE_FIXES = ("CP701",)
# the warp-size rules look at device code and launches; a file with neither skips them
_DEVICE_OR_LAUNCH = re.compile(rb"__global__|__device__|__shared__|<<<|cudaLaunch|__shfl|__ballot")

_portability_codes: set | None = None
# rules for what HIP cannot compile at all (inline PTX, nvcuda::wmma, device-side launches): always run, so a
# translation that will not compile says where and why
HARD_CODES = ("CP901", "CP902", "CP905")
_HARD_HINT = re.compile(rb"\basm\b|\bwmma\b|<<<")
_hard_codes: set | None = None


def hard_codes() -> set[str]:
    global _hard_codes
    if _hard_codes is None:
        from porter.lint.registry import RULES
        _hard_codes = {c for c in HARD_CODES if c in RULES
                       and importlib.util.find_spec(f"porter.lint.rules.{RULES[c].slug}") is not None}
    return _hard_codes


def portability_codes() -> set[str]:
    """Codes of the CP1xx/CP2xx/CP3xx rules (and PRELUDE_FIXES) that exist (rules land independently)."""
    global _portability_codes
    if _portability_codes is None:
        from porter.lint.registry import RULES
        _portability_codes = {c for c, r in RULES.items() if (c.startswith(PORTABILITY_FAMILIES) or
                                                              c in PRELUDE_FIXES)
                              and importlib.util.find_spec(f"porter.lint.rules.{r.slug}") is not None}
    return _portability_codes

def _model(source, opts):
    return build_model(source, opts.parse_options)


def lint_model(model, enabled, settings):
    from porter.lint.checker import run_rules
    from porter.lint.suppress import Suppressions
    diags = run_rules(model, enabled, settings)
    for d in diags:
        model.source.locate(d)
    if any(d.code != "CP000" for d in diags):
        sup = Suppressions.parse(model.source.text)
        diags = [d for d in diags if not sup.is_suppressed(d.code, d.row)]
    diags.sort(key=Diagnostic.sort_key)
    return diags


class Linted(NamedTuple):
    model: object            # the model of the text after the fixes (the last round's: no second parse)
    diagnostics: list        # its findings
    fixed: dict              # {code: count} of the fixes applied
    original: list           # the findings on the text before the fixes (the first round's)


def lint_and_fix(source: SourceFile, opts) -> Linted:
    """The text after the safe portability fixes: the fix engine's loop (lint/fixer.py), each round parsing its
    text once. `opts` has portability_fixes, parse_options and settings (HipOptions or the kernel driver's)."""
    from porter.lint.checker import syntax_error_count
    from porter.lint.fixer import Round, fix_loop
    enabled = {"CP000"}
    if _DEVICE_OR_LAUNCH.search(source.data) or _HARD_HINT.search(source.data):
        enabled |= hard_codes()
    if opts.portability_fixes and _DEVICE_OR_LAUNCH.search(source.data):
        codes = portability_codes()
        if opts.settings is not None:
            codes = codes & opts.settings.enabled_codes(source.path)
        enabled |= codes

    def analyze(src):
        model = _model(src, opts)
        return Round(src, lint_model(model, enabled, opts.settings), syntax_error_count(model), model)
    first = analyze(source)
    if not opts.portability_fixes:
        return Linted(first.model, first.diagnostics, {}, first.diagnostics)
    out = fix_loop(source, analyze, first=first)
    return Linted(out.final.model, out.final.diagnostics, out.fixed, first.diagnostics)

