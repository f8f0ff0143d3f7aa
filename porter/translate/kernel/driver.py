"""The kernel translators' pipeline (GLSL and OpenCL share it): the linter's safe portability fixes on the CUDA
text, one model of the fixed text, one emitter run per kernel (per instantiation for templates), then the
target assembles files and manifests. Constructs a target cannot express become CP9xx diagnostics and the
kernel is listed in failed_kernels with no output; portability findings that remain are reported."""
from __future__ import annotations

import time
from types import SimpleNamespace

from porter.diagnostics import Diagnostic
from porter.frontend.parse import ParseOptions
from porter.lint.helpers import launches_of
from porter.lint.registry import diagnostic
from porter.source import SourceFile, read_source
from porter.translate import integrity
from porter.translate import warp_sizing
from porter.translate.api import TranslationResult
from porter.translate.kernel import coop
from porter.translate.kernel import ctype as ct
from porter.translate.kernel import traits
from porter.translate.kernel import units
from porter.translate.kernel.emitter import KernelEmitter, Unit
from porter.translate.kernel.target import MergeViews, TranslationError
from porter.translate.kernel.validate import limit_problems
from porter.analysis.launch import launch_shapes
from porter.translate.templates import instances
from porter.translate.portability import PRELUDE_FIXES, lint_and_fix

# lint families reported with a translation: warp-size assumptions and warp-synchronous code (the lane-mask
# rules CP2xx concern HIP's 64-bit masks; these targets drop masks and refuse partial ones themselves)
REPORTED_FAMILIES = ("CP1", "CP3")
# reported when their fix could not apply, but not refusing the kernel: a barrier under divergent control flow is
# undefined in CUDA as in Vulkan and OpenCL, and the translation keeps the source's behaviour (HIP reports it too)
REPORTED_UNREFUSED = PRELUDE_FIXES


def parse_defines(defines) -> dict:
    out = {}
    for d in defines or ():
        name, _, value = str(d).partition("=")
        out[name.strip()] = value.strip() if value else "1"
    return out


def make_diagnostic(source: SourceFile, code: str, start: int, end: int, message: str,
                    severity: str | None = None, **extra) -> Diagnostic:
    return diagnostic(code, message, source.path, start, end, severity=severity, source=source, **extra)


def _lint_and_fix(source, popts, enabled_fixes: bool):
    ns = SimpleNamespace(portability_fixes=enabled_fixes, parse_options=popts, settings=None)
    return lint_and_fix(source, ns)


