"""The speed-ups of the model (docs/lint-speed.md) must give exactly what the plain walks give."""
import glob
import os
import re
import weakref

import pytest

from porter.frontend import build, parse
from porter.frontend.parse import ParseOptions
from porter.lint.checker import lint_source
from porter.source import SourceFile

HERE = os.path.dirname(__file__)
FILES = sorted(glob.glob(os.path.join(HERE, "fixtures", "rules", "CP10*.cu")) +
               glob.glob(os.path.join(HERE, "fixtures", "rules", "CP40*.cu")) +
               glob.glob(os.path.join(HERE, "..", "examples", "*", "*.cu")))


def _model(path, full=False):
    text = open(path, encoding="utf-8").read()
    first = text.split("\n", 1)[0]
    defines = re.findall(r"-D(\S+)", first) if first.startswith("// args:") else []
    return build.build_model(SourceFile(path, text), ParseOptions(defines=defines, full_model=full))


def _same(a, b):
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


@pytest.mark.parametrize("path", FILES, ids=[os.path.basename(f) for f in FILES])
def test_indexes_match_walks(path):
    model = _model(path)
    assert model._preorder()
    decl_refs = [n for n in model.flat if n.kind == "DECL_REF_EXPR"]
    for node in model.flat:
        slow = list(node._walk())
        assert _same(list(node.walk()), slow)
        for kind in ("CALL_EXPR", "DECL_REF_EXPR", "FOR_STMT"):
            assert _same(model.kind_in(node, kind), [n for n in slow if n.kind == kind])
        assert _same(model.kinds_in(node, "CALL_EXPR", "FOR_STMT"),
                     [n for n in slow if n.kind in ("CALL_EXPR", "FOR_STMT")])
        if node.kind in ("VAR_DECL", "PARM_DECL"):
            assert _same(model.refs_to(node), [n for n in decl_refs if n.ref is node])
        assert model.function_of(node) is next((f for f in model.functions
                                                if f.node is node.enclosing("FUNCTION_DECL", "FUNCTION_TEMPLATE",
                                                                            "CXX_METHOD")), None)


@pytest.mark.parametrize("path", FILES[:4], ids=[os.path.basename(f) for f in FILES[:4]])
def test_fast_spans_match_libclang(path):
    model = _model(path, full=True)
    loc = model._locator
    assert loc._base is not None
    cursors = [n._cursor for n in model.flat]
    fast = [loc.span(c) for c in cursors]
    loc._base = None                       # every location through clang_getInstantiationLocation
    assert fast == [loc.span(c) for c in cursors]


def test_lint_frees_the_translation_unit():
    tus = []
    real = build.build_model

    def spy(*a, **k):
        m = real(*a, **k)
        tus.append(weakref.ref(m.tu))
        return m

    import porter.lint.checker as checker
    checker.build_model = spy
    try:
        path = os.path.join(HERE, "..", "examples", "transpose", "transpose_naive_tile.cu")
        lint_source(SourceFile(path, open(path, encoding="utf-8").read()))
    finally:
        checker.build_model = real
    assert tus and tus[0]() is None        # no garbage collection needed


def test_unusable_precompiled_shim_falls_back(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(parse, "_PCH_PATHS", {})
    src = SourceFile("k.cu", "__global__ void k(float *a) { __shared__ float t[32][32];\n"
                             "  t[threadIdx.x][0] = a[0]; a[1] = t[0][threadIdx.x]; }\n")
    first = [(d.code, d.row) for d in lint_source(src).diagnostics]
    pchs = glob.glob(str(tmp_path / "cuport" / "pch" / "*.pch"))
    assert pchs
    for p in pchs:
        with open(p, "wb") as fh:
            fh.write(b"not a precompiled header")
    monkeypatch.setattr(parse, "_PCH_PATHS", {})     # as a new process would
    assert [(d.code, d.row) for d in lint_source(src).diagnostics] == first


def test_bank_addresses_match_the_fraction_reference():
    """CP401's integer lane addresses equal the per-lane Fraction evaluation (`_lane_address`)."""
    import random
    from fractions import Fraction

    from porter.analysis.affine import Poly
    from porter.lint.rules import shared_bank_conflict as sbc
    rnd = random.Random(7)
    names = ["threadIdx.x", "threadIdx.y", "threadIdx.z", "blockDim.x", "blockDim.y", "k", "blockIdx.x"]
    for _ in range(300):
        terms = {}
        for _ in range(rnd.randint(1, 4)):
            mono = tuple(sorted(rnd.choice(names) for _ in range(rnd.randint(0, 3))))
            terms[mono] = Fraction(rnd.randint(-40, 40), rnd.choice([1, 1, 1, 2, 3, 4]))
        poly = Poly(terms)
        for shape in (None, (32, 8, 1), (16, 16, 1), (8, 4, 2), (48, 1, 1)):
            known = sbc._env(shape)
            ref = []
            for warp in sbc._make_warps(shape):
                addrs = [sbc._lane_address(poly, lane, known) for lane in warp]
                if any(a is None for a in addrs):
                    ref = None
                    break
                ref.append(addrs)
            assert sbc._addresses(poly, shape) == ref, (poly, shape)
