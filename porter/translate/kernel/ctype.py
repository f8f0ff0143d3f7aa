"""C types as the kernel translators see them: parsed from clang's type spellings, with C's usual arithmetic
conversions and the std430 / std140 sizes a Vulkan host needs. Pure data: no libclang here."""
from __future__ import annotations

import re
from dataclasses import dataclass, replace

# scalar name -> (bits, signed, is_float)
SCALARS = {
    "bool": (8, False, False),
    "i8": (8, True, False), "u8": (8, False, False),
    "i16": (16, True, False), "u16": (16, False, False),
    "i32": (32, True, False), "u32": (32, False, False),
    "i64": (64, True, False), "u64": (64, False, False),
    "f16": (16, True, True), "f32": (32, True, True), "f64": (64, True, True),
}

_C_NAMES = {
    "bool": "bool", "_Bool": "bool",
    "char": "i8", "signed char": "i8", "unsigned char": "u8",
    "short": "i16", "short int": "i16", "signed short": "i16", "unsigned short": "u16", "unsigned short int": "u16",
    "int": "i32", "signed": "i32", "signed int": "i32", "unsigned": "u32", "unsigned int": "u32",
    "long": "i64", "long int": "i64", "signed long": "i64", "unsigned long": "u64", "unsigned long int": "u64",
    "long long": "i64", "long long int": "i64", "signed long long": "i64", "unsigned long long": "u64",
    "unsigned long long int": "u64",
    "int8_t": "i8", "uint8_t": "u8", "int16_t": "i16", "uint16_t": "u16", "int32_t": "i32", "uint32_t": "u32",
    "int64_t": "i64", "uint64_t": "u64", "size_t": "u64", "ptrdiff_t": "i64", "uintptr_t": "u64",
    "intptr_t": "i64",
    "float": "f32", "double": "f64", "half": "f16", "__half": "f16", "long double": "f64",
}

# CUDA vector structs: prefix -> element scalar
_VEC_PREFIX = {"float": "f32", "double": "f64", "int": "i32", "uint": "u32", "char": "i8", "uchar": "u8",
               "short": "i16", "ushort": "u16", "long": "i64", "ulong": "u64", "longlong": "i64",
               "ulonglong": "u64"}
_VEC_RE = re.compile(r"^(float|double|int|uint|char|uchar|short|ushort|longlong|ulonglong|long|ulong)([1-4])$")


@dataclass(frozen=True)
class CType:
    kind: str                    # void scalar vector array pointer struct unknown
    name: str = ""               # scalar name (i32, f32 ...) or struct name
    elem: "CType | None" = None  # vector / array element, pointee
    n: int = 0                   # vector width
    dims: tuple = ()             # array dimensions (None = unsized)
    const: bool = False
    volatile: bool = False
    restrict: bool = False
    ref: bool = False            # C++ reference (T&)

    # --- predicates ---
    @property
    def is_scalar(self):
        return self.kind == "scalar"

    @property
    def is_int(self):
        return self.kind == "scalar" and not SCALARS[self.name][2] and self.name != "bool"

    @property
    def is_float(self):
        return self.kind == "scalar" and SCALARS[self.name][2]

    @property
    def is_bool(self):
        return self.kind == "scalar" and self.name == "bool"

    @property
    def is_signed(self):
        return self.kind == "scalar" and SCALARS[self.name][1]

    @property
    def bits(self):
        return SCALARS[self.name][0] if self.kind == "scalar" else 0

    @property
    def is_pointer(self):
        return self.kind == "pointer"

    @property
    def is_array(self):
        return self.kind == "array"

    @property
    def is_arith(self):
        return self.kind in ("scalar", "vector")

    def unqualified(self) -> "CType":
        if not (self.const or self.volatile or self.restrict or self.ref):
            return self
        return replace(self, const=False, volatile=False, restrict=False, ref=False)

    def same(self, other: "CType") -> bool:
        return other is not None and self.unqualified() == other.unqualified()

    def __str__(self):
        return spell(self)


