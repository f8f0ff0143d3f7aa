"""The seeded fuzz run of `make test`: bounded by invocations (deterministic), about a minute on 2 cores."""
import pytest

from fuzzlib.campaign import Campaign

SEED = 20240611
INVOCATIONS = 150


@pytest.mark.fuzz
def test_seeded_fuzz_run_keeps_every_invariant(tmp_path):
    c = Campaign(seed=SEED, max_invocations=INVOCATIONS, out_dir=str(tmp_path), reduce=False).run()
    assert c.invocations >= INVOCATIONS and c.inputs >= 10
    report = "\n".join(f"input {f['index']} ({f['seed_file']}, {f['mutation']}): [{f['kind']}] {f['step']}: "
                       f"{f['detail'][:300]}\n  replay: .venv/bin/python tests/fuzz/run.py --seed {SEED} "
                       f"--replay {f['index']}" for f in c.failures)
    assert not c.failures, c.summary() + report
