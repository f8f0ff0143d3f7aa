"""Parse recovery for names whose header cuport cannot see (thrust, CUB, cuBLAS, a Makefile's -D...).

clang recovers from an unknown *value* with a semantic error, but an unknown *type* in a cast `(half2 *)p`, a
declaration `dfloat u = 0, v = 0;` or a template `thrust::device_vector<int> v(n);` derails the parser: syntax
errors (CP000) follow and the function around it is lost to every rule. When a parse has syntax errors, this
module reads the unknown names from clang's errors, guesses from the text around each use what the name is (a
namespace, a type, a class template, a function, a value), and writes a prelude that declares them as permissive
placeholders; parse.py parses once more with it and keeps the better parse. Only names clang reported as
undeclared are declared, so a file that parses is never changed."""
from __future__ import annotations

import functools
import re

from porter.frontend import clang_errors

PRELUDE_NAME = "/__cuport_recovered.h"

# A placeholder accepts any construction, converts to anything, and any arithmetic on it is again one: code using
# an unknown type then type-checks far enough for its kernels' AST (indices, barriers, shuffles) to be kept.
_ANY = r"""
#pragma once
struct __cuport_any {
  template <class... A> __host__ __device__ __cuport_any(A &&...);
  template <class T> __host__ __device__ operator T() const;
  template <class T> __host__ __device__ __cuport_any operator[](T) const;
  template <class... A> __host__ __device__ __cuport_any operator()(A &&...) const;
  __host__ __device__ __cuport_any *operator->();
};
#define __CUPORT_OP(op) \
  template <class T> __host__ __device__ __cuport_any operator op(const __cuport_any &, const T &); \
  template <class T> __host__ __device__ __cuport_any operator op(const T &, const __cuport_any &); \
  __host__ __device__ __cuport_any operator op(const __cuport_any &, const __cuport_any &);
__CUPORT_OP(+) __CUPORT_OP(-) __CUPORT_OP(*) __CUPORT_OP(/) __CUPORT_OP(<) __CUPORT_OP(>) __CUPORT_OP(==)
__CUPORT_OP(!=) __CUPORT_OP(<=) __CUPORT_OP(>=) __CUPORT_OP(+=) __CUPORT_OP(-=) __CUPORT_OP(*=) __CUPORT_OP(/=)
#undef __CUPORT_OP
"""

_UNSIGNED = {"uint": "unsigned int", "ushort": "unsigned short", "uchar": "unsigned char", "ulong": "unsigned long"}

_IDENT = r"[A-Za-z_]\w*"
_IDENT_RX = re.compile(_IDENT)
_ERR_NAME = [re.compile(r"^use of undeclared identifier '(\w+)'"), re.compile(r"^unknown type name '(\w+)'"),
             re.compile(r"^no template named '(\w+)'$"), re.compile(r"^unknown template name '(\w+)'")]
_ERR_MEMBER = re.compile(r"^no (?:member|type|template) named '(\w+)' in namespace '([\w:]+)'")
_NEEDS_TOKEN = ("expected namespace name", "expected class name")


class Unknowns:
    """Unknown names found in one parse: a tree of namespaces with typed leaves."""

    def __init__(self):
        self.tree: dict = {}          # name -> ("ns", subtree) | ("type"|"template"|"func"|"value", None)

    def add(self, path: list[str], kind: str):
        node = self.tree
        for part in path[:-1]:
            entry = node.get(part)
            if entry is None or entry[0] != "ns":
                entry = node[part] = ("ns", {} if entry is None or entry[0] != "ns" else entry[1])
            node = entry[1]
        old = node.get(path[-1])
        if old is None or _RANK[kind] > _RANK[old[0]]:
            node[path[-1]] = (kind, {} if kind == "ns" else None)

    def __bool__(self):
        return bool(self.tree)

    def names(self) -> list[str]:
        out = []

        def walk(node, prefix):
            for name, (kind, sub) in node.items():
                if kind == "ns":
                    walk(sub, prefix + name + "::")
                else:
                    out.append(prefix + name)
        walk(self.tree, "")
        return sorted(out)


