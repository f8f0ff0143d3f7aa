"""One parse, one model, every enabled rule; then suppressions. Also the fix loop (ruff's: apply, re-parse, repeat)."""
from __future__ import annotations

import re
import sys

from porter.diagnostics import Diagnostic
from porter.frontend import clang_errors
from porter.frontend.build import build_model
from porter.frontend.parse import ParseOptions
from porter.lint.context import LintContext
from porter.lint.fixer import Round, applicable, fix_loop, vet  # noqa: F401 (applicable: used by callers)
from porter.lint.registry import RULES
from porter.record import Record
from porter.record import replace as _with
from porter.source import SourceFile

# clang diagnostic categories that mean the code itself is malformed. Semantic errors ("use of undeclared
# identifier") are expected without a CUDA toolkit or a project's library headers: lint does not report them
# (the translators do, and refuse the kernels they touch), but a fix that adds one is never applied.
_SYNTAX_CATEGORIES = clang_errors.SYNTAX_CATEGORIES


class LintResult(Record):
    """The diagnostics of one file, and the other files its parse read or looked for (`dependencies`)."""
    path: str
    diagnostics: list[Diagnostic]
    source: SourceFile | None
    parse_errors: int
    dependencies: list

    def __init__(self, path, diagnostics=None, source=None, parse_errors=0, dependencies=None):
        self.path = path
        self.diagnostics = [] if diagnostics is None else diagnostics
        self.source = source
        self.parse_errors = parse_errors
        self.dependencies = [] if dependencies is None else dependencies


def parse_error_diagnostics(model, ctx: LintContext) -> int:
    """Syntax errors as CP000: the first SHOWN one by one, then one diagnostic giving how many there are."""
    errors = [e for e in model.errors if clang_errors.is_syntax(e)]
    size = len(model.source.data)
    for i, e in enumerate(errors):
        if i == clang_errors.SHOWN:
            start = min(e.offset, size) if e.offset is not None else 0
            ctx.report("CP000", (start, start), f"{len(errors)} parse errors in all; the first "
                       f"{clang_errors.SHOWN} are reported (this is the next one: {e.message})")
            break
        if e.offset is not None:
            start = min(e.offset, size)
            msg = e.message
        else:
            start = 0
            msg = f"{e.message} (in {e.file}:{e.line}:{e.column})"
        ctx.report("CP000", (start, start), f"parse error: {msg}")
    return len(errors)


def nesting_diagnostics(model, ctx: LintContext) -> None:
    """CP000 where a function body nests deeper than the model goes (build.py leaves such bodies out)."""
    from porter.frontend.model import MAX_NESTING
    for owner, at in model.too_deep:
        what = f"`{owner.spelling}`" if owner.kind in _FUNCTION_KINDS else "this declaration"
        ctx.report("CP000", (at, at), f"nesting deeper than {MAX_NESTING} levels: {what} is not analysed")


_FUNCTION_KINDS = ("FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD", "CONSTRUCTOR", "DESTRUCTOR")


def _is_recursion(exc: BaseException) -> bool:
    """A RecursionError, also when ctypes wrapped it in an ArgumentError ("argument 1: RecursionError")."""
    return isinstance(exc, RecursionError) or "RecursionError" in str(exc)


def syntax_error_count(model) -> int:
    """Every clang error but a missing header (the fix loop's safety: a fix that adds an error of any kind,
    a semantic one included, is not applied)."""
    return sum(1 for e in model.errors if clang_errors.counted(e))


def run_rules(model, enabled: set[str], settings=None) -> list[Diagnostic]:
    ctx = LintContext(model, settings)
    if "CP000" in enabled:
        parse_error_diagnostics(model, ctx)
        nesting_diagnostics(model, ctx)
    for code in sorted(enabled):
        if code in ("CP000", "CP001", "CP002"):
            continue
        mod = RULES[code].module
        try:
            mod.check(ctx)
        except Exception as exc:  # a rule bug must not lose the other findings
            if getattr(sys, "_cuport_raise", False):
                raise
            if _is_recursion(exc):   # nesting under MAX_NESTING that a rule still could not walk
                ctx.report("CP000", (0, 0), f"nesting too deep for {code}: this file is not analysed by it")
                continue
            print(f"cuport: internal error in {code} on {model.path}: {type(exc).__name__}: {exc}", file=sys.stderr)
    vet(model, ctx.diagnostics)       # no fix at a macro expansion site (lint/fixer.py)
    return ctx.diagnostics


def lint_source(source: SourceFile, settings=None, parse_options: ParseOptions | None = None,
                ignore_noqa: bool = False, enabled: set[str] | None = None) -> LintResult:
    if enabled is None:
        enabled = settings.enabled_codes(source.path) if settings is not None else set(RULES) - {"CP001", "CP002"}
    opts = parse_options or _options_from(settings)
    model = build_model(source, opts)
    diags = run_rules(model, enabled, settings)
    parse_errors = syntax_error_count(model)
    deps = dependencies(model)
    model.release()          # nothing below needs it: free it (and its translation unit) now
    del model
    diags += _device_branch_diagnostics(source, opts, enabled, settings, diags)
    for d in diags:
        source.locate(d)
    low = source.text.lower()
    if not ignore_noqa and ("cuport" in low or "noqa" in low):     # else no directive (Suppressions.parse's test)
        from porter.lint.suppress import Suppressions
        sup = Suppressions.parse(source.text)
        diags = [d for d in diags if not sup.is_suppressed(d.code, d.row)]
        extra = []
        if "CP001" in enabled:
            extra += sup.unused(source.path, enabled)
        if "CP002" in enabled:
            extra += sup.unknown(source.path)
        for d in extra:
            source.locate(d)
        diags += extra
    diags.sort(key=Diagnostic.sort_key)
    return LintResult(source.path, diags, source, parse_errors, deps)


