"""Which kernels a clang error makes untrustworthy. clang recovers from an error by dropping or replacing what it
could not type-check (a statement, an initialiser, an operand), so an emitter walking that AST would translate
something else than the source says. A kernel is refused when its own code or anything it uses (functions it
calls, structs, typedefs, globals, macros, found by name, transitively) contains an error; every kernel is
refused when an error lies outside any declaration, in another file, or broke the brace structure. Errors in
declarations no kernel uses (host code) do not block."""
from __future__ import annotations

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
        while stack:
            u = stack.pop()
            found += u.errors
            for name in _names_used(model, u):
                for v in by_name.get(name, ()):
                    # device code cannot call a host-only function: a host overload that shares a device
                    # function's name (`static void bit_rev(...)` beside `__device__ T bit_rev(T)`) is not used
                    if v.node is not None and id(v.node) in host:
                        continue
                    use(v)
        return sorted(found, key=lambda e: (e.offset or 0))


def analyze(model) -> Integrity:
    errors = [e for e in model.errors if CE.counted(e)]
    units = _units(model)
    file_errors = []
    for e in errors:
        if e.offset is None or CE.is_structural(e):
            file_errors.append(e)
            continue
        owner = None
        for u in units:        # the innermost declaration that contains the error
            if u.start <= e.offset <= u.end and (owner is None or u.end - u.start < owner.end - owner.start):
                owner = u
        if owner is None:
            owner = _truncated_owner(model, units, e.offset)
        if owner is None:
            file_errors.append(e)
        else:
            owner.errors.append(e)
    return Integrity(units, file_errors, errors)


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
