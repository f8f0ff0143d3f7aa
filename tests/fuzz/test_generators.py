"""Hypothesis properties over the generators (in-process: fast, and hypothesis shrinks a failure for us)."""
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzzlib import gen
from porter.frontend.lexer import tokenize
from porter.lint.checker import fix_source, lint_source
from porter.source import SourceFile

expressions, kernels, programs = gen.strategies()
OPENERS = st.sampled_from(['"', "'", "/*", 'R"(', 'R"x(', "//", "\\\n", "#", ""])

FAST = settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(max_examples=25, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@FAST
@given(st.one_of(st.binary(max_size=400),
                 st.tuples(expressions, OPENERS, expressions).map(lambda t: "".join(t).encode())))
def test_lexer_tokens_tile_the_input(data):
    """Tokens come back to back: between two tokens only whitespace (line splices count as such), nothing lost,
    nothing overlapping."""
    def blank(gap):
        return not re.sub(rb"\\\r?\n", b"", gap).strip()
    pos = 0
    for tok in tokenize(data):
        assert pos <= tok.start < tok.end <= len(data)
        assert blank(data[pos:tok.start]), (pos, tok)
        pos = tok.end
    assert blank(data[pos:])


@FAST
@given(expressions)
def test_expressions_are_balanced(e):
    assert e.count("(") == e.count(")") and e.count("[") == e.count("]")
    assert not re.search(r"\(\s*\)", e.replace("__activemask()", "A"))


@SLOW
@given(kernels)
def test_lint_and_fix_of_generated_kernels(text):
    """Lint never raises; --fix adds no parse error and a second --fix changes nothing."""
    src = SourceFile("k.cu", text)
    res = lint_source(src)
    for d in res.diagnostics:
        assert re.fullmatch(r"CP\d{3}", d.code) and 1 <= d.row <= text.count("\n") + 1 and d.column >= 1
    out = fix_source(SourceFile("k.cu", text))
    if out.text == text:
        return
    assert lint_source(SourceFile("k.cu", out.text)).parse_errors <= res.parse_errors
    again = fix_source(SourceFile("k.cu", out.text))
    assert again.text == out.text, (out.fixed, again.fixed)
