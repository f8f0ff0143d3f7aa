"""Interval arithmetic over the compiled expressions: a cheap, sound range before any enumeration."""
from __future__ import annotations



# --- interval arithmetic over the same compiled sources (a cheap, sound range before any enumeration) ----------

_INF = float("inf")


class Iv:
    """A closed integer interval; comparisons give [0, 1] unless decided."""
    __slots__ = ("lo", "hi")

    def __init__(self, lo, hi):
        self.lo, self.hi = lo, hi

    @staticmethod
    def of(x):
        return x if isinstance(x, Iv) else Iv(int(x), int(x))

    def __add__(self, o):
        o = Iv.of(o)
        return Iv(self.lo + o.lo, self.hi + o.hi)

    __radd__ = __add__

    def __sub__(self, o):
        o = Iv.of(o)
        return Iv(self.lo - o.hi, self.hi - o.lo)

    def __rsub__(self, o):
        return Iv.of(o) - self

    def __neg__(self):
        return Iv(-self.hi, -self.lo)

    def __pos__(self):
        return self

    def __mul__(self, o):
        o = Iv.of(o)
        ps = [0 if a == 0 or b == 0 else a * b for a in (self.lo, self.hi) for b in (o.lo, o.hi)]  # inf * 0 = 0
        return Iv(min(ps), max(ps))

    __rmul__ = __mul__

    def _shift(self, o, left):
        o = Iv.of(o)
        if o.lo < 0 or o.hi > 63 or self.lo < 0:
            return Iv(-_INF, _INF)
        if left:
            return Iv(self.lo << o.lo if self.lo != _INF else _INF, self.hi << o.hi if self.hi != _INF else _INF)
        return Iv(self.lo >> o.hi if self.lo != _INF else _INF, self.hi >> o.lo if self.hi != _INF else _INF)

    def __lshift__(self, o):
        return self._shift(o, True)

    def __rlshift__(self, o):
        return Iv.of(o)._shift(self, True)

    def __rshift__(self, o):
        return self._shift(o, False)

    def __rrshift__(self, o):
        return Iv.of(o)._shift(self, False)

    def __and__(self, o):
        o = Iv.of(o)
        if self.lo >= 0 and o.lo >= 0:
            return Iv(0, min(self.hi, o.hi))
        if self.lo >= 0:
            return Iv(0, self.hi)
        if o.lo >= 0:
            return Iv(0, o.hi)
        return Iv(-_INF, _INF)

    __rand__ = __and__

    def __or__(self, o):
        o = Iv.of(o)
        if self.lo >= 0 and o.lo >= 0 and self.hi != _INF and o.hi != _INF:
            return Iv(max(self.lo, o.lo), (1 << int(max(self.hi, o.hi)).bit_length()) - 1)
        return Iv(-_INF, _INF)

    __ror__ = __or__
    __xor__ = __or__
    __rxor__ = __or__

    def _cmp(self, o, fn):
        o = Iv.of(o)
        vals = {fn(a, b) for a in (self.lo, self.hi) for b in (o.lo, o.hi)}
        if len(vals) == 1 and (self.lo == self.hi or o.lo == o.hi or fn in (_lt, _le, _gt, _ge)):
            v = vals.pop()
            return Iv(int(v), int(v))
        return Iv(0, 1)

    def __lt__(self, o):
        return self._cmp(o, _lt)

    def __le__(self, o):
        return self._cmp(o, _le)

    def __gt__(self, o):
        return self._cmp(o, _gt)

    def __ge__(self, o):
        return self._cmp(o, _ge)

    def __eq__(self, o):
        o = Iv.of(o)
        if self.lo == self.hi == o.lo == o.hi:
            return Iv(1, 1)
        if self.hi < o.lo or o.hi < self.lo:
            return Iv(0, 0)
        return Iv(0, 1)

    def __ne__(self, o):
        e = self.__eq__(o)
        return Iv(1 - e.hi, 1 - e.lo)

    __hash__ = None

    def __bool__(self):
        raise TypeError("interval truth value")

    def union(self, o):
        o = Iv.of(o)
        return Iv(min(self.lo, o.lo), max(self.hi, o.hi))


def _lt(a, b):
    return a < b


def _le(a, b):
    return a <= b


def _gt(a, b):
    return a > b


def _ge(a, b):
    return a >= b


def _iv_div(a, b):
    a, b = Iv.of(a), Iv.of(b)
    if b.lo > 0:
        ps = [x / y for x in (a.lo, a.hi) for y in (b.lo, b.hi)]
        return Iv(int(min(ps)) if min(ps) not in (_INF, -_INF) else min(ps),
                  int(max(ps)) if max(ps) not in (_INF, -_INF) else max(ps))
    return Iv(-_INF, _INF)


def _iv_mod(a, b):
    a, b = Iv.of(a), Iv.of(b)
    if b.lo > 0 and a.lo >= 0:
        if a.hi < b.lo:
            return a
        return Iv(0, min(a.hi, b.hi - 1))
    if b.lo > 0:
        return Iv(-(b.hi - 1), b.hi - 1)
    return Iv(-_INF, _INF)


def _iv_bool(a):
    a = Iv.of(a)
    if a.lo == a.hi == 0:
        return Iv(0, 0)
    if a.lo > 0 or a.hi < 0:
        return Iv(1, 1)
    return Iv(0, 1)


def _iv_and(a, b):
    a, b = _iv_bool(a), _iv_bool(b)
    return Iv(a.lo & b.lo, a.hi & b.hi)


def _iv_or(a, b):
    a, b = _iv_bool(a), _iv_bool(b)
    return Iv(a.lo | b.lo, a.hi | b.hi)


def _iv_not(a):
    a = _iv_bool(a)
    return Iv(1 - a.hi, 1 - a.lo)


def _iv_sel(c, a, b):
    c = _iv_bool(c)
    if c.lo == 1:
        return Iv.of(a)
    if c.hi == 0:
        return Iv.of(b)
    return Iv.of(a).union(b)


def _iv_min(*xs):
    xs = [Iv.of(x) for x in xs]
    return Iv(min(x.lo for x in xs), min(x.hi for x in xs))


def _iv_max(*xs):
    xs = [Iv.of(x) for x in xs]
    return Iv(max(x.lo for x in xs), max(x.hi for x in xs))


def _iv_abs(a):
    a = Iv.of(a)
    if a.lo >= 0:
        return a
    if a.hi <= 0:
        return -a
    return Iv(0, max(-a.lo, a.hi))


IV_GLOBALS = {"_div": _iv_div, "_mod": _iv_mod, "_and": _iv_and, "_or": _iv_or, "_not": _iv_not, "_sel": _iv_sel,
              "min": _iv_min, "max": _iv_max, "abs": _iv_abs, "__builtins__": {}}


