"""The target base class (loopy's TargetBase / ASTBuilder split in one): the emitter walks the kernel model once
and asks the target how to spell each construct (types, literals, conversions, thread indices, barriers,
address spaces, atomics, math, subgroup operations). GLSL and OpenCL are small subclasses that only state
their differences. Anything a target cannot express goes through unsupported(), which raises with the
construct's location: no output for that kernel, never silently wrong code."""
from __future__ import annotations

import abc

from porter.translate.kernel import ctype as ct
from porter.translate.kernel.ctype import U32, CType

# C precedence levels (lower binds tighter); the emitter parenthesises from these
PREC_PRIMARY, PREC_UNARY, PREC_MUL, PREC_ADD, PREC_SHIFT, PREC_REL, PREC_EQ = 1, 2, 3, 4, 5, 6, 7
PREC_BAND, PREC_XOR, PREC_BOR, PREC_LAND, PREC_LOR, PREC_COND, PREC_ASSIGN, PREC_COMMA = range(8, 16)
BINARY_PREC = {"*": 3, "/": 3, "%": 3, "+": 4, "-": 4, "<<": 5, ">>": 5, "<": 6, ">": 6, "<=": 6, ">=": 6,
               "==": 7, "!=": 7, "&": 8, "^": 9, "|": 10, "&&": 11, "||": 12, ",": 15}


class TranslationError(Exception):
    """A construct the target cannot express: code (CP9xx), location (node or (start, end)) and message."""

    def __init__(self, code: str, at, message: str):
        super().__init__(message)
        self.code = code
        self.message = message
        if at is None:
            self.start = self.end = 0
        elif hasattr(at, "start"):
            self.start, self.end = at.start, at.end
        else:
            self.start, self.end = at


class MergeViews(Exception):
    """A written buffer turned out to be accessed as `T` and as `vecN<T>` (GLSL typed views): the kernel is
    emitted again with every access going through the vector view (driver.py), one SPIR-V variable per binding."""

    def __init__(self, views: dict):
        super().__init__("merge typed views")
        self.views = views


class E:
    """An emitted expression: target text, its C type (semantics) and the type the text has in the target
    (e.g. warpSize is a C int spelled as the GLSL uint gl_SubgroupSize), its precedence, and the literal
    value when it is a constant the target may respell."""
    __slots__ = ("text", "ct", "tt", "prec", "lit")

    def __init__(self, text: str, ctype: CType, prec: int = PREC_PRIMARY, tt: CType | None = None, lit=None):
        self.text = text
        self.ct = ctype
        self.tt = tt if tt is not None else ctype
        self.prec = prec
        self.lit = lit

    def __repr__(self):
        return f"E({self.text!r}: {self.ct})"

    def paren(self, max_prec: int) -> str:
        return f"({self.text})" if self.prec > max_prec else self.text


