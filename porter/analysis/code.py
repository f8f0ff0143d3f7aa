"""The compiled form of an expression over the thread indices (Code), the loops and guards around an access,
and Opaque for what cannot be compiled: shared by the expression compiler (thread_code) and the cooperative
groups model (coop_groups)."""
from __future__ import annotations

from porter.frontend.model import Node
from porter.record import FrozenRecord, Record


class Opaque(Exception):
    """An expression the evaluator cannot follow (a load, a call, a reassigned local, a float)."""


class Code(FrozenRecord):
    src: str
    threads: frozenset                     # 'x' 'y' 'z'
    loops: frozenset                       # Loop indices
    unknowns: frozenset                    # kernel-uniform unknowns by name (parameters, blockIdx.x, ...)
    nonneg: bool                           # known >= 0 (then `/` and `%` are Python's // and %)

    def __init__(self, src, threads=frozenset(), loops=frozenset(), unknowns=frozenset(), nonneg=False):
        _set = object.__setattr__
        _set(self, 'src', src)
        _set(self, 'threads', threads)
        _set(self, 'loops', loops)
        _set(self, 'unknowns', unknowns)
        _set(self, 'nonneg', nonneg)


def _join(src, *codes) -> Code:
    t, lo, u = frozenset(), frozenset(), frozenset()
    for c in codes:
        t, lo, u = t | c.threads, lo | c.loops, u | c.unknowns
    return Code(src, t, lo, u)


class Loop(Record):
    idx: int
    node: Node
    decl: Node
    name: str
    init: Code | None
    cond: Code | None
    step: Code | None
    barrier: bool
    error: str | None
    bound: tuple | None               # (op, Code) with the variable on the left: ('<', n) for `i < n`
    direction: int                    # +1 increasing, -1 decreasing, 0 unknown

    def __init__(self, idx, node, decl, name, init=None, cond=None, step=None, barrier=False, error=None, bound=None,
                 direction=0):
        self.idx = idx
        self.node = node
        self.decl = decl
        self.name = name
        self.init = init
        self.cond = cond
        self.step = step
        self.barrier = barrier
        self.error = error
        self.bound = bound
        self.direction = direction

    @property
    def var(self) -> str:
        return f"L{self.idx}"

    @property
    def bounded(self) -> bool:
        return self.cond is not None and not self.cond.unknowns

    def deps(self) -> frozenset:
        out = frozenset()
        for c in (self.init, self.cond, self.step):
            if c is not None:
                out |= c.loops
        return out - {self.idx}

    def thread_dependent(self) -> bool:
        return any(c is not None and c.threads for c in (self.init, self.cond, self.step))


class Guard(Record):
    code: Code | None           # None: opaque
    node: Node
    negated: bool
    text: str

    def __init__(self, code, node, negated, text):
        self.code = code
        self.node = node
        self.negated = negated
        self.text = text

    @property
    def exact(self) -> bool:
        return self.code is not None and not self.code.unknowns
