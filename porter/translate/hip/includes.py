"""Preprocessor directives of the HIP translation: `#include` lines mapped through the header table, project
headers resolved, cuda-samples helpers and CUDA library headers reported (the ROCm library the output needs),
and where the HIP include goes. Mixed into the translator (translator.py), whose state it reads."""
from __future__ import annotations

import os
import re

from porter.translate.hip.handlers import LIBRARY, UNSUPPORTED


MATH_CONSTANTS = "hip/hip_math_constants.h"
MATH_CONSTANTS_SINCE = "5.3"          # HIPIFY's tables: HIP_INF_F & co. from HIP 5.3.0 on
# the values of CUDA's math_constants.h, under the HIP names the tables give them
MATH_CONSTANTS_FALLBACK = "".join(f"#define {k} {v}\n" for k, v in (
    ("HIP_INF_F", "__builtin_huge_valf()"), ("HIP_NAN_F", "__builtin_nanf(\"\")"),
    ("HIP_INF", "__builtin_huge_val()"), ("HIP_NAN", "__builtin_nan(\"\")"),
    ("HIP_MIN_DENORM_F", "1.40129846e-45f"), ("HIP_MAX_NORMAL_F", "3.40282347e+38f"),
    ("HIP_ZERO_F", "0.0f"), ("HIP_ONE_F", "1.0f"), ("HIP_SQRT_HALF_F", "0.707106781f"),
    ("HIP_SQRT_2_F", "1.414213562f"), ("HIP_PI_F", "3.141592654f"), ("HIP_PIO2_F", "1.570796327f"),
    ("HIP_2_OVER_PI_F", "0.636619772f"), ("HIP_L2E_F", "1.442695041f"), ("HIP_LN2_F", "0.693147181f"),
    ("HIP_PI", "3.1415926535897931e+0")))
MATH_CONSTANTS_FALLBACK_NAMES = frozenset(line.split()[1] for line in MATH_CONSTANTS_FALLBACK.splitlines())
# cuda-samples' Common/ helpers: programs include them with quotes but they belong to no project
CUDA_SAMPLES_HELPERS = frozenset({"helper_cuda.h", "helper_functions.h", "helper_math.h", "helper_string.h",
                                  "helper_timer.h", "helper_image.h", "helper_cuda_drvapi.h", "helper_gl.h",
                                  "helper_multiprocess.h", "exception.h", "nvrtc_helper.h", "cuda_drvapi_dynlink.h"})
# ROCm libraries by the directory of their headers: (name, link flag; "" for header-only libraries)
LIBRARIES = {
    "hipblas": ("hipBLAS", "-lhipblas"), "hipblaslt": ("hipBLASLt", "-lhipblaslt"),
    "hiprand": ("hipRAND", "-lhiprand"), "hipfft": ("hipFFT", "-lhipfft"),
    "hipsparse": ("hipSPARSE", "-lhipsparse"), "hipsolver": ("hipSOLVER", "-lhipsolver"),
    "hipcub": ("hipCUB", ""), "rocblas": ("rocBLAS", "-lrocblas"), "rocrand": ("rocRAND", "-lrocrand"),
    "rocsparse": ("rocSPARSE", "-lrocsparse"), "rocsolver": ("rocSOLVER", "-lrocsolver"),
    "rccl": ("RCCL", "-lrccl"), "roctracer": ("roctracer (roctx)", "-lroctx64"), "miopen": ("MIOpen", "-lMIOpen"),
    "hipDNN.h": ("hipDNN", "-lhipDNN"), "thrust": ("rocThrust", ""),
}
HIP_RUNTIME = "hip/hip_runtime.h"
# directives whose text is not code: nothing in them is renamed
_OPAQUE_DIRECTIVES = {"include", "include_next", "import", "error", "warning", "pragma", "line", "ident"}