VOID = CType("void")
UNKNOWN = CType("unknown")

# cursor kinds among an expression's children that are not operands (`ns::f`, `T(x)`, `f<T>`)
NON_EXPR = ("TYPE_REF", "NAMESPACE_REF", "TEMPLATE_REF")


def scalar(name: str) -> CType:
    return CType("scalar", name)


BOOL, I32, U32, I64, U64, F32, F64 = (scalar(n) for n in ("bool", "i32", "u32", "i64", "u64", "f32", "f64"))


def vector(elem: str, n: int) -> CType:
    return CType("vector", elem=scalar(elem), n=n)


def pointer(elem: CType) -> CType:
    return CType("pointer", elem=elem)


def array(elem: CType, dims) -> CType:
    return CType("array", elem=elem, dims=tuple(dims))


def spell(t: CType) -> str:
    """A C-like spelling for messages and manifests."""
    if t is None:
        return "?"
    if t.kind == "scalar":
        return {"bool": "bool", "i8": "char", "u8": "unsigned char", "i16": "short", "u16": "unsigned short",
                "i32": "int", "u32": "unsigned int", "i64": "long long", "u64": "unsigned long long",
                "f16": "half", "f32": "float", "f64": "double"}[t.name]
    if t.kind == "vector" and t.elem.name == "f16":
        return f"half{t.n}"
    if t.kind == "vector":
        inv = {v: k for k, v in _VEC_PREFIX.items()}
        inv["i64"], inv["u64"] = "longlong", "ulonglong"
        return f"{inv[t.elem.name]}{t.n}"
    if t.kind == "pointer":
        return spell(t.elem) + " *"
    if t.kind == "array":
        return spell(t.elem) + "".join(f"[{d if d is not None else ''}]" for d in t.dims)
    if t.kind == "struct":
        return t.name
    if t.kind == "unknown" and t.name:
        return t.name                  # clang's spelling, e.g. `fr_t (*)[32][32]`: the message names it
    return t.kind


# --- parsing clang spellings ---
_QUALS = ("const", "volatile", "__restrict__", "__restrict", "restrict")


def _int_expr(text: str, subst: dict):
    """The value of an array bound like `K / 8` or `(N + 1) * 2` over integer template arguments, with C's
    truncating division; None when it is anything else."""
    import ast
    # `Ktraits::kTile` (a traits member in the substitution, traits.py): its value
    text = re.sub(r"\b\w+(?:\s*::\s*\w+)+", lambda m: str(int(subst[re.sub(r"\s+", "", m.group(0))]))
                  if isinstance(subst.get(re.sub(r"\s+", "", m.group(0))), int) else m.group(0), text)
    try:
        tree = ast.parse(text.replace("/", "//"), mode="eval").body
    except SyntaxError:
        return None

    def ev(n):
        if isinstance(n, ast.Constant) and isinstance(n.value, int) and not isinstance(n.value, bool):
            return n.value
        if isinstance(n, ast.Name) and isinstance(subst.get(n.id), int) and not isinstance(subst[n.id], bool):
            return subst[n.id]
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, (ast.USub, ast.UAdd)):
            v = ev(n.operand)
            return None if v is None else (-v if isinstance(n.op, ast.USub) else v)
        if isinstance(n, ast.BinOp):
            a, b = ev(n.left), ev(n.right)
            if a is None or b is None:
                return None
            if isinstance(n.op, ast.Add):
                return a + b
            if isinstance(n.op, ast.Sub):
                return a - b
            if isinstance(n.op, ast.Mult):
                return a * b
            if isinstance(n.op, (ast.FloorDiv, ast.Mod)) and b != 0:
                q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)      # C truncates toward zero
                return q if isinstance(n.op, ast.FloorDiv) else a - q * b
            if isinstance(n.op, ast.LShift) and 0 <= b < 63:
                return a << b
            if isinstance(n.op, ast.RShift) and 0 <= b < 63:
                return a >> b
        return None

    v = ev(tree)
    return v if v is not None and v > 0 else None


