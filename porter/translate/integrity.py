"""Which kernels a clang error makes untrustworthy. clang recovers from an error by dropping or replacing what it
could not type-check (a statement, an initialiser, an operand), so an emitter walking that AST would translate
something else than the source says. A kernel is refused when its own code or anything it uses (functions it
calls, structs, typedefs, globals, macros, found by name, transitively) contains an error; every kernel is
refused when an error lies outside any declaration, in another file, or broke the brace structure. Errors in
declarations no kernel uses (host code) do not block.

An error clang left outside any declaration because it dropped the declaration (an unparsable trailing return
type in a host library's `namespace clipp { ... }`) belongs to the innermost named namespace around it: it blocks
only the kernels that use a name declared in that namespace (or the namespace itself) or lie in it (they or what
they use), and every kernel when the file has a `using namespace` for it (the dropped declaration's name is
unknown, so any unqualified name could have been it). A brace-structure error is owned so only when the namespace
still closes at its own `}` (issue 14 item 9)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from porter.frontend import clang_errors as CE

_CONTAINERS = {"NAMESPACE", "LINKAGE_SPEC", "UNEXPOSED_DECL"}
_REF_KINDS = ("DECL_REF_EXPR", "MEMBER_REF_EXPR", "CALL_EXPR", "TYPE_REF", "TEMPLATE_REF", "OVERLOADED_DECL_REF")


@dataclass
class Unit:
    name: str
    start: int
    end: int
    node: object = None          # None for a macro definition
    errors: list = field(default_factory=list)


@dataclass
class Integrity:
    units: list
    file_errors: list             # errors no declaration can own: they block every kernel
    errors: list                  # every counted error (missing headers excluded)
    scopes: list = field(default_factory=list)    # named namespaces (Unit) owning errors no declaration owns


    def kernel_errors(self, model, fn) -> list:
        """The errors inside `fn` or inside what it uses, in file order."""
        if not self.errors:
            return []
        by_name: dict[str, list[Unit]] = {}
        own = None
        for u in self.units:
            by_name.setdefault(u.name, []).append(u)
            if u.node is fn.node or (u.node is not None and u.start <= fn.node.start and fn.node.end <= u.end):
                own = own or u
        used, stack = set(), []
        host = {id(f.node) for f in model.functions if f.kind == "host" and f.node is not fn.node}

        def use(u):
            if id(u) not in used:
                used.add(id(u))
                stack.append(u)
        use(own if own is not None else Unit(fn.name, fn.node.start, fn.node.end, fn.node))
        found = []
        names: set = set()
        while stack:
            u = stack.pop()
            found += u.errors
            used_names = _names_used(model, u)
            names |= used_names
            for name in used_names:
                for v in by_name.get(name, ()):
                    # device code cannot call a host-only function: a host overload that shares a device
                    # function's name (`static void bit_rev(...)` beside `__device__ T bit_rev(T)`) is not used
                    if v.node is not None and id(v.node) in host:
                        continue
                    use(v)
        inside = [fn.node.start] + [u.start for u in self.units if id(u) in used]
        for sc in self.scopes:
            # what lies in the namespace names its members unqualified: the dropped one could be among them
            if sc.name in names or names & _declared_in(sc, self.units) or \
                    any(sc.start <= at <= sc.end for at in inside):
                found += sc.errors
        return sorted(found, key=lambda e: (e.offset or 0))


def analyze(model) -> Integrity:
    errors = [e for e in model.errors if CE.counted(e)]
    units = _units(model)
    scopes = _namespaces(model)
    file_errors = []
    for e in errors:
        if e.offset is None:
            file_errors.append(e)
            continue
        if CE.is_structural(e):
            # the brace structure may be lost after it, unless the namespace around it closes where its
            # source's `}` is: then what follows the namespace was parsed as written
            owner = _namespace_owner(model, scopes, e.offset, intact=True)
            (owner.errors if owner is not None else file_errors).append(e)
            continue
        owner = None
        for u in units:        # the innermost declaration that contains the error
            if u.start <= e.offset <= u.end and (owner is None or u.end - u.start < owner.end - owner.start):
                owner = u
        if owner is None:
            owner = _truncated_owner(model, units, e.offset)
        if owner is None:
            owner = _namespace_owner(model, scopes, e.offset)
        if owner is None:
            file_errors.append(e)
        else:
            owner.errors.append(e)
    return Integrity(units, file_errors, errors, [sc for sc in scopes if sc.errors])


def _namespaces(model) -> list[Unit]:
    out = []

    def walk(nodes):
        for n in nodes:
            if n.kind in _CONTAINERS:
                if n.kind == "NAMESPACE" and n.spelling and n.spelling != "std":
                    out.append(Unit(n.spelling, n.start, n.end, n))
                walk(n.children)
    walk(model.roots)
    return out


def _namespace_owner(model, scopes, offset, intact=False):
    """The innermost named namespace around an error no declaration owns, unless a `using namespace` of it
    (or of one around it) could have made the dropped declaration visible to any kernel by its bare name."""
    around = [sc for sc in scopes if sc.start <= offset <= sc.end]
    if not around:
        return None
    for sc in around:
        if re.search(rb"\busing\s+namespace\s+(?:::)?(?:\w+\s*::\s*)*" + re.escape(sc.name.encode()) + rb"\s*;",
                     model.source.data):
            return None
    inner = min(around, key=lambda sc: sc.end - sc.start)
    if intact and not _closes_as_written(model.source.data, inner):
        return None
    return inner


def _closes_as_written(data: bytes, scope: Unit) -> bool:
    """clang's extent of the namespace ends at the `}` that matches its `{` in the source's tokens."""
    from porter.frontend.lexer import Token, lex
    depth = 0
    for t in lex(data, scope.start, len(data), token_cls=Token):
        if t.spelling == "{":
            depth += 1
        elif t.spelling == "}":
            depth -= 1
            if depth == 0:
                return t.end == scope.end or t.start == scope.end
            if depth < 0:
                return False
    return False


def _declared_in(scope: Unit, units) -> set:
    """The names declared inside a namespace (nested namespaces' too)."""
    return {u.name for u in units if u.node is not None and u.name and scope.start <= u.start and u.end <= scope.end}


_ENDS_WITH_SEMICOLON = {"VAR_DECL", "TYPEDEF_DECL", "STRUCT_DECL", "CLASS_DECL", "UNION_DECL", "ENUM_DECL",
                        "TYPE_ALIAS_DECL", "FIELD_DECL"}


def _truncated_owner(model, units, offset):
    """clang cuts an invalid initialiser out of a declaration's extent (`float t[] = {1, bad};` ends before
    `bad`): the declaration ending last before the error owns it when no `;` lies between them."""
    best = None
    for u in units:
        if u.node is not None and u.node.kind in _ENDS_WITH_SEMICOLON and u.end <= offset and \
                (best is None or u.end > best.end):
            best = u
    if best is None or any(u.start > best.end and u.start <= offset for u in units if u.node is not None):
        return None
    return best if b";" not in model.source.data[best.end:offset] else None


def _units(model) -> list[Unit]:
    out = []

    def add(nodes):
        for n in nodes:
            if n.kind in _CONTAINERS:
                add(n.children)
                continue
            name = n.spelling or ""
            out.append(Unit(name, n.start, n.end, n))
    add(model.roots)
    for name, (s, e) in model.macro_defs.items():
        out.append(Unit(name, s, e, None))
    return out


def _names_used(model, u: Unit) -> set:
    names = set()
    if u.node is not None:
        for n in model.kinds_in(u.node, *_REF_KINDS):
            name = n.ref_name or n.spelling
            if name:
                names.add(name.split()[-1].split("::")[-1])
    for s, _e, name in model.macro_uses:
        if u.start <= s < u.end:
            names.add(name)
    return names
