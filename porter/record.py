"""Plain record classes for the lint path: what `@dataclass` generated for them (repr, ==, and for frozen ones
hash and immutability), without importing `dataclasses`. That import pulls in `inspect` (ast, dis, tokenize)
and each decorated class costs an `exec` per generated method: ~15 ms of a one-file `cuport lint`
(docs/lint-speed.md). A subclass's fields are its annotated names (constructor order; `_fields` may name them instead) and it
writes `__init__`;
`_hidden` fields are left out of the repr, `_uncompared` ones out of == and hash, as `field(repr=False)` /
`field(compare=False)` did. `dataclasses.replace` / `fields` / `asdict` do not apply to them: use `replace`
below."""
from __future__ import annotations


class Record:
    __slots__ = ()
    _fields: tuple = ()
    _hidden: tuple = ()
    _uncompared: tuple = ()

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if "_fields" not in cls.__dict__:
            # the fields are the class's annotated names, after those of a record it extends
            own = tuple(n for n in cls.__dict__.get("__annotations__", {}) if not n.startswith("_"))
            cls._fields = tuple(getattr(super(cls, cls), "_fields", ())) + own
        cls._repr_fields = tuple(n for n in cls._fields if n not in cls._hidden)
        cls._eq_fields = tuple(n for n in cls._fields if n not in cls._uncompared)

    def _eq_values(self) -> tuple:
        return tuple([getattr(self, n) for n in self._eq_fields])

    def __repr__(self) -> str:
        return f"{type(self).__qualname__}({', '.join(f'{n}={getattr(self, n)!r}' for n in self._repr_fields)})"

    def __eq__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._eq_values() == other._eq_values()

    __hash__ = None         # mutable and compared by value: unhashable, as a non-frozen dataclass


class FrozenRecord(Record):
    """Immutable after __init__ (which sets fields with object.__setattr__); hashable by the compared fields."""
    __slots__ = ()

    def __hash__(self) -> int:
        return hash(self._eq_values())

    def __setattr__(self, name, value):
        raise AttributeError(f"cannot assign to field '{name}'")

    def __delattr__(self, name):
        raise AttributeError(f"cannot delete field '{name}'")


def replace(obj, **changes):
    """A copy of record `obj` with `changes` (dataclasses.replace for records)."""
    unknown = set(changes) - set(obj._fields)
    if unknown:
        raise TypeError(f"{type(obj).__qualname__} has no field {sorted(unknown)[0]!r}")
    return type(obj)(**{n: changes[n] if n in changes else getattr(obj, n) for n in obj._fields})