def parse(spelling: str, subst: dict | None = None, structs: set | None = None) -> CType:
    """Parse a clang type spelling ("const float *__restrict", "float[4][2]", "unsigned int", "T *" with
    subst {"T": "float"}). Unknown spellings give CType("unknown", name=...)."""
    s = spelling.strip()
    s = re.sub(r"\s+", " ", s)
    # arrays: "float[4][2]" or "float [4]"
    m = re.match(r"^(.*?)\s*((?:\[[\w\s+\-*/%()<>:]*\])+)$", s)   # `:`: `[Ktraits::kTile]` (traits.py)
    ref = m is not None and re.fullmatch(r"(.*?)\s*\(\s*&\s*\)", m.group(1))
    if ref:                         # `int (&)[4]`: a reference to an array (a parameter: bound like a pointer)
        return replace(parse(ref.group(1) + m.group(2), subst, structs), ref=True)
    if m and "(" in m.group(1):     # `long (*)[32]`: a pointer to an array, not an array
        return CType("unknown", name=s)
    if m:
        base = parse(m.group(1), subst, structs)
        dims = []
        for d in re.findall(r"\[([^\]]*)\]", m.group(2)):
            d = d.strip()
            if d == "":
                dims.append(None)
            elif d.isdigit():
                dims.append(int(d))
            elif subst and d in subst and isinstance(subst[d], int):
                dims.append(subst[d])
            else:
                dims.append(_int_expr(d, subst or {}))     # `[K / 8]` in a template: K of this instance
        return array(base, dims)
    # references
    if s.endswith("&"):
        inner = parse(s[:-1].rstrip("&").strip(), subst, structs)
        return replace(inner, ref=True)
    # pointers, possibly with qualifiers after the star
    m = re.match(r"^(.*)\*\s*((?:const|volatile|__restrict__|__restrict|restrict|\s)*)$", s)
    if m and "(" not in s:
        inner = parse(m.group(1), subst, structs)
        q = m.group(2)
        return CType("pointer", elem=inner, const="const" in q, restrict="restrict" in q)
    if "(" in s:   # function pointers, pointers to arrays
        return CType("unknown", name=s)
    const = volatile = False
    words = []
    for w in s.split(" "):
        if w == "const":
            const = True
        elif w == "volatile":
            volatile = True
        elif w in ("struct", "class", "typename", "enum", "__restrict", "__restrict__", "restrict", ""):
            continue
        else:
            words.append(w)
    base = " ".join(words)
    if base.startswith("std::"):
        base = base[5:]
    if subst and base in subst:
        v = subst[base]
        t = v if isinstance(v, CType) else parse(str(v), None, structs)
        return replace(t, const=const or t.const, volatile=volatile or t.volatile)
    if base in _C_NAMES:
        return CType("scalar", _C_NAMES[base], const=const, volatile=volatile)
    if base == "void":
        return CType("void", const=const)
    vm = _VEC_RE.match(base)
    if vm:
        n = int(vm.group(2))
        el = _VEC_PREFIX[vm.group(1)]
        if n == 1:
            return CType("scalar", el, const=const, volatile=volatile)
        return CType("vector", elem=scalar(el), n=n, const=const, volatile=volatile)
    if base in ("__half2", "half2"):              # cuda_fp16.h's pair of halves: a 2-vector
        return CType("vector", elem=scalar("f16"), n=2, const=const, volatile=volatile)
    if base == "dim3":
        return CType("vector", elem=U32, n=3, const=const, volatile=volatile)
    if base.startswith("type-parameter-") or base in ("<dependent type>",):
        return CType("unknown", name=base)
    if re.match(r"^[A-Za-z_]\w*$", base) and (structs is None or base in structs):
        return CType("struct", name=base, const=const, volatile=volatile)
    return CType("unknown", name=base)


