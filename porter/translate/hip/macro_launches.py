"""Launches hidden in macros, written out at each use as hipify-clang does (`--launch-syntax hip`).

Two shapes are expanded, both only when the macro's body is nothing but the launch (so writing the expansion at
the use loses nothing the macro did):
- a function-like macro whose body is a whole launch, `#define LAUNCH(k, g, b, ...) k<<<g, b>>>(__VA_ARGS__);`:
  `LAUNCH(Inc1, grid, block, a, b);` -> `hipLaunchKernelGGL(Inc1, dim3(grid), dim3(block), 0, 0, a, b);`
  (the body is rewritten too, for uses this file does not show);
- an object-like macro holding a launch without its arguments, `#define CALL axpy<float><<<1, n>>>`:
  `CALL(x, y);` -> `hipLaunchKernelGGL(HIP_KERNEL_NAME(axpy<float>), dim3(1), dim3(n), 0, 0, x, y);`.
Anything else (token pasting, stringizing, more than a launch) keeps the use as written."""
from __future__ import annotations

import bisect
import re

from porter.translate.hip import handlers as H

_DEFINE = re.compile(r"\s*(?:#\s*define\s+)?(\w+)(\([^)]*\))?")


def _split_top(items: list[int], spell) -> list[list[int]]:
    """Token indexes split at top-level commas."""
    out, cur, depth = [], [], 0
    for k in items:
        p = spell(k)
        if p in ("(", "[", "{"):
            depth += 1
        elif p in (")", "]", "}"):
            depth -= 1
        if p == "," and depth == 0:
            out.append(cur)
            cur = []
            continue
        cur.append(k)
    if cur or out:
        out.append(cur)
    return out


def hip_launch_text(callee: str, config: list[str], args: list[str], template: bool) -> str | None:
    if not 2 <= len(config) <= 4:
        return None
    name = f"HIP_KERNEL_NAME({callee})" if template or "<" in callee else callee
    dims = [c if c.startswith("dim3(") else f"dim3({c})" for c in config[:2]]
    rest = config[2:] + ["0"] * (4 - len(config))
    return "hipLaunchKernelGGL(" + ", ".join([name] + dims + rest + args) + ")"


class MacroLaunchPass:
    """Mixed into the translator: needs tokens, source, model, edit(), translated(), drop_renames()."""

    def _macro_launches(self, templates: set[str]) -> int:
        defs = self._launch_macros()
        if not defs:
            return 0
        toks = self.tokens
        done = 0
        for i, t in enumerate(toks):
            if t.kind != "IDENTIFIER" or t.spelling not in defs or self._on_directive_line(t.start):
                continue
            k = i + 1
            if k >= len(toks) or toks[k].spelling != "(":
                continue
            r = H.split_args(toks, k)
            if r is None:
                continue
            rparen, args = r
            params, body, semicolon = defs[t.spelling]
            arg_texts = [self.translated(a, b) for a, b in args]
            text = self._expand(params, body, arg_texts, templates)
            if text is None:
                continue
            nxt = toks[rparen + 1].spelling if rparen + 1 < len(toks) else ""
            if semicolon and nxt != ";":
                text += ";"
            self.drop_renames(t.start, toks[rparen].end)
            self.edit(t.start, toks[rparen].end, text)
            self.stats.add("<<<...>>>", "launch", True)
            done += 1
        return done

    def _expand(self, params, body, arg_texts, templates):
        toks = self.tokens
        spell = lambda k: toks[k].spelling
        named = {}
        if params is not None:
            fixed = [p for p in params if p != "..."]
            if len(arg_texts) < len(fixed) or (len(arg_texts) > len(fixed) and "..." not in params):
                return None
            named = dict(zip(fixed, arg_texts))
            if "..." in params:
                named["__VA_ARGS__"] = ", ".join(arg_texts[len(fixed):])

        def text(ks):
            """Source text of body tokens ks (contiguous), parameters replaced by the use's arguments."""
            if not ks:
                return ""
            out, pos = [], toks[ks[0]].start
            for k in ks:
                if toks[k].kind == "IDENTIFIER" and spell(k) in named:
                    out.append(self.source.slice(pos, toks[k].start))
                    out.append(named[spell(k)])
                    pos = toks[k].end
            out.append(self.source.slice(pos, toks[ks[-1]].end))
            return "".join(out).strip()

        spells = [spell(k) for k in body]
        lt, gt = spells.index("<<<"), spells.index(">>>")
        callee = text(body[:lt])
        config = [text(c) for c in _split_top(body[lt + 1:gt], spell)]
        if params is None:                      # object-like: the use supplies the arguments
            call_args = [a for a in arg_texts if a.strip()]
        else:
            call_args = [t for t in (text(a) for a in _split_top(body[gt + 2:-1], spell)) if t]
        head = re.match(r"[\w:]+", callee)
        template = bool(head and head.group(0) in templates)
        return hip_launch_text(callee, config, call_args, template)

    def _launch_macros(self) -> dict:
        """{name: (parameters or None, body token spellings, body ended with `;`)} of this file's macros whose
        body is only a launch."""
        out = {}
        toks = self.tokens
        starts = [t.start for t in toks]
        for name, (s, e) in self.model.macro_defs.items():
            m = _DEFINE.match(self.source.slice(s, e))
            if not m or m.group(1) != name:
                continue
            params = None
            if m.group(2) is not None:
                params = [p.strip() for p in m.group(2)[1:-1].split(",") if p.strip()]
            body_start = s + len(self.source.slice(s, e)[:m.end()].encode("utf-8"))
            lo, hi = bisect.bisect_left(starts, body_start), bisect.bisect_left(starts, e)
            body_toks = [k for k in range(lo, hi) if toks[k].kind != "COMMENT"]
            body = [toks[k].spelling for k in body_toks]
            semicolon = bool(body) and body[-1] == ";"
            if semicolon:
                body, body_toks = body[:-1], body_toks[:-1]
            if body.count("<<<") != 1 or body.count(">>>") != 1 or "#" in body or "##" in body or ";" in body:
                continue
            gt = body.index(">>>")
            if params is None and gt != len(body) - 1:
                continue                        # a whole launch in an object-like macro: its body is rewritten
            if params is not None and (gt + 1 >= len(body) or body[gt + 1] != "(" or body[-1] != ")"):
                continue
            out[name] = (params, body_toks, semicolon)
        return out

    def _on_directive_line(self, off) -> bool:
        line_start = self.data.rfind(b"\n", 0, off) + 1
        k = line_start
        # a continued directive: walk back over lines ending in a backslash
        while k > 0:
            prev_end = k - 1
            prev_start = self.data.rfind(b"\n", 0, prev_end) + 1
            if self.data[prev_start:prev_end].rstrip(b"\r").endswith(b"\\"):
                k = prev_start
                continue
            break
        return self.data[k:off].lstrip().startswith(b"#")
