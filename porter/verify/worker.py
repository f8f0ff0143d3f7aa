"""One verify worker process: `python -m porter.verify.worker` reads a job (JSON) on stdin and writes
one result line per problem size on stdout, prefixed with MARK (drivers print on stdout too).

A job is one case on one target and variant (e.g. a subgroup size) with a list of problem sizes;
the source is compiled once and reused. After a runtime error the worker stops (a CUDA context that
saw an illegal address is unusable); the runner starts a fresh worker for the remaining sizes.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import traceback
from pathlib import Path

MARK = "@@cuport-verify@@ "


def _emit(result: dict) -> None:
    sys.stdout.write(MARK + json.dumps(result, default=_jsonable) + "\n")
    sys.stdout.flush()


def _jsonable(o):
    try:
        return o.item()
    except AttributeError:
        return str(o)


def translation(case, target: str) -> tuple[str, dict | None]:
    """Source text (and manifest) that `target` runs: the original, a hand-written file, or the translator's."""
    from porter.verify.backends import CompileError, Skip, load, translation_target
    lang = translation_target(target)
    if lang is None:
        return original_text(case.source_path, (getattr(case, "translate", None) or {}).get("include_dirs", ())), None
    hand = case.translation_for(target, lang)
    if hand:
        path, mpath = hand
        manifest = json.loads(mpath.read_text()) if mpath else None
        if manifest and "kernel" not in manifest:          # {kernel: manifest}
            manifest = manifest.get(case.kernel)
        return path.read_text(), manifest
    try:
        from porter.translate import api
    except ModuleNotFoundError as e:
        raise Skip(f"no {lang} translation: {e.name} is not available") from None
    if lang not in getattr(api, "TARGETS", {lang: None}):
        raise Skip(f"no {lang} translation: the translator has no '{lang}' target yet")
    # GLSL and OpenCL translations are specialised for the case's defines (constants folded, templates
    # instantiated); HIP keeps the preprocessor, so its compiler gets them as -D.
    opts = dict(case.translate)
    opts.update(getattr(load(target), "TRANSLATE_OPTIONS", {}))
    if api.TARGETS[lang].kernel and case.defines:
        # after the program's own (a derived case's Makefile -D in `translate`): the case's win
        opts["defines"] = list(opts.get("defines") or []) + \
            [k if v is None else f"{k}={v}" for k, v in case.defines.items()]
    try:
        res = api.translate_file(str(case.source_path), lang, **opts)
    except ModuleNotFoundError as e:
        # the translator is not (fully) there yet, or lacks a dependency here (libclang): environment
        raise Skip(f"no {lang} translation here: {e}") from None
    except Exception as e:
        raise CompileError(f"translate to {lang} failed: {e.__class__.__name__}: {e}") from None
    if "defines" in opts:
        case.defines_applied = True
    failed = getattr(res, "failed_kernels", {}) or {}
    key = _output_key(res, case.kernel)
    if key in failed:
        raise CompileError(f"translator could not emit '{case.kernel}' for {lang}: {failed[key]}")
    manifest = (res.manifests or {}).get(key)
    if api.TARGETS[lang].per_kernel:
        text = (res.shaders or {}).get(key)
        if text is None:
            raise CompileError(f"translator produced no {api.TARGETS[lang].title} shader for '{case.kernel}'")
        return text, manifest
    return res.text, manifest


def original_text(path, include_dirs=()) -> str:
    """The original source with the project headers it includes inlined, as the translators read it: a kernel
    of `kernel.h` included by main.cu (HeCBench's pnpoly, laplace3d) is in the text the CUDA backend compiles
    (its extraction blanks #include lines); with the headers of the Makefile's -I the case carries too."""
    from porter.source import read_source
    from porter.translate.kernel.units import inline_headers
    return inline_headers(read_source(str(path)), through=tuple(include_dirs))[0].text


def _output_key(res, kernel: str) -> str:
    """The translator's key of `kernel`: a template kernel launched with one instance only is keyed by its bare
    name (`kernel_BS`, manifest template_args {T: float}), a case names the instance (`kernel_BS<float>`)."""
    manifests = res.manifests or {}
    if kernel in manifests or kernel in (getattr(res, "failed_kernels", {}) or {}) or "<" not in kernel:
        return kernel
    base = kernel.split("<")[0]
    args = (manifests.get(base) or {}).get("template_args")
    if args and f"{base}<{', '.join(str(v) for k, v in args.items() if k)}>" == kernel:
        return base
    return kernel


