"""The typed model rules and translators consume. Built once per file from libclang; nothing downstream touches
libclang. Node is our own light AST over the file's own cursors (system/shim headers are pruned)."""
from __future__ import annotations

import bisect
from collections.abc import Iterator

from porter.frontend import clangext
from porter.frontend.lexer import Token, lex
from porter.record import Record

# Implicit nodes that only wrap one child with the same extent.
_TRANSPARENT = {"UNEXPOSED_EXPR"}
BUILTIN_VARS = {"threadIdx", "blockIdx", "blockDim", "gridDim"}
WARP_INTRINSICS = {
    "__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync", "__shfl", "__shfl_up", "__shfl_down",
    "__shfl_xor", "__ballot_sync", "__ballot", "__any_sync", "__all_sync", "__any", "__all", "__activemask",
    "__match_any_sync", "__match_all_sync", "__syncwarp", "__reduce_add_sync", "__reduce_min_sync",
    "__reduce_max_sync", "__lanemask_lt"}
# Deepest AST nesting modelled (real kernels stay under 30): deeper function bodies are left out of the model
# (FileModel.too_deep), so the recursive analyses and emitters stay far below Python's recursion limit.
MAX_NESTING = 200
BARRIERS = {"__syncthreads", "__syncthreads_count", "__syncthreads_and", "__syncthreads_or"}