def translate_path(path: str, target_name: str, target, text: str | None = None, *, defines=(), include_dirs=(),
                   extra_args=(), compile_commands=None, header_mode: str = "light", kernel: str | None = None,
                   portability_fixes: bool = True, validate: bool = False, program_files=(),
                   **options) -> TranslationResult:
    t0 = time.perf_counter()
    source = SourceFile(path, text) if text is not None else read_source(path)
    # kernels, device functions and data in the project headers it includes are translated with it (units.py)
    source, linemap = units.inline_headers(source, include_dirs)
    # -D NAME=VALUE naming a template parameter instantiates templates; it must not reach the preprocessor
    tparams = _template_param_names(source.text)
    pp_defines = [d for d in (defines or ()) if str(d).partition("=")[0].strip() not in tparams]
    popts = ParseOptions(include_dirs=list(include_dirs or ()), defines=pp_defines,
                         extra_args=list(extra_args or ()), compile_commands=compile_commands,
                         header_mode=header_mode)
    # cooperative groups and CUB collectives become the CUDA the translators handle (coop.py); line structure kept
    lowered = coop.lower(source, popts)
    source = lowered.source
    model, lint_diags, fixed, original_diags = _lint_and_fix(source, popts, portability_fixes)
    fsrc = model.source
    result = TranslationResult(path, target_name)
    result.extra["fixes_applied"] = dict(fixed)
    if fsrc.text != source.text:
        result.extra["fixed_source"] = fsrc.text
    unit = Unit(model, target, options)
    unit.coop_refusals = _moved(lowered.refusals, source.text, fsrc.text)
    dmap = parse_defines(defines)
    outputs = []
    kernels = [f for f in model.kernels if kernel is None or f.name == kernel or
               (kernel.split("<")[0] == f.name)]
    if kernel is not None and not kernels:
        result.failed_kernels[kernel] = "no such kernel in this file"
    # the emitters never see an AST clang recovered from: refuse what a clang error touches (integrity.py)
    integ = integrity.analyze(model)
    broken = {id(f.node): integ.file_errors + integ.kernel_errors(model, f) for f in model.kernels}
    result.diagnostics += clang_error_diagnostics(fsrc, model, integ, broken)
    if integ.file_errors:
        result.extra["refused"] = "clang errors that no declaration owns: no kernel of this file is translated"
    seen = set()
    others = None                   # the texts of the run's other inputs (launches of templates defined here)
    for fn in kernels:
        if id(fn.node) in seen:
            continue
        if fn.body is None and not any(d is fn.node for d, _l in getattr(model, "too_deep", ()) or ()):
            continue                # a prototype: its definition is translated where it is (units.left_out)
        seen.add(id(fn.node))
        if broken.get(id(fn.node)):
            e = broken[id(fn.node)][0]
            where = f"line {e.line}" if e.offset is not None else f"{e.file}:{e.line}"
            what = ("the file has a clang error no declaration owns" if e in integ.file_errors else
                    "it uses code clang could not compile")
            msg = (f"kernel `{fn.name}` not translated: {what} ({where}: {e.message}); fix the error or supply "
                   "the missing declarations")
            result.failed_kernels[fn.name] = "CP000: " + msg[msg.index(":") + 2:]
            at = _name_offset(fsrc, fn)
            result.diagnostics.append(make_diagnostic(fsrc, "CP000", at, at + len(fn.name), msg, kernel=fn.name))
            continue
        shapes = launch_shapes(model, fn.name)
        if fn.is_template:
            if others is None:
                others = units.other_inputs(path, program_files, linemap)
            insts = instances(model, fn, dmap, others)
            if not insts:
                msg = (f"template kernel `{fn.name}` is never instantiated (no launch site, no explicit "
                       "instantiation): pass its template parameters with -D NAME=VALUE")
                result.failed_kernels[fn.name] = msg
                at = _name_offset(fsrc, fn)
                result.diagnostics.append(make_diagnostic(fsrc, "CP907", at, at + len(fn.name), msg))
                continue
            jobs = []
            # overloads of one name (chosen by enable_if) always name their instances
            overloaded = sum(1 for k in model.kernels if k.name == fn.name and k.body is not None) > 1
            for inst in insts:
                subst = traits.expand(unit, {k: (v if isinstance(v, int) else _type_arg(model, fn, v, unit))
                                             for k, v in inst.args.items()})
                label = fn.name if len(insts) == 1 and not overloaded else f"{fn.name}<{inst.label}>"
                shape = next((s for s, ls in zip(shapes, launches_of(model, fn.name))
                              if inst.node is not None and ls.node is inst.node), shapes[0] if shapes else None)
                jobs.append((label, subst, shape, inst))
        else:
            jobs = [(fn.name, {}, shapes[0] if shapes else None, None)]
        for label, subst, shape, inst in jobs:
            if kernel is not None and "<" in kernel and label != kernel:
                continue
            merged = {}
            try:
                while True:
                    em = KernelEmitter(unit, fn, subst, shape, label)
                    em.instance = inst
                    em.shapes = shapes
                    em.merged_views = merged
                    try:
                        em.run()
                        break
                    except MergeViews as again:      # once per buffer: the set only grows
                        if not set(again.views) - set(merged):
                            raise
                        merged = {**merged, **again.views}
            except TranslationError as exc:
                result.failed_kernels[label] = f"{exc.code}: {exc.message}"
                result.diagnostics.append(make_diagnostic(fsrc, exc.code, exc.start, exc.end,
                                                          f"kernel `{label}` not translated: {exc.message}",
                                                          kernel=label))
                continue
            except (ValueError, IndexError, KeyError, AttributeError) as exc:
                # last line of defence: an AST clang recovered from (through a header cuport cannot see) that
                # the integrity check did not tie to this kernel; on a clean parse it is a bug and is raised
                if not model.errors:
                    raise
                msg = (f"kernel `{label}` not translated: clang's AST of it is incomplete after the errors "
                       f"above ({type(exc).__name__})")
                result.failed_kernels[label] = "CP000: " + msg[msg.index(":") + 2:]
                at = _name_offset(fsrc, fn)
                result.diagnostics.append(make_diagnostic(fsrc, "CP000", at, at + len(fn.name), msg, kernel=label))
                continue
            problems = limit_problems(target_name, em)
            for sev, node, message in problems:
                if sev != "error":
                    em.note("CP907", node, message, sev)
            refusal = next(((node, message) for sev, node, message in problems if sev == "error"), None)
            if refusal is not None:
                node, message = refusal
                s, e = (node.start, node.end) if node is not None else (_name_offset(fsrc, fn),
                                                                         _name_offset(fsrc, fn) + len(fn.name))
                result.failed_kernels[label] = f"CP907: {message}"
                result.diagnostics.append(make_diagnostic(fsrc, "CP907", s, e, f"kernel `{label}` not translated: "
                                                          f"{message}", kernel=label))
                continue
            outputs.append((label, em, shape))
    remaining = _remaining_findings(model, fsrc, outputs, lint_diags, original_diags, fixed)
    if portability_fixes:
        outputs = _refuse_unfixed(result, fsrc, outputs, remaining)
    target.assemble(result, outputs, unit)
    # the notes kernels were emitted with, and the portability findings the fixes did not remove
    for label, em, _shape in outputs:
        for code, node, message, severity in em.notes:
            s, e = (node.start, node.end) if node is not None else (em.fn.node.start, em.fn.node.start)
            result.diagnostics.append(make_diagnostic(fsrc, code, s, e, f"{label}: {message}", severity,
                                                      kernel=label))
    for d in remaining:
        d.extra = dict(d.extra or {}, in_fixed_source=bool(fixed))
        result.diagnostics.append(d)
    result.diagnostics.sort(key=Diagnostic.sort_key)
    if validate:
        # a validator's rejection removes the output: nothing written, the kernel is refused (exit 1)
        from porter.translate.kernel.validate import check_result
        result.extra["validation"] = check_result(result)
        for label, em, _shape in outputs:
            if label in result.extra["rejected_kernels"]:
                why = result.failed_kernels[label]
                at = _name_offset(fsrc, em.fn)
                result.diagnostics.append(make_diagnostic(
                    fsrc, "CP907", at, at + len(em.fn.name),
                    f"kernel `{label}` not translated: its {target_name.upper()} output was rejected: "
                    f"{why[len('CP907: '):]}", kernel=label))
        result.diagnostics.sort(key=Diagnostic.sort_key)
    result.diagnostics += units.launched_elsewhere(model, fsrc, result, kernel)
    if linemap is not None:
        linemap.remap(result.diagnostics)
        from porter.translate.kernel import asserts
        asserts.remap(result, linemap)
        result.extra["inlined_headers"] = list(linemap.headers)
        result.diagnostics.sort(key=Diagnostic.sort_key)
    result.extra["seconds"] = round(time.perf_counter() - t0, 4)
    return result