_RANK = {"neutral": 0, "value": 0, "func": 1, "type": 2, "template": 3, "ns": 4}


_SIZEOF = re.compile(r"\b(?:sizeof|alignof)\s*\(\s*$")
_LAUNCH_OR_CMP = re.compile(r"\s*>>>|\s*>")
_LAUNCH = re.compile(r"\s*>>>")
_CMP_LEFT = re.compile(r"[<,]\s*$")
_SCOPE = re.compile(r"\s*::")
_TEMPLATE = re.compile(r"\s*<(?!<)")
_LESS_NUMBER = re.compile(r"\s*<\s*[\d(]")
_TYPE_USES = (re.compile(rf"\s*(?:const\b\s*)?[*&]*\s*(?:const\b\s*)?(?:{_IDENT})\s*[=;,)\[({{:]"),
              re.compile(r"\s*[*&]+\s*[)>,]"), re.compile(r"\s*[>{]"), re.compile(r"\s*\)\s*[\w(&*]"))
_CALL = re.compile(r"\s*\(")


def _kind_at(text: str, end: int | None, start: int | None = None) -> str:
    """What the use of a name that ends at `end` (and starts at `start`) in `text` looks like (patterns compiled
    once: this runs for every use of every unknown name)."""
    if end is None:
        return "type"
    rest = text[end:end + 80]
    before = text[max(0, (start if start is not None else end) - 40):start if start is not None else end]
    if _SIZEOF.search(before):
        return "neutral"       # sizeof(X): a type or a variable alike
    if _LAUNCH.match(rest) or _LAUNCH_OR_CMP.match(rest) and not _CMP_LEFT.search(before):
        return "value"         # `a > X`, `<<<g, X>>>`: a comparison or a launch argument
    if _SCOPE.match(rest):
        return "ns"
    if _TEMPLATE.match(rest) and not _LESS_NUMBER.match(rest):
        return "template"
    if any(rx.match(rest) for rx in _TYPE_USES):
        return "type"
    if _CALL.match(rest):
        return "func"
    return "value"


def _vote(kinds: list[str]) -> str:
    """A namespace or template if used as one anywhere; a type if type-like uses are at least half the uses."""
    for k in ("ns", "template"):
        if k in kinds:
            return k
    kinds = [k for k in kinds if k != "neutral"]
    typed = kinds.count("type")
    return "type" if typed and typed * 2 >= len(kinds) else "value"


@functools.lru_cache(maxsize=8)
def _ident_index(text: str) -> dict:
    """Identifier -> [(start, end)] over the whole text, built once per text: a regex scan of a big file per
    error was most of the recovery's time (761 errors x 9 ms on logic-rewrite)."""
    idx: dict = {}
    for m in _IDENT_RX.finditer(text):
        idx.setdefault(m.group(), []).append((m.start(), m.end()))
    return idx


def _uses(text: str, qualified: str):
    if "::" not in qualified:       # a plain name: from the index, not after `::`, `.`, `->` or inside a number
        return [(s, e) for s, e in _ident_index(text).get(qualified, ())
                if s == 0 or not (text[s - 1].isalnum() or text[s - 1] in "_:.>")]
    # `ns::X`: the uses of X from the index whose text just before spells `ns ::`
    *ns, last = qualified.split("::")
    rx = re.compile(r"(?<![\w:.>])" + r"".join(re.escape(p) + r"\s*::\s*" for p in ns) + r"\Z")
    out = []
    for s, e in _ident_index(text).get(last, ()):
        m = rx.search(text, max(0, s - 200), s)
        if m:
            out.append((m.start(), e))
    return out


def _members(text: str, ns: str, unknowns: Unknowns):
    """Every `ns::name` written in the text, classified by its use."""
    for path, kind in _member_kinds(text, ns):
        unknowns.add(list(path), kind)