class Node:
    """One cursor of the file. Only kind, children and parent are filled eagerly; everything else is read from
    libclang on first use and cached (most nodes are never asked for their spelling or type)."""
    __slots__ = ("kind", "_spelling", "_span", "children", "parent", "_cursor", "_op", "_value", "_type",
                 "_ref", "model", "_evaluated", "_lo", "_hi")

    def __init__(self, kind, cursor, model, parent=None):
        self.kind = kind
        self._spelling = None
        self._span = None
        self.children: list[Node] = []
        self.parent: Node | None = parent
        self._cursor = cursor
        self._op = None
        self._value = None
        self._evaluated = False
        self._type = None
        self._ref = False          # False = not looked up yet
        self.model = model
        self._lo = -1              # preorder position in model.flat (see FileModel._preorder), -1: unknown
        self._hi = -1              # end (exclusive) of the subtree in model.flat

    @property
    def spelling(self) -> str:
        if self._spelling is None:
            self._spelling = clangext.cursor_spelling(self._cursor)
        return self._spelling

    @property
    def start(self) -> int:
        if self._span is None:
            self._span = self.model._span(self)
        return self._span[0]

    @property
    def end(self) -> int:
        if self._span is None:
            self._span = self.model._span(self)
        return self._span[1]

    def _lookup_ref(self):
        if self._ref is False:
            self._ref = None
            if self.kind in ("DECL_REF_EXPR", "MEMBER_REF_EXPR", "CALL_EXPR", "TYPE_REF", "TEMPLATE_REF",
                             "OVERLOADED_DECL_REF"):
                r = clangext.cursor_referenced(self._cursor)
                if r is not None:
                    self._ref = (self.model.decls.get(r[0]), r[1], r[2])
        return self._ref

    @property
    def ref(self) -> "Node | None":
        """The referenced declaration when it is in this file."""
        r = self._ref
        if r is False:
            r = self._lookup_ref()
        return r[0] if r else None

    @property
    def ref_kind(self) -> str | None:
        r = self._lookup_ref()
        return r[1] if r else None

    @property
    def ref_name(self) -> str | None:
        r = self._lookup_ref()
        return r[2] if r else None

    def __repr__(self):
        return f"<{self.kind} {self.spelling!r} @{self.start}:{self.end}>"

    # --- lazily computed facts (cost only paid when a rule asks) ---
    @property
    def op(self) -> str:
        if self._op is None:
            if self.kind in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR"):
                self._op = clangext.binary_op(self._cursor)
            elif self.kind == "UNARY_OPERATOR":
                self._op = clangext.unary_op(self._cursor)
            else:
                self._op = ""
        return self._op

    @property
    def value(self):
        """Folded constant (through #define, constexpr, const, enums, arithmetic) or None."""
        if not self._evaluated:
            self._evaluated = True
            if self.kind.endswith("_EXPR") or self.kind.endswith("_LITERAL") or self.kind.endswith("OPERATOR"):
                self._value = clangext.evaluate(self._cursor)
        return self._value

    @property
    def type(self) -> str:
        if self._type is None:
            self._type = clangext.type_spelling(self._cursor)
        return self._type

    @property
    def canonical_type(self):
        return self._cursor.type.get_canonical()

    def type_size(self) -> int | None:
        s = self._cursor.type.get_size()
        return s if s > 0 else None

    @property
    def text(self) -> str:
        return self.model.source.slice(self.start, self.end)

    @property
    def macro(self) -> str | None:
        """Name of the macro whose expansion this node comes from, if any."""
        return self.model.macro_at(self.start, self.end)

    @property
    def spelled_here(self) -> bool:
        """True when the node's text is written in the file (not produced by a macro expansion)."""
        return self.model.macro_at(self.start, self.end) is None

    # --- navigation ---
    def walk(self) -> Iterator["Node"]:
        """The subtree in preorder (this node first). A slice of the model's preorder list when that index is
        valid (one C-level copy instead of a Python generator step per node)."""
        m = self.model
        ok = m._preorder_ok
        if ok is None:
            ok = m._preorder()
        if ok and self._lo >= 0:
            return iter(m.flat[self._lo:self._hi])
        return self._walk()

    def _walk(self) -> Iterator["Node"]:
        stack = [self]
        while stack:
            n = stack.pop()
            yield n
            stack.extend(reversed(n.children))

    def ancestors(self) -> Iterator["Node"]:
        p = self.parent
        while p is not None:
            yield p
            p = p.parent

    def enclosing(self, *kinds) -> "Node | None":
        for a in self.ancestors():
            if a.kind in kinds:
                return a
        return None

    @property
    def strip(self) -> "Node":
        """Skip parentheses and casts to the expression that carries the value."""
        n = self
        while n.kind in ("PAREN_EXPR", "CSTYLE_CAST_EXPR", "CXX_STATIC_CAST_EXPR", "CXX_FUNCTIONAL_CAST_EXPR") \
                and n.children:
            n = n.children[-1]
        return n

    def builtin(self) -> tuple[str, str] | None:
        """('threadIdx', 'x') for threadIdx.x and friends."""
        n = self.strip
        if n.kind == "MEMBER_REF_EXPR" and n.children:
            base = n.children[0].strip
            if base.kind == "DECL_REF_EXPR" and base.spelling in BUILTIN_VARS and base.ref is None:
                return base.spelling, n.spelling
        return None

    def is_warp_size(self) -> bool:
        n = self.strip
        return n.kind == "DECL_REF_EXPR" and n.spelling == "warpSize" and n.ref is None

    @property
    def callee(self) -> str:
        """Name of the called function. Unlike `spelling` (empty for them) also for dependent calls in templates,
        e.g. `__shfl_down_sync(m, v, o)` with `T v`: clang leaves those unresolved (an overloaded reference)."""
        if self.kind != "CALL_EXPR":
            return ""
        if self.spelling:
            return self.spelling
        u = self._unresolved_callee()
        return u[1] if u is not None else ""

    def _unresolved_callee(self):
        """(callee reference node, name) of a dependent call, else None."""
        ch = self.children
        if not ch:
            return None
        c = ch[0]
        if c.kind == "OVERLOADED_DECL_REF":
            return c, c.spelling
        if c.kind == "DECL_REF_EXPR" and not c.spelling and c.children and \
                c.children[0].kind == "OVERLOADED_DECL_REF":
            return c, c.children[0].spelling
        return None

    def operator_call(self):
        """(operator token, operands) of a CALL_EXPR that is an unresolved operator in a template (`a += b` on T
        with overloads of `+=` visible: CALL_EXPR(lhs, DECL_REF '', rhs)), else None."""
        if self.kind != "CALL_EXPR" or self.spelling or len(self.children) not in (2, 3):
            return None
        mids = [c for c in self.children if c.kind in ("DECL_REF_EXPR", "UNEXPOSED_EXPR", "OVERLOADED_DECL_REF")
                and not c.spelling]
        if len(mids) != 1 or self._cursor is None:
            return None
        try:        # the operator's own token (inside a macro's expansion the extents are the macro call's)
            op = next(iter(mids[0]._cursor.get_tokens())).spelling
        except Exception:
            return None
        return op, [c for c in self.children if c is not mids[0]]

    def args(self) -> list["Node"]:
        """Call arguments (children after the callee reference)."""
        if self.kind != "CALL_EXPR":
            return []
        ch = self.children
        if ch and ch[0].kind in ("DECL_REF_EXPR", "MEMBER_REF_EXPR", "OVERLOADED_DECL_REF") and \
                ch[0].spelling == self.spelling:
            return ch[1:]
        return ch

    def result_type_size(self) -> int | None:
        """sizeof the return type of a function declaration node (None: void, dependent or unknown)."""
        try:
            s = self._cursor.result_type.get_size()
        except Exception:
            return None
        return s if s > 0 else None