class Target(abc.ABC):
    """What the emitter asks a target: the abstract methods below are the hooks (GLSL and OpenCL implement
    every one; Python refuses to instantiate a subclass that misses one). Anything a target cannot express goes
    through unsupported(). The emitter passes itself (`em`) so a hook can register what the output then needs:
    em.need(extension, feature, subgroup_op), em.helper(name, text), em.note(...)."""
    name = "base"
    native_pointers = False        # OpenCL keeps C pointers; GLSL turns them into buffer + offset
    c_conversions = False          # OpenCL converts like C; GLSL needs explicit constructors
    reserved: frozenset = frozenset()
    file_extension = ""
    keep_comments = True           # copy the kernel's comments into the output
    lower_warp_sync = True         # lower warp-synchronous tails (CP301) to work-group barriers
    # `if (c) x = a; else x = b;` -> `x = c ? a : b;` (statements.py: if_converted_store)
    if_convert_stores = False
    named_constants = True         # #define constants keep their names
    named_template_params = True   # a kernel's template parameters become named constants
    size_t_64 = True               # sizeof is 64-bit
    ballot_type = None             # the target type a ballot mask has in a variable
    # qualifier of file-scope constant data (`const` in GLSL, `__constant` in OpenCL)
    const_qualifier = "const"

    def __init__(self, **options):
        self.options = options

    # --- failure ---
    def unsupported(self, node, what: str, code: str = "CP907"):
        raise TranslationError(code, node, f"{what}: not expressible in {self.display_name}")

    @property
    def display_name(self) -> str:
        return self.name

    # --- names and types the targets share ---
    def ident(self, name: str) -> str:
        if name.startswith("operator") and not name[8:9].isalnum() and name[8:9] != "_":
            # an operator overload becomes a free function named after its operator
            op = name[8:].strip()
            return "op_" + "".join(OPERATOR_NAMES.get(c, "x") for c in op)
        if name in self.reserved or "__" in name or name.startswith("gl_"):
            base = name.replace("__", "_").strip("_") or "v"
            return base + "_"
        return name

    def type_name(self, t: CType, em=None) -> str:
        """Spelling of a C type: scalars and vectors are the target's own, structs, arrays and void shared."""
        if t.kind == "scalar":
            return self.scalar_type_name(t, em)
        if t.kind == "vector":
            return self.vector_type_name(t, em)
        if t.kind == "struct":
            return self.ident(t.name)
        if t.kind == "array":
            return self.type_name(t.elem, em) + "".join(f"[{d}]" for d in t.dims)
        if t.kind == "void":
            return "void"
        if em is not None:
            what = " (a pointer to an array)" if t.kind == "unknown" and "(*)[" in t.name.replace(" ", "") else ""
            em.fail(None, f"the type `{t}`{what}")
        raise ValueError(t)

    def array_decl(self, em, t: CType, name: str) -> str:
        return f"{self.type_name(t.elem, em)} {name}" + "".join(f"[{d}]" for d in t.dims)

    def global_const(self, em, t: CType, name: str, value: str) -> str:
        decl = self.array_decl(em, t, name) if t.kind == "array" else f"{self.type_name(t, em)} {name}"
        return f"{self.const_qualifier} {decl} = {value};"

    # --- hooks: execution of one kernel ---
    @abc.abstractmethod
    def begin_kernel(self, em):
        """Set up the per-kernel state the other hooks fill in (called before the parameters)."""

    @abc.abstractmethod
    def end_kernel(self, em):
        """Finish the kernel: build its text and manifest from what the walk collected on `em`."""

    @abc.abstractmethod
    def assemble(self, result, outputs, unit):
        """Put the kernels' texts into `result` (a TranslationResult): one file, or one output per kernel;
        `outputs` is [(label, em, launch shape)]."""


    # --- hooks: types and values ---
    @abc.abstractmethod
    def scalar_type_name(self, t: CType, em=None):
        """Spelling of a scalar C type (`em` given: register the extension it needs, or fail)."""

    @abc.abstractmethod
    def vector_type_name(self, t: CType, em=None):
        """Spelling of a CUDA vector type (float4, int2...)."""

    @abc.abstractmethod
    def literal(self, value, t: CType, em=None):
        """Spelling of the constant `value` of type `t`."""

    @abc.abstractmethod
    def convert(self, e: E, dst: CType, em=None, explicit=False, implicit_ok=False):
        """`e` converted to `dst` for a C implicit conversion (explicit=True: a cast written in the source)."""

    @abc.abstractmethod
    def unsigned_negate(self, em, e: E):
        """`-e` for an unsigned `e` (C wraps modulo 2^n)."""

    @abc.abstractmethod
    def signed_remainder(self, em, a: E, b: E, t: CType):
        """`a % b` for signed `t` with C's sign rule (the result has the sign of `a`)."""

    @abc.abstractmethod
    def array_constructor(self, em, t: CType, parts):
        """An array value of type `t` from its element texts (an initialiser)."""

    @abc.abstractmethod
    def vector_constructor(self, em, t: CType, parts):
        """A vector value of type `t` from its component texts (make_float4...)."""

    @abc.abstractmethod
    def struct_constructor(self, em, t: CType, parts):
        """A struct value of type `t` from its field texts."""

    @abc.abstractmethod
    def loop_attribute(self, em, hint: str):
        """The text put before a loop for `#pragma unroll` (hint: "" or the count); "" for none."""

    def implicit_unroll(self, init: str, cond: str, inc: str) -> str | None:
        """An unroll hint for a loop the source did not mark (None: none). A target whose constants are only known
        when the pipeline is made (GLSL's subgroup size) says here which loops a driver should still unroll."""
        return None

    @abc.abstractmethod
    def builtin_type(self, em, name, n):
        """The C type of a builtin the target spells itself (e.g. dim3 members), or None."""


    # --- hooks: execution model ---
    @abc.abstractmethod
    def thread_builtin(self, var, comp, em):
        """threadIdx / blockIdx / blockDim / gridDim component `comp` (x, y, z) as an E."""

    @abc.abstractmethod
    def warp_size(self, em):
        """warpSize as an E (the subgroup size, or a constant where warps are emulated)."""

    @abc.abstractmethod
    def lane_id(self, em, t=U32):
        """The thread's lane in its warp as an E of type `t`, or None when the target has none."""

    @abc.abstractmethod
    def warp_id(self, em, t=U32):
        """The thread's warp in its block as an E of type `t`, or None when the target has none."""

    @abc.abstractmethod
    def block_barrier(self, em, global_memory: bool):
        """Statement lines of __syncthreads() (global_memory: the block also exchanges global memory)."""

    @abc.abstractmethod
    def warp_barrier(self, em):
        """Statement lines of __syncwarp()."""

    @abc.abstractmethod
    def fence(self, em, name):
        """Statement text of the memory fence `name` (__threadfence, __threadfence_block...)."""

    @abc.abstractmethod
    def ballot_var(self, em, d, init):
        """Whether the variable `d` initialised with `init` holds a ballot mask in the target's own type."""

    @abc.abstractmethod
    def ballot_decl(self, em, d, name, init):
        """Declaration lines of such a ballot variable."""

    @abc.abstractmethod
    def call(self, em, name, n, args):
        """A call of builtin or intrinsic `name` (node `n`, argument nodes `args`) as an E; None: not one of
        the target's (the emitter then tries user functions)."""

    @abc.abstractmethod
    def math_name(self, em, base, t):
        """Spelling of the math function `base` (sqrt, fabs...) on type `t`."""


    # --- hooks: pointers and parameters ---
    @abc.abstractmethod
    def bind_param_pointer(self, em, root, node):
        """The PtrBinding of a kernel's pointer parameter (`root`: what it points into)."""

    @abc.abstractmethod
    def scalar_param(self, em, decl, name, t):
        """A kernel's scalar parameter `name` of type `t` as an E (how the kernel reads it)."""

    @abc.abstractmethod
    def shared_declared(self, em, info):
        """Note a __shared__ array (info: name, type, size) the target must declare."""

    @abc.abstractmethod
    def binding_value(self, em, b):
        """The value of a pointer binding `b` where the pointer itself is used."""

    @abc.abstractmethod
    def pointer_value(self, em, n, ptr):
        """The value of the pointer expression `n` (its root and offset `ptr`)."""

    @abc.abstractmethod
    def same_memory(self, em, n, op, flag, a_n, b_n):
        """`a == b` / `a != b` (op) of two kernel pointer parameters; `flag` names the pair in em.same_memory."""

    @abc.abstractmethod
    def pointer_decl(self, em, d, t, name, init):
        """Declaration lines of the local pointer variable `d` of type `t` initialised with `init`."""

    def shared_pointer_decl(self, em, d, t, name) -> list[str]:
        """`__shared__ T *p;`: a pointer the whole block shares."""
        em.fail(d, f"the `__shared__` pointer `{d.spelling}`")

    @abc.abstractmethod
    def pointer_step(self, em, n, c, op):
        """`p++` / `p--` / `++p` / `--p` (op) on the local pointer of node `c`."""

    @abc.abstractmethod
    def pointer_step_value(self, em, s):
        """The value of such a step used as an expression."""

    @abc.abstractmethod
    def pointer_assign(self, em, n, a_n, b_n, op):
        """`a = b`, `a += b`, `a -= b` (op) on pointers."""

    @abc.abstractmethod
    def deref(self, em, root, off, i, mode, node):
        """Text of the element at offset `off` (+ index `i`) of `root`, read (mode "r") or written ("w")."""


    # --- hooks: functions ---
    @abc.abstractmethod
    def pointer_param_key(self, em, root):
        """What distinguishes specialisations of a device function by a pointer argument bound to `root`."""

    @abc.abstractmethod
    def pointer_param(self, em, fr, pnode, pname, root, pt):
        """Parameter declarations of a device function's pointer parameter `pname`."""

    @abc.abstractmethod
    def pointer_arg(self, em, root, off, node):
        """Argument texts passing a pointer into `root` at offset `off`."""

    def device_global_params(self, em, info) -> list[str]:
        """Extra parameters of a device function touching a file-scope device variable (GLSL: none, the
        buffer is global)."""
        return []

    def device_global_args(self, em, info) -> list[str]:
        """The arguments passing it (device_globals.py)."""
        return []

    @abc.abstractmethod
    def function_name(self, em, fn, key, subst, binds):
        """The name of the specialisation of device function `fn` for `key`."""

    @abc.abstractmethod
    def ref_param(self, em, t, name, written, space, const, volatile):
        """Declaration of a reference parameter `name` (written: the callee assigns it)."""

    def ref_copy(self, em, n, place) -> bool:
        """Whether a `const T&` bound to lvalue `n` (at `place`) is bound to a copy instead (OpenCL: a 3-vector
        in CUDA's layout, which it cannot point into)."""
        return False

    def place(self, em, n, e: E) -> E:
        """The lvalue expression `e` of node `n` with the type its text has in the target (`e.tt`) where that is
        not the C type (OpenCL: a 3-vector kept in CUDA's layout is a packed struct)."""
        return e

    def assert_record(self, em, buf: str, line: int) -> list[str]:
        """Statements recording a failed assert at source `line` in the hidden buffer `buf` (asserts.py): [0] counts
        the failing threads, [1] keeps the first failure's line."""
        em.fail(None, "a device `assert`")
        return []

    def call_extra_args(self, em, key) -> list[str]:
        """Argument texts a call of the device function specialisation `key` passes besides the call's own
        (OpenCL: the kernel-scope `__local` arrays the function uses)."""
        return []

    def use_local(self, em, name):
        """The function being emitted uses the kernel-scope shared array `name` (OpenCL: passed down to it)."""

    @abc.abstractmethod
    def function_head(self, em, ret, name, params):
        """The head `ret name(params)` of a device function."""


OPERATOR_NAMES = {"+": "add", "-": "sub", "*": "mul", "/": "div", "%": "mod", "=": "eq", "<": "lt", ">": "gt",
                  "!": "not", "&": "and", "|": "or", "^": "xor", "~": "inv", "[": "idx", "]": "", "(": "call",
                  ")": ""}


def literal_int_text(value: int, t: CType) -> str:
    """Decimal (or hex for big masks) integer text without suffix."""
    if t.is_signed:
        return str(value)
    if value >= 0x10000 and (value & (value + 1) == 0 or value in (0xffffffff, 0xffffffffffffffff)):
        return hex(value)
    return str(value)


def wrap(value: int, t: CType) -> int:
    """value reduced to the range of integer type t (C conversion semantics)."""
    bits = t.bits
    value &= (1 << bits) - 1
    if t.is_signed and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


__all__ = ["Target", "E", "TranslationError", "ct", "CType", "literal_int_text", "wrap"]
