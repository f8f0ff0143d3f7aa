"""The compiled form of an expression over the thread indices (Code), the loops and guards around an access,
and Opaque for what cannot be compiled: shared by the expression compiler (thread_code) and the cooperative
groups model (coop_groups)."""
from __future__ import annotations

from dataclasses import dataclass

from porter.frontend.model import Node


class Opaque(Exception):
    """An expression the evaluator cannot follow (a load, a call, a reassigned local, a float)."""


@dataclass(frozen=True)
class Code:
    src: str
    threads: frozenset = frozenset()       # 'x' 'y' 'z'
    loops: frozenset = frozenset()         # Loop indices
    unknowns: frozenset = frozenset()      # kernel-uniform unknowns by name (parameters, blockIdx.x, ...)
    nonneg: bool = False                   # known >= 0 (then `/` and `%` are Python's // and %)


def _join(src, *codes) -> Code:
    t, lo, u = frozenset(), frozenset(), frozenset()
    for c in codes:
        t, lo, u = t | c.threads, lo | c.loops, u | c.unknowns
    return Code(src, t, lo, u)


@dataclass
class Loop:
    idx: int
    node: Node
    decl: Node
    name: str
    init: Code | None = None
    cond: Code | None = None
    step: Code | None = None
    barrier: bool = False
    error: str | None = None
    bound: tuple | None = None        # (op, Code) with the variable on the left: ('<', n) for `i < n`
    direction: int = 0                # +1 increasing, -1 decreasing, 0 unknown

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


@dataclass
class Guard:
    code: Code | None           # None: opaque
    node: Node
    negated: bool
    text: str

    @property
    def exact(self) -> bool:
        return self.code is not None and not self.code.unknowns