_NOT_FOUND = re.compile(r"^'([^']+)' file not found")


def dependencies(model) -> list:
    """The files besides the source that its findings depend on: every header the parse included except cuport's
    own stubs, and (None-marked) the quoted includes clang did not find next to their includer, whose later
    appearance changes the parse. A cached result is reused only while all of them are as they were."""
    from porter.frontend.parse import SHIM_DIR
    import os
    # cuport's stubs and system headers (the realistic-headers fallback reads hundreds) change with an install
    own = (SHIM_DIR + os.sep, "/usr/", "/opt/", sys.prefix + os.sep, sys.base_prefix + os.sep)
    found, absent = set(), set()
    tu = getattr(model, "tu", None)
    if tu is not None:
        try:
            for inc in tu.get_includes():
                name = inc.include.name if inc.include is not None else None
                if name and not os.path.realpath(name).startswith(own):
                    found.add(os.path.abspath(name))
        except Exception:           # no include list: no dependencies to check beyond the source itself
            pass
    for e in getattr(model, "errors", None) or ():
        m = _NOT_FOUND.match(e.message or "")
        if m and not os.path.isabs(m.group(1)):
            where = os.path.dirname(os.path.abspath(e.file or model.source.path))
            absent.add(os.path.normpath(os.path.join(where, m.group(1))))
    return sorted(found) + sorted(absent - found)


_ARCH_IF = re.compile(rb"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif)\b[^\n]*\b__CUDA_ARCH__\b", re.M)
_DIRECTIVE = re.compile(rb"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|endif)\b", re.M)


def device_only_regions(data: bytes) -> list[tuple[int, int]]:
    """Byte ranges of the conditional groups that test `__CUDA_ARCH__` (from the `#if` to its `#endif`; an
    `#elif __CUDA_ARCH__` makes its whole group one)."""
    if not _ARCH_IF.search(data):
        return []
    arch_at = {m.start() for m in _ARCH_IF.finditer(data)}
    regions, stack = [], []
    for m in _DIRECTIVE.finditer(data):
        kind = m.group(1)
        if kind == b"endif":
            if stack:
                start, arch = stack.pop()
                if arch:
                    regions.append((start, m.end()))
        elif kind == b"elif":
            if stack and m.start() in arch_at:
                stack[-1] = (stack[-1][0], True)
        else:
            stack.append((m.start(), m.start() in arch_at))
    regions += [(start, len(data)) for start, arch in stack if arch]     # unterminated: to the end
    return regions


def _device_branch_diagnostics(source, opts, enabled, settings, host_diags) -> list[Diagnostic]:
    """Findings in `#if __CUDA_ARCH__ ...` branches. The host-side parse defines no __CUDA_ARCH__, so device-only
    branches (a `__match_any_sync` path for sm_70+, a shuffle path for sm_30+) would never be linted: such files
    are parsed once more as device code (`--cuda-device-only`, __CUDA_ARCH__=800) and the findings that lie inside
    those conditional groups and were not already reported are added. Only these files pay the second parse."""
    regions = device_only_regions(source.data)
    if not regions:
        return []
    dev_opts = _with(opts, extra_args=list(opts.extra_args) + ["--cuda-device-only"])
    model = build_model(source, dev_opts)
    try:
        found = run_rules(model, enabled, settings)
    finally:
        model.release()
    have = {(d.code, d.start) for d in host_diags}
    return [d for d in found if d.code != "CP000" and (d.code, d.start) not in have
            and any(a <= d.start < b for a, b in regions)]


def _options_from(settings) -> ParseOptions:
    if settings is None:
        return ParseOptions(recover=True)
    return ParseOptions(recover=True, include_dirs=list(getattr(settings, "include_dirs", []) or []),
                        defines=list(getattr(settings, "defines", []) or []),
                        extra_args=list(getattr(settings, "extra_args", []) or []),
                        compile_commands=getattr(settings, "compile_commands", None),
                        header_mode=getattr(settings, "header_mode", "light") or "light")


class FixOutcome(Record):
    """The fixed text of one file, what was fixed, and the final lint result."""
    text: str
    fixed: dict[str, int]
    result: LintResult
    refused: str | None            # why a fix round was rolled back, or which fixes did not converge
    unconverged: list[str]

    def __init__(self, text, fixed, result, refused=None, unconverged=None):
        self.text = text
        self.fixed = fixed
        self.result = result
        self.refused = refused
        self.unconverged = [] if unconverged is None else unconverged


def fix_source(source: SourceFile, settings=None, parse_options=None, unsafe: bool = False,
               enabled: set[str] | None = None, max_rounds: int = 10) -> FixOutcome:
    """lint --fix: the fix engine's loop (lint/fixer.py) with lint's own analysis of each text."""
    def analyze(src):
        res = lint_source(src, settings, parse_options, enabled=enabled)
        return Round(src, res.diagnostics, res.parse_errors, payload=res)
    out = fix_loop(source, analyze, unsafe=unsafe, max_rounds=max_rounds)
    refused = "; ".join(([out.refused] if out.refused else []) + out.unconverged) or None
    return FixOutcome(out.text, out.fixed, out.final.payload, refused, out.unconverged)
