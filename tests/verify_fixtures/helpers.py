"""Shared by the tests/test_verify_* backend tests: run fixture cases through the real runner."""
from pathlib import Path

from porter.verify.runner import Runner
from porter.verify.spec import load_spec

SPEC = Path(__file__).parent / "verify_spec.py"
LAVAPIPE_ICD = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"


def cases(*ids):
    found = [c for c in load_spec(SPEC) if c.id in ids]
    assert len(found) == len(ids), ids
    return found


def run(ids, targets, **kw):
    kw.setdefault("jobs", 2)
    return Runner(targets, **kw).run(cases(*ids))


def by_key(results):
    return {(r.case, r.target, r.variant, (r.sizes or {}).get("n")): r for r in results}
