"""A C++ lexer over the file's bytes, producing the same token kinds as libclang (PUNCTUATION, KEYWORD,
IDENTIFIER, LITERAL, COMMENT). libclang's get_tokens costs seconds on a 1 MB file through ctypes; this is one
regex pass. Offsets are byte offsets, like every other offset in the model."""
from __future__ import annotations

import re

from porter.record import Record

class Token(Record):
    """One token of the source: its byte span, kind and text."""
    start: int
    end: int
    spelling: str
    kind: str      # PUNCTUATION KEYWORD IDENTIFIER LITERAL COMMENT

    def __init__(self, start, end, spelling, kind):
        self.start = start
        self.end = end
        self.spelling = spelling
        self.kind = kind


_KEYWORDS = {
    "alignas", "alignof", "asm", "auto", "bool", "break", "case", "catch", "char", "class", "const", "constexpr",
    "const_cast", "continue", "decltype", "default", "delete", "do", "double", "dynamic_cast", "else", "enum",
    "explicit", "extern", "false", "float", "for", "friend", "goto", "if", "inline", "int", "long", "mutable",
    "namespace", "new", "noexcept", "nullptr", "operator", "private", "protected", "public", "register",
    "reinterpret_cast", "return", "short", "signed", "sizeof", "static", "static_assert", "static_cast", "struct",
    "switch", "template", "this", "throw", "true", "try", "typedef", "typeid", "typename", "union", "unsigned",
    "using", "virtual", "void", "volatile", "while", "__restrict", "__restrict__", "__attribute__", "__inline__",
    "char16_t", "char32_t", "wchar_t", "thread_local", "consteval", "constinit", "concept", "requires"}

# Every repetition below has one way to match a given text (no alternation whose branches overlap, e.g. `.`
# and `\n` under DOTALL), and every literal or comment that can be unterminated runs to the end of the data
# instead of failing: one forward scan, never backtracking (an unterminated `R"(` used to take hours).
_TOKEN_RE = rb"""
    (?P<ws>[ \t\r\n\f\v]+|\\\r?\n)
  | (?P<comment>//(?:[^\n\\]|\\.)*|/\*.*?(?:\*/|\Z))
  | (?P<raw>(?:u8|u|U|L)?R"(?P<delim>[^ ()\\\t\n]{0,16})\(.*?(?:\)(?P=delim)"|\Z))
  | (?P<str>(?:u8|u|U|L)?"(?:[^"\\\n]|\\.)*"?)
  | (?P<chr>(?:u8|u|U|L)?'(?:[^'\\\n]|\\.)*'?)
  | (?P<num>\.?[0-9](?:[eEpP][+-]|[0-9a-zA-Z_.'])*)
  | (?P<ident>[A-Za-z_$][A-Za-z0-9_$]*)
  | (?P<punct><<<|>>>|>>=|<<=|\.\.\.|->\*|<=>|::|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^!=<>]=|\#\#|.)
"""
_TOKEN = None          # compiled on first use: many files are never lexed here (~1.5 ms)


_KIND = {"comment": "COMMENT", "raw": "LITERAL", "str": "LITERAL", "chr": "LITERAL", "num": "LITERAL",
         "delim": "LITERAL", "punct": "PUNCTUATION"}


def lex(data: bytes, start: int = 0, end: int | None = None, token_cls=None):
    """Tokens starting in [start, end) of `data` (the last one may extend past `end`). The pattern matches at
    every position (its last alternative is any byte), so finditer yields the tokens back to back, exactly as
    matching at the end of the previous token would."""
    end = len(data) if end is None else end
    out = []
    if start >= end:
        return out
    append = out.append
    kinds = _KIND
    keywords = _KEYWORDS
    global _TOKEN
    if _TOKEN is None:
        _TOKEN = re.compile(_TOKEN_RE, re.VERBOSE | re.DOTALL)
    for m in _TOKEN.finditer(data, start):
        kind = m.lastgroup
        if kind == "ws":
            if m.end() >= end:
                break
            continue
        s, e = m.span()
        if s >= end:
            break
        text = data[s:e].decode("utf-8", "replace")
        if kind == "ident":
            k = "KEYWORD" if text in keywords else "IDENTIFIER"
        else:
            k = kinds.get(kind, "PUNCTUATION")
        append(token_cls(s, e, text, k))
    return out


def tokenize(data: bytes):
    """All tokens of `data` as Tokens."""
    return lex(data, token_cls=Token)


def split_top_level(text: str) -> list[str]:
    """Split a comma-separated list (template or call arguments) at the commas outside brackets; parts are
    stripped, an empty trailing part is dropped."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out
