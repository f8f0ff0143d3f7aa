"""Suppression comments of every form, their negative cases, CP001 / CP002 and --add-noqa."""
import pytest

from porter.diagnostics import Applicability, Diagnostic
from porter.lint.suppress import Suppressions, add_noqa
from porter.source import apply_edits


def parse(text):
    return Suppressions.parse(text)


def apply_fix(text, d):
    return apply_edits(text.encode(), d.fix.edits).decode()


# -- line forms -----------------------------------------------------------------------------------
def test_trailing_ignore_applies_to_its_line():
    s = parse("int a;\n#define WARP 32 // cuport: ignore[CP101]\nint b = 32;\n")
    assert s.is_suppressed("CP101", 2)
    assert not s.is_suppressed("CP101", 1)
    assert not s.is_suppressed("CP101", 3)


def test_ignore_on_its_own_line_applies_to_the_next_line():
    s = parse("  // cuport: ignore[CP101]\nint w = 32;\nint v = 32;\n")
    assert s.is_suppressed("CP101", 2)
    assert not s.is_suppressed("CP101", 1)
    assert not s.is_suppressed("CP101", 3)


def test_other_code_is_not_silenced():
    s = parse("x = 32; // cuport: ignore[CP101]\ny = 32; // noqa: CP101\n")
    assert not s.is_suppressed("CP102", 1)
    assert not s.is_suppressed("CP102", 2)
    assert s.is_suppressed("CP101", 1) and s.is_suppressed("CP101", 2)


def test_several_codes_prefixes_and_names():
    s = parse("a; // cuport: ignore[CP101, CP102]\n"
              "b; // cuport: ignore[CP2]\n"
              "c; // cuport: ignore[volatile-warp-synchronous]\n")
    assert s.is_suppressed("CP101", 1) and s.is_suppressed("CP102", 1)
    assert not s.is_suppressed("CP103", 1)
    assert s.is_suppressed("CP201", 2) and s.is_suppressed("CP203", 2)
    assert not s.is_suppressed("CP101", 2)
    assert s.is_suppressed("CP301", 3) and not s.is_suppressed("CP302", 3)


def test_noqa_forms():
    s = parse("a; // noqa: CP101\n"
              "b; // noqa\n"
              "c; // NOQA:CP101,CP102\n"
              "d; // noqa: CP101 CP102 because the launch fixes 32 lanes\n"
              "e; /* noqa: CP103 */\n")
    assert s.is_suppressed("CP101", 1) and not s.is_suppressed("CP102", 1)
    assert s.is_suppressed("CP101", 2) and s.is_suppressed("CP502", 2)    # bare noqa: every code
    assert s.is_suppressed("CP102", 3)
    assert s.is_suppressed("CP102", 4) and not s.is_suppressed("CP103", 4)
    assert s.is_suppressed("CP103", 5)


def test_noqa_is_same_line_only():
    s = parse("// noqa: CP101\nx = 32;\n")
    assert not s.is_suppressed("CP101", 2)


def test_noqa_in_prose_is_not_a_directive():
    s = parse("x = 32; // we do not want a noqa here\n")
    assert not s.is_suppressed("CP101", 1)
    assert s.directives == []


def test_nested_noqa_after_another_comment():
    s = parse("x = 32; // cuport: ignore[CP102] // noqa: CP101\n")
    assert s.is_suppressed("CP101", 1) and s.is_suppressed("CP102", 1)


def test_block_comment_ignore_forms():
    s = parse("/* cuport: ignore[CP101] */ x = 32;\n"
              "/*\n * cuport: ignore[CP102]\n */\ny = tid % 32;\n")
    assert s.is_suppressed("CP101", 1)
    assert s.is_suppressed("CP102", 5)       # a standalone block comment: the line after it ends


# -- literals -------------------------------------------------------------------------------------
@pytest.mark.parametrize("text", [
    'const char* s = "// cuport: ignore[CP101]"; int w = 32;\n',
    'const char* s = "// noqa"; int w = 32;\n',
    'const char* s = "/* noqa */"; int w = 32;\n',
    'const char* s = "\\" // noqa"; int w = 32;\n',
    "char c = '\"'; const char* s = \"// noqa\"; int w = 32;\n",
    'auto s = R"x(\n// noqa\n)x"; int w = 32;\n',
    'const char* s = u8"// noqa: CP101"; int w = 32;\n',
])
def test_directives_in_literals_do_not_count(text):
    s = parse(text)
    assert s.directives == []
    assert not any(s.is_suppressed("CP101", r) for r in (1, 2, 3))


