"""Suppression comments: `// cuport: ignore[...]`, `// noqa`, `disable`/`enable` ranges, `file-ignore`.

Comments are found with a small lexer that skips string, character and raw string literals, so a
directive quoted in a string is not a suppression. Offsets are kept as character indexes into the
text and turned into byte offsets only when a Diagnostic or Edit is made (those use byte offsets).
"""
from __future__ import annotations

import bisect
import re

from porter.diagnostics import Applicability, Diagnostic, Edit, Fix
from porter.lint import registry
from porter.record import Record
from porter.source import SourceFile

_LEX = re.compile(r"""
    (?P<line>//(?:[^\n\\]|\\.)*)                               # `\` + newline continues it
  | (?P<block>/\*.*?(?:\*/|\Z))
  | \b(?:u8|[uUL])?R"(?P<delim>[^()\\\s"]{0,16})\(.*?\)(?P=delim)"
  | "(?:[^"\\\n]|\\.)*(?:"|$)
  | (?:(?<!\w)|\b(?:u8|[uUL]))'(?:[^'\\\n]|\\.)*(?:'|$)     # not after a digit: 1'000 separators
""", re.S | re.M | re.X)

_CUPORT = re.compile(r"\bcuport\s*:\s*(?P<kind>file-ignore|ignore|disable|enable)\s*\[(?P<list>[^\]\n]*)\]", re.I)
# `noqa` only at the start of a comment or after a nested `//`, so prose mentioning it does not count.
_NOQA = re.compile(r"(?:^|//)\s*(?P<kw>noqa)\b(?:\s*:\s*(?P<list>[\w-]+(?:(?:\s*,\s*|\s+(?=CP\d))[\w-]+)*))?",
                   re.I)
_TOKEN = re.compile(r"[^\s,]+")


class Token(Record):
    text: str
    start: int                       # character offsets into the text
    end: int
    codes: frozenset | None          # None: unknown code
    error: str
    used: bool

    def __init__(self, text, start, end, codes, error="", used=False):
        self.text = text
        self.start = start
        self.end = end
        self.codes = codes
        self.error = error
        self.used = used


class Directive(Record):
    kind: str                        # ignore | noqa | disable | enable | file-ignore
    start: int                       # the directive text, e.g. `cuport: ignore[CP101]`
    end: int
    list_span: tuple[int, int] | None    # the codes; None for a bare `noqa`
    tokens: list[Token]
    row: int                         # the row it applies to (ignore, noqa) or starts at (disable, enable)
    comment: tuple[int, int]         # the whole comment, markers included
    standalone: bool                 # nothing but whitespace around the comment on its line(s)
    used: bool                       # bare `noqa` only

    def __init__(self, kind, start, end, list_span, tokens, row, comment, standalone, used=False):
        self.kind = kind
        self.start = start
        self.end = end
        self.list_span = list_span
        self.tokens = tokens
        self.row = row
        self.comment = comment
        self.standalone = standalone
        self.used = used