def _preorder_pos(node: Node) -> int:
    return node._lo


class Param(Record):
    """A function parameter."""
    name: str
    type: str
    is_pointer: bool
    pointee: str | None
    const_pointee: bool
    node: Node

    def __init__(self, name, type, is_pointer, pointee, const_pointee, node):
        self.name = name
        self.type = type
        self.is_pointer = is_pointer
        self.pointee = pointee
        self.const_pointee = const_pointee
        self.node = node


class SharedArray(Record):
    """A `__shared__` array declaration and its dimensions."""
    name: str
    dims: list[int | None]          # None: unknown / extern
    elem_type: str
    elem_size: int | None
    extern: bool
    node: Node
    function: "Function | None"
    volatile: bool

    def __init__(self, name, dims, elem_type, elem_size, extern, node, function, volatile=False):
        self.name = name
        self.dims = dims
        self.elem_type = elem_type
        self.elem_size = elem_size
        self.extern = extern
        self.node = node
        self.function = function
        self.volatile = volatile

    @property
    def size_bytes(self) -> int | None:
        if self.extern or self.elem_size is None or any(d is None for d in self.dims):
            return None
        total = self.elem_size
        for d in self.dims:
            total *= d
        return total


class LaunchSite(Record):
    """A `<<<...>>>` launch in host code."""
    kernel: str
    node: Node
    grid: Node | None
    block: Node | None
    shmem: Node | None
    stream: Node | None
    args: list[Node]
    function: "Function | None"

    def __init__(self, kernel, node, grid, block, shmem, stream, args, function):
        self.kernel = kernel
        self.node = node
        self.grid = grid
        self.block = block
        self.shmem = shmem
        self.stream = stream
        self.args = args
        self.function = function


class Function(Record):
    """A function definition of the file and what the model knows of it."""
    name: str
    node: Node
    kind: str                        # global | device | host | host_device
    params: list[Param]
    body: Node | None
    is_template: bool
    launch_bounds: list[Node]

    def __init__(self, name, node, kind, params, body, is_template, launch_bounds=None):
        self.name = name
        self.node = node
        self.kind = kind
        self.params = params
        self.body = body
        self.is_template = is_template
        self.launch_bounds = [] if launch_bounds is None else launch_bounds

    @property
    def is_kernel(self) -> bool:
        return self.kind == "global"

    @property
    def is_device_code(self) -> bool:
        return self.kind in ("global", "device", "host_device")