def _remaining_findings(model, fsrc, outputs, lint_diags, original_diags, fixed) -> list:
    """The warp-size / warp-synchronous findings (CP1xx, CP3xx) the portability fixes did not remove, in device
    code; those the emitters took care of (lowered to work-group barriers, per-warp arrays re-sized) as info."""
    lowered = [sp for _l, em, _s in outputs for sp in em.lowered_spans]
    sized_rows = warp_sizing.handled_rows([em for _l, em, _s in outputs])
    # CP000 comes from clang_error_diagnostics (every clang error, not only the linter's syntax errors)
    remaining = [d for d in lint_diags if d.code.startswith(REPORTED_FAMILIES) or d.code in REPORTED_UNREFUSED]
    if fixed:
        # findings without a fix on the original text stay true when other fixes rewrote their evidence
        # (`partial[32]` indexed by `tid / 32` is still 32 entries after `/ 32` became `/ warpSize`); the fix
        # loop's first round linted the original text already: no second parse of it
        seen = {(d.code, d.row) for d in remaining}
        for d in original_diags:
            if d.fix is None and d.code.startswith(REPORTED_FAMILIES) and (d.code, d.row) not in seen:
                d.message += " (reported on the source before the portability fixes)"
                remaining.append(d)
    in_device = _covers((f.node.start, f.node.end) for f in model.functions if f.is_device_code)
    in_lowered = _covers(lowered)
    # kernels that run CUDA's 32-lane warps emulated in shared memory (warp32): warp-size findings hold there
    in_warp32 = _covers((f.node.start, f.node.end) for _l, em, _s in outputs if em.warp32 is not None
                        for f in em._reachable(em.fn).values())
    in_native = _covers((f.node.start, f.node.end) for _l, em, _s in outputs if em.warp32 is None
                        for f in em._reachable(em.fn).values())
    out = []
    for d in remaining:
        if d.code != "CP000" and not in_device(d.start):
            continue
        if in_lowered(d.start) and d.code.startswith(("CP10", "CP30")):
            d.severity = "info"
            d.message += " (translated with work-group barriers: exact for any subgroup size)"
        if d.code.startswith("CP10") and d.severity != "info" and in_warp32(d.start) and \
                not in_native(d.start):
            d.severity = "info"
            d.message += " (translated with CUDA's 32-lane warps emulated in shared memory: exact for any subgroup size)"
        if d.code == "CP104" and d.row in sized_rows:
            d.severity = "info"
            d.message += " (translated with its slots and warp counts sized for the target's subgroups)"
        out.append(d)
    return out


