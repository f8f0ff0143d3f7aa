"""The one fix engine: lint --fix, the HIP translator and the GLSL/OpenCL translators all run this loop.

A round: pick the applicable fixes of the current text (non-overlapping, ruff's greedy order), apply them, analyse
the new text once (the caller's `analyze` parses it and runs its rules), and go on from there. The loop stops
when nothing applies, when a round would add clang errors (that round is not applied), or when it stops
converging. It does not converge when

- a round repeats an edit an earlier round made: the same code, the same old text, the same new text, at a place
  inside the text that earlier edit wrote (`LANE` -> `LANE % warpSize` once per round),
- a round brings the file back to a text it had before (two fixes undoing each other),
- a finding a round fixed comes back at the same place (offsets followed through the edits) with the same fix
  title.

The findings that do not converge are blocked and the loop starts over from the original text without them (the
last good state): every other fix is still applied, theirs is shown but not applied, and the outcome lists
"fix did not converge for CPxxx at line N; left as is".

`site_problem` is the check every fix passes before it may be applied: its edits lie in the main file's own text,
never on a macro expansion site (the use sites of a macro are not the code the rule analysed), and the text at each
edit is the text the rule read there (`Edit.seen`). `vet` turns a fix that fails it into a DISPLAY_ONLY one.
"""
from __future__ import annotations

import bisect
from collections.abc import Callable

from porter.diagnostics import Applicability, Diagnostic, Edit, Fix
from porter.record import Record
from porter.source import SourceFile, apply_edits, select_edits

MAX_ROUNDS = 10
MAX_RESTARTS = 4          # each restart blocks at least one more finding; past this, no fix is applied


# --- the edit-site check ----------------------------------------------------------------------------------------

def site_problem(model, edit: Edit) -> str | None:
    """Why `edit` may not be applied to the text `model` was built from, or None when it may."""
    data = model.source.data
    s, e = edit.start, edit.end
    if not 0 <= s <= e <= len(data):
        return "the edit lies outside the file"
    uses = model.macro_uses                      # (start, end, name) of each macro use written in the file
    i = bisect.bisect_left(model._macro_starts, e)
    for ms, me, name in reversed(uses[:i]):      # uses starting before the edit ends
        if me <= s and ms < s:
            if me < s:
                # uses are sorted by start and never overlap each other: none further left reaches the edit
                break
            continue
        if e <= ms or s >= me:                   # touching only (an insertion before or after a use)
            continue
        if s <= ms and me <= e and (s, e) != (ms, me):
            continue                             # the edit replaces the whole use and more: written text
        if (s, e) == (ms, me) and edit.seen is not None and edit.seen == model.source.slice(s, e):
            continue                             # the whole use of an object-like macro, replaced as a whole
        return _macro_site(model, name)
    if edit.seen is not None and model.source.slice(s, e) != edit.seen:
        return "the text at the edit is not the code the rule analysed"
    return None


def _macro_site(model, name: str) -> str:
    span = model.macro_defs.get(name)
    where = f" (line {model.source.position(span[0])[0]})" if span else ""
    return (f"the code comes from the expansion of macro `{name}`; fix its definition{where} by hand "
            f"(cuport does not rewrite macro use sites)")


def vet(model, diagnostics) -> None:
    """Fixes whose edits fail `site_problem` become DISPLAY_ONLY, saying why (shown, never applied)."""
    for d in diagnostics:
        f = d.fix
        if f is None or f.applicability == Applicability.DISPLAY_ONLY:
            continue
        why = next((w for w in (site_problem(model, e) for e in f.edits) if w), None)
        if why is not None:
            d.fix = Fix(Applicability.DISPLAY_ONLY, f"{f.message} (not applied: {why})", f.edits)


# --- the loop ---------------------------------------------------------------------------------------------------

class Round(Record):
    """One analysis of one text: what `analyze` returns."""
    source: SourceFile
    diagnostics: list[Diagnostic]
    errors: int                     # clang errors; a round that adds any is not applied
    model: object                   # the caller's model of this text, if it keeps one
    payload: object                 # anything else the caller wants back (lint's LintResult)

    def __init__(self, source, diagnostics, errors, model=None, payload=None):
        self.source = source
        self.diagnostics = diagnostics
        self.errors = errors
        self.model = model
        self.payload = payload


class FixResult(Record):
    """The outcome of the fix loop."""
    final: Round
    fixed: dict[str, int]
    refused: str | None                   # why a round was not applied (it added clang errors)
    unconverged: list[str]
    rounds: int                           # analyses after the first one, restarts included

    def __init__(self, final, fixed=None, refused=None, unconverged=None, rounds=0):
        self.final = final
        self.fixed = {} if fixed is None else fixed
        self.refused = refused
        self.unconverged = [] if unconverged is None else unconverged
        self.rounds = rounds

    @property
    def text(self) -> str:
        return self.final.source.text


def applicable(d: Diagnostic, unsafe: bool) -> bool:
    if d.fix is None or d.fix.applicability == Applicability.DISPLAY_ONLY:
        return False
    return d.fix.applicability == Applicability.SAFE or unsafe


