"""`cuport verify --bench` on an NVIDIA GPU (skipped without one): CUDA, HIP-on-NVIDIA and Vulkan lanes are timed
interleaved, each with its GPU timer, and the SGEMM gets cuBLAS beside it."""
import json
from pathlib import Path

import pytest

from porter.verify import cli
from porter.verify.backends import cuda, vulkan
from test_verify_bench import _args

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(not cuda.available()[0], reason=f"needs an NVIDIA GPU with CuPy: "
                                                                f"{cuda.available()[1]}")


def test_gpu_bench_times_every_target_and_cublas(tmp_path, capsys):
    targets = "cuda,hip-nvidia" + (",vulkan" if vulkan.available()[0] else "")
    out = tmp_path / "b.json"
    rc = cli.main(_args(str(ROOT / "examples/sgemm"), "--kernels", "sgemm_fixed", "--targets", targets,
                        "--sizes", "M=1024,N=1024,K=1024", "--bench", "--repeat", "10", "--bench-json", str(out)))
    assert rc == 0, capsys.readouterr().out
    (rec,) = json.loads(out.read_text())["cases"]
    lanes = {ln["label"]: ln for ln in rec["lanes"]}
    assert rec["baseline"] == "cuda" and "ratio" not in lanes["cuda"]
    assert {"cuda", "hip-nvidia", "cublas"} <= set(lanes)
    for ln in lanes.values():
        assert ln["status"] == "pass" and ln["n"] == 10 and ln["median_ms"] > 0, ln
    assert 0 < lanes["hip-nvidia"]["ratio_lo"] <= lanes["hip-nvidia"]["ratio"] <= lanes["hip-nvidia"]["ratio_hi"]
    assert "cuBLAS" in lanes["cublas"]["info"]["library"]
    vk = [ln for label, ln in lanes.items() if label.startswith("vulkan")]
    if vk:
        assert vk[0]["info"]["timer"] == "timestamps"
