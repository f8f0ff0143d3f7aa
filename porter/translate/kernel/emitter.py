"""The one walk: a kernel's Node tree (and the __device__ functions it calls) -> target text. The emitter knows C
semantics (types, the usual arithmetic conversions, pointers as array + offset, the warp-synchronous tail
lowering); the target (porter.translate.kernel.target.Target subclasses) knows how to spell them."""
from __future__ import annotations

import ctypes
import os
import re
from dataclasses import dataclass, field

from porter.frontend.lexer import split_top_level
from porter.frontend.affine import analysis
from porter.frontend.model import MAX_NESTING, result_type_spelling
from porter.translate.kernel import ctype as ct
from porter.translate import warp_sizing
from porter.translate.kernel import refs
from porter.translate.kernel.ctype import BOOL, F32, F64, I32, I64, U32, U64, CType
from porter.translate.kernel.target import (BINARY_PREC, PREC_ASSIGN, PREC_COMMA, PREC_COND, PREC_PRIMARY,
                                     PREC_UNARY, E, Target, TranslationError, wrap)

_CASTS = ("CSTYLE_CAST_EXPR", "CXX_STATIC_CAST_EXPR", "CXX_FUNCTIONAL_CAST_EXPR", "CXX_CONST_CAST_EXPR",
          "CXX_REINTERPRET_CAST_EXPR")
_NON_EXPR = ("TYPE_REF", "NAMESPACE_REF", "TEMPLATE_REF")
_COMPARE = ("<", ">", "<=", ">=", "==", "!=")
_SIDE_EFFECT_FREE_CALLS = re.compile(r"^(__)?(sqrt|rsqrt|exp|exp2|log|log2|sin|cos|tan|fabs|fmin|fmax|fma|min|max|"
                                     r"abs|floor|ceil|pow)f?$")


@dataclass
class Root:
    """Where a pointer points: a storage buffer (kernel pointer parameter), a shared array, a local array,
    a constant array, a local scalar (&x), or an array parameter of a specialised device function."""
    name: str
    kind: str                  # buffer | shared | local | constant | scalar | param_array
    elem: CType                # element type
    space: str                 # global | local | private | constant
    decl: object = None
    dims: tuple = ()

    @property
    def key(self):
        return (self.kind, self.name)


@dataclass
class PtrBinding:
    root: Root
    off: E | None              # fixed offset expression (alias) or the offset variable


@dataclass
class Frame:
    fn: object                 # porter.frontend.model.Function
    subst: dict                # template parameter -> CType | int
    is_kernel: bool
    names: dict = field(default_factory=dict)    # id(decl) -> identifier
    ptrs: dict = field(default_factory=dict)     # id(decl) -> PtrBinding (GLSL) / Root (OpenCL)
    consts: dict = field(default_factory=dict)   # id(decl) -> E
    ballots: set = field(default_factory=set)    # id(decl) of locals holding a subgroup ballot
    ret: CType = ct.VOID
    types: dict = field(default_factory=dict)


class Unit:
    """Per-file facts every kernel translation shares."""

    def __init__(self, model, target: Target, options: dict):
        self.model = model
        self.target = target
        self.options = options
        self.an = analysis(model)
        self.structs: dict[str, list] = {}
        self.struct_order: list[str] = []
        for n in model.of_kind("STRUCT_DECL", "CLASS_DECL"):
            if not n.spelling or n.spelling.startswith("__cuport"):
                continue
            fields = [(c.spelling, c) for c in n.children if c.kind == "FIELD_DECL"]
            if fields:
                self.structs[n.spelling] = fields
                self.struct_order.append(n.spelling)
        self.struct_names = set(self.structs)
        self.fn_by_node = {id(f.node): f for f in model.functions}
        self.fns_by_name: dict[str, list] = {}
        for f in model.functions:
            self.fns_by_name.setdefault(f.name, []).append(f)