def run_case(case, backend, target, variant, text, manifest, sizes, repeat, dump: str | None = None) -> dict:
    from porter.verify.backends import CompileError, Skip
    from porter.verify.spec import SpecError
    base = {"sizes": sizes}
    try:
        args = case.make_args(sizes) if sizes is not None else {}
        out = backend.run(case, text, manifest, sizes, args, variant=variant, repeat=repeat)
    except CompileError as e:
        return {**base, "status": "FAIL", "message": f"compile error: {e}"}
    except Skip as e:
        return {**base, "status": "skipped", "message": str(e)}
    except SpecError as e:
        return {**base, "status": "FAIL", "message": f"spec: {e}"}
    except Exception as e:
        tb = traceback.format_exc(limit=3)
        return {**base, "status": "crash", "message": f"{e.__class__.__name__}: {e}", "fatal": True,
                "traceback": tb}
    result = {**base, "kernel_ms": out.kernel_ms, "info": out.info}
    if out.outputs is None:
        return {**result, "status": "pass", "message": "compiled (compile-only target)"}
    if dump:                      # the outputs, for comparing targets with each other (differential.py)
        result["info"] = {**out.info, "dump": _dump(dump, case, target, variant, sizes, out.outputs)}
    if case.reference is None:
        from porter.verify.differential import sanitizer_failure
        bad = sanitizer_failure(case, result["info"])
        return {**result, **(bad or {"status": "pass", "message": "ran; compared with the other targets"})}
    from porter.verify import asserts
    fired = asserts.outcome(out.outputs)
    if asserts.fired(fired):            # CUDA's launch would end in cudaErrorAssert: no result to compare
        return {**result, "status": "FAIL", "message": f"device {asserts.describe(fired)} (cudaErrorAssert in CUDA)"}
    try:
        expected = case.expected(args, sizes)
    except Exception as e:
        return {**result, "status": "FAIL", "message": f"reference failed: {e.__class__.__name__}: {e}"}
    comparisons = []
    for p in case.sig.outputs:
        comparisons.append(case.compare_output(p, out.outputs[p.name], expected[p.name], sizes))
    bad = [c for c in comparisons if not c.ok]
    result["comparisons"] = [c.as_dict() for c in comparisons]
    reports = out.info.pop("sanitizer", None)
    if reports:
        # a memory error fails the case even when the numbers happen to come out right
        from porter.verify.backends.oclgrind import summarize
        numbers = "; numbers " + ("wrong: " + bad[0].message if bad else "right")
        result["info"] = {**out.info, "sanitizer": [{k: r[k] for k in ("kind", "kernel", "locations")}
                                                   for r in reports[:20]]}
        return {**result, "status": "FAIL", "message": summarize(reports, str(case.source_path)) + numbers}
    if out.kernel_ms:
        for key, value in case.metrics(sizes).items():
            result["gbps" if key == "bytes" else "gflops"] = value / (out.kernel_ms * 1e-3) / 1e9
    if bad:
        more = f" (+{len(bad) - 1} more output(s))" if len(bad) > 1 else ""
        return {**result, "status": "FAIL", "message": bad[0].message + more + lavapipe_hint(out.info, text)}
    return {**result, "status": "pass", "message": "; ".join(c.message for c in comparisons)}


LAVAPIPE_LOOPS = 65535


def lavapipe_hint(info: dict, text: str | None) -> str:
    """lavapipe (Mesa gallivm) ends every loop of a shader invocation once LAVAPIPE_LOOPS iterations are used up in
    all, silently (HeCBench kmeans was wrong there and right on PoCL and against NumPy): a failing shader with loops
    on lavapipe says so, since the failure may be the device's."""
    if not (info or {}).get("lavapipe") or not text or not any(w in text for w in ("for (", "while (", "do {")):
        return ""
    return (f" (lavapipe stops a shader invocation's loops after {LAVAPIPE_LOOPS:,} iterations in all, silently: "
            "if this kernel loops longer per thread, check it on another device)")


