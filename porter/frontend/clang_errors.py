"""What a clang error means for cuport: malformed code (syntax), a header it could not find, a name it does not
know (most often declared by a header cuport cannot see), or another semantic error; and the one-line CP000
messages for them (unknown names once per name, with how to supply the declaration)."""
from __future__ import annotations

import re

SYNTAX_CATEGORIES = {"Parse Issue", "Lexical or Preprocessor Issue"}
SHOWN = 10            # errors reported one by one before a single "N in all" diagnostic

_UNKNOWN = [
    (re.compile(r"^unknown type name '([^']+)'"), "type"),
    (re.compile(r"^use of undeclared identifier '([^']+)'"), "identifier"),
    (re.compile(r"^no template named '([^']+)'"), "template"),
    (re.compile(r"^use of undeclared label '([^']+)'"), "label"),
    (re.compile(r"^no member named '([^']+)' in namespace '([^']+)'"), "identifier"),
    (re.compile(r"^no type named '([^']+)' in namespace '([^']+)'"), "type"),
]
# brace structure lost: what follows may be parsed as part of an earlier declaration, so no error of the file
# can be trusted to stay inside the declaration it is reported in
_STRUCTURAL = ("expected '}'", "function definition is not allowed here", "extraneous closing brace",
               "expected unqualified-id", "unterminated", "expected external declaration")


def is_missing_header(e) -> bool:
    return "file not found" in e.message


def is_syntax(e) -> bool:
    return e.category in SYNTAX_CATEGORIES and not is_missing_header(e)


def is_structural(e) -> bool:
    return is_syntax(e) and any(s in e.message for s in _STRUCTURAL)


def unknown_name(e) -> tuple[str, str] | None:
    """(name, kind) when the error is a name clang does not know."""
    for rx, kind in _UNKNOWN:
        m = rx.match(e.message)
        if m:
            name = f"{m.group(2)}::{m.group(1)}" if rx.groups == 2 else m.group(1)
            return name, kind
    return None


def counted(e) -> bool:
    """Errors that make an AST doubtful (a fix that adds one is rolled back; a kernel that contains one is not
    translated). A missing header is not one by itself: the names it would declare are."""
    return e.severity >= 3 and not is_missing_header(e)


def supply_hint(name: str, kind: str) -> str:
    define = f"-D '{name}=unsigned int'" if name == "uint" else (
        f"-D '{name}=TYPE'" if kind == "type" else f"-D {name}=VALUE")
    return (f"cuport cannot see its declaration: pass the directory of the header that declares it with -I DIR, "
            f"or define it with {define} (--define), or set include-dirs / defines in the config")


def unknown_message(name: str, kind: str, uses: int) -> str:
    what = {"type": "unknown type name", "template": "unknown template name"}.get(kind, "unknown name")
    more = f" ({uses} uses)" if uses > 1 else ""
    return f"{what} `{name}`{more}: {supply_hint(name, kind)}"


def header_message(e) -> str:
    return f"{e.message}: pass its directory with -I DIR (or config include-dirs)"


def grouped(errors):
    """[(first error, message, all its errors)] in file order: unknown names once per name, missing headers with
    a hint, every other error as clang says it."""
    out, by_name = [], {}
    for e in errors:
        if e.severity < 3:
            continue
        u = unknown_name(e)
        if u is not None:
            if u[0] in by_name:
                by_name[u[0]][2].append(e)
                continue
            item = [e, u, [e]]
            by_name[u[0]] = item
            out.append(item)
        elif is_missing_header(e):
            out.append([e, header_message(e), [e]])
        else:
            out.append([e, e.message, [e]])
    return [(e, unknown_message(m[0], m[1], len(all_)) if isinstance(m, tuple) else m, all_)
            for e, m, all_ in out]
