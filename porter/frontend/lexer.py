"""A C++ lexer over the file's bytes, producing the same token kinds as libclang (PUNCTUATION, KEYWORD,
IDENTIFIER, LITERAL, COMMENT). libclang's get_tokens costs seconds on a 1 MB file through ctypes; this is one
regex pass. Offsets are byte offsets, like every other offset in the model."""
from __future__ import annotations

import re

_KEYWORDS = {
    "alignas", "alignof", "asm", "auto", "bool", "break", "case", "catch", "char", "class", "const", "constexpr",
    "const_cast", "continue", "decltype", "default", "delete", "do", "double", "dynamic_cast", "else", "enum",
    "explicit", "extern", "false", "float", "for", "friend", "goto", "if", "inline", "int", "long", "mutable",
    "namespace", "new", "noexcept", "nullptr", "operator", "private", "protected", "public", "register",
    "reinterpret_cast", "return", "short", "signed", "sizeof", "static", "static_assert", "static_cast", "struct",
    "switch", "template", "this", "throw", "true", "try", "typedef", "typeid", "typename", "union", "unsigned",
    "using", "virtual", "void", "volatile", "while", "__restrict", "__restrict__", "__attribute__", "__inline__",
    "char16_t", "char32_t", "wchar_t", "thread_local", "consteval", "constinit", "concept", "requires"}

_TOKEN = re.compile(rb"""
    (?P<ws>[ \t\r\n\f\v]+|\\\r?\n)
  | (?P<comment>//(?:[^\n\\]|\\.|\\\n)*|/\*.*?(?:\*/|\Z))
  | (?P<raw>(?:u8|u|U|L)?R"(?P<delim>[^ ()\\\t\n]{0,16})\((?:.|\n)*?\)(?P=delim)")
  | (?P<str>(?:u8|u|U|L)?"(?:[^"\\\n]|\\.|\\\n)*"?)
  | (?P<chr>(?:u8|u|U|L)?'(?:[^'\\\n]|\\.)*'?)
  | (?P<num>\.?[0-9](?:[eEpP][+-]|[0-9a-zA-Z_.']|)*)
  | (?P<ident>[A-Za-z_$][A-Za-z0-9_$]*)
  | (?P<punct><<<|>>>|>>=|<<=|\.\.\.|->\*|<=>|::|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^!=<>]=|\#\#|.)
""", re.VERBOSE | re.DOTALL)


def lex(data: bytes, start: int = 0, end: int | None = None, token_cls=None):
    end = len(data) if end is None else end
    out = []
    pos = start
    match = _TOKEN.match
    while pos < end:
        m = match(data, pos)
        if m is None:  # cannot happen: '.' matches any byte; guard anyway
            pos += 1
            continue
        kind = m.lastgroup
        s, e = m.start(), m.end()
        pos = e
        if kind == "ws":
            continue
        text = data[s:e].decode("utf-8", "replace")
        if kind == "comment":
            k = "COMMENT"
        elif kind in ("raw", "str", "chr", "num", "delim"):
            k = "LITERAL"
        elif kind == "ident":
            k = "KEYWORD" if text in _KEYWORDS else "IDENTIFIER"
        else:
            k = "PUNCTUATION"
        out.append(token_cls(s, e, text, k))
    return out


def tokenize(data: bytes):
    """All tokens of `data` as model Tokens."""
    from porter.frontend.model import Token
    return lex(data, token_cls=Token)
