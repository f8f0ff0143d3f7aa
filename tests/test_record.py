"""porter/record.py: the lint path's records behave as the dataclasses they replaced (==, hash, repr, frozen,
pickle, copy, replace), `cuport lint` no longer imports dataclasses/inspect, and the libclang enumeration names
(porter.frontend.parse._enum_name) are the bindings' own."""
from __future__ import annotations

import copy
import dataclasses
import os
import pickle
import subprocess
import sys

import pytest

from porter.diagnostics import Applicability, Diagnostic, Edit, Fix
from porter.frontend.parse import ParseOptions
from porter.isolate import Failure, Limits
from porter.record import replace

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclasses.dataclass(frozen=True)
class _EditDC:                      # what Edit was
    start: int
    end: int
    content: str
    seen: str | None = dataclasses.field(default=None, compare=False, repr=False)


@dataclasses.dataclass
class _DiagDC:                      # what Diagnostic was (its first fields)
    code: str
    message: str
    filename: str
    start: int
    end: int
    row: int = 0
    extra: dict = dataclasses.field(default_factory=dict)


def test_frozen_record_matches_the_dataclass():
    a, b, c = Edit(1, 4, "x", seen="abc"), Edit(1, 4, "x", seen="zzz"), Edit(1, 5, "x")
    da, db, dc = _EditDC(1, 4, "x", seen="abc"), _EditDC(1, 4, "x", seen="zzz"), _EditDC(1, 5, "x")
    assert (a == b, a == c, hash(a) == hash(b)) == (da == db, da == dc, hash(da) == hash(db)) == (True, False, True)
    assert repr(a).replace("Edit", "_EditDC") == repr(da) == "_EditDC(start=1, end=4, content='x')"
    assert a != (1, 4, "x") and a.__eq__(da) is NotImplemented
    with pytest.raises(AttributeError, match="cannot assign to field 'start'"):
        a.start = 2
    with pytest.raises(AttributeError):
        del a.content
    assert {a, b, c} == {a, c}


def test_mutable_record_matches_the_dataclass():
    d = Diagnostic("CP101", "m", "f.cu", 3, 9)
    assert d.row == 0 and d.fix is None and d.severity == "error" and d.extra == {}
    assert Diagnostic("CP101", "m", "f.cu", 3, 9).extra is not d.extra        # a fresh dict each, as default_factory
    e = Diagnostic("CP101", "m", "f.cu", 3, 9)
    assert d == e
    e.row = 4
    assert d != e
    assert _DiagDC("a", "b", "c", 1, 2) != _DiagDC("a", "b", "c", 1, 3)
    with pytest.raises(TypeError):
        hash(d)                                   # eq without frozen: unhashable, as the dataclass was
    with pytest.raises(TypeError):
        hash(_DiagDC("a", "b", "c", 1, 2))
    assert repr(d).startswith("Diagnostic(code='CP101', message='m', filename='f.cu', start=3, end=9, row=0,")


def test_records_survive_pickle_and_copy():
    fix = Fix(Applicability.SAFE, "t", (Edit(0, 1, "y", seen="x"),))
    d = Diagnostic("CP201", "m", "f.cu", 0, 1, fix=fix, extra={"k": 1})
    for proto in (2, pickle.DEFAULT_PROTOCOL, pickle.HIGHEST_PROTOCOL):
        back = pickle.loads(pickle.dumps(d, proto))
        assert back == d and back.fix.edits[0].seen == "x" and back.extra == {"k": 1}
        assert pickle.loads(pickle.dumps(Failure("crash", "x"), proto)) == Failure("crash", "x")
    assert copy.copy(fix) == fix and copy.deepcopy(d) == d
    assert Limits(5.0, 100) == Limits(5.0, 100) and hash(Limits(5.0, 100)) == hash(Limits(5.0, 100))


def test_replace():
    o = ParseOptions(include_dirs=["a"], recover=True)
    n = replace(o, extra_args=["--cuda-device-only"])
    assert n.extra_args == ["--cuda-device-only"] and n.include_dirs == ["a"] and n.recover and o.extra_args == []
    assert replace(o) == o and replace(o) is not o
    with pytest.raises(TypeError, match="no field 'nope'"):
        replace(o, nope=1)


def test_lint_imports_no_dataclasses():
    code = ("import sys; from porter import isolate; "
            "isolate.run_each = lambda fn, tasks, *a, **k: [fn(t) for t in tasks]; "
            "from porter.cli import main; r = main(['lint', '--no-cache', '-q', sys.argv[1]]); "
            "print(r, sorted(m for m in ('dataclasses', 'inspect', 'ast') if m in sys.modules))")
    f = os.path.join(ROOT, "examples", "warp_reduce", "warp_reduce.cu")
    out = subprocess.run([sys.executable, "-c", code, f], cwd=ROOT, capture_output=True, text=True)
    assert out.stdout.split("\n")[-2] == "1 []", out.stdout + out.stderr       # findings (1) and no dataclasses


def test_enumeration_names_are_the_bindings():
    import clang.cindex as ci
    from porter.frontend.parse import _cindex, _enum_name
    _cindex()
    classes = [c for c in vars(ci).values() if isinstance(c, type) and issubclass(c, ci.BaseEnumeration)
               and c is not ci.BaseEnumeration]
    assert ci.CursorKind in classes and ci.TypeKind in classes
    n = 0
    for cls in classes:
        want = {v: k for k, v in cls.__dict__.items() if isinstance(v, cls)}      # the bindings' own table
        for kind in cls._kinds:
            if kind is not None:
                assert _enum_name(kind) == kind.name == want[kind], (cls, kind.value)
                n += 1
    assert n > 300
    assert ci.CursorKind.CALL_EXPR.name == "CALL_EXPR" and ci.TypeKind.POINTER.name == "POINTER"


def test_fields_come_from_the_annotations():
    from porter.record import FrozenRecord, Record
    assert Edit._fields == ("start", "end", "content", "seen")
    assert Diagnostic._fields[:5] == ("code", "message", "filename", "start", "end")

    class Base(Record):
        a: int
        _private: int

        def __init__(self, a):
            self.a = a

    class Child(Base):
        b: int

        def __init__(self, a, b):
            self.a, self.b = a, b

    class Named(FrozenRecord):
        x: int
        _fields = ("x", "_cache")          # an explicit list still wins (private fields the copy must carry)

    assert Base._fields == ("a",) and Child._fields == ("a", "b") and Named._fields == ("x", "_cache")
    assert replace(Child(1, 2), b=3) == Child(1, 3)
