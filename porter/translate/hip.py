"""CUDA -> HIP by edits on the parsed source.

1. Portability first: the linter's safe fixes of the warp-size families (CP1xx, CP2xx, CP3xx) are applied to
   the CUDA text, re-parsing after each round (`portability_fixes=False` skips this).
2. One pass over the file's identifier tokens (never comments or string literals) looks every name up in the
   mapping tables (porter.translate.hip_tables); `#include` lines go through the header table.
3. Handlers (porter.translate.hip_handlers) rewrite the arguments a rename cannot: HIP_SYMBOL, casts to
   const void*, hipHostMalloc flags, 64-bit lane masks, and launches when `launch_syntax="hip"`.
4. What needs a human gets a `// cuport: CPxxx ...` comment on its line and a diagnostic; unsupported APIs are
   diagnostics and counted as unconverted.
5. The HIP include (where hipify-clang puts it) and the small helpers the output calls are rendered from
   templates/hip/*.j2.
Everything outside the edits is the input byte for byte."""
from __future__ import annotations

import bisect
import difflib
import re
import importlib.util
import os
import time
from dataclasses import dataclass, field

from porter.diagnostics import Diagnostic
from porter.frontend.build import build_model
from porter.frontend.parse import ParseOptions
from porter.source import SourceFile, read_source
from porter.translate import hip_handlers as H
from porter.translate.api import TranslationResult
from porter.translate.stats import FileStats

UNSUPPORTED = "CP907"          # unsupported-in-hip: a CUDA API with no HIP equivalent (left as is)
LAUNCH_KEPT = UNSUPPORTED        # a launch left in <<<...>>> form under --launch-syntax hip (a warning)
_NAMES = {UNSUPPORTED: "unsupported-in-hip"}
PORTABILITY_FAMILIES = ("CP1", "CP2", "CP3")
HIP_RUNTIME = "hip/hip_runtime.h"
# directives whose text is not code: nothing in them is renamed
_OPAQUE_DIRECTIVES = {"include", "include_next", "import", "error", "warning", "pragma", "line", "ident"}
# intrinsics that exist in HIP only from 6.2 on (fallbacks rendered from templates/hip/portability.hip.j2)
SYNC_HELPERS = ("__activemask", "__syncwarp", "__ballot_sync", "__any_sync", "__all_sync", "__shfl_sync",
                "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync")
LANEMASK_TYPE = "cuport_lanemask_t"
# the warp-size rules look at device code and launches; a file with neither skips them
_DEVICE_OR_LAUNCH = re.compile(rb"__global__|__device__|__shared__|<<<|cudaLaunch|__shfl|__ballot")


@dataclass
class HipOptions:
    launch_syntax: str = "cuda"          # cuda: keep <<<...>>>; hip: hipLaunchKernelGGL(...)
    portability_fixes: bool = True
    notes: bool = True                   # `// cuport: CPxxx` comments where a human must look
    roc: bool = False                    # library names of the roc* libraries instead of hip*
    parse_options: ParseOptions = field(default_factory=ParseOptions)
    settings: object = None


_portability_codes: set | None = None


def portability_codes() -> set[str]:
    """Codes of the CP1xx/CP2xx/CP3xx rules that exist (rules land independently)."""
    global _portability_codes
    if _portability_codes is None:
        from porter.lint.registry import RULES
        _portability_codes = {c for c, r in RULES.items() if c.startswith(PORTABILITY_FAMILIES)
                              and importlib.util.find_spec(f"porter.lint.rules.{r.slug}") is not None}
    return _portability_codes


def translate(path: str, text: str | None = None, *, launch_syntax: str = "cuda", portability_fixes: bool = True,
              notes: bool = True, roc: bool = False, include_dirs=(), defines=(), extra_args=(),
              compile_commands: str | None = None, header_mode: str = "light",
              parse_options: ParseOptions | None = None, settings=None) -> TranslationResult:
    """Translate one CUDA file (its contents given as `text`, or read from `path`)."""
    t0 = time.perf_counter()
    if launch_syntax not in ("cuda", "hip"):
        raise ValueError(f"launch_syntax must be 'cuda' or 'hip', not {launch_syntax!r}")
    source = SourceFile(path, text) if text is not None else read_source(path)
    if parse_options is None:
        extra = settings is not None
        parse_options = ParseOptions(
            include_dirs=list(include_dirs) + (list(getattr(settings, "include_dirs", []) or []) if extra else []),
            defines=list(defines) + (list(getattr(settings, "defines", []) or []) if extra else []),
            extra_args=list(extra_args) + (list(getattr(settings, "extra_args", []) or []) if extra else []),
            compile_commands=compile_commands, header_mode=header_mode)
    popts = parse_options
    opts = HipOptions(launch_syntax, portability_fixes, notes and portability_fixes, roc, popts, settings)
    return _Translator(source, opts, t0).run()