class KernelEmitter:
    def __init__(self, unit: Unit, fn, subst: dict | None = None, launch=None, label: str | None = None):
        self.u = unit
        self.t = unit.target
        self.model = unit.model
        self.an = unit.an
        self.fn = fn
        self.kernel_subst = subst or {}
        self.launch = launch
        self.label = label or fn.name
        self.lines: list[str] = []
        self.indent = 1
        self.frame: Frame | None = None
        self.stack: list = []                      # device functions being emitted (recursion check)
        # collected declarations
        self.buffers: dict[str, dict] = {}         # name -> info (order = binding order)
        self.scalars: list[dict] = []              # by-value kernel parameters
        self.params: list[dict] = []               # CUDA parameter order
        self.shared: dict[str, dict] = {}
        self.consts: dict[str, tuple] = {}         # macro / template constants: name -> (E, CType)
        self.const_arrays: dict[str, str] = {}
        self.helpers: dict[str, str] = {}
        self.functions: dict = {}                  # specialisation key -> (name, text)
        self.struct_used: list[str] = []
        self.extensions: list[str] = []
        self.features: list[str] = []
        self.subgroup_ops: list[str] = []
        self.notes: list = []                      # (code, node, message, severity) warnings kept with output
        self.roots_rw: dict = {}                   # root key -> set('r','w')
        self.has_barrier = False
        self.uses_double = False
        self.min_subgroup = None
        self.warp_plan = None
        self.lowered_spans: list[tuple[int, int]] = []
        self._tmp = 0
        self.idents: set[str] = set()
        self.hoisted: dict = {}                    # id(node) -> E evaluated once (indices of reference locals)

    # ------------------------------------------------------------------ bookkeeping
    def need(self, ext: str | None = None, feature: str | None = None, subgroup: str | None = None):
        if ext and ext not in self.extensions:
            self.extensions.append(ext)
        if feature and feature not in self.features:
            self.features.append(feature)
        if subgroup and subgroup not in self.subgroup_ops:
            self.subgroup_ops.append(subgroup)

    def helper(self, name: str, text: str) -> str:
        if name not in self.helpers:
            self.helpers[name] = text
        return name

    def note(self, code, node, message, severity="warning"):
        self.notes.append((code, node, message, severity))

    def tmp(self, base="t") -> str:
        self._tmp += 1
        return f"cuport_{base}{self._tmp}"

    def fail(self, node, what, code="CP907"):
        self.t.unsupported(node, what, code)

    def access(self, root: Root, mode: str):
        s = self.roots_rw.setdefault(root.key, set())
        s.update(mode)

    # ------------------------------------------------------------------ types
    def parse_type(self, spelling: str, subst=None) -> CType:
        s = re.sub(r"\b(?:[A-Za-z_]\w*::)+", "", spelling or "")
        t = ct.parse(s, subst if subst is not None else (self.frame.subst if self.frame else self.kernel_subst),
                     self.u.struct_names)
        return self.demote(t)

    def demote(self, t: CType) -> CType:
        if self.uses_double or t is None:
            return t
        if t.kind == "scalar" and t.name == "f64":
            return CType("scalar", "f32", const=t.const, volatile=t.volatile)
        if t.kind in ("pointer", "array", "vector") and t.elem is not None:
            e = self.demote(t.elem)
            if e is not t.elem:
                return ct.with_elem(t, e)
        return t

    def decl_type(self, decl) -> CType:
        """Declared type of a VAR_DECL / PARM_DECL / FIELD_DECL node."""
        key = ("decl", id(decl))
        fr = self.frame
        if fr is not None and key in fr.types:
            return fr.types[key]
        canon = decl.canonical_type.spelling
        if "type-parameter" in canon or "dependent" in canon:
            t = self.parse_type(decl.type)
        else:
            t = self.parse_type(canon)
            if t.kind == "pointer" and "__restrict" in decl.type:
                t = CType("pointer", elem=t.elem, const=t.const, restrict=True)
        if fr is not None:
            fr.types[key] = t
        return t

    def ty(self, n) -> CType:
        fr = self.frame
        key = id(n)
        if key in fr.types:
            return fr.types[key]
        t = self._ty(n)
        fr.types[key] = t
        return t

    def _ty(self, n) -> CType:
        k = n.kind
        if k == "PAREN_EXPR" and n.children:
            return self.ty(n.children[-1])
        if k in ("INTEGER_LITERAL",):
            return self.parse_type(n.canonical_type.spelling)
        if k == "FLOATING_LITERAL":
            return self.demote(self.parse_type(n.canonical_type.spelling))
        if k == "CXX_BOOL_LITERAL_EXPR":
            return BOOL
        if k == "CHARACTER_LITERAL":
            return ct.scalar("i8")
        b = n.builtin()
        if b is not None:
            return U32
        if n.is_warp_size():
            return I32
        if k == "DECL_REF_EXPR":
            r = n.ref
            if r is not None and r.kind in ("VAR_DECL", "PARM_DECL"):
                return self.decl_type(r)
            if n.ref_kind in ("TEMPLATE_NON_TYPE_PARAMETER", "ENUM_CONSTANT_DECL", "NON_TYPE_TEMPLATE_PARAMETER"):
                return I32
        canon = ""
        try:
            canon = n.canonical_type.spelling
        except Exception:
            pass
        if canon and "type-parameter" not in canon and "dependent" not in canon and canon != "<overloaded function type>":
            t = self.parse_type(canon)
            if t.kind != "unknown":
                return t
        # dependent (template) expressions: compute structurally
        if k in ("UNEXPOSED_EXPR",) and len(n.children) == 1:
            return self.ty(n.children[0])
        if k == "DECL_REF_EXPR":
            t = self.parse_type(n.type)
            return t
        if k == "ARRAY_SUBSCRIPT_EXPR" and len(n.children) == 2:
            bt = self.ty(n.children[0])
            return _element(bt)
        if k == "MEMBER_REF_EXPR" and n.children:
            bt = self.ty(n.children[0])
            if bt.kind == "vector":
                return bt.elem
            if bt.kind == "struct" and bt.name in self.u.structs:
                for fname, fnode in self.u.structs[bt.name]:
                    if fname == n.spelling:
                        return self.decl_type(fnode)
            return self.parse_type(n.type)
        if k == "BINARY_OPERATOR" and len(n.children) == 2:
            op = n.op
            if op in _COMPARE or op in ("&&", "||"):
                return BOOL
            a, b = self.ty(n.children[0]), self.ty(n.children[1])
            if op == "=":
                return a
            if op == ",":
                return b
            if op in ("<<", ">>"):
                return ct.promote(a)
            if a.kind == "pointer" or b.kind == "pointer" or a.kind == "array" or b.kind == "array":
                if op == "-" and _ptrlike(a) and _ptrlike(b):
                    return I64
                p = a if _ptrlike(a) else b
                return ct.pointer(_element(p)) if p.kind == "array" else p
            return ct.common(a, b)
        if k == "COMPOUND_ASSIGNMENT_OPERATOR" and n.children:
            return self.ty(n.children[0])
        if k == "UNARY_OPERATOR" and n.children:
            a = self.ty(n.children[0])
            op = n.op
            if op == "!":
                return BOOL
            if op in ("-", "+", "~"):
                return ct.promote(a)
            if op == "&":
                return ct.pointer(a)
            if op == "*":
                return _element(a)
            return a
        if k == "CONDITIONAL_OPERATOR" and len(n.children) == 3:
            a, b = self.ty(n.children[1]), self.ty(n.children[2])
            if a.same(b):
                return a.unqualified()
            if a.is_arith and b.is_arith:
                return ct.common(a, b)
            return a
        if k in _CASTS:
            return self.parse_type(n.type)
        if k == "CALL_EXPR":
            return self.call_type(n)
        return self.parse_type(n.type)

    # ------------------------------------------------------------------ conversions
    def conv(self, e: E, dst: CType, implicit_ok: bool = False) -> E:
        return self.t.convert(e, dst.unqualified(), self, explicit=False, implicit_ok=implicit_ok)

    def cond(self, n) -> E:
        """An expression used as a condition."""
        e = self.x(n)
        return self.to_bool(e, n)

    def to_bool(self, e: E, n=None) -> E:
        if e.ct.kind == "pointer":
            self.fail(n, "a pointer used as a truth value (pointer comparison)")
        return self.t.convert(e, BOOL, self)

    # ------------------------------------------------------------------ names
    def name_of(self, decl) -> str:
        fr = self.frame
        nm = fr.names.get(id(decl))
        if nm is None:
            nm = self.t.ident(decl.spelling)
            if nm != decl.spelling and nm in self.idents:
                nm = self.fresh(nm)    # a mangled name (`a__b` -> `a_b_`) must not meet the code's own `a_b_`
            fr.names[id(decl)] = nm
        return nm

    def fresh(self, base: str) -> str:
        nm = base
        i = 1
        while nm in self.idents:
            i += 1
            nm = f"{base}{i}"
        self.idents.add(nm)
        return nm

    # ------------------------------------------------------------------ entry
    def run(self):
        try:
            return self._run()
        except (RecursionError, ctypes.ArgumentError) as exc:
            # nesting under MAX_NESTING that still exhausted the stack: a refusal, not an internal error
            if not isinstance(exc, RecursionError) and "RecursionError" not in str(exc):
                raise
            raise TranslationError("CP907", self.fn.node, "nesting too deep to translate") from None

    def _run(self):
        fn = self.fn
        self._scan_unsupported(fn)
        self.uses_double = self._uses_double(fn)
        self.frame = Frame(fn, dict(self.kernel_subst), True)
        for n in fn.node.walk():
            if n.kind in ("VAR_DECL", "PARM_DECL"):
                self.idents.add(n.spelling)
        self.t.begin_kernel(self)
        self.warp_plan = warp_sizing.plan(self)   # per-warp storage sized for 32 lanes: resize or refuse
        self._params(fn)
        body = fn.body
        if body is None:
            self.fail(fn.node, f"kernel `{fn.name}` without a body")
        self.block_children(body)
        self.t.end_kernel(self)
        return self

    # ------------------------------------------------------------------ pre-checks
    def _reachable(self, fn, seen=None):
        seen = seen if seen is not None else {}
        if id(fn.node) in seen:
            return seen
        seen[id(fn.node)] = fn
        if fn.body is None:
            return seen
        for n in fn.body.walk():
            if n.kind == "CALL_EXPR":
                callee = self._callee_fn(n)
                if callee is not None and callee.body is not None:
                    self._reachable(callee, seen)
        return seen

    def _scan_unsupported(self, fn):
        for f in self._reachable(fn).values():
            deep = next((at for owner, at in self.model.too_deep if owner is f.node), None)
            if deep is not None:   # build_model left this body out (model.MAX_NESTING)
                raise TranslationError("CP907", (deep, deep), f"nesting deeper than {MAX_NESTING} levels in "
                                       f"`{f.name}`")
            if f.body is None:
                continue
            # clang drops or mangles what it could not type-check: never translate such a function
            for err in self.model.errors:
                if err.offset is not None and f.node.start <= err.offset < f.node.end and err.severity >= 3:
                    raise TranslationError("CP907", (err.offset, err.offset),
                                           f"clang could not compile this code: {err.message}")
            for n in f.body.walk():
                k = n.kind
                if k in ("ASM_STMT", "GCC_ASM_STMT", "MS_ASM_STMT"):
                    self.fail(n, "inline PTX assembly (`asm`)", "CP901")
                if k == "CALL_EXPR" and len(n.children) >= 2 and n.children[1].kind == "CALL_EXPR" and \
                        n.children[1].spelling in ("cudaConfigureCall", "__cudaPushCallConfiguration"):
                    self.fail(n, f"a kernel launch inside device code (dynamic parallelism: `{n.spelling}<<<...>>>`)",
                              "CP905")
                if k == "LAMBDA_EXPR":
                    self.fail(n, "a lambda in device code")
                if k in ("GOTO_STMT", "INDIRECT_GOTO_STMT", "LABEL_STMT"):
                    self.fail(n, "`goto`")
                if k in ("CXX_TRY_STMT", "CXX_THROW_EXPR"):
                    self.fail(n, "C++ exceptions")
                if k in ("CXX_NEW_EXPR", "CXX_DELETE_EXPR"):
                    self.fail(n, "dynamic allocation (`new` / `delete`)")

    def _uses_double(self, fn) -> bool:
        for f in self._reachable(fn).values():
            for n in f.node.walk():
                if n.kind in ("VAR_DECL", "PARM_DECL", "CSTYLE_CAST_EXPR", "CXX_STATIC_CAST_EXPR",
                              "CXX_FUNCTIONAL_CAST_EXPR", "FIELD_DECL"):
                    if re.search(r"\bdouble\b", n.type or ""):
                        return True
        for v in self.kernel_subst.values():
            # a template argument: a string, or the CType the driver parsed it into (`k<double>`)
            if not isinstance(v, int) and re.search(r"\bdouble\b", str(v)):
                return True
        return False

    # ------------------------------------------------------------------ parameters
    def _params(self, fn):
        for p in fn.params:
            t = self.decl_type(p.node)
            name = self.name_of(p.node)
            if t.kind in ("pointer", "array"):
                elem = _element(t)
                if elem.kind == "pointer":
                    self.fail(p.node, f"pointer-to-pointer parameter `{p.name}`")
                if elem.kind == "void":
                    self.fail(p.node, f"`void *` parameter `{p.name}` (element type unknown)")
                root = Root(name, "buffer", elem, "global", p.node)
                info = {"name": name, "cuda_name": p.name, "elem": elem, "const": elem.const,
                        "restrict": t.restrict, "root": root, "node": p.node}
                self.buffers[name] = info
                self.params.append({"name": p.name, "kind": "buffer", "info": info})
                self.frame.ptrs[id(p.node)] = self.t.bind_param_pointer(self, root, p.node)
            elif t.kind in ("scalar", "vector", "struct"):
                if t.kind == "struct":
                    self.use_struct(t.name, p.node)
                info = {"name": name, "cuda_name": p.name, "type": t, "node": p.node,
                        "assigned": id(p.node) in self.an.assigned or refs.writes(self, fn, p.node)}
                self.scalars.append(info)
                self.params.append({"name": p.name, "kind": "scalar", "info": info})
            else:
                self.fail(p.node, f"parameter `{p.name}` of type `{p.type}`")

    def use_struct(self, name, node):
        if name not in self.u.structs:
            self.fail(node, f"struct `{name}` without a definition in this file")
        if name in self.struct_used:
            return
        for _fname, fnode in self.u.structs[name]:
            ft = self.decl_type(fnode)
            if ft.kind == "struct":
                self.use_struct(ft.name, fnode)
            elif ft.kind == "pointer":
                self.fail(fnode, f"a pointer inside struct `{name}`")
            elif ft.kind == "unknown":
                self.fail(fnode, f"field `{_fname}` of type `{fnode.type}`")
        self.struct_used.append(name)

    def struct_fields(self, name):
        return [(self.t.ident(f), self.decl_type(n)) for f, n in self.u.structs[name]]

    # ------------------------------------------------------------------ statements
    def emit(self, line: str):
        self.lines.append("    " * self.indent + line if line else "")

    def block_children(self, compound):
        kids = compound.children
        prev_end = compound.start + 1
        for c in kids:
            self._comments(prev_end, c.start)
            self.line_mark(c)
            self.stmt(c)
            for ln in warp_sizing.fold_lines(self, c):
                self.emit(ln)
            prev_end = max(prev_end, c.end)
        self._comments(prev_end, compound.end - 1)

    def line_mark(self, n):
        """`#line N "file.cu"` before a statement when asked (verify --sanitize): a simulator's report then
        names the CUDA source line, not the translation's."""
        if not self.u.options.get("line_directives"):
            return
        row = self.model.source.position(n.start)[0]
        name = os.path.basename(self.model.source.path).replace("\\", "/").replace('"', "")
        self.lines.append(f'#line {row} "{name}"')

    def _comments(self, start, end):
        if end <= start or not self.t.keep_comments:
            return
        gap = self.model.source.data[start:end].decode("utf-8", "replace")
        for m in re.finditer(r"//[^\n]*|/\*.*?\*/", gap, flags=re.S):
            text = m.group(0)
            if text.startswith("/*"):
                body = [ln.strip() for ln in text[2:-2].strip().splitlines()]
                text_lines = ["// " + ln if ln else "//" for ln in body]
            else:
                text_lines = [text.rstrip()]
            same_line = "\n" not in gap[:m.start()]
            if same_line and self.lines and self.lines[-1].strip() and not self.lines[-1].rstrip().endswith("{"):
                self.lines[-1] = self.lines[-1] + "  " + text_lines[0]
                text_lines = text_lines[1:]
            for tl in text_lines:
                self.emit(tl)

    def sub_block(self, n):
        """Body of if / for / while: always braced."""
        self.indent += 1
        if n.kind == "COMPOUND_STMT":
            self.block_children(n)
        else:
            self.line_mark(n)
            self.stmt(n)
        self.indent -= 1

    def stmt(self, n):
        k = n.kind
        m = getattr(self, "s_" + k, None)
        if m is not None:
            return m(n)
        if k.endswith("_EXPR") or k.endswith("_OPERATOR") or k.endswith("_LITERAL"):
            return self.expr_stmt(n)
        self.fail(n, f"statement `{k.lower()}`")

    def s_COMPOUND_STMT(self, n):
        self.emit("{")
        self.indent += 1
        self.block_children(n)
        self.indent -= 1
        self.emit("}")

    def s_NULL_STMT(self, n):
        pass

    def s_UNEXPOSED_STMT(self, n):
        # attributed statements (`#pragma unroll` before a loop) wrap the statement they annotate
        kids = [c for c in n.children if not c.kind.endswith("_ATTR")]
        if len(kids) == 1:
            return self.stmt(kids[0])
        self.fail(n, "a statement clang does not expose")

    def s_DECL_STMT(self, n):
        for c in n.children:
            if c.kind == "VAR_DECL":
                for line in self.var_decl(c):
                    self.emit(line)
            elif c.kind in ("TYPEDEF_DECL", "TYPE_ALIAS_DECL", "STRUCT_DECL", "STATIC_ASSERT"):
                continue
            else:
                self.fail(c, f"declaration `{c.kind.lower()}`")

    def s_BREAK_STMT(self, n):
        self.emit("break;")

    def s_CONTINUE_STMT(self, n):
        self.emit("continue;")

    def s_RETURN_STMT(self, n):
        if not n.children:
            self.emit("return;")
            return
        fr = self.frame
        if fr.is_kernel:
            self.emit(self.x(n.children[0]).text + ";")
            self.emit("return;")
            return
        if fr.ret.kind == "pointer":
            self.fail(n, "a device function returning a pointer")
        e = self.conv(self.x(n.children[0]), fr.ret)
        self.emit(f"return {e.text};")

    def s_IF_STMT(self, n):
        kids = n.children
        if len(kids) < 2 or kids[0].kind in ("DECL_STMT", "VAR_DECL"):
            self.fail(n, "`if` with an initialiser or declaration condition")
        if self.t.lower_warp_sync and self.warp_sync_tail(n):
            return
        self._refuse_lockstep(kids[1])
        c = self.cond(kids[0])
        self.emit(f"if ({c.text}) {{")
        self.sub_block(kids[1])
        els = kids[2] if len(kids) > 2 else None
        while els is not None:
            if els.kind == "IF_STMT" and len(els.children) >= 2 and els.children[0].kind not in ("DECL_STMT",):
                c2 = self.cond(els.children[0])
                self.emit(f"}} else if ({c2.text}) {{")
                self.sub_block(els.children[1])
                els = els.children[2] if len(els.children) > 2 else None
            else:
                self.emit("} else {")
                self.sub_block(els)
                els = None
        self.emit("}")

    def _for_parts(self, n):
        kids = n.children
        body = kids[-1]
        header = self.model.source.data[n.start:body.start]
        # find the two top-level semicolons of the header
        semis, depth = [], 0
        i = header.find(b"(")
        if i < 0:
            self.fail(n, "a `for` statement produced by a macro")
        for j in range(i, len(header)):
            ch = header[j:j + 1]
            if ch in (b"(", b"[", b"{"):
                depth += 1
            elif ch in (b")", b"]", b"}"):
                depth -= 1
            elif ch == b";" and depth == 1:
                semis.append(n.start + j)
        if len(semis) != 2:
            if len(kids) == 4:
                return kids[0], kids[1], kids[2], body
            self.fail(n, "a `for` header that cannot be split")
        init = cond = inc = None
        for c in kids[:-1]:
            if c.start < semis[0] or (c.kind == "DECL_STMT" and c.start <= semis[0]):
                init = c
            elif c.start < semis[1]:
                cond = c
            else:
                inc = c
        return init, cond, inc, body

    def _unroll(self, n) -> str | None:
        """`#pragma unroll [N]` right before a loop."""
        start = max(0, n.start - 400)
        before = self.model.source.data[start:n.start].decode("utf-8", "replace")
        lines = before.split("\n")
        # the loop's own line up to the keyword must be blank
        if lines and lines[-1].strip():
            return None
        for ln in reversed(lines[:-1]):
            s = ln.strip()
            if not s or s.startswith("//"):
                continue
            m = re.match(r"#\s*pragma\s+unroll\b\s*\(?\s*(\w*)\s*\)?", s)
            if m:
                arg = m.group(1)
                if not arg:
                    return "unroll"
                v = None
                try:
                    v = int(arg, 0)
                except ValueError:
                    v = self.model.macro_value(arg)
                return "nounroll" if v == 1 else f"unroll {v}" if v else "unroll"
            return None
        return None

    def s_FOR_STMT(self, n):
        init, cond, inc, body = self._for_parts(n)
        init_t = ""
        pre_lines = []
        if init is not None:
            if init.kind == "DECL_STMT":
                decls = [c for c in init.children if c.kind == "VAR_DECL"]
                parts = []
                for d in decls:
                    ls = self.var_decl(d)
                    if len(ls) != 1:
                        pre_lines += ls[:-1]
                    parts.append(ls[-1].rstrip(";"))
                if len(parts) == 1:
                    init_t = parts[0]
                elif parts:
                    # int i = 0, j = 0  ->  one declaration when the types agree
                    ty0 = parts[0].split(" ")[0]
                    if all(p.split(" ")[0] == ty0 for p in parts):
                        init_t = parts[0] + ", " + ", ".join(p[len(ty0) + 1:] for p in parts[1:])
                    else:
                        pre_lines += [p + ";" for p in parts]
            else:
                init_t = self.x(init).text
        cond_t = self.cond(cond).text if cond is not None else ""
        inc_t = self.x(inc).text if inc is not None else ""
        hint = self._unroll(n)
        wrap_block = bool(pre_lines)
        if wrap_block:
            self.emit("{")
            self.indent += 1
            for ln in pre_lines:
                self.emit(ln)
        attr = self.t.loop_attribute(self, hint) if hint else ""
        if attr and attr.startswith("#"):
            self.emit(attr)
            attr = ""
        self.emit(f"{attr}for ({init_t}; {cond_t}; {inc_t}) {{")
        self.sub_block(body)
        self.emit("}")
        if wrap_block:
            self.indent -= 1
            self.emit("}")

    def s_WHILE_STMT(self, n):
        if len(n.children) != 2 or n.children[0].kind in ("DECL_STMT", "VAR_DECL"):
            self.fail(n, "`while` with a declaration condition")
        c = self.cond(n.children[0])
        hint = self._unroll(n)
        attr = self.t.loop_attribute(self, hint) if hint else ""
        if attr and attr.startswith("#"):
            self.emit(attr)
            attr = ""
        self.emit(f"{attr}while ({c.text}) {{")
        self.sub_block(n.children[1])
        self.emit("}")

    def s_DO_STMT(self, n):
        body, c = n.children[0], n.children[1]
        self.emit("do {")
        self.sub_block(body)
        self.emit(f"}} while ({self.cond(c).text});")

    def s_SWITCH_STMT(self, n):
        kids = n.children
        if len(kids) != 2:
            self.fail(n, "`switch` with an initialiser")
        c = self.x(kids[0])
        st = ct.promote(c.ct)
        if not st.is_int or st.bits > 32:
            self.fail(n, f"`switch` on `{st}`")
        c = self.conv(c, st)
        self.emit(f"switch ({c.text}) {{")
        self.indent += 1
        body = kids[1]
        stmts = body.children if body.kind == "COMPOUND_STMT" else [body]
        for s in stmts:
            self._case(s, st)
        self.indent -= 1
        self.emit("}")

    def _case(self, s, st):
        if s.kind == "CASE_STMT":
            v = s.children[0].value
            if not isinstance(v, int):
                self.fail(s, "a non-constant `case` label")
            self.emit(f"case {self.t.literal(wrap(v, st), st, self)}:")
            if len(s.children) > 1:
                self._case(s.children[-1], st)
        elif s.kind == "DEFAULT_STMT":
            self.emit("default:")
            if s.children:
                self._case(s.children[-1], st)
        else:
            self.indent += 1
            self.stmt(s)
            self.indent -= 1

    def s_ASM_STMT(self, n):
        self.fail(n, "inline PTX assembly (`asm`)", "CP901")

    s_GCC_ASM_STMT = s_ASM_STMT

    def expr_stmt(self, n):
        s = n.strip if n.kind == "PAREN_EXPR" else n
        if s.kind == "CALL_EXPR":
            name = self.callee_name(s)
            if name == "__syncthreads":
                for ln in self.barrier(s):
                    self.emit(ln)
                return
            if name == "__syncwarp":
                self.check_mask(s, self.call_args(s)[0] if self.call_args(s) else None)
                for ln in self.t.warp_barrier(self):
                    self.emit(ln)
                return
            if name in ("__threadfence_block", "__threadfence", "__threadfence_system"):
                self.emit(self.t.fence(self, name) + ";")
                return
            if name in ("sincosf", "sincos", "__sincosf"):
                args = self.call_args(s)
                x = self.x(args[0])
                st = self.ptr_lvalue(args[1], "w")
                co = self.ptr_lvalue(args[2], "w")
                ft = F64 if name == "sincos" and self.uses_double else F32
                xx = self.conv(x, ft)
                self.emit(f"{st} = {self.t.math_name(self, 'sin', ft)}({xx.text});")
                self.emit(f"{co} = {self.t.math_name(self, 'cos', ft)}({xx.text});")
                return
        e = self.x(n)
        self.emit(e.text + ";")

    def barrier(self, node) -> list[str]:
        self.has_barrier = True
        return self.t.block_barrier(self, self._global_exchange())

    def _global_exchange(self) -> bool:
        """Whether global memory is written and read in this kernel (then a barrier must order it too)."""
        if getattr(self, "_gx", None) is None:
            written, read = set(), set()
            for f in self._reachable(self.fn).values():
                if f.body is None:
                    continue
                for n in f.body.walk():
                    if n.kind in ("ARRAY_SUBSCRIPT_EXPR", "UNARY_OPERATOR") and n.children:
                        base = n.children[0].strip
                        if base.kind == "DECL_REF_EXPR" and base.ref is not None and base.ref.kind == "PARM_DECL":
                            p = n.parent
                            w = p is not None and p.kind in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR") and \
                                p.children and p.children[0] is n and (p.kind != "BINARY_OPERATOR" or p.op == "=")
                            (written if w else read).add(base.ref.spelling)
                    if n.kind == "CALL_EXPR" and n.spelling.startswith("atomic"):
                        written.add("*atomic*")
            self._gx = bool(written & read) or "*atomic*" in written
        return self._gx

    # ------------------------------------------------------------------ the warp-synchronous tail (CP301)
    def warp_sync_tail(self, n) -> bool:
        """A warp-synchronous region `if (tid < K) { ... }` over shared memory: either volatile steps
        (`volatile T* v = smem; v[tid] += v[tid + 32]; ...`, lockstep on a 32-lane warp) or phases separated by
        `__syncwarp()` (the form the CP301 fix writes). Lowered to phases over the whole work-group separated
        by work-group barriers, which is exact for any subgroup size; a `__syncwarp()` would only order one
        subgroup, and subgroups may be narrower than the 32 lanes the region covers. Returns False when the
        pattern does not apply (the statement is then translated as written)."""
        kids = n.children
        if len(kids) != 2 or not self.frame.is_kernel:
            return False
        cond, body = kids
        if not self.an.thread_dependent(cond):
            return False
        flat = self._flatten(body)
        if flat is None:
            return False
        aliases = [s.children[0] for s in flat if s.kind == "DECL_STMT" and "*" in s.children[0].type]
        locals_ = [s.children[0] for s in flat if s.kind == "DECL_STMT" and "*" not in s.children[0].type]
        syncs = [s for s in flat if s.kind == "CALL_EXPR"]
        steps = [s for s in flat if s.kind in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR")]
        volatile = any("volatile" in d.type for d in aliases)
        if len(steps) < 2 or not (volatile or syncs):
            return False
        if any(self.init_of(d) is None for d in aliases + locals_):
            return False
        for s in steps + [cond] + [self.init_of(d) for d in locals_]:
            for x in s.walk():
                if x.kind == "CALL_EXPR" and not _SIDE_EFFECT_FREE_CALLS.match(self.callee_name(x) or ""):
                    return False
                if x.kind == "UNARY_OPERATOR" and x.op in ("++", "--", "post++", "post--"):
                    return False
                if x is not s and x.kind in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR") and \
                        (x.kind == "COMPOUND_ASSIGNMENT_OPERATOR" or x.op == "="):
                    return False
        # uniform control flow around the `if` (the barriers must be reached by the whole work-group)
        for a in n.ancestors():
            if a is self.fn.body:
                break
            if a.kind in ("IF_STMT", "WHILE_STMT", "DO_STMT", "SWITCH_STMT"):
                c0 = a.children[0] if a.kind != "DO_STMT" else a.children[-1]
                if self.an.thread_dependent(c0):
                    return False
            if a.kind == "FOR_STMT":
                if any(self.an.thread_dependent(c) for c in a.children[:-1]):
                    return False
        # the condition is evaluated once per phase: it must not read memory
        for x in cond.walk():
            if x.kind == "ARRAY_SUBSCRIPT_EXPR" or (x.kind == "UNARY_OPERATOR" and x.op == "*"):
                return False
        for d in aliases:
            for line in self.var_decl(d):
                self.emit(line)
        c = self.cond(cond)
        barrier = self.barrier(n)
        self.emit("// warp-synchronous steps (CP301) lowered to work-group barriers: exact for any subgroup size")
        if syncs:
            # phases between the __syncwarp() calls; their locals are declared before the first phase
            self.emit("{")
            self.indent += 1
            for d in locals_:
                t = self.decl_type(d)
                name = self.fresh(self.t.ident(d.spelling))
                self.frame.names[id(d)] = name
                self.emit(f"{self.t.type_name(t.unqualified(), self)} {name};")
            phase = []
            for s in flat + [None]:
                if s is not None and s.kind != "CALL_EXPR":
                    if s.kind != "DECL_STMT" or s.children[0] in locals_:
                        phase.append(s)
                    continue
                if phase:
                    self.emit(f"if ({c.text}) {{")
                    self.indent += 1
                    for st in phase:
                        if st.kind == "DECL_STMT":
                            d = st.children[0]
                            v = self.conv(self.x(self.init_of(d)), self.decl_type(d).unqualified(), implicit_ok=True)
                            self.emit(f"{self.name_of(d)} = {v.text};")
                        else:
                            self.emit(self.x(st).text + ";")
                    self.indent -= 1
                    self.emit("}")
                    for ln in barrier:
                        self.emit(ln)
                phase = []
            self.indent -= 1
            self.emit("}")
        else:
            # lockstep: every step reads all its operands before any lane writes
            for s in steps:
                lhs, rhs = s.children
                lt = self.ty(lhs).unqualified()
                lv = self.x(lhs, "w")
                if s.kind == "COMPOUND_ASSIGNMENT_OPERATOR":
                    value = self.conv(self.binary_value(s.op[:-1], self.x(lhs), self.x(rhs), s), lt)
                else:
                    value = self.conv(self.x(rhs), lt)
                tmp = self.tmp("v")
                self.emit("{")
                self.indent += 1
                self.emit(f"{self.t.type_name(lt, self)} {tmp};")
                self.emit(f"if ({c.text}) {tmp} = {value.text};")
                for ln in barrier:
                    self.emit(ln)
                self.emit(f"if ({c.text}) {lv.text} = {tmp};")
                for ln in barrier:
                    self.emit(ln)
                self.indent -= 1
                self.emit("}")
        self.lowered_spans.append((n.start, n.end))
        return True

    def _refuse_lockstep(self, body):
        """A volatile pointer into shared memory declared directly in this block, outside a region that could be
        lowered: the code relies on 32 lanes running in lockstep, which no subgroup guarantees."""
        if body.kind != "COMPOUND_STMT":
            return
        for s in body.children:
            if s.kind == "DECL_STMT":
                for d in s.children:
                    if d.kind == "VAR_DECL" and "volatile" in d.type and "*" in d.type:
                        init = self.init_of(d)
                        if init is not None and _ptrlike(self.ty(init)):
                            root, _off = self.ptr(init)
                            if root.kind == "shared":
                                self.fail(d, f"warp-synchronous code on `{d.spelling}` (CP301) that cannot be "
                                          "lowered to work-group barriers (it is under thread-dependent control "
                                          "flow); rewrite it with shuffles or __syncthreads()")

    def _flatten(self, body):
        """The statements of a warp-synchronous region, nested blocks flattened; None when something else
        (control flow, calls other than __syncwarp) is in it."""
        out = []
        for s in (body.children if body.kind == "COMPOUND_STMT" else [body]):
            if s.kind == "COMPOUND_STMT":
                sub = self._flatten(s)
                if sub is None:
                    return None
                out += sub
            elif s.kind == "NULL_STMT":
                continue
            elif s.kind == "DECL_STMT" and len(s.children) == 1 and s.children[0].kind == "VAR_DECL":
                out.append(s)
            elif s.kind == "CALL_EXPR" and self.callee_name(s) == "__syncwarp":
                out.append(s)
            elif s.kind in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR") and \
                    (s.kind == "COMPOUND_ASSIGNMENT_OPERATOR" or s.op == "=") and len(s.children) == 2:
                out.append(s)
            else:
                return None
        return out

    # ------------------------------------------------------------------ declarations
    def init_of(self, d):
        exprs = [c for c in d.children if c.kind not in _NON_EXPR and not c.kind.endswith("_ATTR")]
        if not exprs:
            return None
        t = d.type
        if "[" in t and exprs[-1].kind not in ("INIT_LIST_EXPR", "STRING_LITERAL"):
            return None
        last = exprs[-1]
        # the array size expressions of `T a[N]` are children too: an initialiser follows `=`, `(` or `{`
        if last.start < d.start or last.kind == "INTEGER_LITERAL" and "[" in t:
            return None
        return last

    def var_decl(self, d) -> list[str]:
        if any(c.kind == "CUDASHARED_ATTR" for c in d.children):
            self.shared_decl(d)
            return []
        if any(c.kind == "CUDACONSTANT_ATTR" for c in d.children):
            self.fail(d, "a `__constant__` variable declared inside a function")
        t = self.decl_type(d)
        init = self.init_of(d)
        name = self.name_of(d)
        if "static" in d.text.split("=")[0].split():
            self.fail(d, f"a `static` local variable `{d.spelling}`")
        if t.kind == "pointer":
            return self.t.pointer_decl(self, d, t, name, init)
        if t.ref:
            return refs.ref_decl(self, d, t, name, init)
        if t.kind == "unknown" and "(*)" in d.type:
            self.fail(d, f"a function pointer `{d.spelling}`")
        if t.kind == "unknown" or t.kind == "void":
            self.fail(d, f"a variable of type `{d.type}`")
        if t.kind == "struct":
            self.use_struct(t.name, d)
        if t.kind == "array":
            if any(x is None for x in t.dims):
                self.fail(d, f"a local array `{d.spelling}` without a constant size")
            if _element(t).kind == "pointer" or t.elem.kind == "pointer":
                self.fail(d, f"an array of pointers `{d.spelling}`")
            text = self.t.array_decl(self, t, name)
            if init is not None:
                text += " = " + self.array_init(init, t).text
            return [text + ";"]
        # a ballot kept in a variable: keep the whole mask when every use reads it as a mask
        if init is not None and self.t.ballot_var(self, d, init):
            return self.t.ballot_decl(self, d, name, init)
        text = f"{self.t.type_name(t.unqualified(), self)} {name}"
        if init is not None:
            if init.kind == "INIT_LIST_EXPR":
                e = self.aggregate(init, t)
            elif init.kind in ("CALL_EXPR", "CXX_CONSTRUCT_EXPR") and t.kind in ("vector", "struct") and \
                    self.callee_name(init) in ("", t.name) and t.kind == "struct" and not refs.copy_of(self, init, t):
                e = self.aggregate(init, t)
            else:
                e = self.conv(self.x(init), t, implicit_ok=True)
            text += f" = {e.text}"
            if t.const and t.kind == "scalar":
                text = "const " + text
        return [text + ";"]

    def shared_decl(self, d):
        t = self.decl_type(d)
        name = self.name_of(d)
        if self.init_of(d) is not None and t.kind != "array":
            self.fail(d, "an initialised `__shared__` variable")
        extern = "extern" in d.text.split(d.spelling)[0]
        if name in self.shared:
            if self.shared[name]["node"] is not d:
                name = self.fresh(name)
                self.frame.names[id(d)] = name
            else:
                return
        if extern:
            if len([s for s in self.shared.values() if s["extern"]]) >= 1:
                self.fail(d, "more than one `extern __shared__` array (they alias one another)")
            elem = _element(t) if t.kind == "array" else t
            info = {"name": name, "type": t, "elem": elem, "extern": True, "node": d, "dims": (None,)}
        else:
            if t.kind == "array" and any(x is None for x in t.dims):
                self.fail(d, f"shared array `{d.spelling}` without a constant size")
            info = {"name": name, "type": t, "elem": _element(t) if t.kind == "array" else t, "extern": False,
                    "node": d, "dims": t.dims if t.kind == "array" else ()}
        if info["elem"].kind == "struct":
            self.use_struct(info["elem"].name, d)
        warp_sizing.resized(self, d, info)
        self.shared[name] = info
        self.t.shared_declared(self, info)

    def array_init(self, init, t: CType) -> E:
        if init.kind != "INIT_LIST_EXPR":
            self.fail(init, "an array initialised from a non-list expression")
        return self.aggregate(init, t)

    def aggregate(self, init, t: CType) -> E:
        """An initialiser list (possibly partial: C zero-fills the rest) as a target constructor."""
        items = [c for c in init.children if c.kind not in _NON_EXPR] if init.kind in ("INIT_LIST_EXPR",
                                                                                      "CALL_EXPR") else []
        if t.kind == "array":
            n = t.dims[0]
            sub = _element(t) if len(t.dims) == 1 else ct.array(t.elem, t.dims[1:])
            if len(items) == 1 and items[0].kind != "INIT_LIST_EXPR" and len(t.dims) > 1:
                # {0.0f} for a 2-D array: brace elision; only the all-zero form is supported
                v = items[0].value
                if v not in (0, 0.0):
                    self.fail(init, "brace elision in a multi-dimensional initialiser")
                items = []
            parts = []
            for i in range(n):
                if i < len(items):
                    it = items[i]
                    if it.kind == "INIT_LIST_EXPR":
                        parts.append(self.aggregate(it, sub).text)
                    else:
                        parts.append(self.conv(self.x(it), sub).text)
                else:
                    parts.append(self.zero(sub).text)
            return E(self.t.array_constructor(self, t, parts), t)
        if t.kind == "vector":
            parts = [self.conv(self.x(i), t.elem).text for i in items]
            while len(parts) < t.n:
                parts.append(self.zero(t.elem).text)
            return E(self.t.vector_constructor(self, t, parts), t)
        if t.kind == "struct":
            fields = self.u.structs[t.name]
            parts = []
            for i, (_fname, fnode) in enumerate(fields):
                ft = self.decl_type(fnode)
                if i < len(items):
                    it = items[i]
                    parts.append(self.aggregate(it, ft).text if it.kind == "INIT_LIST_EXPR"
                                 else self.conv(self.x(it), ft).text)
                else:
                    parts.append(self.zero(ft).text)
            return E(self.t.struct_constructor(self, t, parts), t)
        if len(items) == 1:
            return self.conv(self.x(items[0]), t)
        if not items:
            return self.zero(t)
        self.fail(init, f"an initialiser list for `{t}`")

    def zero(self, t: CType) -> E:
        if t.kind == "scalar":
            return E(self.t.literal(0, t, self), t, lit=0)
        if t.kind == "vector":
            return E(self.t.vector_constructor(self, t, [self.t.literal(0, t.elem, self)] * t.n), t)
        if t.kind == "array":
            sub = _element(t) if len(t.dims) == 1 else ct.array(t.elem, t.dims[1:])
            z = self.zero(sub).text
            return E(self.t.array_constructor(self, t, [z] * t.dims[0]), t)
        if t.kind == "struct":
            parts = [self.zero(self.decl_type(fn)).text for _f, fn in self.u.structs[t.name]]
            return E(self.t.struct_constructor(self, t, parts), t)
        self.fail(None, f"a zero value of `{t}`")

    # ------------------------------------------------------------------ expressions
    def x(self, n, mode: str = "r") -> E:
        if self.hoisted and id(n) in self.hoisted:
            return self.hoisted[id(n)]
        if self.warp_plan is not None and self.warp_plan.counts:
            wc = warp_sizing.count(self, n)   # a warp count written for 32 lanes
            if wc is not None:
                return wc
        k = n.kind
        # a #define constant written as its name: keep the name
        if k not in ("DECL_REF_EXPR",) and n.children is not None:
            mc = self.macro_constant(n)
            if mc is not None:
                return mc
        m = getattr(self, "x_" + k, None)
        if m is None:
            self.fail(n, f"expression `{k.lower()}`")
        return m(n, mode) if k in _MODE_KINDS else m(n)

    def macro_constant(self, n) -> E | None:
        if not self.t.named_constants:
            return None
        if n.kind not in ("INTEGER_LITERAL", "FLOATING_LITERAL", "PAREN_EXPR", "BINARY_OPERATOR",
                          "UNARY_OPERATOR", "CSTYLE_CAST_EXPR"):
            return None
        mname = self.model.macro_at(n.start, n.end)
        if mname is None or self.model.source.slice(n.start, n.end) != mname:
            return None
        # every node of an expansion has the use's range: only the outermost one is the macro's whole body
        # (`#define F ((threadIdx.x / 32) + 4)`: its 32 is not F)
        p = n.parent
        while p is not None and p.kind == "UNEXPOSED_EXPR" and (p.start, p.end) == (n.start, n.end):
            p = p.parent
        if p is not None and (p.start, p.end) == (n.start, n.end):
            return None
        v = n.value
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            return None
        t = self.ty(n).unqualified()
        if t.kind != "scalar":
            return None
        if isinstance(v, int):
            v = wrap(v, t) if t.is_int else v
        ident = self.t.ident(mname)
        prev = self.consts.get(ident)
        if prev is not None and (prev[1] != t or prev[2] != v):
            return E(self.t.literal(v, t, self), t, lit=v)
        if prev is None:
            if ident in self.idents:
                return E(self.t.literal(v, t, self), t, lit=v)
            self.consts[ident] = (self.t.literal(v, t, self), t, v)
        return E(ident, t, lit=None)

    def x_PAREN_EXPR(self, n):
        e = self.x(n.children[-1])
        return E(f"({e.text})", e.ct, PREC_PRIMARY, e.tt, e.lit)

    def x_INTEGER_LITERAL(self, n):
        t = self.ty(n)
        v = n.value
        if not isinstance(v, int):
            try:
                v = int(n.text.rstrip("uUlL"), 0)
            except ValueError:
                self.fail(n, f"integer literal `{n.text}`")
        return E(self.t.literal(v, t, self), t, lit=v)

    def x_FLOATING_LITERAL(self, n):
        t = self.ty(n)
        v = n.value
        if not isinstance(v, float):
            try:
                v = float(n.text.rstrip("fFlL"))
            except ValueError:
                self.fail(n, f"floating literal `{n.text}`")
        return E(self.t.literal(v, t, self), t, lit=v)

    def x_CXX_BOOL_LITERAL_EXPR(self, n):
        v = n.text.strip() == "true"
        return E("true" if v else "false", BOOL, lit=v)

    def x_CHARACTER_LITERAL(self, n):
        v = n.value if isinstance(n.value, int) else ord(n.text.strip("'")[-1])
        return E(self.t.literal(v, I32, self), I32, lit=v)

    def x_STRING_LITERAL(self, n):
        self.fail(n, "a string literal")

    def x_CXX_NULL_PTR_LITERAL_EXPR(self, n):
        self.fail(n, "a null pointer")

    def x_GNU_NULL_EXPR(self, n):
        self.fail(n, "a null pointer")

    def x_UNEXPOSED_EXPR(self, n):
        if len(n.children) == 1:
            return self.x(n.children[0])
        self.fail(n, "an expression clang does not expose")

    def x_CXX_UNARY_EXPR(self, n):   # sizeof / alignof
        v = n.value
        if isinstance(v, int):
            t = U64 if self.t.size_t_64 else U32
            return E(self.t.literal(v, t, self), t, lit=v)
        m = re.match(r"sizeof\s*\(\s*([\w\s]+?)\s*\)$", n.text)
        if m:
            tt = self.parse_type(m.group(1))
            s = ct.c_size(tt, {k: [(f, self.decl_type(fn)) for f, fn in v2] for k, v2 in self.u.structs.items()})
            if s is not None:
                return E(self.t.literal(s, U64, self), U64, lit=s)
        self.fail(n, f"`{n.text}`")

    def x_DECL_REF_EXPR(self, n, mode="r"):
        if n.is_warp_size():
            return self.t.warp_size(self)
        r = n.ref
        rk = n.ref_kind
        fr = self.frame
        if r is not None and id(r) in fr.consts:
            return fr.consts[id(r)]
        if r is not None and refs.bound(self, r):
            return refs.use(self, n, r, mode)
        if rk in ("TEMPLATE_NON_TYPE_PARAMETER", "NON_TYPE_TEMPLATE_PARAMETER"):
            name = n.spelling
            if name in fr.subst and isinstance(fr.subst[name], int):
                v = fr.subst[name]
                if fr.is_kernel and self.t.named_template_params:
                    ident = self.t.ident(name)
                    if ident not in self.consts:
                        self.consts[ident] = (self.t.literal(v, I32, self), I32, v)
                    return E(ident, I32)
                return E(self.t.literal(v, I32, self), I32, lit=v)
            self.fail(n, f"template parameter `{name}` without a value")
        if rk == "ENUM_CONSTANT_DECL":
            v = n.value
            if isinstance(v, int):
                return E(self.t.literal(v, I32, self), I32, lit=v)
        if r is None:
            if rk in ("VAR_DECL",):
                v = n.value
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    t = self.ty(n).unqualified()
                    return E(self.t.literal(v, t, self), t, lit=v)
            self.fail(n, f"`{n.spelling}` (declared outside this file)")
        if r.kind == "VAR_DECL" and r.parent is not None and r.parent.kind in ("TRANSLATION_UNIT",) or \
                r.kind == "VAR_DECL" and self.model.function_of(r) is None:
            return self.global_var(n, r, mode)
        if r.kind in ("VAR_DECL", "PARM_DECL"):
            t = self.decl_type(r)
            if t.kind == "pointer" or (t.kind == "array" and id(r) in fr.ptrs):
                return self.t.pointer_value(self, n, self.ptr(n))
            if any(c.kind == "CUDASHARED_ATTR" for c in r.children) and self.name_of(r) not in self.shared:
                self.shared_decl(r)
            name = self.name_of(r)
            if r.kind == "PARM_DECL" and fr.is_kernel:
                return self.t.scalar_param(self, r, name, t)
            if id(r) in fr.ballots:
                return E(name, U32, tt=self.t.ballot_type)
            return E(name, t.unqualified() if t.kind != "array" else t)
        if r.kind in ("FUNCTION_DECL", "FUNCTION_TEMPLATE"):
            self.fail(n, f"a function pointer (`{n.spelling}` used as a value)")
        self.fail(n, f"a reference to `{n.spelling}` ({r.kind.lower()})")

    def global_var(self, n, r, mode) -> E:
        """File-scope variables: constants fold; initialised __constant__ arrays become target constants."""
        t = self.decl_type(r)
        v = n.value
        if t.kind == "scalar" and isinstance(v, (int, float)) and not isinstance(v, bool):
            return E(self.t.literal(v, t.unqualified(), self), t.unqualified(), lit=v)
        is_const = any(c.kind == "CUDACONSTANT_ATTR" for c in r.children) or t.const or \
            (t.kind == "array" and t.elem.const)
        init = self.init_of(r)
        if is_const and init is not None and mode == "r":
            name = self.t.ident(r.spelling)
            if name not in self.const_arrays:
                self.const_arrays[name] = ""   # reserve (recursion)
                tt = t.unqualified() if t.kind != "array" else ct.array(t.elem.unqualified(), t.dims)
                val = self.aggregate(init, tt) if init.kind == "INIT_LIST_EXPR" else self.conv(self.x(init), tt)
                self.const_arrays[name] = self.t.global_const(self, tt, name, val.text)
            return E(name, t)
        if any(c.kind == "CUDACONSTANT_ATTR" for c in r.children):
            self.fail(n, f"`__constant__` variable `{r.spelling}` set by the host (cudaMemcpyToSymbol)")
        self.fail(n, f"file-scope device variable `{r.spelling}`")

    def x_MEMBER_REF_EXPR(self, n, mode="r"):
        b = n.builtin()
        if b is not None:
            return self.t.thread_builtin(b[0], b[1], self)
        if not n.children:
            self.fail(n, f"member `{n.spelling}`")
        base_n = n.children[0]
        bt = self.ty(base_n)
        arrow = "->" in self.model.source.slice(base_n.end, n.end)
        if arrow:
            lv = self.ptr_lvalue(base_n, mode, deref=True)
            # OpenCL spells the element `*p`: `(*p).f`, never `*p.f`
            base = E(lv, _element(bt), PREC_UNARY if lv.startswith("*") else PREC_PRIMARY)
        else:
            base = self.x(base_n, mode)
        t = self.ty(n)
        if bt.kind == "vector" or (arrow and _element(bt).kind == "vector"):
            if n.spelling not in ("x", "y", "z", "w"):
                self.fail(n, f"vector member `{n.spelling}`")
            return E(f"{base.paren(PREC_PRIMARY)}.{n.spelling}", t.unqualified())
        st = _element(bt) if arrow else bt
        if st.kind == "struct":
            return E(f"{base.paren(PREC_PRIMARY)}.{self.t.ident(n.spelling)}", t.unqualified())
        self.fail(n, f"member access `{n.text}`")

    def x_ARRAY_SUBSCRIPT_EXPR(self, n, mode="r"):
        base_n, idx_n = n.children
        bt = self.ty(base_n)
        if bt.kind == "pointer" or (bt.kind == "array" and self._decays_to_root(base_n)):
            text = self.ptr_index(base_n, idx_n, mode)
            return E(text, self.ty(n).unqualified() if self.ty(n).kind != "array" else self.ty(n))
        if bt.kind == "array":
            base = self.x(base_n, mode)
            idx = self.index(self.x(idx_n), idx_n)
            t = self.ty(n)
            return E(f"{base.paren(PREC_PRIMARY)}[{idx.text}]", t.unqualified() if t.kind != "array" else t)
        if bt.kind == "vector":
            v = idx_n.value
            if isinstance(v, int) and 0 <= v < bt.n:
                base = self.x(base_n, mode)
                return E(f"{base.paren(PREC_PRIMARY)}.{'xyzw'[v]}", bt.elem)
        self.fail(n, f"subscript of `{bt}`")

    def _decays_to_root(self, base_n) -> bool:
        """An array expression used through a pointer binding (an array parameter of a device function)."""
        s = base_n.strip
        return s.kind == "DECL_REF_EXPR" and s.ref is not None and id(s.ref) in self.frame.ptrs

    def index(self, e: E, n=None) -> E:
        t = e.ct
        if t.kind != "scalar" or not (t.is_int or t.is_bool):
            self.fail(n, f"an index of type `{t}`")
        if t.bits > 32 or t.bits < 32 or t.is_bool:
            return self.t.convert(e, U32 if not t.is_signed else I32, self, explicit=True)
        if e.tt.kind == "scalar" and e.tt != e.ct and e.tt.bits != 32:
            return self.t.convert(e, I32, self)
        return e

    def x_UNARY_OPERATOR(self, n, mode="r"):
        op = n.op
        c = n.children[0]
        t = self.ty(n)
        if op == "*":
            return E(self.ptr_lvalue(c, mode, deref=True), t.unqualified())
        if op == "&":
            self.fail(n, "taking an address outside a pointer context")
        if op in ("++", "--", "post++", "post--"):
            ctp = self.ty(c)
            if ctp.kind == "pointer":
                return self.t.pointer_step(self, n, c, op)
            e = self.x(c, "rw")
            if op.startswith("post"):
                return E(f"{e.paren(PREC_PRIMARY)}{op[4:]}", e.ct, PREC_PRIMARY)
            return E(f"{op}{e.paren(PREC_UNARY)}", e.ct, PREC_UNARY)
        e = self.x(c)
        if op == "!":
            b = self.to_bool(e, c)
            return E(f"!{b.paren(PREC_UNARY)}", BOOL, PREC_UNARY)
        if op in ("-", "+", "~"):
            pt = ct.promote(e.ct)
            if pt.kind == "unknown":
                pt = e.ct
            e = self.conv(e, pt)
            if e.lit is not None and op == "-" and pt.kind == "scalar":
                v = -e.lit
                if pt.is_int:
                    v = wrap(v, pt)
                return E(self.t.literal(v, pt, self), pt, PREC_UNARY if (v < 0) else PREC_PRIMARY, lit=v)
            if op == "+":
                return e
            if op == "-" and pt.kind == "scalar" and pt.is_int and not pt.is_signed:
                return self.t.unsigned_negate(self, e)
            return E(f"{op}{e.paren(PREC_UNARY)}", pt, PREC_UNARY, tt=e.tt if e.tt.kind == "scalar" else None)
        if op in ("__extension__",):
            return e
        self.fail(n, f"unary operator `{op}`")

    def x_BINARY_OPERATOR(self, n, mode="r"):
        op = n.op
        a_n, b_n = n.children
        if op == "=":
            return self.assign(n, a_n, b_n)
        if op == ",":
            a, b = self.x(a_n), self.x(b_n)
            return E(f"{a.paren(PREC_ASSIGN)}, {b.paren(PREC_ASSIGN)}", b.ct, PREC_COMMA)
        at, bt = self.ty(a_n), self.ty(b_n)
        if _ptrlike(at) or _ptrlike(bt):
            if op in _COMPARE:
                self.fail(n, f"a pointer comparison `{n.text}`")
            if op == "-" and _ptrlike(at) and _ptrlike(bt):
                self.fail(n, f"a pointer difference `{n.text}`")
            return self.t.pointer_value(self, n, self.ptr(n))
        if op in ("&&", "||"):
            a, b = self.cond(a_n), self.cond(b_n)
            p = BINARY_PREC[op]
            return E(f"{a.paren(p)} {op} {b.paren(p - 1)}", BOOL, p)
        # lane and warp ids written against warpSize map to the subgroup builtins
        if op in ("%", "/") and b_n.is_warp_size():
            special = self._lane_or_warp(a_n, op)
            if special is not None:
                return special
        a, b = self.x(a_n), self.x(b_n)
        return self.binary_value(op, a, b, n)

    def _lane_or_warp(self, a_n, op) -> E | None:
        p = self.an.poly(a_n)
        if p is None or not self._one_dimensional():
            return None
        if p.terms != {("threadIdx.x",): 1}:
            return None
        return self.t.lane_id(self) if op == "%" else self.t.warp_id(self)

    def _one_dimensional(self) -> bool:
        if getattr(self, "_1d", None) is None:
            blk = self.launch.block if self.launch is not None else None
            if blk is not None and blk[1] is not None and blk[2] is not None:
                self._1d = blk[1] == 1 and blk[2] == 1
            else:
                uses = set()
                for f in self._reachable(self.fn).values():
                    for nd in f.node.walk():
                        b = nd.builtin()
                        if b is not None and b[0] in ("threadIdx", "blockDim"):
                            uses.add(b[1])
                self._1d = not (uses & {"y", "z"})
        return self._1d

    def binary_value(self, op, a: E, b: E, n) -> E:
        p = BINARY_PREC[op]
        if op in ("<<", ">>"):
            lt = ct.promote(a.ct)
            rt = ct.promote(b.ct)
            a = self.conv(a, lt)
            b = self.conv(b, rt)
            if b.ct.bits != lt.bits and not self.t.c_conversions and b.lit is None:
                b = self.t.convert(b, U32 if not lt.is_signed else I32, self, explicit=True) \
                    if b.ct.bits > 32 or lt.bits > 32 else b
            return E(f"{a.paren(p)} {op} {b.paren(p - 1)}", lt, p)
        ca, cb = a.ct, b.ct
        if ca.kind == "vector" or cb.kind == "vector":
            if op in _COMPARE or not (ca.kind == cb.kind == "vector" and ca.same(cb)):
                self.fail(n, f"vector arithmetic `{n.text}` (CUDA vector types have no operators)")
        c = ct.common(ca, cb)
        if op == "%" and c.kind == "scalar" and c.is_float:
            self.fail(n, "`%` on floating-point values")
        a = self.conv(a, c, implicit_ok=True)
        b = self.conv(b, c, implicit_ok=True)
        rt = BOOL if op in _COMPARE else c
        if op == "%" and c.is_signed and not self._nonneg(n):
            return self.t.signed_remainder(self, a, b, c)
        if a.lit is not None and b.lit is not None and c.kind == "scalar" and op in ("+", "-", "*") and c.is_int:
            v = wrap({"+": a.lit + b.lit, "-": a.lit - b.lit, "*": a.lit * b.lit}[op], c)
            if a.text.lstrip("-").replace("u", "").isdigit() and b.text.lstrip("-").replace("u", "").isdigit():
                return E(self.t.literal(v, c, self), c, lit=v)
        tt = None
        if op not in _COMPARE and a.tt == b.tt and a.tt != c:
            tt = a.tt
        return E(f"{a.paren(p)} {op} {b.paren(p - 1)}", rt, p, tt=tt)

    def _nonneg(self, n) -> bool:
        """Both operands of a signed `%` are known to be non-negative (then `%` means the same everywhere)."""
        if n is None or n.kind not in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR"):
            return False
        return all(self.nonneg(c) for c in n.children[:2])

    def nonneg(self, node, depth: int = 0) -> bool:
        """The value is >= 0: thread indices, non-negative constants, and loop counters that start
        non-negative and only grow, halve or shift (`i++`, `i += 4`, `s >>= 1`, `o /= 2`)."""
        if depth > 6:
            return False
        v = node.value
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return v >= 0
        p = self.an.poly(node)
        if p is None:
            s = node.strip
            if s.kind == "BINARY_OPERATOR" and s.op in ("/", "%", ">>", "&", "*", "+") and len(s.children) == 2:
                return all(self.nonneg(c, depth + 1) for c in s.children)
            return False
        if p.constant < 0 or any(c < 0 for c in p.terms.values()):
            return False
        for var in p.variables():
            if var.split(".")[0] in ("threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize"):
                continue
            decl = self._local_named(node, var)
            if decl is None or not self._nonneg_var(decl, depth + 1):
                return False
        return True

    def _local_named(self, node, name):
        """The declaration of `name` visible at `node` (innermost scope first)."""
        for a in node.ancestors():
            for c in a.children:
                if c.start > node.start:
                    break
                if c.kind == "DECL_STMT":
                    for d in c.children:
                        if d.kind == "VAR_DECL" and d.spelling == name:
                            return d
                elif c.kind == "PARM_DECL" and c.spelling == name:
                    return c
        return None

    def _nonneg_var(self, decl, depth) -> bool:
        key = ("nonneg", id(decl))
        cache = self.frame.types
        if key in cache:
            return cache[key]
        cache[key] = False          # cycle guard
        ok = False
        if decl.kind == "VAR_DECL":
            init = self.init_of(decl)
            ok = init is not None and self.nonneg(init, depth)
            fn = decl.enclosing("FUNCTION_DECL", "FUNCTION_TEMPLATE")
            for w in (fn.walk() if fn is not None and ok else ()):
                if w.kind == "UNARY_OPERATOR" and w.op in ("--", "post--") or \
                        w.kind in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR"):
                    if not w.children:
                        continue
                    t = w.children[0].strip
                    if t.kind != "DECL_REF_EXPR" or t.ref is not decl:
                        continue
                    if w.kind == "UNARY_OPERATOR":
                        ok = False
                    elif w.kind == "BINARY_OPERATOR" and w.op == "=":
                        ok = self.nonneg(w.children[1], depth)
                    elif w.kind == "COMPOUND_ASSIGNMENT_OPERATOR":
                        ok = w.op in ("+=", "*=", "/=", ">>=", "<<=", "%=", "&=", "|=") and \
                            self.nonneg(w.children[1], depth)
                    if not ok:
                        break
        cache[key] = ok
        return ok

    def assign(self, n, a_n, b_n) -> E:
        at = self.ty(a_n)
        if at.kind == "pointer":
            return self.t.pointer_assign(self, n, a_n, b_n, "=")
        lv = self.x(a_n, "w")
        if at.kind == "struct" and b_n.strip.kind == "INIT_LIST_EXPR":
            rv = self.aggregate(b_n.strip, at)
        else:
            rv = self.conv(self.x(b_n), at.unqualified(), implicit_ok=True)
        return E(f"{lv.paren(PREC_UNARY)} = {rv.paren(PREC_ASSIGN)}", at.unqualified(), PREC_ASSIGN)

    def x_COMPOUND_ASSIGNMENT_OPERATOR(self, n, mode="r"):
        a_n, b_n = n.children
        op = n.op
        at = self.ty(a_n).unqualified()
        if at.kind == "pointer":
            return self.t.pointer_assign(self, n, a_n, b_n, op)
        bop = op[:-1]
        b = self.x(b_n)
        if bop in ("<<", ">>"):
            lv = self.x(a_n, "rw")
            bt = ct.promote(b.ct)
            b = self.conv(b, bt)
            return E(f"{lv.paren(PREC_UNARY)} {op} {b.paren(PREC_ASSIGN)}", at, PREC_ASSIGN)
        c = ct.common(at, b.ct)
        if bop == "%" and at.is_signed and not self._nonneg(n):
            lv = self.x(a_n, "rw")
            if not self._pure(a_n):
                self.fail(n, f"`{n.text}` (signed remainder of an lvalue with side effects)")
            r = self.t.signed_remainder(self, self.conv(self.x(a_n), c), self.conv(b, c), c)
            return E(f"{lv.paren(PREC_UNARY)} = {self.conv(r, at).paren(PREC_ASSIGN)}", at, PREC_ASSIGN)
        if c.same(at) or self.t.c_conversions:
            lv = self.x(a_n, "rw")
            b = self.conv(b, at, implicit_ok=True)
            return E(f"{lv.paren(PREC_UNARY)} {op} {b.paren(PREC_ASSIGN)}", at, PREC_ASSIGN)
        # a op= b with a wider common type: a = A(a op b)
        if not self._pure(a_n):
            self.fail(n, f"`{n.text}` (mixed-type compound assignment to an lvalue with side effects)")
        lv = self.x(a_n, "rw")
        val = self.binary_value(bop, self.x(a_n), b, n)
        return E(f"{lv.paren(PREC_UNARY)} = {self.conv(val, at).paren(PREC_ASSIGN)}", at, PREC_ASSIGN)

    def _pure(self, n) -> bool:
        for x in n.walk():
            if x.kind == "CALL_EXPR" or (x.kind == "UNARY_OPERATOR" and x.op in ("++", "--", "post++", "post--")):
                return False
            if x.kind in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR") and \
                    (x.kind == "COMPOUND_ASSIGNMENT_OPERATOR" or x.op == "="):
                return False
        return True

    def x_CONDITIONAL_OPERATOR(self, n):
        c_n, a_n, b_n = n.children
        t = self.ty(n)
        if t.kind == "pointer":
            return self.t.pointer_value(self, n, self.ptr(n))
        c = self.cond(c_n)
        a, b = self.x(a_n), self.x(b_n)
        if t.kind in ("scalar", "vector"):
            a, b = self.conv(a, t), self.conv(b, t)
        return E(f"{c.paren(PREC_COND - 1)} ? {a.paren(PREC_ASSIGN)} : {b.paren(PREC_COND)}", t.unqualified(),
                 PREC_COND)

    def _cast(self, n) -> E:
        t = self.ty(n)
        inner = [c for c in n.children if c.kind not in _NON_EXPR]
        if not inner:
            self.fail(n, "an empty cast")
        src_n = inner[-1]
        st = self.ty(src_n)
        if t.kind == "pointer" or st.kind == "pointer":
            if t.kind == "pointer" and _ptrlike(st) and _element(st).unqualified() == t.elem.unqualified():
                return self.t.pointer_value(self, n, self.ptr(n))
            self.fail(n, f"a pointer cast `{n.text}` (reinterpreting memory)")
        if t.kind == "struct" and src_n.strip.kind == "INIT_LIST_EXPR":
            return self.aggregate(src_n.strip, t)
        if t.kind == "vector" and src_n.strip.kind == "INIT_LIST_EXPR":
            return self.aggregate(src_n.strip, t)
        if n.kind == "CXX_REINTERPRET_CAST_EXPR":
            self.fail(n, f"`{n.text}`")
        e = self.x(src_n)
        if t.kind == "void":
            return e
        if t.kind not in ("scalar", "vector"):
            self.fail(n, f"a cast to `{n.type}`")
        return self.t.convert(e, t.unqualified(), self, explicit=True)

    x_CSTYLE_CAST_EXPR = _cast
    x_CXX_STATIC_CAST_EXPR = _cast
    x_CXX_FUNCTIONAL_CAST_EXPR = _cast
    x_CXX_CONST_CAST_EXPR = _cast
    x_CXX_REINTERPRET_CAST_EXPR = _cast

    def x_INIT_LIST_EXPR(self, n):
        return self.aggregate(n, self.ty(n))

    def x_CXX_UNRESOLVED_CONSTRUCT_EXPR(self, n):   # T(x) in a template
        t = self.parse_type(n.type)
        args = [c for c in n.children if c.kind not in _NON_EXPR]
        if t.kind == "scalar" and len(args) == 1:
            return self.t.convert(self.x(args[0]), t, self, explicit=True)
        if t.kind == "scalar" and not args:
            return self.zero(t)
        self.fail(n, f"`{n.text}`")

    def x_CXX_TEMPORARY_OBJECT_EXPR(self, n):
        return self.x_CALL_EXPR(n)

    def x_CXX_CONSTRUCT_EXPR(self, n):
        return self.x_CALL_EXPR(n)

    # ------------------------------------------------------------------ pointers
    def root_of_decl(self, decl) -> Root | None:
        """Root for an array declaration (shared, local, constant)."""
        t = self.decl_type(decl)
        if t.kind != "array":
            return None
        if any(c.kind == "CUDASHARED_ATTR" for c in decl.children):
            if self.name_of(decl) not in self.shared:
                self.shared_decl(decl)
            name = self.name_of(decl)
            return Root(name, "shared", _element(t) if len(t.dims) == 1 else ct.array(t.elem, t.dims[1:]),
                        "local", decl, t.dims)
        if self.model.function_of(decl) is None:
            e = self.global_var_ref(decl)
            return Root(e, "constant", _element(t) if len(t.dims) == 1 else ct.array(t.elem, t.dims[1:]),
                        "constant", decl, t.dims)
        return Root(self.name_of(decl), "local", _element(t) if len(t.dims) == 1 else ct.array(t.elem, t.dims[1:]),
                    "private", decl, t.dims)

    def global_var_ref(self, decl) -> str:
        t = self.decl_type(decl)
        is_const = any(c.kind == "CUDACONSTANT_ATTR" for c in decl.children) or t.const or \
            (t.kind == "array" and t.elem.const)
        init = self.init_of(decl)
        if not (is_const and init is not None):
            self.fail(decl, f"file-scope device variable `{decl.spelling}`")
        name = self.t.ident(decl.spelling)
        if name not in self.const_arrays:
            self.const_arrays[name] = ""
            tt = ct.array(t.elem.unqualified(), t.dims)
            val = self.aggregate(init, tt)
            self.const_arrays[name] = self.t.global_const(self, tt, name, val.text)
        return name

    def ptr(self, n):
        """Resolve a pointer-valued expression to (root, offset E or None)."""
        s = n
        while s.kind == "PAREN_EXPR" or (s.kind in _CASTS and self.ty(s).kind == "pointer"):
            inner = [c for c in s.children if c.kind not in _NON_EXPR]
            if s.kind in _CASTS:
                st = self.ty(inner[-1])
                if not _ptrlike(st) or _element(st).unqualified() != _element(self.ty(s)).unqualified():
                    self.fail(s, f"a pointer cast `{s.text}` (reinterpreting memory)")
            s = inner[-1]
        k = s.kind
        fr = self.frame
        if k == "UNEXPOSED_EXPR" and len(s.children) == 1:
            return self.ptr(s.children[0])
        if k == "DECL_REF_EXPR":
            r = s.ref
            if r is None:
                self.fail(s, f"pointer `{s.spelling}` declared outside this file")
            b = fr.ptrs.get(id(r))
            if b is not None:
                return self.t.binding_value(self, b)
            root = self.root_of_decl(r)
            if root is not None:
                return root, None
            self.fail(s, f"pointer `{s.spelling}` whose target is unknown")
        if k == "BINARY_OPERATOR" and s.op in ("+", "-"):
            a_n, b_n = s.children
            if _ptrlike(self.ty(a_n)):
                root, off = self.ptr(a_n)
                d = self.x(b_n)
                return root, self.add_offset(off, d, s.op)
            if s.op == "+" and _ptrlike(self.ty(b_n)):
                root, off = self.ptr(b_n)
                return root, self.add_offset(off, self.x(a_n), "+")
        if k == "UNARY_OPERATOR" and s.op == "&":
            c = s.children[0].strip
            if c.kind == "ARRAY_SUBSCRIPT_EXPR":
                base_n, idx_n = c.children
                bt = self.ty(base_n)
                if _ptrlike(bt) and (bt.kind == "pointer" or len(bt.dims) == 1 or self._decays_to_root(base_n)):
                    root, off = self.ptr(base_n)
                    return root, self.add_offset(off, self.x(idx_n), "+")
                if bt.kind == "array":
                    self.fail(s, f"a pointer into the multi-dimensional array `{base_n.text}`")
            if c.kind == "UNARY_OPERATOR" and c.op == "*":
                return self.ptr(c.children[0])
            if c.kind == "DECL_REF_EXPR" and c.ref is not None:
                r = c.ref
                t = self.decl_type(r)
                if refs.bound(self, r):
                    self.fail(s, f"the address of the reference `{r.spelling}`")
                if t.kind in ("scalar", "vector", "struct"):
                    if any(x.kind == "CUDASHARED_ATTR" for x in r.children):
                        if self.name_of(r) not in self.shared:
                            self.shared_decl(r)
                        return Root(self.name_of(r), "shared_scalar", t.unqualified(), "local", r), None
                    return Root(self.name_of(r), "scalar", t.unqualified(), "private", r), None
            if c.kind == "MEMBER_REF_EXPR":
                lv = self.x(c, "rw")
                base = self._member_base_root(c)
                if base is not None and base.space in ("global", "local"):
                    # a field of a buffer or shared element (`&table[i].key`): atomics address it in place
                    kind = "buffer_field" if base.space == "global" else "shared_scalar"
                    return Root(lv.text, kind, self.ty(c).unqualified(), base.space, None), None
                return Root(lv.text, "scalar", self.ty(c).unqualified(), "private", None), None
            self.fail(s, f"the address `{s.text}`")
        if k == "UNARY_OPERATOR" and s.op in ("++", "--", "post++", "post--"):
            return self.t.pointer_step_value(self, s)
        if k == "CONDITIONAL_OPERATOR":
            c_n, a_n, b_n = s.children
            ra, oa = self.ptr(a_n)
            rb, ob = self.ptr(b_n)
            if ra.key != rb.key:
                self.fail(s, f"`{s.text}` selects between pointers into different arrays")
            c = self.cond(c_n)
            z = E(self.t.literal(0, I32, self), I32, lit=0)
            oa, ob = oa or z, ob or z
            t = ct.common(oa.ct, ob.ct)
            oa, ob = self.conv(oa, t), self.conv(ob, t)
            return ra, E(f"{c.paren(PREC_COND - 1)} ? {oa.paren(PREC_ASSIGN)} : {ob.paren(PREC_COND)}", t, PREC_COND)
        if k == "ARRAY_SUBSCRIPT_EXPR":
            self.fail(s, f"a pointer into a multi-dimensional array `{s.text}`")
        if k == "CALL_EXPR":
            self.fail(s, f"a pointer returned by `{self.callee_name(s)}`")
        if k in ("INTEGER_LITERAL", "CXX_NULL_PTR_LITERAL_EXPR", "GNU_NULL_EXPR"):
            self.fail(s, "a null pointer")
        self.fail(s, f"the pointer expression `{s.text}`")

    def _member_base_root(self, c) -> Root | None:
        """The root of the element whose field `c` names (`p[i].f`, `p->f`, `p[i].a.b`), or None."""
        s = c
        while s.kind == "MEMBER_REF_EXPR" and s.children:
            b = s.children[0].strip
            if "->" in self.model.source.slice(b.end, s.end):
                return self._try_root(b)
            s = b
        if s.kind == "ARRAY_SUBSCRIPT_EXPR" and _ptrlike(self.ty(s.children[0])):
            return self._try_root(s.children[0])
        return None

    def _try_root(self, n) -> Root | None:
        try:
            return self.ptr(n)[0]
        except TranslationError:
            return None

    def _root_for_expr(self, n) -> Root:
        s = n.strip
        while s.kind == "ARRAY_SUBSCRIPT_EXPR":
            s = s.children[0].strip
        if s.kind == "DECL_REF_EXPR" and s.ref is not None:
            r = self.root_of_decl(s.ref)
            if r is not None:
                return r
        self.fail(n, f"the array `{n.text}`")

    def add_offset(self, off: E | None, d: E, op: str) -> E:
        dt = ct.promote(d.ct)
        if not dt.is_int:
            self.fail(None, f"pointer arithmetic with `{dt}`")
        d = self.conv(d, dt)
        if off is None:
            if op == "-":
                return self.binary_value("-", E(self.t.literal(0, dt, self), dt, lit=0), d, None)
            return d
        return self.binary_value(op, off, d, None)

    def ptr_index(self, base_n, idx_n, mode) -> str:
        """`p[i]` for a pointer p."""
        root, off = self.ptr(base_n)
        i = self.x(idx_n)
        return self.t.deref(self, root, off, i, mode, base_n)

    def ptr_lvalue(self, n, mode, deref=True) -> str:
        """`*p` (deref) for a pointer-valued expression n."""
        root, off = self.ptr(n)
        return self.t.deref(self, root, off, None, mode, n)

    # ------------------------------------------------------------------ calls
    def callee_name(self, n) -> str:
        if n.spelling:
            return n.spelling
        for c in n.children[:1]:
            for x in c.walk():
                if x.kind in ("DECL_REF_EXPR", "OVERLOADED_DECL_REF", "MEMBER_REF_EXPR") and x.spelling:
                    return x.spelling
        return ""

    def call_args(self, n) -> list:
        if n.kind in ("CXX_CONSTRUCT_EXPR", "CXX_TEMPORARY_OBJECT_EXPR"):
            return [c for c in n.children if c.kind not in _NON_EXPR]
        ch = n.children
        if ch and ch[0].kind in ("DECL_REF_EXPR", "MEMBER_REF_EXPR", "OVERLOADED_DECL_REF", "UNEXPOSED_EXPR") and \
                (ch[0].spelling == n.spelling or not ch[0].spelling) and \
                (ch[0].start <= n.start or ch[0].kind != "DECL_REF_EXPR"):
            first = ch[0]
            if first.kind in ("DECL_REF_EXPR", "OVERLOADED_DECL_REF", "UNEXPOSED_EXPR") and \
                    self.model.source.slice(first.start, first.end).split("<")[0].strip() == self.callee_name(n):
                return ch[1:]
        return n.args()

    def _callee_fn(self, n):
        """The user function (model Function) a call resolves to, or None for builtins / unknown."""
        r = n.ref
        if r is not None and id(r) in self.u.fn_by_node:
            return self.u.fn_by_node[id(r)]
        name = self.callee_name(n)
        cands = [f for f in self.u.fns_by_name.get(name, []) if f.body is not None]
        if not cands:
            return None
        nargs = len(self.call_args(n)) if n.kind == "CALL_EXPR" else 0
        for f in cands:
            if len(f.params) == nargs:
                return f
        return cands[0]

    def call_type(self, n) -> CType:
        ft = self._functional_cast_type(n)
        if ft is not None:
            return ft
        name = self.callee_name(n)
        fn = self._callee_fn(n)
        if fn is not None:
            subst = self._deduce(fn, n)
            rs = result_type_spelling(fn.node, canonical=False) or "void"
            cs = result_type_spelling(fn.node) or rs
            return self.parse_type(cs if "type-parameter" not in cs else rs, subst)
        sig = self.signature(n)
        if sig is not None and sig[0].kind != "unknown":
            return sig[0]
        t = self.t.builtin_type(self, name, n)
        if t is not None:
            return t
        return self.parse_type(n.type)

    def signature(self, n):
        """(return type, [param types]) from the callee reference's function type spelling."""
        if not n.children:
            return None
        c = n.children[0]
        ts = c.type if c.kind in ("DECL_REF_EXPR", "UNEXPOSED_EXPR") else ""
        m = re.match(r"^(.*?)\s*\((.*)\)\s*$", ts or "")
        if not m or "dependent" in ts:
            return None
        params = [p.strip() for p in split_top_level(m.group(2))] if m.group(2).strip() not in ("", "void") else []
        return self.parse_type(m.group(1)), [self.parse_type(p) for p in params]

    def _deduce(self, fn, n) -> dict:
        """Template arguments of a call to a device function template: explicit `<...>` or deduced."""
        if not fn.is_template:
            return dict(self.frame.subst) if self.frame else {}
        from porter.translate.launch import template_params
        params = template_params(fn.node)
        subst = {}
        text = self.model.source.slice(n.start, n.end)
        m = re.match(r"^\s*[\w:]+\s*<(.*?)>\s*\(", text)
        if m:
            for (pname, kind, _d), a in zip(params, split_top_level(m.group(1))):
                if kind == "type":
                    subst[pname] = self.parse_type(a)
                else:
                    v = None
                    try:
                        v = int(a, 0)
                    except ValueError:
                        v = self.model.macro_value(a)
                        if v is None and self.frame and a in self.frame.subst:
                            v = self.frame.subst[a]
                    subst[pname] = v
        args = self.call_args(n)
        for p, a in zip(fn.params, args):
            pt = p.node.type
            for pname, kind, _d in params:
                if kind == "type" and pname not in subst:
                    at = self.ty(a)
                    if re.fullmatch(rf"(const\s+)?{pname}(\s*&)?", pt.strip()):
                        subst[pname] = at.unqualified()
                    elif re.fullmatch(rf"(const\s+)?{pname}\s*\*.*", pt.strip()) and _ptrlike(at):
                        subst[pname] = _element(at).unqualified()
        for pname, kind, d in params:
            if pname not in subst and d is not None:
                subst[pname] = self.parse_type(d.spelling) if kind == "type" else d.value
        return subst

    def _functional_cast_type(self, n) -> CType | None:
        """`T(x)` in a template body: a CALL_EXPR whose first child is the type."""
        if n.kind == "CALL_EXPR" and n.children and n.children[0].kind == "TYPE_REF":
            return self.parse_type(n.children[0].spelling)
        return None

    def x_CALL_EXPR(self, n):
        ft = self._functional_cast_type(n)
        if ft is not None:
            args = [c for c in n.children[1:] if c.kind not in _NON_EXPR]
            if ft.kind == "scalar" and len(args) == 1:
                return self.t.convert(self.x(args[0]), ft, self, explicit=True)
            if ft.kind == "scalar" and not args:
                return self.zero(ft)
            if ft.kind == "vector":
                parts = [self.conv(self.x(a), ft.elem).text for a in args]
                return E(self.t.vector_constructor(self, ft, parts), ft)
            self.fail(n, f"the constructor `{n.text}`")
        name = self.callee_name(n)
        if name == "operator=" and self._callee_fn(n) is None:
            return refs.struct_assign(self, n)
        if n.kind == "CALL_EXPR" and n.children and n.children[0].kind == "DECL_REF_EXPR" and \
                n.children[0].ref_kind in ("VAR_DECL", "PARM_DECL") and not refs.is_copy(self, n):
            self.fail(n, f"a call through the function pointer `{name}`")
        if name == "dim3" or n.kind in ("CXX_CONSTRUCT_EXPR", "CXX_TEMPORARY_OBJECT_EXPR") or \
                (name and self.parse_type(name).kind in ("vector", "struct")):
            t = self.ty(n)
            args = self.call_args(n)
            if t.kind == "vector":
                if len(args) == 1 and self.ty(args[0]).same(t):
                    return self.x(args[0])
                parts = [self.conv(self.x(a), t.elem).text for a in args]
                while len(parts) < t.n:
                    parts.append(self.t.literal(1, t.elem, self))
                return E(self.t.vector_constructor(self, t, parts), t)
            if t.kind == "struct" and len(args) == 1 and self.ty(args[0]).same(t):
                return self.x(args[0])
            if t.kind in ("struct", "vector") and not args:
                return self.zero(t)
            if t.kind in ("scalar",) and len(args) == 1:
                return self.conv(self.x(args[0]), t)
            self.fail(n, f"the constructor call `{n.text}`")
        fn = self._callee_fn(n)
        if fn is not None:
            if not fn.is_device_code:
                self.fail(n, f"a call to host function `{name}` from device code")
            return self.user_call(fn, n)
        args = self.call_args(n)
        e = self.t.call(self, name, n, args)
        if e is not None:
            return e
        if name in ("printf", "fprintf", "puts"):
            self.fail(n, "`printf` in device code")
        if name in ("malloc", "free", "cudaMalloc", "cudaFree"):
            self.fail(n, f"`{name}` in device code")
        if name.startswith("cuda") or name.startswith("cublas"):
            self.fail(n, f"a CUDA runtime call `{name}` in device code (dynamic parallelism)", "CP905")
        self.fail(n, f"a call to `{name}` (no device definition in this file and no target equivalent)")

    def check_mask(self, n, mask_n):
        """Full-mask *_sync intrinsics only: a partial mask selects lanes no target can select."""
        if mask_n is None:
            return
        s = mask_n.strip
        if s.kind == "CALL_EXPR" and self.callee_name(s) == "__activemask":
            return
        v = mask_n.value
        if isinstance(v, int) and (v & 0xffffffff) == 0xffffffff:
            return
        self.fail(mask_n, f"a partial or non-constant lane mask `{mask_n.text}`")

    def user_call(self, fn, n) -> E:
        if any(f is fn for f, _k in self.stack) or fn is self.fn:
            self.fail(n, f"recursion (`{fn.name}` calls itself)")
        subst = self._deduce(fn, n)
        args = self.call_args(n)
        # default arguments
        params = fn.params
        if len(args) > len(params):
            self.fail(n, f"a variadic call to `{fn.name}`")
        key_parts, binds = [], []
        for i, p in enumerate(params):
            pt = self.parse_type(p.node.type if "type-parameter" in p.node.canonical_type.spelling or
                                 p.node.type.strip() in subst else p.node.canonical_type.spelling, subst)
            if i < len(args):
                a = args[i]
            else:
                d = [c for c in p.node.children if c.kind not in _NON_EXPR and not c.kind.endswith("_ATTR")]
                if not d:
                    self.fail(n, f"a call to `{fn.name}` with missing arguments")
                a = d[-1]
            if pt.kind == "pointer" or pt.kind == "array":
                root, off = self.ptr(a)
                key_parts.append(self.t.pointer_param_key(self, root))
                binds.append(("ptr", p, root, off, pt, a))
            elif pt.ref:
                kp, bind = refs.ref_arg(self, fn, p, pt, a)
                key_parts.append(kp)
                binds.append(bind)
            else:
                e = self.conv(self.x(a), pt.unqualified())
                key_parts.append(("val",))
                binds.append(("val", p, e, None, pt, a))
        refs.check_call(self, fn, n, binds)
        key = (id(fn.node), tuple(sorted((k, str(v)) for k, v in subst.items())), tuple(key_parts))
        if key not in self.functions:
            self.specialize(fn, key, subst, binds, n)
        fname = self.functions[key][0]
        call_args = []
        for kind, p, v, off, pt, a in binds:
            if kind == "ptr":
                call_args += self.t.pointer_arg(self, v, off, a)
            else:
                call_args.append(v.text)
        rt = self.call_type(n)
        return E(f"{fname}({', '.join(call_args)})", rt.unqualified())

    def specialize(self, fn, key, subst, binds, call_node):
        self.functions[key] = (None, None)   # placeholder (callees first)
        saved = (self.frame, self.lines, self.indent)
        self.stack.append((fn, key))
        fr = Frame(fn, subst, False)
        self.frame = fr
        rs = result_type_spelling(fn.node, canonical=False) or "void"
        cs = result_type_spelling(fn.node) or rs
        fr.ret = self.parse_type(cs if "type-parameter" not in cs else rs, subst)
        if fr.ret.kind == "pointer":
            self.fail(fn.node, f"device function `{fn.name}` returning a pointer")
        refs.check_return(self, fn, fr.ret)
        params = []
        for kind, p, v, off, pt, _a in binds:
            pname = self.name_of(p.node)
            if kind == "ptr":
                params += self.t.pointer_param(self, fr, p.node, pname, v, pt)
            elif kind == "ref":
                params.append(refs.ref_param(self, fr, p, pt, pname, v, off))
            else:
                t = pt.unqualified()
                if t.kind == "struct":
                    self.use_struct(t.name, p.node)
                params.append(f"{self.t.type_name(t, self)} {pname}")
        fname = self.t.function_name(self, fn, key, subst, binds)
        self.functions[key] = (fname, None)
        self.lines, self.indent = [], 1
        if fn.body is None:
            self.fail(call_node, f"`{fn.name}` has no body in this file")
        self.block_children(fn.body)
        body = self.lines
        head = self.t.function_head(self, fr.ret, fname, params)
        text = "\n".join([head + " {"] + body + ["}"])
        self.stack.pop()
        self.frame, self.lines, self.indent = saved
        # keep callees before callers
        del self.functions[key]
        self.functions[key] = (fname, text)

    # ------------------------------------------------------------------ results
    def shared_bytes(self):
        total = 0
        for s in self.shared.values():
            if s["extern"]:
                continue
            size = ct.c_size(s["type"], {k: self.struct_fields(k) for k in self.struct_used})
            total += size or 0
        return total


_MODE_KINDS = {"DECL_REF_EXPR", "MEMBER_REF_EXPR", "ARRAY_SUBSCRIPT_EXPR", "UNARY_OPERATOR",
               "BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR"}


def _ptrlike(t: CType) -> bool:
    return t is not None and t.kind in ("pointer", "array")


def _element(t: CType) -> CType:
    if t.kind == "pointer":
        return t.elem
    if t.kind == "array":
        if len(t.dims) > 1:
            return ct.array(t.elem, t.dims[1:])
        return t.elem
    return ct.UNKNOWN


