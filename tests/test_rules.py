"""Every rule fixture: positives, `// OK` negatives and labelled regressions, asserted by line and code."""
import glob
import os
import re

import pytest

from harness import check_fixture
from porter.lint.registry import RULES

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "rules")
FILES = sorted(glob.glob(os.path.join(FIXTURES, "CP*.cu")))


def _codes(path):
    return {re.match(r"(CP\d{3})", os.path.basename(path)).group(1)}


@pytest.mark.parametrize("path", FILES, ids=[os.path.basename(f) for f in FILES])
def test_fixture(path):
    first = open(path).readline()
    defines = re.findall(r"-D(\S+)", first) if first.startswith("// args:") else []
    problems, _ = check_fixture(path, _codes(path), defines)
    assert not problems, "\n".join(problems)


def test_every_rule_has_a_fixture_and_doc():
    have = {re.match(r"(CP\d{3})", os.path.basename(f)).group(1) for f in FILES}
    for code, info in RULES.items():
        doc = info.doc
        for heading in ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety",
                        "## References"):
            assert heading in doc, f"{code} doc lacks {heading}"
        if code not in ("CP000", "CP001", "CP002", "CP907"):   # CP907 is reported by the translators
            assert code in have, f"{code} has no fixture"
