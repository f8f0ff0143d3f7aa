"""Statements: blocks, control flow, loops (unroll hints), switch, barriers, and the lowering of the
warp-synchronous tail (CP301) to work-group barriers."""
from __future__ import annotations

import os
import re
from porter.translate import warp_sizing
from porter.translate.kernel import asserts
from porter.translate.kernel import const_if
from porter.translate.kernel import ctype as ct
from porter.translate.kernel import final_warp
from porter.translate.kernel import returned_pointers
from porter.translate.kernel import warp32_exit
from porter.translate.kernel.ctype import F32, F64
from porter.translate.kernel.target import PREC_ASSIGN, PREC_COND, PREC_UNARY, wrap
from porter.translate.kernel.typeinfo import NON_EXPR, SIDE_EFFECT_FREE_CALLS, ptrlike


class StatementsMixin:
    # ------------------------------------------------------------------ statements
    def emit(self, line: str):
        self.lines.append("    " * self.indent + line if line else "")

    def block_children(self, compound):
        if warp_sizing.chunk_block(self, compound):     # a one-warp scan of the warp totals, run in chunks
            return
        if warp32_exit.emit_body(self, compound):       # whole warps returned early: predicated (warp32)
            return
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
        prev, self.at_stmt = self.at_stmt, n      # where a refusal without a node of its own points
        try:
            k = n.kind
            m = getattr(self, "s_" + k, None)
            if m is not None:
                return m(n)
            if k.endswith("_EXPR") or k.endswith("_OPERATOR") or k.endswith("_LITERAL"):
                return self.expr_stmt(n)
            self.fail(n, f"statement `{k.lower()}`")
        finally:
            self.at_stmt = prev

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
            elif c.kind in ("TYPEDEF_DECL", "TYPE_ALIAS_DECL", "STRUCT_DECL", "STATIC_ASSERT", "NAMESPACE_ALIAS",
                            "USING_DIRECTIVE", "USING_DECLARATION"):   # names only: clang resolved them
                continue
            else:
                self.fail(c, f"declaration `{c.kind.lower()}`")

    def s_BREAK_STMT(self, n):
        self.emit("break;")

    def s_CONTINUE_STMT(self, n):
        self.emit("continue;")

    def s_RETURN_STMT(self, n):
        if not n.children:
            # a constructor's function returns the object it built (ctors.body_prologue)
            ctor = getattr(self.frame, "ctor", False)
            self.emit(f"return {self.name_of(self.frame.self_decl)};" if ctor else "return;")
            return
        fr = self.frame
        if fr.is_kernel:
            self.emit(self.x(n.children[0]).text + ";")
            self.emit("return;")
            return
        if getattr(fr, "returns_pointer", False):
            returned_pointers.return_stmt(self, n)
            return
        if fr.ret.kind == "pointer":
            self.fail(n, "a device function returning a pointer")
        e = self.conv(self.x(n.children[0]), fr.ret)
        self.emit(f"return {e.text};")

    def s_IF_STMT(self, n):
        kids = n.children
        if len(kids) < 2 or kids[0].kind in ("DECL_STMT", "VAR_DECL"):
            self.fail(n, "`if` with an initialiser or declaration condition")
        if self.t.lower_warp_sync and (self.warp_sync_tail(n) or final_warp.lower(self, n)):
            return
        self._refuse_lockstep(kids[1])
        lit = const_if.truth(self, kids[0])
        if lit is not None:
            # a constant condition (`if (REDUCE == SUM)` in a template instance): only the branch C++ runs is
            # emitted; the other may hold what its instance cannot translate (scatter's atomics of other types)
            taken = kids[1] if lit else (kids[2] if len(kids) > 2 else None)
            if taken is not None and taken.kind == "IF_STMT":
                self.stmt(taken)          # `else if`: its own braces
            elif taken is not None:
                self.emit("{")
                self.sub_block(taken)
                self.emit("}")
            return
        store = self.if_converted_store(n) if self.t.if_convert_stores else None
        if store is not None:
            if self.t.keep_comments:       # the branches' comments, kept above the one statement
                for t in self.model.tokens_in(n.start, n.end):
                    if t.kind == "COMMENT":
                        self.emit(t.spelling)
            self.emit(f"{store};")
            return
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

    def if_converted_store(self, n) -> str | None:
        """`if (c) x = a; else x = b;` as `x = c ? a : b` when both branches are one plain assignment to the same
        side-effect-free scalar lvalue: the same values stored, c evaluated once, a or b evaluated as before."""
        kids = n.children
        if len(kids) != 3 or kids[2].kind == "IF_STMT":
            return None
        sa, sb = _single_assignment(kids[1]), _single_assignment(kids[2])
        if sa is None or sb is None:
            return None
        (la, ra), (lb, rb) = sa.children, sb.children
        if " ".join(la.text.split()) != " ".join(lb.text.split()) or not self._pure(la):
            return None
        at = self.ty(la)
        if at.kind not in ("scalar", "vector"):
            return None
        c = self.cond(kids[0])
        lv = self.x(la, "w")
        a = self.conv(self.x(ra), at.unqualified(), implicit_ok=True)
        b = self.conv(self.x(rb), at.unqualified(), implicit_ok=True)
        return (f"{lv.paren(PREC_UNARY)} = {c.paren(PREC_COND - 1)} ? {a.paren(PREC_ASSIGN)} : "
                f"{b.paren(PREC_COND)}")

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
        hint = self._unroll(n) or self.t.implicit_unroll(init_t, cond_t, inc_t)
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
        if asserts.statement(self, n):      # `assert(e)`: checked, its failure recorded for the host
            return
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
            written, read, same = set(), set(), []
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
                    if n.kind == "BINARY_OPERATOR" and n.op in ("==", "!=") and len(n.children) == 2:
                        # `d_out == d_in`: the host may bind one buffer to both (pointers.pointer_compare)
                        a, b = (_param_ref(c) for c in n.children)
                        if a and b and a != b:
                            same.append((a, b))
            for a, b in same:
                if a in written and b in read or b in written and a in read:
                    written |= {a, b}
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
                if x.kind == "CALL_EXPR" and not SIDE_EFFECT_FREE_CALLS.match(self.callee_name(x) or ""):
                    return False
                if x.kind == "UNARY_OPERATOR" and x.op in ("++", "--", "post++", "post--"):
                    return False
                if x is not s and x.kind in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR") and \
                        (x.kind == "COMPOUND_ASSIGNMENT_OPERATOR" or x.op == "="):
                    return False
        if not self.uniform_at(n):
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

    def uniform_at(self, n) -> bool:
        """Whether n is reached at uniform control flow in the kernel (barriers there are reached by the whole
        work-group)."""
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
                        if init is not None and ptrlike(self.ty(init)):
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


def _single_assignment(stmt):
    """The `x = e` of a branch that is exactly that one statement (alone or in braces), else None."""
    while stmt is not None and stmt.kind == "COMPOUND_STMT":
        if len(stmt.children) != 1:
            return None
        stmt = stmt.children[0]
    s = stmt.strip if stmt is not None else None
    if s is not None and s.kind == "BINARY_OPERATOR" and s.op == "=" and len(s.children) == 2:
        return s
    return None


def _param_ref(n) -> str | None:
    """The name of the pointer parameter `n` refers to as it is (through parentheses and casts), else None."""
    while n.kind in ("PAREN_EXPR", "CSTYLE_CAST_EXPR", "CXX_STATIC_CAST_EXPR", "CXX_CONST_CAST_EXPR",
                     "CXX_REINTERPRET_CAST_EXPR", "UNEXPOSED_EXPR") and n.children:
        n = [c for c in n.children if c.kind not in NON_EXPR][-1]
    if n.kind == "DECL_REF_EXPR" and n.ref is not None and n.ref.kind == "PARM_DECL" and "*" in (n.ref.type or ""):
        return n.ref.spelling
    return None