class _Offsets:
    """Maps offsets of the text before a round's edits to the text after them, and back."""

    def __init__(self, edits):
        self.spans = []                  # (old start, old end, new start, new end)
        delta = 0
        for e in sorted(set(edits), key=lambda e: (e.start, e.end)):
            n = len(e.content.encode("utf-8"))
            self.spans.append((e.start, e.end, e.start + delta, e.start + delta + n))
            delta += n - (e.end - e.start)

    def forward(self, p: int, end: bool = False) -> int:
        """Where the text at `p` is after the edits; inside a replaced range: where its replacement starts. An
        insertion at `p` moves the text at `p` after it (with `end`, `p` ends a range and stays before it).
        Binary search over the sorted, non-overlapping spans (a scan per offset was quadratic in the edits)."""
        spans = self.spans
        if not hasattr(self, "_old"):
            self._old = [sp[0] for sp in spans]
            self._new = [sp[2] for sp in spans]
        if end:
            k = bisect.bisect_left(self._old, p)            # spans starting before p
            if k < len(spans) and spans[k][0] == p and spans[k][1] > p:
                return spans[k][2]                          # a replacement starting at p (no insertion first)
        else:
            k = bisect.bisect_right(self._old, p)           # spans starting at or before p
        if k and spans[k - 1][0] <= p < spans[k - 1][1]:
            return spans[k - 1][2]
        return p + (spans[k - 1][3] - spans[k - 1][1] if k else 0)

    def back(self, p: int) -> int:
        spans = self.spans
        if not hasattr(self, "_new"):
            self._old = [sp[0] for sp in spans]
            self._new = [sp[2] for sp in spans]
        k = bisect.bisect_right(self._new, p)
        if k and spans[k - 1][2] <= p < spans[k - 1][3]:
            return spans[k - 1][0]               # inside text an edit wrote: where that edit was made
        return p - (spans[k - 1][3] - spans[k - 1][1] if k else 0)


def fix_loop(source: SourceFile, analyze: Callable[[SourceFile], Round], *, unsafe: bool = False,
             max_rounds: int = MAX_ROUNDS, first: Round | None = None, release=None) -> FixResult:
    """Apply fixes to `source` until none apply (see the module doc). `analyze` parses a text and lints it;
    `first` is its result for `source` when the caller has it; `release(round)` frees a round's model once the
    loop no longer needs it. The result's final round is the analysis of the final text (no parse left to do)."""
    first = first if first is not None else analyze(source)
    blocked: dict[tuple[str, int], None] = {}
    rounds = 0
    for _attempt in range(MAX_RESTARTS + 1):
        att = _Attempt(first, analyze, unsafe, blocked, release)
        stuck = att.run(max_rounds)
        rounds += att.rounds
        if stuck is None:
            return _done(att.result(rounds), first, release)
        blocked.update(dict.fromkeys(stuck))
        att.discard()
    # still not converging after blocking findings one set at a time: apply nothing at all
    for d in first.diagnostics:
        if applicable(d, unsafe):
            blocked[(d.code, d.start)] = None
    att = _Attempt(first, analyze, unsafe, blocked, release)
    att.run(0)
    return _done(att.result(rounds), first, release)


def _done(out: FixResult, first: Round, release) -> FixResult:
    if release is not None and out.final is not first:
        release(first)
    return out


