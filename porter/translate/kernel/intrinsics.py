"""CUDA device math functions and the intrinsics that stand for them, as data: rules/kernel/intrinsics.csv, one
row per CUDA name, read by both kernel targets (glsl.py, opencl.py) and rendered as docs/intrinsics.md.

Columns: cuda (the name; a `math` row covers the float variant `namef` too), kind (`math`: a function;
`fast`: an intrinsic that becomes the math row its target column names; `int`: an integer intrinsic with the
prototype in INT_SIGNATURES, a template becoming a helper function so each argument is evaluated once), glsl and
opencl (the spelling: a
function name, `helper` for a GLSL helper function cuport writes, a template with {0}, {1}... for the arguments,
or empty: the target does not translate it), glsl_f64 (whether GLSL has the double overload: yes, no, or `helper`
for a double helper function cuport writes, glsl_builtins.double_helper), extension (what
the spelling needs beyond what the types already require), precision (how the result differs from CUDA's).

    python -m porter.translate.kernel.intrinsics            # rewrite docs/intrinsics.md
    python -m porter.translate.kernel.intrinsics --check    # exit 1 if the page is stale
"""
from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

TARGET_COLUMNS = ("glsl", "opencl")


@dataclass(frozen=True)
class Intrinsic:
    cuda: str
    kind: str
    glsl: str
    opencl: str
    glsl_f64: bool
    extension: str
    precision: str
    f64_helper: bool = False       # the double overload is a helper cuport writes (GLSL has float only)

    def spelling(self, target: str) -> str:
        return getattr(self, target)


class Resolved(NamedTuple):
    base: str              # the CUDA math function the call computes (sqrt for sqrtf and __fsqrt_rn)
    row: Intrinsic         # its math row
    single: bool           # the float variant: an `f` suffix or a fast intrinsic


def rules_path() -> Path:
    from porter.resources import data_dir
    return data_dir("rules") / "kernel" / "intrinsics.csv"


# `half` rows: the cuda_fp16.h intrinsics (and the operators of __half / __half2, through them) with the prototypes
# in halfprec.HALF_SIGNATURES; `fp8`: cuda_fp8.h's conversions, helper functions halfprec writes. They are a table of
# their own: `__hadd` is both an integer intrinsic and a half one.
_HALF_KINDS = ("half", "fp8")


