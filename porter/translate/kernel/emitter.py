"""The one walk: a kernel's Node tree (and the __device__ functions it calls) -> target text. The emitter knows C
semantics (types, the usual arithmetic conversions, pointers as array + offset, the warp-synchronous tail
lowering); the target (porter.translate.kernel.target.Target subclasses) knows how to spell them."""
from __future__ import annotations

import ctypes
import re

from porter.analysis.affine import analysis
from porter.frontend.model import MAX_NESTING
from porter.translate import warp_sizing
from porter.translate.kernel import coop
from porter.translate.kernel import device_globals
from porter.translate.kernel import ctype as ct
from porter.translate.kernel import refs
from porter.translate.kernel import struct_layout
from porter.translate.kernel import struct_params
from porter.translate.kernel import struct_bases
from porter.translate.kernel import traits
from porter.translate.kernel import warp32
from porter.translate.kernel.calls import CallsMixin, Frame
from porter.translate.kernel.expressions import ExpressionsMixin
from porter.translate.kernel.pointers import PointersMixin, Root
from porter.translate.kernel.statements import StatementsMixin
from porter.translate.kernel.target import Target, TranslationError
from porter.translate.kernel.typeinfo import TypesMixin, element


class Unit:
    """Per-file facts every kernel translation shares."""

    def __init__(self, model, target: Target, options: dict):
        self.model = model
        self.target = target
        self.options = options
        self.an = analysis(model)
        self.structs: dict[str, list] = {}
        self.struct_decls: dict = {}        # name -> STRUCT_DECL node (struct_layout.py reads clang's layout)
        self.struct_order: list[str] = []
        for n in model.of_kind("STRUCT_DECL", "CLASS_DECL"):
            if not n.spelling or n.spelling.startswith("__cuport"):
                continue
            fields = [(c.spelling, c) for c in n.children if c.kind == "FIELD_DECL"]
            fields = (struct_bases.inherited(self, n, fields) or []) + fields     # a base's fields first
            if fields:
                self.structs[n.spelling] = fields
                self.struct_decls[n.spelling] = n
                self.struct_order.append(n.spelling)
        self.struct_names = set(self.structs)
        # plain struct templates, instantiated as plain structs where kernels use them (class_templates.py)
        from porter.translate.kernel import class_templates
        self.class_templates = class_templates.collect(model)
        self.fn_by_node = {id(f.node): f for f in model.functions}
        self.fns_by_name: dict[str, list] = {}
        for f in model.functions:
            self.fns_by_name.setdefault(f.name, []).append(f)