def _refuse_unfixed(result, fsrc, outputs, remaining) -> list:
    """A kernel that reaches a warp-size error the fixes did not remove is not written: its translation would be
    wrong on subgroups other than 32 lanes (lavapipe 4/8/16, AMD's 64), which is silently wrong output. Only with
    the portability fixes on: translating as written (`--no-portability-fixes`) keeps the text for comparison."""
    # a finding with no warp evidence (`i & 0x1F` in code without warp operations: CP102's doubt) is reported but
    # does not refuse: the literal is translated as written, which is CUDA's meaning if it is not a lane id
    errors = [d for d in remaining if d.severity == "error" and (d.extra or {}).get("warp_evidence") is not False
              and d.code not in REPORTED_UNREFUSED]
    if not errors:
        return outputs
    kept = []
    for label, em, shape in outputs:
        spans = [(f.node.start, f.node.end) for f in em._reachable(em.fn).values()]
        hit = next((d for d in errors if any(a <= d.start < b for a, b in spans)), None)
        if hit is None:
            kept.append((label, em, shape))
            continue
        msg = (f"kernel `{label}` not translated: {hit.code} at line {hit.row} is not fixed (see that finding); "
               "its translation would be wrong on subgroups other than 32 lanes")
        result.failed_kernels[label] = f"{hit.code}: " + msg[msg.index(":") + 2:]
        at = _name_offset(fsrc, em.fn)
        result.diagnostics.append(make_diagnostic(fsrc, hit.code, at, at + len(em.fn.name), msg, kernel=label))
    return kept


def _moved(spans, before: str, after: str) -> list:
    """Ranges of the lowered text carried through the portability fixes (which keep lines): by line and the
    offset within it, clamped to the fixed line."""
    if not spans or before == after:
        return spans
    b, a = SourceFile("b", before), SourceFile("a", after)
    out = []
    for s, e, msg in spans:
        (r1, c1), (r2, c2) = b.position(s), b.position(e)
        try:
            out.append((a.offset(r1, c1), max(a.offset(r1, c1), a.offset(r2, c2)), msg))
        except (IndexError, ValueError):
            out.append((s, e, msg))
    return out


