"""docs/guide.md is run: every ```sh block, in order, in a fresh copy of examples/guide_project, each command
checked against the exit status annotated after it (`# exit N`; none means 0). A command marked
`(needs: vulkan,opencl)` runs only where those verify backends are available. The yaml blocks are checked too:
the pre-commit hook id exists and the workflow uploads the SARIF file the guide writes."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GUIDE = os.path.join(ROOT, "docs", "guide.md")
PROJECT = os.path.join(ROOT, "examples", "guide_project")
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)
EXIT = re.compile(r"#\s*exit\s+(\d+)")
NEEDS = re.compile(r"needs:\s*([\w,-]+)")


def blocks(lang):
    with open(GUIDE, encoding="utf-8") as fh:
        return [body for kind, body in BLOCK.findall(fh.read()) if kind == lang]


def commands():
    """[(command line, expected exit status, backends it needs)] in the guide's order."""
    out = []
    for body in blocks("sh"):
        pending = ""
        for line in body.splitlines():
            if line.rstrip().endswith("\\"):
                pending += line.rstrip()[:-1] + " "
                continue
            line = pending + line
            pending = ""
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            m, needs = EXIT.search(line), NEEDS.search(line)
            out.append((line.strip(), int(m.group(1)) if m else 0, needs.group(1).split(",") if needs else []))
    return out


def available(target: str) -> bool:
    from porter.verify.backends import load
    try:
        ok, _ = load(target).available()
        if ok and hasattr(load(target), "variants"):
            load(target).variants(None)
        return ok
    except Exception:
        return False


def test_guide_commands_run(tmp_path):
    cmds = commands()
    assert len(cmds) >= 12
    assert any(c.startswith("cuport lint --fix") for c, _, _ in cmds)
    assert any(c.startswith("cuport translate --to hip") for c, _, _ in cmds)
    assert any(c.startswith("cuport translate --to glsl") for c, _, _ in cmds)
    assert any(c.startswith("cuport report --html") for c, _, _ in cmds)
    assert any("sarif" in c for c, _, _ in cmds)
    work = tmp_path / "project"
    shutil.copytree(PROJECT, work, ignore=shutil.ignore_patterns("__pycache__"))
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    env.pop("PRE_COMMIT", None)
    have = {}
    ran = 0
    for cmd, expected, needs in cmds:
        if not all(have.setdefault(t, available(t)) for t in needs):
            continue
        r = subprocess.run(["bash", "-c", cmd], cwd=work, env=env, capture_output=True, text=True, timeout=600)
        assert r.returncode == expected, f"{cmd}: exit {r.returncode}, expected {expected}\n{r.stdout}\n{r.stderr}"
        assert "Traceback" not in r.stderr, cmd
        ran += 1
    assert ran >= len(cmds) - 2
    # what the guide says the commands leave behind
    assert "0xffffffffffffffffull" in (work / "src" / "kernels.cuh").read_text()     # lint --fix
    assert "__shfl_down" in (work / "hip" / "kernels.cuh").read_text()
    assert (work / "glsl" / "warp_total.comp").read_text().startswith("#version 450")
    import json
    sarif = json.loads((work / "cuport.sarif").read_text())
    assert sarif["version"] == "2.1.0" and sarif["runs"][0]["results"] == []        # clean after the fix
    assert "<svg" in (work / "report" / "report.html").read_text()


def test_guide_verify_shows_the_hazard_then_the_fix(tmp_path):
    """The story of steps 2-3 told by the verify results themselves, not only by exit codes."""
    if not (available("vulkan") and available("opencl")):
        pytest.skip("lavapipe / PoCL not available")
    work = tmp_path / "p"
    shutil.copytree(PROJECT, work, ignore=shutil.ignore_patterns("__pycache__"))
    run = lambda *a: subprocess.run([sys.executable, "-m", "porter", *a], cwd=work, capture_output=True,  # noqa
                                    text=True, timeout=600)
    import json
    before = json.loads(run("verify", "port_spec.py", "--targets", "vulkan", "--subgroup-sizes", "4",
                            "--output-format", "json").stdout)["results"]
    assert {(r["case"], r["status"]) for r in before} == {("warp_total", "FAIL"), ("saxpy", "pass")}
    assert run("lint", "--fix", "src/").returncode == 0
    after = json.loads(run("verify", "port_spec.py", "--targets", "vulkan", "--subgroup-sizes", "4",
                           "--output-format", "json").stdout)["results"]
    assert {(r["case"], r["status"]) for r in after} == {("warp_total", "pass"), ("saxpy", "pass")}


def test_guide_yaml_blocks():
    yaml = pytest.importorskip("yaml")
    docs = [yaml.safe_load(b) for b in blocks("yaml")]
    precommit = next(d for d in docs if "repos" in d)
    with open(os.path.join(ROOT, ".pre-commit-hooks.yaml"), encoding="utf-8") as fh:
        ids = {h["id"] for h in yaml.safe_load(fh)}
    assert {h["id"] for r in precommit["repos"] for h in r["hooks"]} <= ids
    workflow = next(d for d in docs if "jobs" in d)
    steps = workflow["jobs"]["lint"]["steps"]
    upload = next(s for s in steps if s.get("uses", "").startswith("github/codeql-action/upload-sarif"))
    writer = next(s["run"] for s in steps if "sarif" in s.get("run", ""))
    assert f"-o {upload['with']['sarif_file']}" in writer
    assert workflow["permissions"]["security-events"] == "write"
    # the workflow's lint commands are the guide's, which the test above runs
    guide_cmds = {c for c, _, _ in commands()}
    assert any(writer.replace(" --exit-zero", "") == c for c in guide_cmds)


def test_annotations_parse():
    cmds = commands()
    lint = next(x for x in cmds if x[0].startswith("cuport lint src/"))
    assert lint[1] == 1
    verify = [x for x in cmds if x[0].startswith("cuport verify")]
    assert [v[1] for v in verify] == [1, 0] and all(v[2] == ["vulkan", "opencl"] for v in verify)