class KernelEmitter(TypesMixin, StatementsMixin, ExpressionsMixin, PointersMixin, CallsMixin):
    """One kernel (or one template instantiation) -> target text: the walk is split by topic over the mixins
    (typeinfo.py, statements.py, expressions.py, pointers.py, calls.py); this class holds the state and the entry."""
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
        self.at_stmt = None                        # the statement being emitted (statements.stmt)
        self.root_aliases: dict = {}               # root key -> keys a pointer bound to it was re-pointed to
        self.has_barrier = False
        self.uses_double = False
        self.min_subgroup = None
        self.warp_plan = None
        self.warp32 = None                         # warp32.Warp32: CUDA's 32-lane warps emulated in shared memory
        self.lowered_spans: list[tuple[int, int]] = []
        self._tmp = 0
        self.idents: set[str] = set()
        self.hoisted: dict = {}                    # id(node) -> E evaluated once (indices of reference locals)
        self.merged_views: dict = {}               # GLSL: buffer -> vector type all its accesses go through
        self.contracts: dict = {}                  # GLSL: kernel parameter -> (multiple it must be, node)
        self.not_null: dict = {}                   # GLSL: kernel pointer parameter a null test assumes not null -> node
        self.block_contract: int | None = None     # GLSL: blockDim.x must be a multiple of it in a 2-D/3-D block
        self.fn_demands: dict = {}                 # specialisation key -> {id(param decl): multiple}
        self.device_globals: dict = {}             # id(file-scope decl) -> buffer info (device_globals.py)
        self.fn_globals: dict = {}                 # specialisation key -> device variables it touches
        self.flat_params: dict = {}                # id(struct parameter holding pointers) -> its fields (struct_params.py)
        self.same_memory: dict = {}                # `p == q` of two pointer parameters: flag name -> their buffer infos

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
        self.t.unsupported(node if node is not None else self.at_stmt, what, code)

    def access(self, root: Root, mode: str):
        for k in (root.key, *self.root_aliases.get(root.key, ())):
            self.roots_rw.setdefault(k, set()).update(mode)

    def alias_root(self, bound: Root, other: Root):
        """A pointer bound to `bound` re-pointed to `other` (OpenCL keeps the C pointer): what is done through
        the binding may reach `other`, so `other` gets every access of `bound`, before and after."""
        if other.key == bound.key:
            return
        self.root_aliases.setdefault(bound.key, set()).add(other.key)
        self.roots_rw.setdefault(other.key, set()).update(self.roots_rw.get(bound.key, set()))

    def is_device_global(self, decl) -> bool:
        return device_globals.is_device_global(self, decl)

    def device_global(self, decl, node) -> str:
        """The buffer name standing for a file-scope device variable (device_globals.py)."""
        return device_globals.use(self, decl, node)

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
        traits.local_aliases(self, fn)
        for n in fn.node.walk():
            if n.kind in ("VAR_DECL", "PARM_DECL"):
                self.idents.add(n.spelling)
        self.t.begin_kernel(self)
        self.warp32 = warp32.plan(self)           # shuffles the target's warps cannot run: emulate CUDA's
        if self.warp32 is None:
            self.warp_plan = warp_sizing.plan(self)   # per-warp storage sized for 32 lanes: resize or refuse
        elif hasattr(self, "cl_warp_size"):
            self.cl_warp_size = warp32.WARP      # OpenCL's manifest: the kernel's warps are 32 lanes
        self._params(fn)
        body = fn.body
        if body is None:
            self.fail(fn.node, f"kernel `{fn.name}` without a body")
        self.block_children(body)
        self.resolve_pending(self.frame)
        struct_layout.check_boundary(self)       # the structs the host copies have CUDA's bytes
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
            coop.check(self, f)     # cooperative groups / CUB left as written: refused at the construct
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
                    if re.search(r"\bdouble\b", n.type or "") or self._struct_has_double(n.type or ""):
                        return True
        for v in self.kernel_subst.values():
            # a template argument: a string, or the CType the driver parsed it into (`k<double>`)
            if not isinstance(v, int) and re.search(r"\bdouble\b", str(v)):
                return True
        return False

    def _struct_has_double(self, spelling: str, depth: int = 0) -> bool:
        """A struct named in a declaration's type holds a double (sph's `param`, a buffer of {float; double}):
        demoting it would change the struct's bytes, which the host copies as C lays them out."""
        for name in re.findall(r"\b\w+\b", spelling):
            for _f, fnode in self.u.structs.get(name, []) if depth < 8 else []:
                if re.search(r"\bdouble\b", fnode.type or "") or \
                        (fnode.type or "") != spelling and self._struct_has_double(fnode.type or "", depth + 1):
                    return True
        return False

    # ------------------------------------------------------------------ parameters
    def _params(self, fn):
        for p in fn.params:
            t = self.decl_type(p.node)
            name = self.name_of(p.node)
            if t.kind in ("pointer", "array"):
                elem = element(t)
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
            elif t.kind == "struct" and struct_params.holds_pointer(self, t.name):
                struct_params.flatten(self, fn, p, t)
            elif t.kind in ("scalar", "vector", "struct"):
                if t.kind == "struct":
                    self.use_struct(t.name, p.node)
                info = {"name": name, "cuda_name": p.name, "type": t, "node": p.node,
                        "assigned": id(p.node) in self.an.assigned or refs.writes(self, fn, p.node)}
                self.scalars.append(info)
                self.params.append({"name": p.name, "kind": "scalar", "info": info})
            else:
                from porter.translate.kernel.class_templates import why_not
                self.fail(p.node, f"parameter `{p.name}` of type `{p.type}`{why_not(self.u, p.type)}")

    def use_struct(self, name, node):
        if name not in self.u.structs:
            self.fail(node, f"struct `{name}` without a definition in this file")
        if name in self.struct_used:
            return
        for _fname, fnode in self.u.structs[name]:
            ft = self.decl_type(fnode)
            if ft.kind == "array" and ft.elem is not None and ft.elem.kind == "struct":
                self.use_struct(ft.elem.name, fnode)      # `Atom atoms[2]`: Atom is defined first
            if ft.kind == "struct":
                self.use_struct(ft.name, fnode)
            elif ft.kind == "pointer":
                self.fail(fnode, f"a pointer inside struct `{name}`")
            elif ft.kind == "unknown":
                self.fail(fnode, f"field `{_fname}` of type `{fnode.type}`")
        self.struct_used.append(name)

    def flat_field(self, n):
        """`p.f` of a flattened struct parameter holding pointers (struct_params.py), else None."""
        return struct_params.lookup(self, n)

    def struct_fields(self, name):
        return [(self.t.ident(f), self.decl_type(n)) for f, n in self.u.structs[name]]

    # ------------------------------------------------------------------ results
    def shared_bytes(self, cuda=False):
        """Static shared bytes; cuda: with the per-warp arrays at their CUDA size (before warp_sizing)."""
        total = 0
        for s in self.shared.values():
            if s["extern"]:
                continue
            t = s.get("cuda_type", s["type"]) if cuda else s["type"]
            size = ct.c_size(t, {k: self.struct_fields(k) for k in self.struct_used})
            total += size or 0
        return total