def _type_arg(model, fn, spelling, unit):
    """A template type argument as a CType; a typedef of the file (`bump_gpu<real_t>`) through what it names."""
    t = ct.parse(str(spelling).replace("struct ", ""), None, unit.struct_names)
    if t.kind == "unknown":
        from porter.translate.templates import canonical_type
        canon = canonical_type(model, fn, str(spelling))
        if canon != str(spelling):
            t2 = ct.parse(canon.replace("struct ", ""), None, unit.struct_names)
            if t2.kind != "unknown":
                return t2
    return t


def clang_error_diagnostics(src, model, integ, broken) -> list:
    """Every clang error as CP000 (unknown names once per name, with how to supply them; the first SHOWN, then
    the count): an error when it blocks a kernel or the file, a warning in code no kernel uses."""
    from porter.frontend import clang_errors as CE
    blocking = {id(e) for errs in broken.values() for e in errs}
    errs = [e for e in model.errors if CE.counted(e) or CE.is_missing_header(e)]
    out = []
    groups = CE.grouped(errs)
    # those that block a kernel first, then in file order; the rest summed up in one diagnostic
    blocks = [any(id(m) in blocking for m in g[2]) for g in groups]
    order = sorted(range(len(groups)), key=lambda i: (not blocks[i], i))
    shown, hidden = sorted(order[:CE.SHOWN]), order[CE.SHOWN:]
    if hidden:
        e = groups[min(hidden)][0]
        at = min(e.offset, len(src.data)) if e.offset is not None else 0
        out.append(make_diagnostic(src, "CP000", at, at, f"{len(errs)} clang errors in all ({len(groups)} "
                                   f"distinct); {CE.SHOWN} are reported, this is the first of the others",
                                   "error" if any(blocks[i] for i in hidden) else "warning"))
    for i in shown:
        e, msg, members = groups[i]
        at = min(e.offset, len(src.data)) if e.offset is not None else _include_offset(src, e.file)
        if e.offset is None:
            msg += f" (in {e.file}:{e.line}:{e.column})"
        if any(id(m) in blocking for m in members):
            out.append(make_diagnostic(src, "CP000", at, at, msg))
        elif CE.is_missing_header(e):
            out.append(make_diagnostic(src, "CP000", at, at, msg, "warning"))
        else:
            out.append(make_diagnostic(src, "CP000", at, at, msg + " (in code no kernel uses: kernels are "
                                       "still translated)", "warning"))
    return out


def _include_offset(src, header) -> int:
    """Where the main file includes `header` (an error inside it is shown there), else 0."""
    import os
    import re
    if header:
        m = re.search(rb"^[ \t]*#[ \t]*include[ \t]*[<\"][^>\"]*" + re.escape(os.path.basename(header).encode()) +
                      rb"[>\"]", src.data, re.M)
        if m:
            return m.start()
    return 0


def _template_param_names(text: str) -> set:
    import re
    names = set()
    for m in re.finditer(r"\btemplate\s*<([^<>]*)>", text):
        for part in m.group(1).split(","):
            part = part.split("=")[0].strip()
            w = re.findall(r"[A-Za-z_]\w*", part)
            if w:
                names.add(w[-1])
    return names


def _name_offset(src, fn) -> int:
    data = src.data
    i = data.find(fn.name.encode() + b"(", fn.node.start, fn.node.end)
    if i < 0:
        i = data.find(fn.name.encode(), fn.node.start, fn.node.end)
    return i if i >= 0 else fn.node.start


def _covers(spans):
    """offset -> whether one of the [a, b) spans contains it, in O(log n) per query (starts in order and the
    furthest end reached so far): one lookup per finding instead of a scan of every function per finding."""
    import bisect
    from itertools import accumulate
    spans = sorted(spans)
    starts = [a for a, _b in spans]
    reach = list(accumulate((b for _a, b in spans), max))

    def inside(offset) -> bool:
        k = bisect.bisect_right(starts, offset)
        return k > 0 and reach[k - 1] > offset
    return inside