def test_digit_separator_is_not_a_char_literal():
    s = parse("int n = 1'000'0; int w = 32; // noqa: CP101\n")
    assert s.is_suppressed("CP101", 1)


def test_comment_after_string_with_slashes():
    s = parse('printf("http://x"); // noqa: CP101\n')
    assert s.is_suppressed("CP101", 1)


# -- ranges and files -----------------------------------------------------------------------------
def test_disable_enable_range():
    text = ("a;\n"
            "// cuport: disable[CP401]\n"
            "b;\n"
            "c;\n"
            "// cuport: enable[CP401]\n"
            "d;\n")
    s = parse(text)
    assert not s.is_suppressed("CP401", 1)
    assert s.is_suppressed("CP401", 3) and s.is_suppressed("CP401", 4)
    assert not s.is_suppressed("CP401", 5) and not s.is_suppressed("CP401", 6)
    assert not s.is_suppressed("CP402", 3)


def test_disable_without_enable_runs_to_end_of_file():
    s = parse("a;\n// cuport: disable[CP401]\n" + "x;\n" * 500)
    assert s.is_suppressed("CP401", 502) and not s.is_suppressed("CP401", 1)


def test_disable_prefix_enable_one_code():
    s = parse("// cuport: disable[CP4]\na;\n// cuport: enable[CP401]\nb;\n")
    assert s.is_suppressed("CP401", 2) and s.is_suppressed("CP402", 2)
    assert not s.is_suppressed("CP401", 4) and s.is_suppressed("CP402", 4)


def test_file_ignore():
    s = parse("a;\nb;\n// cuport: file-ignore[CP501, CP1]\n")
    assert s.is_suppressed("CP501", 1) and s.is_suppressed("CP105", 1000)
    assert not s.is_suppressed("CP201", 1)


# -- CP001 unused ---------------------------------------------------------------------------------
def test_unused_code_in_list_keeps_the_used_one():
    text = "x = 32; // cuport: ignore[CP101, CP102]\n"
    s = parse(text)
    assert s.is_suppressed("CP101", 1)
    d, = s.unused("k.cu")
    assert (d.code, d.filename, d.row, d.column) == ("CP001", "k.cu", 1, 12)
    assert d.name == "unused-suppression" and d.url.endswith("/CP001")
    assert "CP102" in d.message and "CP101" not in d.message
    assert d.fix.applicability == Applicability.SAFE
    assert apply_fix(text, d) == "x = 32; // cuport: ignore[CP101]\n"


def test_unused_trailing_comment_is_removed():
    text = "x = 32;   // noqa: CP101\ny;\n"
    d, = parse(text).unused("k.cu")
    assert apply_fix(text, d) == "x = 32;\ny;\n"


def test_unused_standalone_comment_removes_the_line():
    text = "a;\n    // cuport: ignore[CP101]\nx = 32;\n"
    d, = parse(text).unused("k.cu")
    assert d.row == 2
    assert apply_fix(text, d) == "a;\nx = 32;\n"


def test_unused_keeps_the_rest_of_the_comment():
    text = "x; // noqa: CP101 launch is fixed\ny; // reason // noqa: CP102\n"
    a, b = parse(text).unused("k.cu")
    assert apply_fix(text, a) == "x; // launch is fixed\ny; // reason // noqa: CP102\n"
    assert apply_fix(text, b) == "x; // noqa: CP101 launch is fixed\ny; // reason\n"


def test_unused_ignore_before_noqa_keeps_the_noqa():
    text = "x; // cuport: ignore[CP102] // noqa: CP101\n"
    s = parse(text)
    assert s.is_suppressed("CP101", 1)
    d, = s.unused("k.cu")
    assert apply_fix(text, d) == "x; // noqa: CP101\n"


def test_unused_block_comment_mid_line():
    text = "x = /* noqa: CP101 */ 32;\n"
    d, = parse(text).unused("k.cu")
    assert apply_fix(text, d) == "x = 32;\n"


def test_unused_blanket_noqa_reports_itself():
    text = "x; // noqa\n"
    d, = parse(text).unused("k.cu")
    assert d.message == "unused blanket `noqa` directive"
    assert apply_fix(text, d) == "x;\n"