class Suppressions(Record):
    text: str
    directives: list[Directive]
    lines: dict                                  # row -> [Directive] for ignore / noqa
    ranges: dict                                 # code -> [(first_row, stop_row, Token)]
    files: list                                  # file-ignore directives
    spans: list | None                           # (start, end) of every comment and literal
    _src: SourceFile | None

    _fields = ('text', 'directives', 'lines', 'ranges', 'files', 'spans', '_src')
    _hidden = ('_src',)

    def __init__(self, text, directives=None, lines=None, ranges=None, files=None, spans=None, _src=None):
        self.text = text
        self.directives = [] if directives is None else directives
        self.lines = {} if lines is None else lines
        self.ranges = {} if ranges is None else ranges
        self.files = [] if files is None else files
        self.spans = spans
        self._src = _src

    @classmethod
    def parse(cls, text: str) -> "Suppressions":
        self = cls(text)
        low = text.lower()
        if "cuport" not in low and "noqa" not in low:  # most files: no need to lex at all
            return self
        self.spans = []
        for m in _LEX.finditer(text):
            self.spans.append((m.start(), m.end()))
            if m.lastgroup == "line":
                start, end, body_start, body_end = m.start(), m.end(), m.start() + 2, m.end()
            elif m.lastgroup == "block":
                start, end, body_start = m.start(), m.end(), m.start() + 2
                body_end = end - 2 if text.endswith("*/", 0, end) else end
            else:
                continue
            body = text[body_start:body_end]
            low = body.lower()
            if "cuport" in low or "noqa" in low:
                self._directives(start, end, body_start, body)
        self._index()
        return self

    # -- parsing ---------------------------------------------------------------------------------
    def _directives(self, start, end, body_start, body):
        text = self.text
        ls = text.rfind("\n", 0, start) + 1
        le = text.find("\n", end)
        code_before = text[ls:start].strip() != ""
        code_after = text[end:le if le >= 0 else len(text)].strip() != ""
        first_row = text.count("\n", 0, start) + 1
        last_row = first_row + text.count("\n", start, end)
        own_row = first_row if code_before or not code_after else last_row
        found = []
        for m in _CUPORT.finditer(body):
            found.append((m.group("kind").lower(), m.start(), m.end(), m.start("list"), m.end("list")))
        m = _NOQA.search(body)
        if m:
            has_list = m.group("list") is not None
            found.append(("noqa", m.start("kw"), m.end(),
                          m.start("list") if has_list else None, m.end("list") if has_list else None))
        for kind, a, b, la, lb in sorted(found, key=lambda f: f[1]):
            if kind == "ignore" and not code_before and not code_after:
                row = last_row + 1   # a comment on a line of its own covers the next line
            else:
                row = own_row if kind in ("ignore", "noqa") else first_row
            span = None if la is None else (body_start + la, body_start + lb)
            tokens = [] if span is None else [_token(t.group(), span[0] + t.start())
                                              for t in _TOKEN.finditer(text[span[0]:span[1]])]
            self.directives.append(Directive(kind, body_start + a, body_start + b, span, tokens, row,
                                             (start, end), not code_before and not code_after))

    def _index(self):
        open_: dict[str, tuple[int, Token]] = {}
        for dv in self.directives:
            if dv.kind in ("ignore", "noqa"):
                self.lines.setdefault(dv.row, []).append(dv)
            elif dv.kind == "file-ignore":
                self.files.append(dv)
            for t in dv.tokens:
                for code in sorted(t.codes or ()):
                    if dv.kind == "disable" and code not in open_:
                        open_[code] = (dv.row, t)
                    elif dv.kind == "enable" and code in open_:
                        first, opener = open_.pop(code)
                        self.ranges.setdefault(code, []).append((first, dv.row, opener))
                        t.used = True   # an enable is used when it closes an open range
        for code, (first, opener) in open_.items():  # no enable: to the end of the file
            self.ranges.setdefault(code, []).append((first, float("inf"), opener))

    # -- queries ---------------------------------------------------------------------------------
    def is_suppressed(self, code: str, row: int) -> bool:
        """Whether `code` at `row` is suppressed; the suppression that matched is marked used."""
        return self._match(code, row, mark=True) is not None

    def _match(self, code, row, mark, skip=None):
        for dv in self.lines.get(row, ()):
            if dv is skip:
                continue
            if dv.kind == "noqa" and dv.list_span is None:
                dv.used = dv.used or mark
                return dv
            hit = self._token_for(dv, code, mark)
            if hit:
                return hit
        for first, stop, t in self.ranges.get(code, ()):
            if first <= row < stop:
                t.used = t.used or mark
                return t
        for dv in self.files:
            hit = self._token_for(dv, code, mark)
            if hit:
                return hit
        return None

    @staticmethod
    def _token_for(dv, code, mark):
        for t in dv.tokens:
            if t.codes and code in t.codes:
                t.used = t.used or mark
                return t
        return None

    def unused(self, filename: str, enabled: set | None = None) -> list[Diagnostic]:
        """CP001 for suppressions that silenced nothing. Call after every is_suppressed() of the file.

        Codes outside `enabled` are not reported: they were not checked, so nobody knows. The result
        already honours suppressions of CP001 itself."""
        out = []
        for dv in self.directives:
            if dv.kind == "noqa" and dv.list_span is None:
                stale, keep = ([] if dv.used else [None]), []
            else:
                known = [t for t in dv.tokens if t.codes is not None]
                stale = [t for t in known if not t.used and "CP001" not in t.codes
                         and (enabled is None or t.codes & enabled)]
                keep = [t for t in dv.tokens if t not in stale]
            # A blanket noqa would otherwise silence the report of its own unusedness.
            skip = dv if dv.kind == "noqa" and dv.list_span is None else None
            if not stale or self._match("CP001", dv.row, mark=True, skip=skip) is not None:
                continue
            out.append(self._unused_diag(filename, dv, stale, keep))
        return out

    def unknown(self, filename: str) -> list[Diagnostic]:
        """CP002 for codes in suppressions that name no rule (with the closest valid code)."""
        out = []
        for dv in self.directives:
            bad = [t for t in dv.tokens if t.codes is None]
            if dv.list_span is not None and not dv.tokens:
                bad = [Token("", dv.start, dv.end, None, f"`{dv.kind}` suppression names no rule code")]
            for t in bad:
                if self._match("CP002", dv.row, mark=True) is None:
                    out.append(self._diag("CP002", t.error, filename, t.start, t.end))
        return out

    # -- diagnostics -----------------------------------------------------------------------------
    def _unused_diag(self, filename, dv, stale, keep) -> Diagnostic:
        what = "noqa" if dv.kind == "noqa" else f"cuport: {dv.kind}"
        if stale == [None]:
            message = "unused blanket `noqa` directive"
        elif dv.kind == "enable":
            message = f"`{what}` closes no open `disable` (unused: {', '.join(t.text for t in stale)})"
        else:
            message = f"unused `{what}` suppression (unused: {', '.join(t.text for t in stale)})"
        if keep:
            a, b = dv.list_span
            edit = (a, b, ", ".join(t.text for t in keep))
            title = "Remove unused code" + ("s" if len(stale) > 1 else "")
        else:
            edit = self._removal(dv)
            title = "Remove unused suppression"
        fix = Fix(Applicability.SAFE, title, (Edit(self._b(edit[0]), self._b(edit[1]), edit[2]),))
        return self._diag("CP001", message, filename, dv.start, dv.end, fix)

    def _removal(self, dv) -> tuple[int, int, str]:
        """The edit deleting a directive: the whole comment (or line) when nothing else is in it."""
        text = self.text
        cs, ce = dv.comment
        a, b = dv.start, dv.end
        while b < ce and text[b] in " \t":
            b += 1
        marker = text[cs:cs + 2]
        inner_start = cs + 2
        inner_end = ce - 2 if marker == "/*" else ce
        head = text[inner_start:a]
        if text.startswith("//", b) and not head.strip():  # `// cuport: ignore[..] // noqa: X`: keep the noqa
            return cs + 2, b + 2, ""
        if head.rstrip().endswith("//"):                   # `// reason // noqa: X`: drop the nested marker
            a = inner_start + len(head.rstrip()) - 2
            while a > inner_start and text[a - 1] in " \t":
                a -= 1
        rest = (text[inner_start:a] + text[b:inner_end]).strip()
        if rest:
            return a, b, ""
        # Nothing left in the comment: remove it, and its line when it stood alone.
        ls = text.rfind("\n", 0, cs) + 1
        le = text.find("\n", ce)
        le = len(text) if le < 0 else le + 1
        if dv.standalone:
            return ls, le, ""
        if text[ce:le].strip() == "":      # trailing comment: take the blanks before it too
            while cs > ls and text[cs - 1] in " \t":
                cs -= 1
            return cs, ce, ""
        while ce < le and text[ce] in " \t":
            ce += 1
        return cs, ce, ""

    def _diag(self, code, message, filename, start, end, fix=None) -> Diagnostic:
        d = registry.diagnostic(code, message, filename, self._b(start), self._b(end), fix=fix)
        if self._src is None:
            self._src = SourceFile("<suppressions>", self.text)
        return self._src.locate(d)

    def _b(self, i: int) -> int:
        """Character index -> byte offset (the same for ASCII text)."""
        return i if self.text.isascii() else len(self.text[:i].encode("utf-8"))

    def spans_newline(self, i: int) -> bool:
        """Whether the newline at `i` lies inside a comment or literal (block comment, raw string, `\\`)."""
        if self.spans is None:
            self.spans = [(m.start(), m.end()) for m in _LEX.finditer(self.text)]
        k = bisect.bisect_right(self.spans, (i, float("inf"))) - 1
        return k >= 0 and self.spans[k][0] <= i < self.spans[k][1]