class IncludePass:

    # -- directives: find them, map #include lines, remember where hipify-clang would insert its include
    def _directives(self):
        toks, data = self.tokens, self.data
        self.opaque: list[tuple[int, int]] = []       # token index ranges inside non-code directives
        self.includes: list[str] = []
        self.included_names: list[str] = []          # every #include name, as written
        self.math_fallback = False                   # the output defines the math constants itself
        self.cuda_headers: set[str] = set()         # the CUDA headers (of the tables) the file includes
        self.hip_runtime_at: int | None = None       # offset of the #include that is (now) hip_runtime.h
        self.first_include: int | None = None
        self.guard_end: int | None = None
        seen_targets: set[str] = set()
        # clang's controlling macro (what hipify-clang inserts after): a first `#ifndef X` whose `#endif` ends the
        # file, only comments outside; `#pragma once` counts too, the earlier of the two wins
        conds: list[int | None] = []          # open conditionals; the guard candidate's #ifndef line end
        guard_at = pragma_at = None
        code_before = False
        n = len(toks)
        i = 0
        while i < n:
            t = toks[i]
            if t.kind != "PUNCTUATION" or t.spelling != "#" or not self._at_line_start(t.start):
                if t.kind != "COMMENT":
                    code_before = True
                    if guard_at is not None and not conds:
                        guard_at = None           # code after the guard's #endif: no controlling macro
                i += 1
                continue
            end = self._directive_end(t.start)
            j = i + 1
            while j < n and toks[j].start < end:
                j += 1
            name = toks[i + 1].spelling if i + 1 < j else ""
            if guard_at is not None and not conds:
                guard_at = None                   # a directive after the guard's #endif
            if name in _OPAQUE_DIRECTIVES:
                self.opaque.append((i, j))
            if name in ("include", "include_next", "import"):
                self._include(t.start, end, seen_targets)
            elif name == "pragma" and j > i + 2 and toks[i + 2].spelling == "once":
                pragma_at = self._line_end(t.start) if pragma_at is None else pragma_at
            elif name in ("if", "ifdef", "ifndef"):
                first = name == "ifndef" and not code_before and guard_at is None and not conds and j > i + 2
                conds.append(self._line_end(t.start) if first else None)
            elif name == "endif" and conds:
                closed = conds.pop()
                if closed is not None:
                    guard_at = closed
            if name not in ("pragma",):
                code_before = True
            i = j
        if conds:
            guard_at = None                     # unbalanced conditionals: clang would not see a guard either
        cands = [o for o in (guard_at, pragma_at) if o is not None]
        self.guard_end = min(cands) if cands else None

    def _at_line_start(self, off):
        k = off - 1
        data = self.data
        while k >= 0 and data[k] in b" \t":
            k -= 1
        return k < 0 or data[k] in b"\n\r"

    def _line_end(self, off):
        e = self.data.find(b"\n", off)
        if e < 0:
            return len(self.data)
        return e - 1 if e > 0 and self.data[e - 1:e] == b"\r" else e

    def _directive_end(self, off):
        data = self.data
        while True:
            e = data.find(b"\n", off)
            if e < 0:
                return len(data)
            k = e - 1
            if k >= 0 and data[k:k + 1] == b"\r":
                k -= 1
            if k >= 0 and data[k:k + 1] == b"\\":
                off = e + 1
                continue
            return e

    def _include(self, start, end, seen_targets):
        line = self.data[start:end].decode("utf-8", "replace")
        m = re.match(r'#\s*(?:include|include_next|import)\s*([<"])([^>"\n]+)([>"])', line)
        if not m:
            return
        if self.first_include is None:
            self.first_include = start
        name = m.group(2).strip()
        self.included_names.append(name)
        span_end = start + len(line[:m.end()].encode("utf-8"))
        if name not in self.header_maps:
            found = self._resolve_project_header(name, quoted=m.group(1) == '"')
            if not found and os.path.basename(name) in CUDA_SAMPLES_HELPERS:
                self._diag(UNSUPPORTED, start, span_end,
                           f"`{name}` is a CUDA samples helper header (cuda-samples/Common), not found in the "
                           f"project: copy it next to the sources (its CUDA calls are then translated with "
                           f"--include-headers) or replace its helpers", "warning")
                self.notes.append((UNSUPPORTED, start, f"`{name}` (CUDA samples helper) not found"))
            elif not found and name.split("/", 1)[0] == "thrust":
                self._library_note(name, name, start, span_end)
        if name == HIP_RUNTIME:
            if self.hip_runtime_at is None:
                self.hip_runtime_at = start
            seen_targets.add(name)
            return
        mp = self.header_maps.get(name)
        if mp is None:
            return
        self.cuda_headers.add(os.path.basename(name))
        area = mp.area
        if mp.unsupported:
            self.stats.add(name, area, False)
            self._diag(UNSUPPORTED, start, span_end, f"`{name}` has no HIP equivalent; the include is kept")
            self.notes.append((UNSUPPORTED, start, f"`{name}` has no HIP equivalent"))
            return
        target = mp.target(self.opts.roc)
        self.stats.add(name, area, True)
        if not target or target in seen_targets:
            # no counterpart needed, or a second CUDA main header: hipify-clang deletes the directive
            self.edit(start, span_end, "")
            return
        seen_targets.add(target)
        self._library_note(name, target, start, span_end)
        if target == HIP_RUNTIME and self.hip_runtime_at is None:
            self.hip_runtime_at = start
        # only the header name changes (hipify-clang): `#include<x>` / `#  include "x"` keep their spelling
        name_start = start + len(line[:m.start(1)].encode("utf-8"))
        self.edit(name_start, span_end, f"{m.group(1)}{target}{m.group(3)}")
        if target == MATH_CONSTANTS and self._at_line_start(start) and not self.data[span_end:end].strip() \
                and self._old_math_constants():
            # HIP before 5.3 has no hip_math_constants.h: the constants the tables map to are defined here then
            self.math_fallback = True
            self.edit(start, start, f"#if !defined(__has_include) || __has_include(<{target}>)\n")
            self.edit(span_end, span_end, "\n#else\n" + MATH_CONSTANTS_FALLBACK + "#endif")

    def _old_math_constants(self) -> bool:
        """Does the target HIP lack hip_math_constants.h (HIP < 5.3)? The chosen --hip-version decides; without
        one, the installed HIP when there is one (so the output compiles where it is translated), else the
        newest, which has it (HIPIFY's output)."""
        from porter.translate.hip.tables import version_key
        if self.opts.hip_version:
            return version_key(self.opts.hip_version) < version_key(MATH_CONSTANTS_SINCE)
        dirs = self.opts.parse_options.include_dirs
        return bool(find_system_header(HIP_RUNTIME, dirs)) and not find_system_header(MATH_CONSTANTS, dirs)

    def _library_note(self, name, target, start, end):
        """A CUDA library header becomes a ROCm library's header: say which library the program now needs and,
        when that library's header is not installed where hipcc looks, that compiling will fail for that reason
        (rather than leaving an unexplained `file not found`)."""
        lib = library_of(target)
        if lib is None:
            if target.startswith("hip/") and not (target == MATH_CONSTANTS and self._old_math_constants()) \
                    and find_system_header(HIP_RUNTIME, self.opts.parse_options.include_dirs) \
                    and not find_system_header(target, self.opts.parse_options.include_dirs):
                self._diag(LIBRARY, start, end, f"`{name}` -> `{target}`: this HIP installation has no `{target}` "
                           f"(it comes with a newer ROCm); the program will not compile against it", "warning")
            return
        title, link = lib
        found = find_system_header(target, self.opts.parse_options.include_dirs)
        self.libraries.append({"library": title, "header": target, "link": link, "installed": bool(found)})
        how = f"link {link}" if link else "header-only"
        what = f"`{name}` -> `{target}`" if name != target else f"`{name}`"
        if found:
            msg = f"{what}: the program needs {title} ({how})"
            self._diag(LIBRARY, start, end, msg, "info")
        else:
            msg = (f"{what}: the program needs {title} ({how}), whose header `{target}` is not "
                   f"installed (searched {', '.join(system_include_dirs(self.opts.parse_options.include_dirs))}); "
                   f"it will not compile until {title} is installed")
            self._diag(LIBRARY, start, end, msg, "warning")

    def _resolve_project_header(self, name, quoted):
        here = os.path.dirname(os.path.abspath(self.original.path))
        for d in ([here] if quoted else []) + list(self.opts.parse_options.include_dirs):
            p = os.path.normpath(os.path.join(d, name))
            if os.path.isfile(p):
                self.includes.append(p)
                return True
        return False