# --- lint + fix on the CUDA text --------------------------------------------------------------------------------

def _model(source, opts):
    return build_model(source, opts.parse_options)


def _lint(model, enabled, settings):
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


def lint_and_fix(source: SourceFile, opts: HipOptions):
    """(model, diagnostics, fixed-counts) for the text after the safe portability fixes. The fix loop of
    porter.lint.checker.fix_source, keeping the last model so the translator does not parse again."""
    from porter.lint.checker import applicable, syntax_error_count
    from porter.source import apply_edits, select_edits
    enabled = {"CP000"}
    if opts.portability_fixes and _DEVICE_OR_LAUNCH.search(source.data):
        codes = portability_codes()
        if opts.settings is not None:
            codes = codes & opts.settings.enabled_codes(source.path)
        enabled |= codes
    model = _model(source, opts)
    diags = _lint(model, enabled, opts.settings)
    fixed: dict[str, int] = {}
    if not opts.portability_fixes:
        return model, diags, fixed
    errors = syntax_error_count(model)
    for _ in range(10):
        cands = [d for d in diags if applicable(d, False)]
        if not cands:
            break
        edits = select_edits([list(d.fix.edits) for d in cands])
        taken = [d for d in cands if all(e in edits for e in d.fix.edits)]
        data = apply_edits(model.source.data, edits)
        if data == model.source.data:
            break
        cand = SourceFile(source.path, data.decode("utf-8"))
        new_model = _model(cand, opts)
        if syntax_error_count(new_model) > errors:
            break                       # a fix that breaks parsing is not applied
        for d in taken:
            fixed[d.code] = fixed.get(d.code, 0) + 1
        model = new_model
        diags = _lint(model, enabled, opts.settings)
    return model, diags, fixed


# --- the translator ---------------------------------------------------------------------------------------------

