"""The one comparison helper: norms, first bad index, readable messages."""
import numpy as np

from porter.verify.compare import compare


def test_ok_reports_norms():
    a = np.linspace(0, 1, 10, dtype=np.float32)
    c = compare("y", a, a.astype(np.float64))
    assert c.ok and c.n_bad == 0 and c.message.startswith("y: ok (max abs 0")


def test_first_mismatch_and_counts():
    want = np.arange(10, dtype=np.float32)
    got = want.copy()
    got[3], got[7] = 3.5, np.nan
    c = compare("y", got, want, rtol=1e-5, atol=1e-6)
    assert not c.ok and c.n_bad == 2 and c.first_bad == (3,)
    assert (c.got_value, c.want_value) == (3.5, 3.0)
    assert c.max_abs == np.inf                       # NaN where a number was expected
    assert "2 of 10 elements differ" in c.message and "first at [3]: got 3.5, expected 3" in c.message


def test_multi_dimensional_index_and_relative_l2():
    want = np.ones((4, 5))
    got = want.copy()
    got[2, 1] = 1.01
    c = compare("C", got, want, rtol=1e-4, atol=1e-5)
    assert c.first_bad == (2, 1) and "[2, 1]" in c.message
    assert abs(c.rel_l2 - 0.01 / np.sqrt(20)) < 1e-9 and abs(c.max_rel - 0.01) < 1e-9


def test_integers_are_exact_and_specials_match_themselves():
    c = compare("k", np.array([1, 2, 3], np.int32), np.array([1, 2, 4]))
    assert not c.ok and "(exact)" in c.message and "got 3, expected 4" in c.message
    s = np.array([np.nan, np.inf, -np.inf, 0.0])
    assert compare("s", s, s).ok
    assert not compare("s", np.array([np.inf]), np.array([-np.inf])).ok


def test_shape_mismatch_and_flat_buffers():
    assert "shape (3,) but expected (4,)" in compare("v", np.zeros(3), np.zeros(4)).message
    assert compare("m", np.zeros(6), np.zeros((2, 3))).ok    # a flat device buffer holding a 2-D result