# --- C arithmetic ---
def promote(t: CType) -> CType:
    """Integer promotion."""
    if t.kind == "scalar" and t.name in ("bool", "i8", "u8", "i16", "u16"):
        return I32
    return t.unqualified()


def _rank(name):
    return SCALARS[name][0]


def common(a: CType, b: CType) -> CType:
    """The usual arithmetic conversions."""
    if a.kind == "vector":
        return a.unqualified()
    if b.kind == "vector":
        return b.unqualified()
    if a.kind != "scalar" or b.kind != "scalar":
        return a.unqualified() if a.kind != "unknown" else b.unqualified()
    a, b = promote(a), promote(b)
    for f in ("f64", "f32", "f16"):
        if f in (a.name, b.name):
            return scalar(f)
    if a.name == b.name:
        return a
    sa, sb = SCALARS[a.name][1], SCALARS[b.name][1]
    if sa == sb:
        return a if _rank(a.name) >= _rank(b.name) else b
    u, s = (a, b) if not sa else (b, a)
    if _rank(u.name) >= _rank(s.name):
        return u
    if _rank(s.name) > _rank(u.name):
        return s
    return scalar("u" + s.name[1:])


def with_elem(t: CType, elem: CType) -> CType:
    return replace(t, elem=elem)


# --- layouts for Vulkan blocks ---
def size_align(t: CType, layout: str = "std430", structs: dict | None = None) -> tuple[int, int]:
    """(size, alignment) in bytes of a member of a std430 / std140 / scalar block."""
    if t.kind == "scalar":
        s = max(4, SCALARS[t.name][0] // 8) if t.name == "bool" else SCALARS[t.name][0] // 8
        return s, s
    if t.kind == "vector":
        es = SCALARS[t.elem.name][0] // 8
        if layout == "scalar":          # GL_EXT_scalar_block_layout: aligned to the component
            return es * t.n, es
        n = 4 if t.n == 3 else t.n
        return es * t.n, es * n
    if t.kind == "struct" and structs and t.name in structs:
        off, al = 0, 1
        for _name, ft in structs[t.name]:
            s, a = size_align(ft, layout, structs)
            off = (off + a - 1) // a * a + s
            al = max(al, a)
        if layout == "std140":
            al = max(al, 16)
        return (off + al - 1) // al * al, al
    if t.kind == "array" and all(d is not None for d in t.dims):
        s, a = size_align(t.elem, layout, structs)
        if layout == "std140":
            a = max(a, 16)
        stride = (s + a - 1) // a * a
        n = 1
        for d in t.dims:
            n *= d
        return stride * n, a
    raise ValueError(f"no block layout for {spell(t)}")


def c_size(t: CType, structs: dict | None = None) -> int | None:
    """sizeof in C (CUDA's vector types are aligned to their size, float3 is 12 bytes)."""
    if t.kind == "scalar":
        return SCALARS[t.name][0] // 8 if t.name != "bool" else 1
    if t.kind == "vector":
        return SCALARS[t.elem.name][0] // 8 * t.n
    if t.kind == "pointer":
        return 8
    if t.kind == "array" and all(d is not None for d in t.dims):
        s = c_size(t.elem, structs)
        if s is None:
            return None
        for d in t.dims:
            s *= d
        return s
    if t.kind == "struct" and structs and t.name in structs:
        off, al = 0, 1
        for _n, ft in structs[t.name]:
            s = c_size(ft, structs)
            # CUDA aligns vectors to their size, except 3-vectors: to their element (float3 at 4, double3 at 8)
            a = s if ft.kind == "scalar" else (
                (s // 3 if ft.n == 3 else min(16, s)) if ft.kind == "vector" else 4)
            if s is None:
                return None
            off = (off + a - 1) // a * a + s
            al = max(al, a)
        return (off + al - 1) // al * al
    return None
