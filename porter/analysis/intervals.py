"""Barrier intervals: which accesses can run between the same two barriers."""
from __future__ import annotations

from porter.frontend.model import Function, Node
from porter.analysis.barriers import barrier_calls, facts
from porter.analysis.syntax import for_parts


# --- barrier intervals -------------------------------------------------------------------------------------------

class Intervals:
    """Which accesses can run between the same two barriers. Each access gets tags (segment, path): the segment
    is the barrier (or the function entry) it follows, the path the uniform decisions taken since at `if`s and
    loops that contain a barrier (every thread takes the same ones in well-formed code): ('in' | 'out', loop)
    at a loop head, ('back', loop) for a back edge, ('T' | 'E', if). Two accesses share an interval when their
    tags have the same segment and one path extends the other; the back edges in between tell how many
    iterations of a loop apart they are."""

    _CAP = 12

    def __init__(self, fn: Function, targets: list, bfuncs: set, enters=None, block_only: bool = False):
        import bisect
        self._bisect = bisect
        self.fn = fn
        self.targets = {id(n) for n in targets}  # access nodes to tag
        self.bfuncs = bfuncs
        items = [(n.start, (n.start, 0), n) for n in targets]
        if fn.body is not None:
            items += [(n.start, (n.end, 1), n) for n in barrier_calls(fn, bfuncs, block_only)]
        items.sort(key=lambda e: e[0])
        self._items = items
        self._jumps = [n.start for n in facts(fn).jumps] if fn.body is not None else []
        self._barrier_starts = [e[0] for e in items if e[1][1] == 1]
        self._starts = [e[0] for e in items]
        self.enters = enters                     # loop node -> True when every run enters it at least once
        self.tags: dict[int, set] = {}
        self._loops: list = []                   # stack of [loop id, continue states, break states]
        self._has_barrier: dict[int, bool] = {}
        if fn.body is not None:
            self._stmt(fn.body, {("entry", ())})

    def _jumps_in(self, node) -> bool:
        a, b = node.start, node.end
        return any(a <= x < b for x in self._jumps)

    def _barrier_in(self, node) -> bool:
        v = self._has_barrier.get(id(node))
        if v is None:
            a, b = node.start, node.end
            v = self._has_barrier[id(node)] = any(a <= x < b for x in self._barrier_starts)
        return v

    def _step(self, state: set, event) -> set:
        out = set()
        for seg, path in state:
            if path and path[-1] == "many":
                out.add((seg, path))
            elif len(path) >= self._CAP:
                out.add((seg, path + ("many",)))
            else:
                out.add((seg, path + (event,)))
        return out

    def _events(self, node: Node | None, state: set) -> set:
        if node is None or not state:
            return state
        i = self._bisect.bisect_left(self._starts, node.start)
        j = self._bisect.bisect_left(self._starts, node.end, lo=i)
        evs = sorted(self._items[i:j], key=lambda e: e[1])
        for _, (_, kind), n in evs:
            if kind == 0:
                self.tags.setdefault(id(n), set()).update(state)
            else:
                state = {(id(n), ())}
        return state

    def _stmt(self, node: Node | None, state: set) -> set:
        if node is None or not state:
            return state
        k = node.kind
        if k not in ("RETURN_STMT", "CONTINUE_STMT", "BREAK_STMT") and not self._barrier_in(node) and \
                not self._jumps_in(node):
            return self._events(node, state)  # no barrier inside: one interval, whatever the control flow
        if k == "COMPOUND_STMT":
            for c in node.children:
                state = self._stmt(c, state)
            return state
        if k == "IF_STMT" and len(node.children) >= 2:
            s = self._events(node.children[0], state)
            st, se = s, s
            if self._barrier_in(node):
                st, se = self._step(s, ("T", id(node))), self._step(s, ("E", id(node)))
            a = self._stmt(node.children[1], set(st))
            b = self._stmt(node.children[2], set(se)) if len(node.children) > 2 else se
            return a | b
        if k in ("FOR_STMT", "WHILE_STMT", "DO_STMT"):
            return self._loop(node, state)
        if k == "RETURN_STMT":
            self._events(node, state)
            return set()
        if k in ("CONTINUE_STMT", "BREAK_STMT"):
            if self._loops:
                self._loops[-1][1 if k == "CONTINUE_STMT" else 2].update(state)
            return set()
        if k == "SWITCH_STMT" and len(node.children) >= 2:
            s = self._events(node.children[0], state)
            self._loops.append([id(node), set(), set()])
            out = self._stmt(node.children[1], set(s))
            _, _, breaks = self._loops.pop()
            return out | breaks | s
        if k in ("CASE_STMT", "DEFAULT_STMT"):
            for c in node.children:
                state = self._stmt(c, state)
            return state
        return self._events(node, state)

    def _loop(self, node: Node, state: set) -> set:
        k = node.kind
        if k == "FOR_STMT":
            init, cond, inc, body = for_parts(node)
        elif k == "WHILE_STMT":
            init, cond, inc, body = None, node.children[0] if node.children else None, None, \
                node.children[-1] if len(node.children) > 1 else None
        else:
            init, cond, inc, body = None, node.children[-1] if len(node.children) > 1 else None, None, \
                node.children[0] if node.children else None
        entry = self._events(init, state)
        lid = id(node)
        barrier = self._barrier_in(node)
        always = k == "DO_STMT" or (barrier and self.enters is not None and self.enters(node))
        s = self._events(cond, entry) if k != "DO_STMT" else entry
        exits = set() if always else (self._step(s, ("out", lid)) if barrier else set(s))
        seen = set(s)
        for _ in range(10):
            inside = self._step(s, ("in", lid)) if barrier and k != "DO_STMT" else set(s)
            self._loops.append([lid, set(), set()])
            out = self._stmt(body, inside)
            _, conts, breaks = self._loops.pop()
            out = self._events(inc, out | conts)
            exits |= breaks
            back = self._step(out, ("back", lid)) if barrier else out
            s = self._events(cond, back)
            exits |= self._step(s, ("out", lid)) if barrier else s
            new = s - seen
            if not new:
                break
            seen |= new
            s = seen if not barrier else new
        return exits


def _shifts(suffix: tuple, sign: int) -> frozenset | None:
    """Iteration distances per loop across a path suffix; a loop left and re-entered restarts (None)."""
    if "many" in suffix:
        return frozenset([("any", None)])
    shift, restarted = {}, set()
    for ev in suffix:
        kind, lp = ev
        if kind == "back":
            shift[lp] = shift.get(lp, 0) + sign
        elif kind == "out":
            restarted.add(lp)
    return frozenset([(lp, None) for lp in restarted] + [(lp, v) for lp, v in shift.items() if lp not in restarted])


def relations(tags_a: set, tags_b: set) -> set:
    """For two accesses that can share an interval: frozensets {(loop id, iterations B is after A | None)}
    (empty: same iterations). An empty result: they never share one."""
    out = set()
    by_seg: dict = {}
    for seg, path in tags_b:
        by_seg.setdefault(seg, []).append(path)
    for seg, pa in tags_a:
        for pb in by_seg.get(seg, ()):
            if pb[:len(pa)] == pa:
                out.add(_shifts(pb[len(pa):], 1))
            elif pa[:len(pb)] == pb:
                out.add(_shifts(pa[len(pb):], -1))
    return out
