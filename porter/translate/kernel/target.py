"""The target base class (loopy's TargetBase / ASTBuilder split in one): the emitter walks the kernel model once
and asks the target how to spell each construct (types, literals, conversions, thread indices, barriers,
address spaces, atomics, math, subgroup operations). GLSL and OpenCL are small subclasses that only state
their differences. Anything a target cannot express goes through unsupported(), which raises with the
construct's location: no output for that kernel, never silently wrong code."""
from __future__ import annotations

from porter.translate.kernel import ctype as ct
from porter.translate.kernel.ctype import CType

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


class Target:
    """What the emitter asks a target. Subclasses override the spelling hooks below; anything they cannot
    express goes through unsupported(). The emitter passes itself (`em`) so a hook can register what the
    output then needs: em.need(extension, feature, subgroup_op), em.helper(name, text), em.note(...)."""
    name = "base"
    native_pointers = False        # OpenCL keeps C pointers; GLSL turns them into buffer + offset
    c_conversions = False          # OpenCL converts like C; GLSL needs explicit constructors
    reserved: frozenset = frozenset()
    file_extension = ""
    keep_comments = True           # copy the kernel's comments into the output
    lower_warp_sync = True         # lower warp-synchronous tails (CP301) to work-group barriers
    named_constants = True         # #define constants keep their names
    named_template_params = True   # a kernel's template parameters become named constants
    size_t_64 = True               # sizeof is 64-bit
    ballot_type = None             # the target type a ballot mask has in a variable

    # hooks (see porter/translate/kernel/glsl.py for the full set with GLSL's answers):
    # begin_kernel(em) / end_kernel(em) / assemble(result, outputs, unit)
    # type_name(t) literal(v, t) convert(e, dst, explicit, implicit_ok) unsigned_negate(e) signed_remainder(a, b, t)
    # array_decl / array_constructor / vector_constructor / struct_constructor / global_const / loop_attribute
    # thread_builtin(var, comp) warp_size() lane_id() warp_id() block_barrier(global) warp_barrier() fence(name)
    # bind_param_pointer / scalar_param / shared_declared / binding_value / pointer_value / pointer_decl
    # pointer_step / pointer_step_value / pointer_assign / deref(root, off, i, mode, node)
    # pointer_param_key / pointer_param / pointer_arg / function_name / ref_param / function_head
    # ballot_var / ballot_decl / builtin_type / math_name / call(em, name, node, args) -> E | None

    def __init__(self, **options):
        self.options = options

    # --- failure ---
    def unsupported(self, node, what: str, code: str = "CP907"):
        raise TranslationError(code, node, f"{what}: not expressible in {self.display_name}")

    @property
    def display_name(self) -> str:
        return self.name

    # --- names and types ---
    def ident(self, name: str) -> str:
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
            em.fail(None, f"the type `{t}`")
        raise ValueError(t)

    def scalar_type_name(self, t: CType, em=None) -> str:
        raise NotImplementedError

    # qualifier of file-scope constant data (`const` in GLSL, `__constant` in OpenCL)
    const_qualifier = "const"

    def array_decl(self, em, t: CType, name: str) -> str:
        return f"{self.type_name(t.elem, em)} {name}" + "".join(f"[{d}]" for d in t.dims)

    def global_const(self, em, t: CType, name: str, value: str) -> str:
        decl = self.array_decl(em, t, name) if t.kind == "array" else f"{self.type_name(t, em)} {name}"
        return f"{self.const_qualifier} {decl} = {value};"

    def vector_type_name(self, t: CType, em=None) -> str:
        raise NotImplementedError

    def literal(self, value, t: CType, em=None) -> str:
        raise NotImplementedError

    def convert(self, e: E, dst: CType, em=None, explicit: bool = False) -> E:
        """e converted to dst for a C implicit conversion (explicit=True: a cast written in the source)."""
        raise NotImplementedError

    # --- execution model ---
    def thread_builtin(self, var: str, comp: str, em) -> E:
        raise NotImplementedError

    def warp_size(self, em) -> E:
        raise NotImplementedError

    def lane_id(self, em) -> E | None:
        return None

    def warp_id(self, em) -> E | None:
        return None

    def block_barrier(self, em, global_memory: bool) -> list[str]:
        raise NotImplementedError

    def warp_barrier(self, em) -> list[str]:
        raise NotImplementedError

    def fence(self, em, scope: str) -> str:
        raise NotImplementedError

    # --- intrinsics (return None: not handled here) ---
    def call(self, em, name: str, node, args) -> E | None:
        return None


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