def _dump(folder: str, case, target: str, variant, sizes, outputs: dict) -> str:
    import zlib

    import numpy as np
    key = zlib.crc32(json.dumps([case.spec_path, case.id, target, variant.label, sizes], sort_keys=True).encode())
    path = os.path.join(folder, f"{target}-{key:08x}.npz")
    np.savez(path, **{k: np.asarray(v) for k, v in outputs.items()})
    return path


def run_job(job: dict) -> None:
    from porter.verify.backends import CompileError, Skip, Variant, load
    from porter.verify.spec import load_spec
    if job.get("derived"):             # spec-less verify: the case was derived from the source
        from porter.verify.derive import case_from_dict
        case = case_from_dict(job["derived"])
    else:
        case = load_spec(job["spec"])[job["case"]]
    target = job["target"]
    variant = Variant.from_dict(job.get("variant") or {})
    sizes_list = job["sizes"]
    backend = load(target)

    def all_sizes(status: str, message: str, **extra) -> None:
        for sizes in sizes_list:
            _emit({"sizes": sizes, "status": status, "message": message, **extra})

    try:
        text, manifest = translation(case, target)
    except Skip as e:
        return all_sizes("skipped", str(e))
    except CompileError as e:
        return all_sizes("FAIL", str(e))
    info = {}
    try:
        if hasattr(backend, "prepare"):
            info = backend.prepare(variant) or {}
    except Skip as e:
        return all_sizes("skipped", str(e))
    except Exception as e:
        return all_sizes("crash", f"device setup failed: {e.__class__.__name__}: {e}")
    if variant.subgroup and info.get("subgroup_size") not in (None, variant.subgroup):
        return all_sizes("skipped", f"device subgroup size is {info['subgroup_size']}, {variant.subgroup} requested")
    for sizes in sizes_list:
        test_crash_hook(case.id, "run")
        result = run_case(case, backend, target, variant, text, manifest, sizes, int(job.get("repeat", 1)),
                          job.get("dump"))
        result["device"] = info.get("device", "")
        result["subgroup_size"] = info.get("subgroup_size")
        if (result["status"] not in ("pass", "skipped") or (result.get("info") or {}).get("assert_fired")) \
                and isolates(backend, info):
            result["fatal"] = True      # the next size gets a fresh process and device context
        _emit(result)
        if result.get("fatal"):
            return


def isolates(backend, info: dict) -> bool:
    """Whether a failed case must not share its process with the next one (GPU backends: a kernel that
    wrote out of bounds or faulted may leave the context or device unusable)."""
    flag = getattr(backend, "ISOLATE_AFTER_FAILURE", False)
    return bool(flag(info) if callable(flag) else flag)


CRASH_HOOK = "CUPORT_VERIFY_TEST_CRASH"


def test_crash_hook(case_id: str, phase: str, count: int = 0) -> None:
    """Tests only: CUPORT_VERIFY_TEST_CRASH=ID:PHASE[:N] kills this worker with SIGSEGV when case ID reaches
    PHASE ("run", "setup", "launch" after N bench launches), to show that a crash costs that case alone."""
    want = os.environ.get(CRASH_HOOK)
    if not want:
        return
    cid, _, rest = want.partition(":")
    wphase, _, n = rest.partition(":")
    if cid == case_id and wphase == phase and count >= int(n or 0):
        import signal
        sys.stdout.flush()
        os.kill(os.getpid(), signal.SIGSEGV)


CHECK_MAX = 1 << 22