def _token(text: str, start: int) -> Token:
    try:
        return Token(text, start, start + len(text), frozenset(registry.resolve(text)))
    except registry.UnknownCode as exc:
        return Token(text, start, start + len(text), None, f"suppression names an {exc}")


def add_noqa(text: str, diagnostics) -> str:
    """--add-noqa: append `// noqa: CODES` to each diagnostic's row, merging into an existing noqa."""
    sup = Suppressions.parse(text)
    src = SourceFile("<add-noqa>", text)
    wanted: dict[int, set[str]] = {}
    for d in diagnostics:
        if d.code == "CP001":  # a noqa for an unused noqa would itself be unused
            continue
        row = d.row or src.position(d.start)[0]
        wanted.setdefault(row, set()).add(d.code)
    edits = []
    for row, codes in sorted(wanted.items()):
        noqa = [dv for dv in sup.lines.get(row, ()) if dv.kind == "noqa"]
        if noqa:
            dv = noqa[0]
            if dv.list_span is None:   # blanket noqa: already covers everything
                continue
            covered = set().union(*(t.codes or () for t in dv.tokens))
            new = sorted(codes - covered)
            if new:
                a, b = dv.list_span
                edits.append((a, b, ", ".join([t.text for t in dv.tokens] + new)))
            continue
        start = _char_index(text, src.line_starts[row - 1])
        newline = text.find("\n", start)
        newline = len(text) if newline < 0 else newline
        if sup.spans_newline(newline):
            continue  # the row ends inside a block comment or raw string: no safe place
        body = text[start:newline].rstrip()
        at = start + len(body)
        comment = f"noqa: {', '.join(sorted(codes))}"
        if body.endswith("\\"):  # macro continuation: a // comment would swallow the next line
            edits.append((at - 1, at - 1, f"/* {comment} */ "))
        else:
            edits.append((at, at, f"  // {comment}"))
    for a, b, content in sorted(edits, reverse=True):
        text = text[:a] + content + text[b:]
    return text


def _char_index(text: str, byte_offset: int) -> int:
    return byte_offset if text.isascii() else len(text.encode("utf-8")[:byte_offset].decode("utf-8"))