@functools.lru_cache(maxsize=256)
def _member_kinds(text: str, ns: str, depth: int = 0) -> tuple:
    """(path, kind) of every `ns::name` use (and, for nested namespaces, of their members): the same names come
    back in every recovery round, so this is computed once per text."""
    if depth > 4:
        return ()
    rx = re.compile(r"(?<![\w:.>])" + r"\s*::\s*".join(map(re.escape, ns.split("::"))) + rf"\s*::\s*(?:template\s+)?({_IDENT})")
    out, seen = [], set()
    for m in rx.finditer(text):
        name = m.group(1)
        kind = _kind_at(text, m.end(), m.start())
        out.append((tuple(ns.split("::")) + (name,), kind))
        if kind == "ns" and name not in seen:
            seen.add(name)
            out += _member_kinds(text, f"{ns}::{name}", depth + 1)
    return tuple(out)


@functools.lru_cache(maxsize=512)
def _name_kinds(text: str, qualified: str) -> tuple:
    return tuple(_kind_at(text, end, start) for start, end in _uses(text, qualified))


def find_unknowns(errors, texts: dict[str, str], main: str) -> Unknowns:
    """Unknown names from clang's errors; `texts` maps each file named by an error to its text."""
    u = Unknowns()
    for e in errors:
        if e.severity < 3:
            continue
        text = texts.get(e.file or main)
        if text is None:
            continue
        msg = e.message
        m = _ERR_MEMBER.match(msg)
        if m:
            ns = m.group(2)
            if ns.startswith("std::__"):
                ns = "std"
            for kind in _name_kinds(text, f"{ns}::{m.group(1)}") or ("type",):
                u.add(ns.split("::") + [m.group(1)], kind)
            continue
        name = None
        for rx in _ERR_NAME:
            m = rx.match(msg)
            if m:
                name = m.group(1)
                break
        if name is None and msg.startswith(_NEEDS_TOKEN):
            name = _token_at(text, e.line, e.column)
        if not name:
            continue
        kinds = list(_name_kinds(text, name))
        if msg.startswith("unknown type name") or msg.startswith("expected class name"):
            kinds.append("type")
        if msg.startswith(("no template named", "unknown template name")):
            kinds.append("template")
        if msg.startswith("expected namespace name"):
            kinds.append("ns")
        kind = _vote(kinds)
        if kind in ("value", "func"):
            continue        # clang recovers from unknown values and calls by itself
        u.add([name], kind)
        if kind == "ns":
            _members(text, name, u)
    return u


def _token_at(text: str, line: int, column: int) -> str | None:
    lines = text.split("\n")
    if not 0 < line <= len(lines):
        return None
    m = re.match(_IDENT, lines[line - 1][max(column - 1, 0):])
    return m.group(0) if m else None


def prelude(u: Unknowns) -> str:
    out = [_ANY]

    def decl(name, kind, sub, indent):
        pad = "  " * indent
        if kind == "ns":
            out.append(f"{pad}namespace {name} {{")
            for n, (k, s) in sub.items():
                decl(n, k, s, indent + 1)
            out.append(f"{pad}}}")
        elif kind == "template":
            out.append(f"{pad}template <class...> struct {name} {{ template <class... A> __host__ __device__ "
                       f"{name}(A &&...); template <class T> __host__ __device__ operator T() const; }};")
        elif kind == "type":
            out.append(f"{pad}typedef {_UNSIGNED[name]} {name};" if name in _UNSIGNED and indent == 0
                       else f"{pad}typedef __cuport_any {name};")
        elif kind == "func":
            out.append(f"{pad}template <class... A> __host__ __device__ __cuport_any {name}(A &&...);")
        else:
            out.append(f"{pad}extern __device__ __cuport_any {name};")
    for n, (k, s) in u.tree.items():
        decl(n, k, s, 0)
    return "\n".join(out) + "\n"


def needed(errors) -> bool:
    """Worth a second parse: syntax errors clang reported (not just a missing header)."""
    return any(clang_errors.is_syntax(e) for e in errors)


def syntax_count(errors) -> int:
    return sum(1 for e in errors if clang_errors.is_syntax(e))


def missing_headers(errors) -> list[str]:
    out = []
    for e in errors:
        if clang_errors.is_missing_header(e):
            m = re.match(r"^'([^']+)' file not found", e.message)
            h = m.group(1) if m else e.message
            if h not in out:
                out.append(h)
    return out