@lru_cache(maxsize=1)
def _rows() -> tuple[dict[str, Intrinsic], dict[str, Intrinsic]]:
    out, half = {}, {}
    with open(rules_path(), newline="", encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            if r["kind"] not in ("math", "fast", "int") + _HALF_KINDS:
                raise ValueError(f"{rules_path()}: {r['cuda']}: unknown kind {r['kind']!r}")
            row = Intrinsic(r["cuda"], r["kind"], r["glsl"], r["opencl"], r["glsl_f64"] in ("yes", "helper"),
                            r["extension"], r["precision"], r["glsl_f64"] == "helper")
            (half if r["kind"] in _HALF_KINDS else out)[r["cuda"]] = row
    return out, half


def table() -> dict[str, Intrinsic]:
    """{cuda name: row} of rules/kernel/intrinsics.csv but its half and fp8 rows (call table.cache_clear() after
    changing the file)."""
    return _rows()[0]


def half_table() -> dict[str, Intrinsic]:
    """{cuda name: row} of the `half` and `fp8` rows of rules/kernel/intrinsics.csv."""
    return _rows()[1]


table.cache_clear = _rows.cache_clear


def resolve(name: str, target: str) -> Resolved | None:
    """The math function a call of `name` computes for `target`, or None when the table has no row for it. A row
    whose spelling for `target` is empty still resolves: the caller refuses it (or tries its other rules)."""
    t = table()
    r = t.get(name)
    if r is not None and r.kind == "int":
        return None
    if r is not None and r.kind == "fast":
        base = r.spelling(target)
        return Resolved(base, t[base], True) if base in t else None
    if r is not None:
        return Resolved(name, r, False)
    if name.endswith("f"):
        r = t.get(name[:-1])
        if r is not None and r.kind == "math":
            return Resolved(name[:-1], r, True)
    return None


def is_fast(name: str) -> bool:
    """A CUDA fast intrinsic (`__expf`): its row says it trades accuracy for speed."""
    r = table().get(name)
    return r is not None and r.kind == "fast"


def spell(spelling: str, args: list[str]) -> str:
    """A call with the spelling of a row: a function name, or a template with {0}, {1}..."""
    if "{" in spelling:
        return spelling.format(*args)
    return f"{spelling}({', '.join(args)})"


# CUDA's prototypes of the `int` rows: (result, parameters)
INT_SIGNATURES = {
    "__funnelshift_l": ("u32", ("u32", "u32", "u32")), "__funnelshift_lc": ("u32", ("u32", "u32", "u32")),
    "__funnelshift_r": ("u32", ("u32", "u32", "u32")), "__funnelshift_rc": ("u32", ("u32", "u32", "u32")),
    "__sad": ("u32", ("i32", "i32", "u32")), "__usad": ("u32", ("u32", "u32", "u32")),
    "__hadd": ("i32", ("i32", "i32")), "__rhadd": ("i32", ("i32", "i32")),
    "__uhadd": ("u32", ("u32", "u32")), "__urhadd": ("u32", ("u32", "u32")),
}


def integer(em, target, name: str, n, args):
    """An `int` row's call: the arguments converted to CUDA's parameter types, then the target's function, or
    a helper function `cuport_<name>` whose body is the row's template; None for a name without such a row (or
    arguments that are not integers: `__hadd` of two halves is the half intrinsic)."""
    from porter.translate.kernel import ctype as ct
    from porter.translate.kernel.target import E
    r = table().get(name)
    if r is None or r.kind != "int" or name not in INT_SIGNATURES:
        return None
    rt_name, pt_names = INT_SIGNATURES[name]
    if len(args) != len(pt_names) or any(not (em.ty(a).kind == "scalar" and em.ty(a).is_int) for a in args):
        return None
    spelling = r.spelling(target.name)
    if not spelling:
        em.fail(n, f"`{name}` (no {target.name} mapping)")
    types = [ct.scalar(p) for p in pt_names]
    rt = ct.scalar(rt_name)
    xs = [em.conv(em.x(a), t) for a, t in zip(args, types)]
    if "{" not in spelling:
        return E(spell(spelling, [x.text for x in xs]), rt)
    names = "abc"[:len(xs)]
    params = ", ".join(f"{target.type_name(t, em)} {v}" for t, v in zip(types, names))
    hname = em.helper(f"cuport{name}", f"{target.type_name(rt, em)} cuport{name}({params})\n{{\n"
                      f"    return {spelling.format(*names)};\n}}")
    return E(f"{hname}({', '.join(x.text for x in xs)})", rt)


# --- docs/intrinsics.md ----------------------------------------------------------------------------------------

# rounding-mode and fast arithmetic: plain operators in both targets (neither exposes per-instruction rounding)
_ROUNDED = {f"__{p}{op}_{r}": (p, op) for p in ("f", "d") for op in ("add", "sub", "mul", "div")
            for r in ("rn", "rz", "ru", "rd")}
_ROUNDED.update({"__fdividef": ("f", "div"), "fdividef": ("f", "div")})
_RECIPROCAL = {f"__{p}rcp_{r}": p for p in ("f", "d") for r in ("rn", "rz", "ru", "rd")}


def arithmetic(em, name: str, xs: list, one: str):
    """`__fmul_rn(a, b)` -> `a * b` (parenthesised: `__fmul_rn(a + b, c)` is `(a + b) * c`), `__frcp_rn(x)` ->
    `ONE / x`, in double for the `__d` forms when the kernel uses doubles; None for any other name. `one` is the
    target's spelling of 1 in float."""
    from porter.translate.kernel.ctype import F32, F64
    from porter.translate.kernel.target import E
    if name in _ROUNDED and len(xs) == 2:
        p, op = _ROUNDED[name]
        ft = F64 if p == "d" and em.uses_double else F32
        a, b = em.conv(xs[0], ft), em.conv(xs[1], ft)
        sym = {"add": "+", "sub": "-", "mul": "*", "div": "/"}[op]
        prec = 4 if sym in "+-" else 3
        return E(f"{a.paren(prec)} {sym} {b.paren(prec - 1)}", ft, prec)
    if name in _RECIPROCAL and len(xs) == 1:
        ft = F64 if _RECIPROCAL[name] == "d" and em.uses_double else F32
        return E(f"{one if ft is F32 else '1.0'} / {em.conv(xs[0], ft).paren(2)}", ft, 3)
    return None


def default_output() -> Path:
    return Path(__file__).resolve().parents[3] / "docs" / "intrinsics.md"


def _cell(text: str) -> str:
    return text.replace("|", "\\|") if text else ""


def _code(text: str, target: str) -> str:
    if not text:
        return "not translated"
    if text == "helper":
        return "cuport helper"
    return f"`{text}`"


def accuracy_results() -> Path:
    """bench/math_accuracy.py's results, the measured table of the page (absent: the page has no such table)."""
    return Path(__file__).resolve().parents[3] / "bench" / "results" / "math_accuracy.json"


def _ulps(v) -> str:
    return "inf" if v == float("inf") else f"{int(v)}" if v == int(v) else f"{v:g}"


def _measured(entry: dict | None, bound) -> str:
    """One backend's cell: the worst ulps (bold beyond CUDA's bound), its region and argument."""
    if not entry:
        return ""
    if "refused" in entry:
        return f"refused ({entry['refused'].split(':')[0]})"
    worst = max(entry["regions"], key=lambda r: r["max_ulp"])
    text = _ulps(entry["max_ulp"])
    if entry["max_ulp"] > bound:
        text = f"**{text}**"
    if entry["max_ulp"] > 0:
        text += f" ({worst['region']}: at {', '.join(worst['at'])})"
    if entry["normal_max_ulp"] != entry["max_ulp"]:
        text += f"; {_ulps(entry['normal_max_ulp'])} without subnormals"
    return text


def _accuracy_section() -> list[str]:
    import json
    path = accuracy_results()
    if not path.exists():
        return []
    data = json.loads(path.read_text(encoding="utf-8"))
    devices = data.get("devices", {})
    out = ["", "## Measured accuracy (float and double math on lavapipe and PoCL)", "",
           f"`{data['command']}` ({data['points_per_region']} arguments per region, regions named in "
           "bench/results/math_accuracy.json; lavapipe: "
           f"{devices.get('vulkan', '?')}, PoCL: {devices.get('opencl', '?')}). Each function is the translation "
           "cuport writes for a one-line CUDA kernel (`y[i] = acosf(x[i])`): the builtin or the cuport helper of "
           "its row. The error is CUDA's measure: the distance in ulps between the returned value and the "
           "correctly rounded result (NumPy in long double, exact where the function is). *CUDA*: the maximum "
           "of the Programming Guide's table (appendix \"Mathematical Functions\", default flags). *Vulkan "
           "requires*: the spec's bound for the GLSL.std.450 instruction (\"Precision and Operation of SPIR-V "
           "Instructions\"; a helper inherits its parts'). Bold: beyond CUDA's bound. *without subnormals*: "
           "the worst where no argument or result is subnormal (Vulkan may flush them; CUDA keeps them without "
           "-ftz).", "",
           "| CUDA | CUDA, float | lavapipe, float | PoCL, float | Vulkan requires | CUDA, double | "
           "lavapipe, double | PoCL, double |", "|---|---|---|---|---|---|---|---|"]
    beyond, rows = {"builtin": [], "helper": []}, table()
    for name, r in data["f32"].items():
        d = data["f64"].get(name) or {}
        out.append(f"| `{name}` | {r['cuda']} | {_cell(_measured(r.get('vulkan'), r['cuda']))} | "
                   f"{_cell(_measured(r.get('opencl'), r['cuda']))} | {_cell(r['vulkan_bound'])} | "
                   f"{d.get('cuda', '')} | {_cell(_measured(d.get('vulkan'), d.get('cuda', 0)))} | "
                   f"{_cell(_measured(d.get('opencl'), d.get('cuda', 0)))} |")
        v = r.get("vulkan") or {}
        if v.get("normal_max_ulp", 0) > max(8, r["cuda"]):
            regions = [g["region"] for g in v["regions"] if g.get("normal_max_ulp", 0) > max(8, r["cuda"])]
            kind = "helper" if name in rows and rows[name].glsl == "helper" else "builtin"
            beyond[kind].append(f"`{name}` ({', '.join(regions)})")
    if beyond["builtin"]:
        out += ["", "Far beyond CUDA's float bound on lavapipe (more than 8 ulps, subnormals aside), GLSL builtins, "
                "in the regions named: " + ", ".join(beyond["builtin"]) + ". Vulkan allows these (its bounds are "
                "loose or inherited from exp / log, intermediate overflow included; sin / cos are bounded only "
                "inside [-pi, pi]); a kernel that relies on CUDA's accuracy there can differ from the original. "
                "The worst argument of each region is in the JSON."]
    if beyond["helper"]:
        out += ["", "Far beyond CUDA's float bound on lavapipe, cuport helpers built on such builtins: "
                + ", ".join(beyond["helper"]) + "."]
    return out


def render() -> str:
    rows = table().values()
    out = ["# Device math functions and intrinsics (GLSL, OpenCL)", "",
           "<!-- Generated by `python -m porter.translate.kernel.intrinsics` from `rules/kernel/intrinsics.csv`. "
           "Do not edit. -->", "",
           "How `cuport translate --to glsl` and `--to opencl` spell CUDA's device math. A function's row covers its "
           "float variant too (`sqrt` and `sqrtf`). *cuport helper*: a small function written into the output "
           "with C's definition. *not translated*: the kernel is refused with CP907 (GLSL) or the call is left to "
           "the other rules. To add or change a mapping, edit the CSV and regenerate this page "
           "(docs/architecture.md, \"How to add a mapping\").", "",
           "## Math functions", "",
           "| CUDA | GLSL | double in GLSL | OpenCL | extension | precision |",
           "|---|---|---|---|---|---|"]
    for r in rows:
        if r.kind == "math":
            f64 = "" if not r.glsl else ("cuport helper" if r.f64_helper else "yes" if r.glsl_f64 else "no (float only)")
            out.append(f"| `{r.cuda}` | {_code(r.glsl, 'glsl')} | {f64} | {_cell(_code(r.opencl, 'opencl'))} | "
                       f"{_cell(r.extension)} | {_cell(r.precision)} |")
    out += ["", "## Intrinsics that compute a math function", "",
            "| CUDA | GLSL | OpenCL | precision |", "|---|---|---|---|"]
    for r in rows:
        if r.kind == "fast":
            g = f"as `{r.glsl}`" if r.glsl else "not translated"
            o = f"as `{r.opencl}`" if r.opencl else "not translated"
            out.append(f"| `{r.cuda}` | {g} | {o} | {_cell(r.precision)} |")
    out += ["", "## Half precision (cuda_fp16.h) and fp8 (cuda_fp8.h)", "",
            "GLSL computes `__half` as `float16_t` and `__half2` as `f16vec2` (GL_EXT_shader_explicit_arithmetic_types_"
            "float16, GL_EXT_shader_16bit_storage: the manifest asks for `shaderFloat16` and "
            "`storageBuffer16BitAccess`). OpenCL C 1.2 without `cl_khr_fp16` keeps half in buffers only: "
            "`vload_half` / `vstore_half_rte` there, `float` / `float2` elsewhere, every result rounded to half by "
            "`cuport_rh` (storage-only half, any OpenCL 1.2 device). The operators of `__half` and `__half2` are "
            "the intrinsic of their row (`a + b` is `__hadd`, `a != b` is `__hneu`).", "",
            "| CUDA | GLSL | OpenCL | precision |", "|---|---|---|---|"]
    for r in half_table().values():
        out.append(f"| `{r.cuda}` | {_cell(_code(r.glsl, 'glsl'))} | {_cell(_code(r.opencl, 'opencl'))} | "
                   f"{_cell(r.precision)} |")
    out += _accuracy_section()
    out += ["", "## Integer intrinsics", "",
            "| CUDA | GLSL | OpenCL | precision |", "|---|---|---|---|"]
    for r in rows:
        if r.kind == "int":
            out.append(f"| `{r.cuda}` | {_cell(_code(r.glsl, 'glsl'))} | {_cell(_code(r.opencl, 'opencl'))} | "
                       f"{_cell(r.precision)} |")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    import argparse
    import sys
    parser = argparse.ArgumentParser(prog="python -m porter.translate.kernel.intrinsics",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/intrinsics.md is out of date")
    args = parser.parse_args(argv)
    path = default_output()
    text = render()
    if args.check:
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            print(f"{path} is out of date; run python -m porter.translate.kernel.intrinsics", file=sys.stderr)
            return 1
        return 0
    path.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