class FileModel:
    """Everything known about one parsed file."""

    def __init__(self, source, tu, errors, options=None):
        self.source = source
        self.tu = tu
        self.errors = errors
        self.options = options
        self.path = source.path
        self.roots: list[Node] = []
        self.decls: dict = {}
        self.macro_defs: dict[str, tuple[int, int]] = {}
        self.macro_uses: list[tuple[int, int, str]] = []
        self._macro_starts: list[int] = []
        self.functions: list[Function] = []
        self.shared: list[SharedArray] = []
        self.launches: list[LaunchSite] = []
        self._tokens: list[Token] | None = None
        self._locator = None
        self.flat: list[Node] = []                 # every node, preorder
        self.by_kind: dict[str, list[Node]] = {}   # kind -> nodes, preorder
        self.shallow: list[Node] = []              # host functions whose bodies were not modelled
        self.too_deep: list[tuple[Node, int]] = []  # (function or root, offset): nesting > MAX_NESTING, unmodelled
        self._preorder_ok: bool | None = None      # flat is the preorder of the tree (set by _preorder)
        self._kind_pos: dict[str, list[int]] = {}
        self._fn_by_node: dict | None = None
        self._refs_by_decl: dict | None = None

    # --- indexes (built on first use; the tree is never modified after build_model) ---
    def _preorder(self) -> bool:
        """Number every node with its position in `flat` (`_lo`) and the end of its subtree (`_hi`), and check
        that `flat` is exactly the preorder of the tree (build_model appends in visit order, so it is): every
        first child right after its parent, every next sibling right after the previous one's subtree, the roots
        one after another covering all of `flat`. Then a subtree is a slice of `flat` and the nodes of a kind
        inside a subtree a slice of `by_kind[kind]`. False (and nothing used) if the check fails."""
        flat = self.flat
        for i, n in enumerate(flat):
            n._lo = i
        ok = True
        for n in reversed(flat):               # children (later in flat) before their parents
            ch = n.children
            if ch:
                nxt = n._lo + 1
                for c in ch:
                    if c._lo != nxt:
                        ok = False
                        break
                    nxt = c._hi
                if not ok:
                    break
                n._hi = nxt
            else:
                n._hi = n._lo + 1
        if ok:
            nxt = 0
            for r in self.roots:
                if r._lo != nxt:
                    ok = False
                    break
                nxt = r._hi
            ok = ok and nxt == len(flat)
        if not ok:
            for n in flat:
                n._lo = n._hi = -1
        self._preorder_ok = ok
        return ok

    def kind_in(self, node: Node, kind: str) -> list[Node]:
        """Nodes of `kind` in the subtree of `node` (itself included), in preorder: the same nodes, in the same
        order, as `[n for n in node.walk() if n.kind == kind]`, without walking."""
        ok = self._preorder_ok
        if ok is None:
            ok = self._preorder()
        if not ok or node._lo < 0:
            return [n for n in node._walk() if n.kind == kind]
        lst = self.by_kind.get(kind)
        if not lst:
            return []
        pos = self._kind_pos.get(kind)
        if pos is None or len(pos) != len(lst):
            pos = self._kind_pos[kind] = [n._lo for n in lst]
        return lst[bisect.bisect_left(pos, node._lo):bisect.bisect_left(pos, node._hi)]

    def kinds_in(self, node: Node, *kinds: str) -> list[Node]:
        """Nodes of any of `kinds` in the subtree of `node`, in preorder (what a filtered walk yields)."""
        if len(kinds) == 1:
            return self.kind_in(node, kinds[0])
        ok = self._preorder_ok
        if ok is None:
            ok = self._preorder()
        if not ok or node._lo < 0:
            return [n for n in node._walk() if n.kind in kinds]
        out = [n for k in kinds for n in self.kind_in(node, k)]
        out.sort(key=_preorder_pos)
        return out

    def contains(self, outer: Node, node: Node) -> bool:
        """`node` is `outer` or one of its descendants."""
        ok = self._preorder_ok
        if ok is None:
            ok = self._preorder()
        if ok and outer._lo >= 0 and node._lo >= 0:
            return outer._lo <= node._lo < outer._hi
        n = node
        while n is not None:
            if n is outer:
                return True
            n = n.parent
        return False

    def refs_to(self, decl: Node) -> list[Node]:
        """Every DECL_REF_EXPR whose declaration is `decl`, in source (preorder) order (indexed once per file)."""
        idx = self._refs_by_decl
        if idx is None:
            idx = self._refs_by_decl = {}
            for n in self.by_kind.get("DECL_REF_EXPR", ()):
                r = n.ref
                if r is not None:
                    lst = idx.get(id(r))
                    if lst is None:
                        idx[id(r)] = [n]
                    else:
                        lst.append(n)
        return idx.get(id(decl), [])

    def release(self) -> None:
        """Break the reference cycles of the tree (parent <-> children, node <-> model, model <-> caches) so that
        the nodes, their cursors and the translation unit are freed at once by reference counting instead of
        by a later garbage collection (a batch run otherwise keeps dozens of translation units alive, and every
        collection scans their nodes). The model must not be used afterwards."""
        for n in self.flat:
            n.parent = None
            n.model = None
            n.children = []
            n._ref = False
            n._cursor = None       # what a rule may still hold in a cycle no longer keeps the TU alive
        for key in ("_analysis", "_shared_memory"):    # per-model analyses: their caches hold nodes
            obj = self.__dict__.get(key)
            if obj is not None and hasattr(obj, "__dict__"):
                obj.__dict__.clear()
        self.__dict__.clear()

    def _span(self, node) -> tuple[int, int]:
        sp = self._locator.span(node._cursor)
        if sp is None:  # a cursor whose extent lies outside the file (implicit code): use the parent's
            return (node.parent.start, node.parent.end) if node.parent is not None else (0, 0)
        return sp

    # --- macros ---
    def macro_at(self, start: int, end: int) -> str | None:
        i = bisect.bisect_right(self._macro_starts, start) - 1
        while i >= 0:
            ms, me, name = self.macro_uses[i]
            if ms <= start and end <= me:
                return name
            if me < start and i < len(self.macro_uses) - 1:
                break
            i -= 1
        return None

    def macro_value(self, name: str):
        """Constant a `#define NAME <expr>` folds to, found through a use of it, else None."""
        for ms, me, n in self.macro_uses:
            if n == name:
                for node in self.nodes_in(ms, me):
                    if node.start == ms and node.end == me and node.value is not None:
                        return node.value
        return None

    def nodes_in(self, start: int, end: int) -> Iterator[Node]:
        for r in self.roots:
            if r.end < start or r.start > end:
                continue
            for n in r.walk():
                if n.start >= start and n.end <= end:
                    yield n

    # --- tokens of the file itself (for comments and exact spelling) ---
    @property
    def tokens(self) -> list[Token]:
        if self._tokens is None:
                self._tokens = lex(self.source.data, token_cls=Token)
        return self._tokens

    def tokens_in(self, start: int, end: int) -> list[Token]:
        """Tokens starting in [start, end); lexes only that range unless the whole file is already lexed
        (lexing a big file costs seconds, a statement microseconds)."""
        if self._tokens is not None:
            return self.tokens_between(start, end)
        end = min(end, len(self.source.data))
        if end <= start:
            return []
        return [t for t in lex(self.source.data, start, end, token_cls=Token) if t.start < end]

    def tokens_between(self, start: int, end: int) -> list[Token]:
        toks = self.tokens
        starts = getattr(self, "_token_starts", None)
        if starts is None or len(starts) != len(toks):
            starts = self._token_starts = [t.start for t in toks]
        i = bisect.bisect_left(starts, start)
        out = []
        while i < len(toks) and toks[i].start < end:
            out.append(toks[i])
            i += 1
        return out

    # --- queries rules share ---
    def all_nodes(self) -> Iterator[Node]:
        return iter(self.flat)

    def of_kind(self, *kinds) -> list[Node]:
        """Nodes of the given kinds in source order (an index: rules need not walk the whole tree)."""
        if len(kinds) == 1:
            return self.by_kind.get(kinds[0], [])
        out = [n for k in kinds for n in self.by_kind.get(k, [])]
        out.sort(key=lambda n: self._order(n))
        return out

    def _order(self, node):
        if not hasattr(self, "_pos"):
            self._pos = {id(n): i for i, n in enumerate(self.flat)}
        return self._pos[id(node)]

    def function_of(self, node: Node) -> Function | None:
        fn = node.enclosing("FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD")
        if fn is None:
            return None
        idx = self._fn_by_node
        if idx is None or idx[0] != len(self.functions):
            by_node: dict = {}
            for f in self.functions:
                by_node.setdefault(id(f.node), f)      # the first Function of a node, as a scan would find
            idx = self._fn_by_node = (len(self.functions), by_node)
        return idx[1].get(id(fn))

    @property
    def kernels(self) -> list[Function]:
        # cached per length of `functions` (rules ask for it once per kernel: a scan each time was quadratic)
        c = self.__dict__.get("_kernels")
        if c is None or c[0] != len(self.functions):
            c = self._kernels = (len(self.functions), [f for f in self.functions if f.is_kernel])
        return list(c[1])

    def calls(self, names=None, device_only=False) -> Iterator[Node]:
        for n in self.of_kind("CALL_EXPR"):
            if names is None or n.spelling in names:
                if device_only:
                    f = self.function_of(n)
                    if f is None or not f.is_device_code:
                        continue
                yield n

    def shared_by_name(self, name: str, function: Function | None) -> SharedArray | None:
        for s in self.shared:
            if s.name == name and (s.function is None or function is None or s.function is function):
                return s
        return None


def template_arguments(node: Node) -> list[tuple[str, object]] | None:
    """Template arguments of the function template specialization that a call or reference names, e.g.
    `k<float, 128><<<g, b>>>(...)` -> [('type', 'float'), ('value', 128)]; None when it names no specialization
    (or an argument is neither a type nor an integral value)."""
    cur = node._cursor
    try:
        ref = cur.referenced
        if ref is None:
            return None
        n = ref.get_num_template_arguments()
        if n is None or n < 0:
            return None
        out = []
        for i in range(n):
            k = ref.get_template_argument_kind(i).name
            if k == "TYPE":
                out.append(("type", ref.get_template_argument_type(i).get_canonical().spelling))
            elif k == "INTEGRAL":
                out.append(("value", int(ref.get_template_argument_value(i))))
            else:
                return None
        return out
    except Exception:
        return None


def result_type_spelling(node: Node, canonical: bool = True) -> str | None:
    """Spelling of the return type of a function (or function template) declaration node."""
    try:
        t = node._cursor.result_type
        return (t.get_canonical() if canonical else t).spelling
    except Exception:
        return None