class _Attempt:
    """One pass of the loop from the original text with some findings blocked."""

    def __init__(self, first, analyze, unsafe, blocked, release):
        self.first, self.analyze, self.unsafe, self.blocked, self.release = first, analyze, unsafe, blocked, release
        self.cur = first
        self.maps: list[_Offsets] = []
        self.fixed: dict[str, int] = {}
        self.refused = None
        self.rounds = 0
        # (code, old text, new text, start, end of the written text in the current text) of each applied edit
        self.history: list[tuple[str, bytes, str, int, int]] = []

    def original(self, p: int) -> int:
        for m in reversed(self.maps):
            p = m.back(p)
        return p

    def key(self, d) -> tuple[str, int]:
        return d.code, self.original(d.start)

    def run(self, max_rounds: int):
        """None when done; else the keys of the findings that do not converge."""
        seen = {_digest(self.first.source.data)}
        for _ in range(max_rounds):
            cur = self.cur
            cands = [d for d in cur.diagnostics if applicable(d, self.unsafe) and self.key(d) not in self.blocked]
            if not cands:
                return None
            edits = select_edits([list(d.fix.edits) for d in cands])
            taken = [d for d in cands if all(e in edits for e in d.fix.edits)]
            data = cur.source.data
            repeated = [self.key(d) for d in taken if any(self._repeats(d.code, e, data) for e in d.fix.edits)]
            if repeated:
                return repeated
            new = apply_edits(data, edits)
            if new == data:
                return None
            if _digest(new) in seen:
                return [self.key(d) for d in taken]
            offsets = _Offsets(edits)
            nxt = self.analyze(SourceFile(cur.source.path, new.decode("utf-8")))
            self.rounds += 1
            if nxt.errors > cur.errors:
                self.refused = "a fix produced code that no longer parses; it was not applied"
                self._free(nxt)
                return None
            back = self._came_back(taken, offsets, nxt)
            if back:
                self._free(nxt)
                return back
            seen.add(_digest(new))
            self.history = [(c, o, n, offsets.forward(lo), max(offsets.forward(lo), offsets.forward(hi, True)))
                            for c, o, n, lo, hi in self.history]
            by_edit = {}
            for d in taken:
                for e in d.fix.edits:
                    by_edit.setdefault(e, d.code)
            for e, code in by_edit.items():
                ns = offsets.forward(e.start)
                self.history.append((code, data[e.start:e.end], e.content, ns,
                                     ns + len(e.content.encode("utf-8"))))
            self.maps.append(offsets)
            for d in taken:
                self.fixed[d.code] = self.fixed.get(d.code, 0) + 1
            if cur is not self.first:
                self._free(cur)
            self.cur = nxt
        return None

    def _repeats(self, code, e: Edit, data: bytes) -> bool:
        old = data[e.start:e.end]
        return any(c == code and o == old and n == e.content and lo <= e.start and e.end <= hi
                   for c, o, n, lo, hi in self.history)

    def _came_back(self, taken, offsets, nxt):
        now = {}
        for d in nxt.diagnostics:
            if applicable(d, self.unsafe):
                now.setdefault((d.code, d.start), set()).add(_fix_key(d.fix))
        return [self.key(d) for d in taken
                if _fix_key(d.fix) in now.get((d.code, offsets.forward(d.start)), ())]

    def _free(self, rnd):
        if self.release is not None and rnd is not self.first:
            self.release(rnd)

    def discard(self):
        self._free(self.cur)

    def result(self, rounds: int) -> FixResult:
        out = FixResult(self.cur, self.fixed, self.refused, rounds=rounds)
        for d in self.cur.diagnostics:
            if applicable(d, self.unsafe) and self.key(d) in self.blocked:
                out.unconverged.append(f"fix did not converge for {d.code} at line {d.row}; left as is")
                d.fix = Fix(Applicability.DISPLAY_ONLY,
                            f"{d.fix.message} (not applied: the fix did not converge)", d.fix.edits)
        return out


def _fix_key(f: Fix):
    # the fix's title, not its edits: a fix that wraps what it fixed (`X` -> `f(X)`) writes new text each round
    return f.message


def _digest(data: bytes) -> bytes:
    import hashlib
    return hashlib.blake2b(data, digest_size=16).digest()


# --- macro sites: edit the definition once ----------------------------------------------------------------------

def definition_token(model, name: str, match, depth: int = 0):
    """(macro, index, body tokens) of the one place in the expansion of macro `name` (its body, and the bodies
    of the macros it names, defined in this file) where `match(model, body, i)` holds; None when there is no
    such place or more than one (the rule then offers no fix)."""
    found = []
    _search(model, name, match, found, depth, set())
    return found[0] if len(found) == 1 else None


def _search(model, name, match, found, depth, visited):
    if depth > 4 or name in visited or name not in model.macro_defs:
        return
    visited.add(name)
    body = macro_body(model, name)
    for i, t in enumerate(body):
        if match(model, body, i):
            found.append((name, i, body))
        elif t.kind == "IDENTIFIER" and t.spelling in model.macro_defs:
            _search(model, t.spelling, match, found, depth + 1, visited)


def macro_body(model, name: str) -> list:
    """Tokens of a macro's replacement list (after the name and a function-like macro's parameters)."""
    s, e = model.macro_defs[name]
    toks = [t for t in model.tokens_in(s, e) if t.kind != "COMMENT"]
    body = toks[1:]
    if body and body[0].spelling == "(" and body[0].start == toks[0].end:       # function-like
        close = next((i for i, t in enumerate(body) if t.spelling == ")"), len(body) - 1)
        body = body[close + 1:]
    return body


def expansions(model, name: str, depth: int = 0) -> int | None:
    """How many times macro `name` is expanded in the file: its uses, and the expansions of the macros whose
    bodies name it; None when it is named anywhere else (`#ifdef`, `#undef`, an `#if`): its definition is then
    not ours to change."""
    import re
    if depth > 4:
        return None
    data = model.source.data
    own = model.macro_defs.get(name)
    uses = {ms for ms, _me, n in model.macro_uses if n == name}
    total = 0
    for m in re.finditer(rb"\b" + re.escape(name.encode()) + rb"\b", data):
        at = m.start()
        if own is not None and own[0] <= at < own[1]:
            continue
        line = (data.rfind(b"\n", 0, at) + 1, data.find(b"\n", at) % (len(data) + 1))
        if not any(t.start == at and t.kind == "IDENTIFIER" for t in model.tokens_in(*line)):
            continue                                   # in a comment or a string
        if at in uses:
            total += 1
            continue
        outer = next((n for n, (s, e) in model.macro_defs.items() if s <= at < e), None)
        sub = expansions(model, outer, depth + 1) if outer is not None else None
        if sub is None:
            return None
        total += sub
    return total
