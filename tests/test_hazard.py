"""The hazard made visible: the classic warp reduction (lane = tid & 31, shuffles from 16) translated to GLSL
as written FAILS on lavapipe at subgroup sizes 4, 8 and 16 (since session 6 the translation declares that its
shuffle from 16 needs 32-lane subgroups, so the host refuses the launch; before, it ran and summed wrong); after
`cuport lint --fix` it passes at every size.
Runs the real CLI end to end: lint, translate, SPIR-V, Vulkan on the CPU."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from porter.verify.backends import vulkan

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "warp_reduce", "warp_sum.cu")
LAVAPIPE = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"

ok, why = vulkan.available()
pytestmark = pytest.mark.skipif(not ok or not os.path.exists(LAVAPIPE), reason=why or "no lavapipe")

SPEC = '''
import numpy as np
from porter.verify.spec import Case, arange, zeros
KERNELS = [Case(name="warp_sum", source="warp_sum.cu", kernel="warp_sum",
                signature="in: i32[n] in, out: i32[1] inout, n: i32", init={"in": arange(7), "out": zeros()},
                grid="ceil(n / 128)", block="128", translate={"portability_fixes": False},
                reference=lambda **a: {"out": np.array([a["in"].astype(np.int64).sum()], dtype=np.int32)},
                sizes=[{"n": 1000}, {"n": 77}])]
'''


def cuport(*args, cwd):
    env = dict(os.environ, VK_ICD_FILENAMES=LAVAPIPE, NO_COLOR="1")
    return subprocess.run([sys.executable, "-m", "porter", *args], cwd=cwd, capture_output=True, text=True,
                          env=env, timeout=600)


def verify(tmp):
    r = cuport("verify", ".", "--targets", "vulkan", "--subgroup-sizes", "4,8,16", "--output-format", "json",
               cwd=tmp)
    results = json.loads(r.stdout)["results"]
    return r.returncode, {(x["variant"], x["sizes"]["n"]): x for x in results}


def test_warp_reduction_fails_as_written_and_passes_after_lint_fix(tmp_path):
    shutil.copy(EXAMPLE, tmp_path / "warp_sum.cu")
    (tmp_path / "verify_spec.py").write_text(SPEC)

    rc, before = verify(tmp_path)
    assert rc == 1
    assert set(before) == {(f"sg{s}", n) for s in (4, 8, 16) for n in (1000, 77)}
    for (variant, n), r in before.items():
        assert r["status"] == "FAIL", (variant, n, r["message"])
        assert r["subgroup_size"] == int(variant[2:])
        assert "launch refused: the translation needs subgroups of at least 32 lanes" in r["message"], r["message"]

    lint = cuport("lint", "--no-cache", "--output-format", "json", "warp_sum.cu", cwd=tmp_path)
    codes = {d["code"] for d in json.loads(lint.stdout)}
    assert {"CP102", "CP103"} <= codes
    fixed = cuport("lint", "--no-cache", "--fix", "--exit-zero", "warp_sum.cu", cwd=tmp_path)
    assert fixed.returncode == 0, fixed.stderr
    text = (tmp_path / "warp_sum.cu").read_text()
    assert "threadIdx.x % warpSize" in text and "warpSize / 2" in text

    rc, after = verify(tmp_path)
    assert rc == 0
    for key, r in after.items():
        assert r["status"] == "pass", (key, r["message"])