def test_used_suppressions_are_not_reported():
    s = parse("x; // noqa\ny; // cuport: ignore[CP1]\n// cuport: disable[CP401]\nz;\n")
    assert s.is_suppressed("CP502", 1) and s.is_suppressed("CP103", 2) and s.is_suppressed("CP401", 4)
    assert s.unused("k.cu") == []


def test_unused_range_and_orphan_enable():
    text = "// cuport: disable[CP401]\na;\n// cuport: enable[CP402]\n"
    ds = parse(text).unused("k.cu")
    assert [d.row for d in ds] == [1, 3]
    assert "closes no open `disable`" in ds[1].message


def test_unused_only_for_enabled_codes():
    s = parse("x; // noqa: CP101, CP401\n")
    assert s.is_suppressed("CP101", 1)
    assert s.unused("k.cu", enabled={"CP101", "CP102"}) == []    # CP401 was not checked
    assert len(s.unused("k.cu", enabled={"CP101", "CP401"})) == 1


def test_cp001_can_itself_be_suppressed():
    s = parse("x; // noqa: CP101, CP001\n")
    assert s.unused("k.cu") == []
    s = parse("x; // noqa: CP101\n// cuport: file-ignore[CP001]\n")
    assert s.unused("k.cu") == []


def test_unused_offsets_are_bytes():
    text = 'const char* s = "é"; // noqa: CP101\n'
    d, = parse(text).unused("k.cu")
    data = text.encode()
    assert data[d.start:d.end] == b"noqa: CP101"
    assert d.column == text.index("noqa") + 1
    assert apply_edits(data, d.fix.edits).decode() == 'const char* s = "é";\n'


# -- CP002 unknown --------------------------------------------------------------------------------
def test_unknown_code_names_the_closest():
    text = "x; // cuport: ignore[CP1011]\ny; // noqa: warp-size-constnat\n"
    s = parse(text)
    a, b = s.unknown("k.cu")
    assert (a.code, a.row, a.column) == ("CP002", 1, 22)
    assert "CP1011" in a.message and "did you mean CP101?" in a.message
    assert "did you mean warp-size-constant?" in b.message
    assert text.encode()[a.start:a.end] == b"CP1011"
    assert a.name == "unknown-suppression-code"
    assert s.unused("k.cu") == []    # unknown codes are CP002's business, not CP001's


def test_empty_code_list_is_unknown():
    d, = parse("x; // cuport: ignore[]\n").unknown("k.cu")
    assert d.code == "CP002" and "names no rule code" in d.message


def test_unknown_can_be_suppressed():
    assert parse("x; // noqa: CP999, CP002\n").unknown("k.cu") == []


# -- --add-noqa -----------------------------------------------------------------------------------
def located(text, code, needle):
    from porter.source import SourceFile
    start = text.encode().index(needle.encode())
    return SourceFile("k.cu", text).locate(Diagnostic(code, "m", "k.cu", start, start + len(needle)))


def test_add_noqa_appends_and_groups_codes():
    text = "int w = 32;\nint lane = tid % 32;\n"
    ds = [located(text, "CP102", "% 32"), located(text, "CP101", "32;"), located(text, "CP101", "% 32")]
    assert add_noqa(text, ds) == "int w = 32;  // noqa: CP101\nint lane = tid % 32;  // noqa: CP101, CP102\n"


def test_add_noqa_merges_into_existing():
    text = "x = 32; // noqa: CP101 reason\ny = 32; // noqa\n"
    ds = [located(text, "CP102", "x"), located(text, "CP101", "x"), located(text, "CP102", "y")]
    assert add_noqa(text, ds) == "x = 32; // noqa: CP101, CP102 reason\ny = 32; // noqa\n"


def test_add_noqa_macro_continuation_and_crlf():
    text = "#define LANE(t) \\\n  ((t) % 32)\r\nint w = 32;   \r\n"
    ds = [located(text, "CP102", "#define"), located(text, "CP101", "w")]
    assert add_noqa(text, ds) == ("#define LANE(t) /* noqa: CP102 */ \\\n  ((t) % 32)\r\n"
                                  "int w = 32;  // noqa: CP101   \r\n")


def test_add_noqa_skips_rows_ending_inside_a_block_comment():
    text = "x = 32; /* starts\nends */\n"
    assert add_noqa(text, [located(text, "CP101", "x")]) == text


def test_add_noqa_result_suppresses():
    text = "int w = 32;\n"
    out = add_noqa(text, [located(text, "CP101", "32")])
    s = parse(out)
    assert s.is_suppressed("CP101", 1) and s.unused("k.cu") == []