def verdict(case, args, sizes, outputs: dict) -> tuple[str, str]:
    """pass / FAIL of one launch's outputs against the case's reference (bench workers check before timing)."""
    import numpy as np

    if case.reference is None:
        return "pass", "ran (no reference: not compared)"
    try:
        expected = case.expected(args, sizes)
    except Exception as e:
        return "FAIL", f"reference failed: {e.__class__.__name__}: {e}"
    comparisons, sampled = [], ""
    for p in case.sig.outputs:
        if p.name not in outputs:
            continue
        got, want = np.asarray(outputs[p.name]), np.asarray(expected[p.name])
        if got.size == want.size and p.name in case.unordered:     # sorted before sampling: the same elements
            got, want = case.as_multiset(p, got), case.as_multiset(p, want)
        if got.size == want.size > CHECK_MAX:
            # bench sizes are large: an evenly strided sample keeps the check from costing more than the bench
            step = -(-want.size // CHECK_MAX)
            got, want = got.flat[::step], want.flat[::step]
            sampled = f" (every {step}th element checked)"
        comparisons.append(case.compare_output(p, got, want, sizes))
    bad = [c for c in comparisons if not c.ok]
    if bad:
        return "FAIL", bad[0].message + sampled
    return "pass", "; ".join(c.message for c in comparisons) + sampled


def bench_serve(stdin=None) -> None:
    """`--bench` worker: set one case up on one target (compile, upload, one launch, check the numbers), report,
    then answer launch requests ({"n": k} -> {"times": [ms, ...]}) until stdin closes or {"quit": true}."""
    import importlib

    from porter.verify.backends import CompileError, Skip, Variant, load
    from porter.verify.spec import SpecError, load_spec
    stdin = stdin or sys.stdin
    job = json.loads(stdin.readline())
    if job.get("derived"):
        from porter.verify.derive import case_from_dict
        case = case_from_dict(job["derived"])
    else:
        case = load_spec(job["spec"])[job["case"]]
    target, sizes = job["target"], job["sizes"]
    variant = Variant.from_dict(job.get("variant") or {})
    session = None
    try:
        if target == "cublas":          # the library baseline: no translation, CuPy's matmul
            backend, text, manifest = importlib.import_module("porter.verify.backends.cublas"), None, None
        else:
            backend = load(target)
            text, manifest = translation(case, target)
        info = (backend.prepare(variant) or {}) if hasattr(backend, "prepare") else {}
        if not hasattr(backend, "open_session"):
            raise Skip(f"{target} has no timing session (compile-only)")
        test_crash_hook(case.id, "setup")
        args = case.make_args(sizes)
        session = backend.open_session(case, text, manifest, sizes, args, variant=variant)
        first = session.launch()
        status, message = verdict(case, args, sizes, session.outputs())
        del args
    except Skip as e:
        return _emit({"status": "skipped", "message": str(e)})
    except (CompileError, SpecError) as e:
        return _emit({"status": "FAIL", "message": f"compile error: {e}" if isinstance(e, CompileError)
                      else f"spec: {e}"})
    except Exception as e:
        return _emit({"status": "crash", "message": f"{e.__class__.__name__}: {e}"})
    _emit({"status": status, "message": message, "first_ms": first,
           "device": info.get("device", ""), "subgroup_size": info.get("subgroup_size"),
           "info": {**{k: v for k, v in info.items() if k not in ("device", "subgroup_size")},
                    **getattr(session, "info", {})}})
    if status != "pass":
        return
    launches = 0
    for line in stdin:
        request = json.loads(line)
        if request.get("quit"):
            break
        times = []
        for _ in range(int(request.get("n", 1))):
            launches += 1
            test_crash_hook(case.id, "launch", launches)
            times.append(session.launch())
        _emit({"times": times})
    session.close()


def probe(target: str, timeout: float = 60.0) -> dict:
    """Device facts of a backend, asked in a child process (drivers read their settings at start)."""
    env = worker_env({})
    try:
        r = subprocess.run([sys.executable, "-m", "porter.verify.worker", "--probe", target], env=env,
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"probe of {target} timed out"}
    for line in r.stdout.splitlines():
        if line.startswith(MARK):
            return json.loads(line[len(MARK):])
    return {"error": (r.stderr.strip().splitlines() or ["probe failed"])[-1]}


def worker_env(extra: dict[str, str]) -> dict[str, str]:
    env = {**os.environ, **extra}
    root = str(Path(__file__).resolve().parents[2])        # so `-m porter...` works from any directory
    env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def main(argv: list[str]) -> int:
    if argv[:1] == ["--probe"]:
        from porter.verify.backends import load
        backend = load(argv[1])
        try:
            info = backend.probe_info() if hasattr(backend, "probe_info") else backend.prepare(None)
        except Exception as e:
            info = {"error": f"{e.__class__.__name__}: {e}"}
        _emit(info)
        return 0
    if argv[:1] == ["--bench"]:
        bench_serve()
        return 0
    run_job(json.load(sys.stdin))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