class _Translator(H.HandlerContext):
    def __init__(self, original: SourceFile, opts: HipOptions, t0: float):
        self.original = original
        self.opts = opts
        self.t0 = t0
        self.edits: list[tuple[int, int, str, int]] = []       # (start, end, text, seq)
        self.renames: dict[int, str] = {}                      # token index -> new spelling
        self.notes: list[tuple[str, int, str]] = []            # (code, offset, message)
        self.diagnostics: list[Diagnostic] = []
        self.helpers: set[str] = set()
        self.stats = FileStats(original.path)
        self._call_nodes = None

    # HandlerContext
    def edit(self, start, end, text):
        self.edits.append((start, end, text, len(self.edits)))

    def rename(self, tok, text):
        self.renames[tok] = text

    def note(self, code, start, end, message):
        self.notes.append((code, start, _short(message)))
        self._diag(code, start, end, message, "warning")

    def need_helper(self, name):
        self.helpers.add(name)

    def call_node(self, call):
        if self._call_nodes is None:
            self._call_nodes = {}
            for n in self.model.calls(set(H.HANDLERS)):
                self._call_nodes.setdefault(n.start, n)
        n = self._call_nodes.get(self.tokens[call.name_tok].start)
        return n if n is not None and n.spelling == call.name else None

    def _diag(self, code, start, end, message, severity="error"):
        d = Diagnostic(code=code, message=message, filename=self.original.path, start=start, end=end,
                       severity=severity, name=_NAMES.get(code, ""))
        self.source.locate(d)
        self.diagnostics.append(d)

    # the passes
    def run(self) -> TranslationResult:
        from porter.translate import hip_tables
        self.maps = hip_tables.all_mappings(roc=self.opts.roc)
        self.header_maps = hip_tables.headers()
        self.model, lint_diags, fixed = lint_and_fix(self.original, self.opts)
        self.source = self.model.source
        self.tokens = self.model.tokens
        self.data = self.source.data
        self.stats.fixes.update(fixed)
        self.stats.parse_errors = sum(1 for d in lint_diags if d.code == "CP000")

        self._directives()
        self._identifiers()
        self._calls()
        if self.opts.launch_syntax == "hip":
            self._launches()
        for tok, text in self.renames.items():
            t = self.tokens[tok]
            self.edit(t.start, t.end, text)
        self._prologue()
        if self.opts.notes:
            self._lint_notes(lint_diags)
        self._place_notes()
        text, applied = self._apply()

        st = self.stats
        st.total_bytes = len(self.original.data)
        st.total_lines = self.original.text.count("\n") + (0 if self.original.text.endswith("\n") else 1)
        st.replaced_bytes = sum(e - s for s, e, _, _ in applied)
        st.changed_lines = changed_line_count(self.original.text, text) if fixed else self._changed_lines(applied)
        st.seconds = time.perf_counter() - self.t0
        diags = [d for d in lint_diags] + self.diagnostics
        diags.sort(key=Diagnostic.sort_key)
        return TranslationResult(self.original.path, "hip", text=text, diagnostics=diags, stats=st,
                                 includes=self.includes,
                                 extra={"fixed": fixed, "fixed_text": self.source.text if fixed else None})

    # -- directives: find them, map #include lines, remember where hipify-clang would insert its include
    def _directives(self):
        toks, data = self.tokens, self.data
        self.opaque: list[tuple[int, int]] = []       # token index ranges inside non-code directives
        self.includes: list[str] = []
        self.hip_runtime_at: int | None = None       # offset of the #include that is (now) hip_runtime.h
        self.first_include: int | None = None
        self.guard_end: int | None = None
        seen_targets: set[str] = set()
        guard_candidate = None
        first_directive = True
        n = len(toks)
        i = 0
        while i < n:
            t = toks[i]
            if t.kind != "PUNCTUATION" or t.spelling != "#" or not self._at_line_start(t.start):
                i += 1
                continue
            end = self._directive_end(t.start)
            j = i + 1
            while j < n and toks[j].start < end:
                j += 1
            name = toks[i + 1].spelling if i + 1 < j else ""
            if name in _OPAQUE_DIRECTIVES:
                self.opaque.append((i, j))
            if name in ("include", "include_next", "import"):
                self._include(t.start, end, seen_targets)
            elif name == "pragma" and j > i + 2 and toks[i + 2].spelling == "once":
                self.guard_end = self._line_end(t.start) if self.guard_end is None else self.guard_end
            elif name == "ifndef" and first_directive and j > i + 2:
                guard_candidate = toks[i + 2].spelling
            elif name == "define" and guard_candidate and j > i + 2 and toks[i + 2].spelling == guard_candidate:
                if self.guard_end is None:
                    self.guard_end = self._line_end(t.start)
                guard_candidate = None
            if name != "ifndef":
                guard_candidate = guard_candidate if name == "define" else None
            first_directive = False
            i = j

    def _at_line_start(self, off):
        k = off - 1
        data = self.data
        while k >= 0 and data[k] in b" \t":
            k -= 1
        return k < 0 or data[k] in b"\n\r"

    def _line_end(self, off):
        e = self.data.find(b"\n", off)
        if e < 0:
            return len(self.data)
        return e - 1 if e > 0 and self.data[e - 1:e] == b"\r" else e

    def _directive_end(self, off):
        data = self.data
        while True:
            e = data.find(b"\n", off)
            if e < 0:
                return len(data)
            k = e - 1
            if k >= 0 and data[k:k + 1] == b"\r":
                k -= 1
            if k >= 0 and data[k:k + 1] == b"\\":
                off = e + 1
                continue
            return e

    def _include(self, start, end, seen_targets):
        line = self.data[start:end].decode("utf-8", "replace")
        m = re.match(r'#\s*(?:include|include_next|import)\s*([<"])([^>"\n]+)([>"])', line)
        if not m:
            return
        if self.first_include is None:
            self.first_include = start
        name = m.group(2).strip()
        span_end = start + len(line[:m.end()].encode("utf-8"))
        if name not in self.header_maps:
            self._resolve_project_header(name, quoted=m.group(1) == '"')
        if name == HIP_RUNTIME:
            if self.hip_runtime_at is None:
                self.hip_runtime_at = start
            seen_targets.add(name)
            return
        mp = self.header_maps.get(name)
        if mp is None:
            return
        area = mp.area
        if mp.unsupported:
            self.stats.add(name, area, False)
            self._diag(UNSUPPORTED, start, span_end, f"`{name}` has no HIP equivalent; the include is kept")
            self.notes.append((UNSUPPORTED, start, f"`{name}` has no HIP equivalent"))
            return
        target = mp.target(self.opts.roc)
        self.stats.add(name, area, True)
        if not target or target in seen_targets:
            # no counterpart needed, or a second CUDA main header: hipify-clang deletes the directive
            self.edit(start, span_end, "")
            return
        seen_targets.add(target)
        if target == HIP_RUNTIME and self.hip_runtime_at is None:
            self.hip_runtime_at = start
        # only the header name changes (hipify-clang): `#include<x>` / `#  include "x"` keep their spelling
        name_start = start + len(line[:m.start(1)].encode("utf-8"))
        self.edit(name_start, span_end, f"{m.group(1)}{target}{m.group(3)}")

    def _resolve_project_header(self, name, quoted):
        here = os.path.dirname(os.path.abspath(self.original.path))
        for d in ([here] if quoted else []) + list(self.opts.parse_options.include_dirs):
            p = os.path.normpath(os.path.join(d, name))
            if os.path.isfile(p):
                self.includes.append(p)
                return

    # -- identifiers
    def _namespace_aliases(self):
        """`namespace cg = cooperative_groups;` -> {"cg": "cooperative_groups"}."""
        toks = self.tokens
        aliases = {}
        for i, t in enumerate(toks):
            if t.spelling == "namespace" and i + 3 < len(toks) and toks[i + 2].spelling == "=":
                j, parts = i + 3, []
                while j < len(toks) and toks[j].kind == "IDENTIFIER":
                    parts.append(toks[j].spelling)
                    if j + 1 < len(toks) and toks[j + 1].spelling == "::":
                        j += 2
                    else:
                        break
                if parts:
                    aliases[toks[i + 1].spelling] = "::".join(parts)
        return aliases

    def _qualifier(self, i, aliases):
        """`a::b::` in front of token i, aliases resolved; None when there is none; "" for a leading `::`."""
        toks = self.tokens
        parts = []
        k = i
        while k >= 1 and toks[k - 1].spelling == "::":
            if k >= 2 and toks[k - 2].kind == "IDENTIFIER":
                parts.append(toks[k - 2].spelling)
                k -= 2
            else:
                break
        if not parts:
            return "" if i >= 1 and toks[i - 1].spelling == "::" else None
        parts.reverse()
        parts[0] = aliases.get(parts[0], parts[0])
        return "::".join(parts)

    def _identifiers(self):
        toks = self.tokens
        opaque = self.opaque
        oi = 0
        maps = self.maps
        roc = self.opts.roc
        aliases = self._namespace_aliases() if any(t.spelling == "namespace" for t in toks) else {}
        self.hip_names: set[str] = set()
        for i, t in enumerate(toks):
            if t.kind != "IDENTIFIER":
                continue
            while oi < len(opaque) and opaque[oi][1] <= i:
                oi += 1
            if oi < len(opaque) and opaque[oi][0] <= i:
                continue
            name = t.spelling
            if name == LANEMASK_TYPE:
                self.helpers.add(LANEMASK_TYPE)
            prev = toks[i - 1].spelling if i > 0 else ""
            if prev in (".", "->"):
                continue                    # a member that happens to share a CUDA name
            key = name
            if prev == "::":
                q = self._qualifier(i, aliases)
                if q:
                    key = f"{q}::{name}"
                    if key not in maps:
                        continue            # a member of some other namespace or class
            m = maps.get(key)
            if m is None:
                if name in SYNC_HELPERS:
                    self.hip_names.add(name)
                continue
            target = m.target(roc)
            if m.unsupported or not target:
                self.stats.add(key, m.area, False)
                msg = f"`{key}` is not supported by {'ROCm libraries' if roc else 'HIP'}; left unchanged"
                if m.note:
                    msg += f" ({m.note})"
                self._diag(UNSUPPORTED, t.start, t.end, msg)
                self.notes.append((UNSUPPORTED, t.start, f"`{key}` has no HIP equivalent"))
                continue
            self.stats.add(key, m.area, True)
            target = target.rsplit("::", 1)[-1] if key != name else target
            self.hip_names.add(target)
            if target != name:
                self.renames[i] = target

    # -- calls with handlers
    def _calls(self):
        toks = self.tokens
        handlers = H.HANDLERS
        opaque_toks = {k for a, b in self.opaque for k in range(a, b)} if self.opaque else set()
        for i, t in enumerate(toks):
            if t.kind != "IDENTIFIER" or t.spelling not in handlers or i in opaque_toks:
                continue
            if i > 0 and toks[i - 1].spelling in (".", "->"):
                continue
            k = i + 1
            while k < len(toks) and toks[k].kind == "COMMENT":
                k += 1
            if k >= len(toks) or toks[k].spelling != "(":
                if t.spelling in SYNC_HELPERS:
                    self.helpers.add(t.spelling)
                continue
            r = H.split_args(toks, k)
            if r is None:
                continue
            handlers[t.spelling](self, H.Call(t.spelling, i, k, r[0], r[1]))

    # -- launches
    def _launches(self):
        toks = self.tokens
        text_of = self.source.slice
        templates = {f.name for f in self.model.functions if f.is_template and f.is_kernel}
        for ln in H.find_launches(toks):
            name = toks[ln.callee[1]].spelling
            if name in templates:
                # k<<<...>>>(x) with deduced template arguments: hipLaunchKernelGGL cannot deduce them
                self._diag(LAUNCH_KEPT, toks[ln.lt].start, toks[ln.gt].end,
                           f"launch of template kernel `{name}` with deduced template arguments kept as "
                           f"<<<...>>> (hipLaunchKernelGGL needs them explicit: HIP_KERNEL_NAME({name}<...>))",
                           "warning")
                continue
            edits = H.hip_launch_edits(toks, text_of, ln)
            if edits is None:
                s = toks[ln.lt].start
                self._diag(LAUNCH_KEPT, s, toks[ln.gt].end, "launch configuration not understood; kept as "
                           "<<<...>>>", "warning")
                continue
            for s, e, txt in edits:
                self.edit(s, e, txt)
            self.stats.add("<<<...>>>", "launch", True)

    # -- the HIP include and the helpers
    def _prologue(self):
        from porter.translate.render import render
        present = {t.spelling for t in self.tokens if t.kind == "IDENTIFIER" and t.spelling.startswith(
            ("cuport_", "CUPORT_", "HIP_ENABLE_WARP_SYNC_BUILTINS"))}        # translated before: keep it once
        sync = [h for h in SYNC_HELPERS if (h in self.helpers or h in self.hip_names)
                and "cuport_" + h[2:] not in present]
        lanemask = LANEMASK_TYPE in self.helpers and not self._declares(LANEMASK_TYPE) \
            and "CUPORT_LANEMASK_T" not in present
        builtins = bool(sync) and "HIP_ENABLE_WARP_SYNC_BUILTINS" not in present
        helpers = render("hip/portability.hip.j2", lanemask_t=lanemask, sync_fallbacks=sync) \
            if (sync or lanemask) else ""
        if self.hip_runtime_at is not None:
            if builtins:
                pre = render("hip/prologue.hip.j2", warp_sync_builtins=True, include_runtime=False)
                self.edit(self.hip_runtime_at, self.hip_runtime_at, pre)
            if helpers:
                at = self._line_end(self.hip_runtime_at)
                self.edit(at, at, "\n" + helpers.rstrip("\n"))
            return
        if not self._uses_cuda():
            return
        text = render("hip/prologue.hip.j2", warp_sync_builtins=builtins, include_runtime=True) + helpers
        # hipify-clang: after `#pragma once` / the include guard, else before the first #include, else at the top
        if self.guard_end is not None:
            at = self.guard_end
        elif self.first_include is not None:
            at = self.first_include
        else:
            at = 0
        self.edit(at, at, "\n" + text.rstrip("\n") + "\n")
        self.stats.add('#include "hip/hip_runtime.h"', "include", True)

    def _declares(self, name):
        return re.search(rf"\btypedef\b[^;{{}}]*\b{name}\s*;|\busing\s+{name}\s*=", self.source.text) is not None

    def _uses_cuda(self):
        if self.stats.converted_refs or self.stats.unconverted_refs or self.model.launches:
            return True
        if any(f.is_device_code for f in self.model.functions):
            return True
        return any(t.kind == "IDENTIFIER" and t.spelling in ("__global__", "__device__", "__shared__",
                                                                "__constant__", "threadIdx", "blockIdx")
                   or t.spelling == "<<<" for t in self.tokens)

    # -- notes for what needs a human
    def _lint_notes(self, diags):
        for d in diags:
            if d.code.startswith(PORTABILITY_FAMILIES):
                msg = _short(d.message)
                if d.fix is not None and d.fix.applicability.value == "unsafe":
                    msg += f" (unsafe fix: {_short(d.fix.message, 80)})"
                self.notes.append((d.code, d.start, msg))
                self.stats.notes[d.code] += 1

    def _place_notes(self):
        if not self.notes:
            return
        by_line: dict[int, list[tuple[str, str]]] = {}
        order = []
        for code, off, msg in self.notes:
            if code != UNSUPPORTED and not self.opts.notes:
                continue
            eol = self._line_end(off)
            items = by_line.setdefault(eol, [])
            if eol not in order:
                order.append(eol)
            line = self.data[self.data.rfind(b"\n", 0, eol) + 1:eol]
            if all(c != code for c, _ in items) and f"cuport: {code}".encode() not in line:
                items.append((code, msg))       # (a line translated before keeps its one note)
        spans = sorted((s, e) for s, e, _, _ in self.edits if e > s)
        starts = [s for s, _ in spans]
        tok_starts = [t.start for t in self.tokens]
        for eol in order:
            if not by_line[eol]:
                continue
            body = "; ".join(f"{c} {m}" for c, m in by_line[eol])
            line_start = self.data.rfind(b"\n", 0, eol) + 1
            if self._inside(spans, starts, eol) or self._inside_token(tok_starts, eol):
                if self._inside(spans, starts, line_start):
                    continue
                indent = self.data[line_start:eol]
                indent = indent[:len(indent) - len(indent.lstrip(b" \t"))].decode()
                self.edit(line_start, line_start, f"{indent}// cuport: {body}\n")
            elif eol > 0 and self.data[eol - 1:eol] == b"\\":
                self.edit(eol - 1, eol - 1, f"/* cuport: {body.replace('*/', '* /')} */ ")
            else:
                self.edit(eol, eol, f" // cuport: {body}")

    @staticmethod
    def _inside(spans, starts, off):
        k = bisect.bisect_left(starts, off) - 1
        while k >= 0:
            s, e = spans[k]
            if s < off < e:
                return True
            if e <= off and k < len(spans) - 1:
                break
            k -= 1
        return False

    def _inside_token(self, tok_starts, off):
        k = bisect.bisect_left(tok_starts, off) - 1
        if k < 0:
            return False
        t = self.tokens[k]
        return t.start < off < t.end

    # -- output
    def _apply(self):
        edits = sorted(self.edits, key=lambda e: (e[0], e[1] > e[0], e[3]))
        out, pos, applied = [], 0, []
        data = self.data
        for s, e, txt, _ in edits:
            if s < pos:
                d = Diagnostic(code=UNSUPPORTED, message=f"internal: overlapping edit at byte {s} dropped",
                               filename=self.original.path, start=s, end=e, severity="warning")
                self.source.locate(d)
                self.diagnostics.append(d)
                continue
            out.append(data[pos:s])
            out.append(txt.encode("utf-8"))
            pos = e
            applied.append((s, e, txt, 0))
        out.append(data[pos:])
        return b"".join(out).decode("utf-8"), applied

    def _changed_lines(self, applied) -> int:
        starts = self.source.line_starts
        lines = set()
        for s, e, _, _ in applied:
            a = bisect.bisect_right(starts, s)
            b = bisect.bisect_right(starts, max(s, e - 1))
            lines.update(range(a, b + 1))
        return len(lines)


def _short(msg: str, limit: int = 160) -> str:
    m = " ".join(msg.split())
    for sep in ("; ", ". "):
        k = m.find(sep)
        if 20 < k:
            m = m[:k]
            break
    return m if len(m) <= limit else m[:limit - 3].rsplit(" ", 1)[0].rstrip(",;:") + "..."


def changed_line_count(before: str, after: str) -> int:
    sm = difflib.SequenceMatcher(None, before.splitlines(), after.splitlines(), autojunk=False)
    n = 0
    for op, a0, a1, b0, b1 in sm.get_opcodes():
        if op != "equal":
            n += max(a1 - a0, b1 - b0)
    return n