HIP_HEADER_AREAS = frozenset({"runtime_api", "driver_api", "types", "device", "cooperative_groups", "nvrtc"})


class _Names(frozenset):
    where = ""


_installed_cache: dict = {}


def installed_hip_names(include_dirs=()):
    """Every identifier the installed HIP headers (hip/**, and clang's __clang_hip_* headers) spell; None when
    no HIP installation is found. Computed once per process."""
    if include_dirs in _installed_cache:
        return _installed_cache[include_dirs]
    import glob
    runtime = find_system_header(HIP_RUNTIME, include_dirs)
    result = None
    if runtime:
        hip_dir = os.path.dirname(runtime)
        files = glob.glob(os.path.join(hip_dir, "**", "*.h"), recursive=True) + \
            glob.glob(os.path.join(hip_dir, "**", "*.hpp"), recursive=True)
        for pat in ("/usr/lib/llvm-*/lib/clang/*/include/__clang_hip*.h", "/usr/lib/clang/*/include/__clang_hip*.h",
                    "/opt/rocm*/llvm/lib/clang/*/include/__clang_hip*.h"):
            files += glob.glob(pat)
        names: set[bytes] = set()
        ident = re.compile(rb"\b[A-Za-z_]\w*\b")
        for f in files:
            try:
                with open(f, "rb") as fh:
                    names.update(ident.findall(fh.read()))
            except OSError:
                pass
        result = _Names(n.decode("ascii", "replace") for n in names)
        result.where = hip_dir
    _installed_cache[include_dirs] = result
    return result


def library_of(header: str):
    """(library name, link flag) of a ROCm library header such as `hipblas/hipblas.h`; None for HIP's own."""
    head = header.split("/", 1)[0]
    return LIBRARIES.get(head)


def system_include_dirs(extra=()) -> list[str]:
    """Where hipcc finds ROCm library headers: -I directories, $ROCM_PATH/include, /opt/rocm/include, /usr/include,
    /usr/local/include (those that exist)."""
    dirs = list(extra)
    rocm = os.environ.get("ROCM_PATH") or os.environ.get("HIP_PATH")
    if rocm:
        dirs.append(os.path.join(rocm, "include"))
    dirs += ["/opt/rocm/include", "/usr/include", "/usr/local/include"]
    out = []
    for d in dirs:
        if d not in out and os.path.isdir(d):
            out.append(d)
    return out


def find_system_header(header: str, extra=()) -> str | None:
    for d in system_include_dirs(extra):
        p = os.path.join(d, header)
        if os.path.isfile(p):
            return p
    return None


