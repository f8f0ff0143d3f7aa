"""`cuport verify PATH...`: run every spec'd kernel on each target and compare with NumPy."""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

DEFAULT_TARGETS = "cuda,hip-nvidia,hip-amd,vulkan,opencl"


def _int_list(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


def _orders(text: str) -> tuple[str, ...]:
    orders = tuple(o.strip() for o in text.split(",") if o.strip())
    bad = [o for o in orders if o not in ("forward", "reverse", "alternate")]
    if bad or not orders:
        raise argparse.ArgumentTypeError(f"unknown order {', '.join(bad) or repr(text)} "
                                         f"(known: forward, reverse, alternate)")
    return orders


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _inputs(text: str) -> dict:
    from porter.verify.nospec import parse_inputs
    try:
        return parse_inputs(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _size_set(text: str) -> dict[str, int]:
    out = {}
    for item in text.split(","):
        name, eq, value = item.partition("=")
        if not eq or not name.strip().isidentifier():
            raise argparse.ArgumentTypeError(f"expected name=value[,name=value...], got {text!r}")
        try:
            out[name.strip()] = int(value, 0)
        except ValueError:
            raise argparse.ArgumentTypeError(f"size {name!r} must be an integer, got {value!r}") from None
    return out


def _program_args(text: str) -> list[str]:
    import shlex
    try:
        return shlex.split(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"cannot split {text!r} into arguments: {e}") from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="example directories (searched for verify_spec.py), spec files or .cu files")
    parser.add_argument("--targets", default=DEFAULT_TARGETS,
                        help=f"comma-separated targets (default: {DEFAULT_TARGETS})")
    parser.add_argument("--subgroup-sizes", type=_int_list, default=None, metavar="N,N",
                        help="Vulkan subgroup sizes to run (lavapipe: 4,8,16; default: those on lavapipe, "
                             "the device's own elsewhere)")
    parser.add_argument("--sizes", type=_size_set, action="append", metavar="n=1000,...",
                        help="problem size replacing the spec's sizes (repeatable)")
    parser.add_argument("--kernels", default=None, metavar="NAME,NAME",
                        help="only these case ids / kernels (a template kernel's instance as `k<float, 64>`; a bare "
                             "`k` selects all its instances)")
    parser.add_argument("--sanitize", action="store_true",
                        help="also run the OpenCL translation under Oclgrind (out-of-bounds, data races, "
                             "uninitialised values); any report fails the case")
    parser.add_argument("--init", action="store_true",
                        help="write an editable verify_spec.py beside each .cu file from what its signature and "
                             "launch sites say (TODO where they do not); never overwrites one")
    parser.add_argument("--no-spec", action="store_true",
                        help="derive the cases of .cu files even where a verify_spec.py has them")
    parser.add_argument("--portability-fixes", action="store_true",
                        help="without a spec: verify the translator's fixed output (default: the source as written, "
                             "so that warp-size hazards show)")
    parser.add_argument("--finite-inputs", action="store_true",
                        help="without a spec: no inf, NaN, denormal or max values in the derived inputs of "
                             "elementwise kernels (where overflow order, not the translation, decides the result)")
    parser.add_argument("--inputs", type=_inputs, action="append", metavar="NAME=INIT,...",
                        help="without a spec: the values of these inputs instead of random ones over the dtype's "
                             "range: arrays uniform(lo, hi), full(v), zeros(), ones(), arange([m]), below(expr); "
                             "scalars a number (the program's own data ranges, where random data is meaningless "
                             "to the kernel: a solver that does not pivot, a model in physical units; repeatable)")
    parser.add_argument("--args", type=_program_args, default=None, metavar="'ARG ARG ...'",
                        help="without a spec: the program's command-line arguments (argv[1..], as its Makefile's "
                             "`run:` gives them); a size the host reads with `atoi(argv[K])` takes argument K "
                             "instead of the 1000 assumed, and the sizes are then halved until every buffer and "
                             "launch is at most 2^20 elements (the kernel refused when they cannot be)")
    parser.add_argument("--output-format", choices=["table", "json"], default="table")
    parser.add_argument("--bench", action="store_true",
                        help="time the kernels at the bench size: one fresh process per case and target, warm-up "
                             "until times settle, then launches interleaved across targets; median, IQR, GB/s or "
                             "GFLOP/s and the speed ratio to the CUDA original with a 95%% interval")
    parser.add_argument("--repeat", type=_positive, default=30,
                        help="timed rounds (one launch per target each) with --bench (default 30)")
    parser.add_argument("--bench-order", type=_orders, default=("forward",), metavar="ORDER[,ORDER]",
                        help="target order in each bench round: forward as --targets (ABCABC), reverse (CBACBA) or "
                             "alternate (ABCCBA); several, e.g. forward,reverse, time the same set-up in each")
    parser.add_argument("--bench-json", metavar="FILE", help="with --bench: write every time and statistic as JSON")
    parser.add_argument("--bench-plot", metavar="FILE.svg",
                        help="with --bench: write an SVG plot of the ratios to CUDA with their intervals")
    parser.add_argument("--no-baseline", action="store_true",
                        help="with --bench: do not time the spec's library baseline (cuBLAS) beside CUDA")
    parser.add_argument("--timeout", type=float, default=60.0, metavar="S",
                        help="seconds one case may take, compile included (default 60)")
    parser.add_argument("-j", "--jobs", type=int, default=max(1, min(4, (os.cpu_count() or 2) // 2)),
                        help="worker processes at a time")


def main(args: argparse.Namespace) -> int:
    from porter.verify.runner import Runner, exit_code
    from porter.verify.spec import SpecError, find_specs

    from porter.source import special_kind
    from porter.verify.nospec import derived_cases, selected, wants_derivation, write_init
    if getattr(args, "init", False):
        return write_init(args.paths, getattr(args, "portability_fixes", False), getattr(args, "args", None))
    specs, failed, refused = [], False, False
    wanted = _wanted(args.kernels)
    for path in args.paths:             # a bad path costs only itself
        kind = special_kind(path) if path != "-" else None
        try:
            if path == "-":
                raise SpecError("-: standard input cannot be verified (a verify spec names its source files)")
            if kind:
                raise SpecError(f"{path}: {kind}, not a source file, skipped")
            if wants_derivation(path, getattr(args, "no_spec", False)):
                found, why_not = derived_cases(path, getattr(args, "portability_fixes", False), wanted,
                                               finite=getattr(args, "finite_inputs", False),
                                               inputs=_merged(getattr(args, "inputs", None)),
                                               args=getattr(args, "args", None), sizes_given=bool(args.sizes))
                refused = refused or why_not
                specs += found
                continue
            if getattr(args, "inputs", None):  # a spec's init says its inputs: never silently ignore the option
                raise SpecError(f"{path}: --inputs sets the inputs of derived cases (no verify_spec.py); edit the "
                                f"spec's init= instead")
            if getattr(args, "args", None) is not None:
                raise SpecError(f"{path}: --args sizes derived cases (no verify_spec.py); edit the spec's sizes= "
                                f"instead")
            found = find_specs([path])
            if not found and os.path.isdir(path):
                raise SpecError(f"{path}: no verify_spec.py found")
            specs += found
        except SpecError as e:
            print(f"cuport verify: error: {e}", file=sys.stderr)
            failed = True
        except Exception as e:          # a spec is the user's Python: whatever it raises costs only this path
            print(f"cuport verify: error: {path}: cannot load the spec: {type(e).__name__}: {e}", file=sys.stderr)
            failed = True
    cases = [c for _, cs in specs for c in cs]
    if wanted:
        # a name is a case's (spec cases named `saxpy_hang` beside the plain `saxpy`); one no case has names a
        # kernel, all its cases (`--kernels kernelGuidance` of a spec naming them by size)
        ids = {c.id for c in cases}
        kernels = {w for w in wanted if w not in ids}
        cases = [c for c in cases if c.id in wanted or (c.name is None and selected(c.kernel, wanted))
                 or selected(c.kernel, kernels)]
    if not cases:
        if refused and not failed:
            return 1                    # nothing derivable: the messages say why and point to --init
        if not failed:
            print("cuport verify: no cases found", file=sys.stderr)
        return 2
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    if getattr(args, "sanitize", False) and "oclgrind" not in targets:
        targets.append("oclgrind")
    if args.bench:
        return _bench(args, cases, targets, failed, refused)
    try:
        runner = Runner(targets, args.subgroup_sizes, args.sizes, args.timeout, args.bench, args.repeat, args.jobs)
    except ValueError as e:
        print(f"cuport verify: {e}", file=sys.stderr)
        return 2
    from porter.verify import differential
    pairs = []
    with tempfile.TemporaryDirectory(prefix="cuport-verify-") as dump:
        if any(c.reference is None for c in cases):
            runner.dump_dir = dump      # outputs of reference-less cases, compared across targets
        results = runner.run(cases)
        pairs = differential.apply(results, cases)
    if args.output_format == "json":
        summary = _summary(results)
        doc = {"results": [r.as_dict() for r in results], "summary": summary}
        if pairs:
            doc["differential"] = [p.as_dict() for p in pairs]
        json.dump(doc, sys.stdout, indent=2, default=str)
        print()
    else:
        print(format_table(results, bench=args.bench))
        lines = differential.format_pairs(pairs)
        if lines:
            print("\n".join(lines))
    code = exit_code(results)
    return 2 if failed else max(code, 1 if refused else 0)


def _merged(dicts) -> dict | None:
    return {k: v for d in dicts for k, v in d.items()} if dicts else None


def _wanted(kernels: str | None) -> set | None:
    """--kernels `a,k<float, 64>`: names split at the commas outside template arguments."""
    if not kernels:
        return None
    from porter.frontend.lexer import split_top_level
    return set(split_top_level(kernels))


def _bench(args, cases, targets, failed: bool, refused: bool) -> int:
    """--bench: porter/verify/bench.py times the cases one after the other (never two on the GPU at once)."""
    from porter.verify import bench
    opts = bench.Options(rounds=args.repeat, orders=args.bench_order, timeout=args.timeout,
                         baseline=not args.no_baseline)
    command = ["cuport", "verify", *sys.argv[2:]] if sys.argv[1:2] == ["verify"] else None

    def save(doc: dict) -> None:
        doc["bench"]["command"] = command
        if args.bench_json:
            with open(args.bench_json, "w") as f:
                json.dump(doc, f, indent=1)
                f.write("\n")

    def progress(recs: list, doc: dict) -> None:
        for rec in recs:                # one line per case and order on stderr while the run goes on
            cells = [f"{ln['label']} {ln['median_ms']:.4g} ms" + (f" ({ln['ratio']:.3f}x)" if "ratio" in ln else "")
                     if "median_ms" in ln else f"{ln['label']} {ln['status']}" for ln in rec["lanes"]]
            print(f"bench: {rec['case']} [{rec['order']}]: " + ", ".join(cells), file=sys.stderr, flush=True)
        save(doc)

    try:
        doc = bench.run(cases, targets, opts, args.subgroup_sizes, args.sizes, progress=progress)
        save(doc)
        if args.bench_plot:
            with open(args.bench_plot, "w") as f:
                f.write(bench.svg_plot(bench.by_order(doc)))
    except ValueError as e:
        print(f"cuport verify: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"cuport verify: error: {e}", file=sys.stderr)
        return 2
    if args.output_format == "json":
        json.dump(doc, sys.stdout, indent=1)
        print()
    else:
        print(bench.format_table(doc))
    return 2 if failed else max(bench.exit_code(doc), 1 if refused else 0)


def _summary(results) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
    return counts


def _sizes_text(sizes) -> str:
    if sizes is None:
        return "-"
    return ",".join(f"{k}={v}" for k, v in sizes.items())


def _first_line(text: str, width: int = 90) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= width else line[: width - 1] + "…"


def format_table(results, bench: bool = False) -> str:
    header = ["kernel", "target", "subgroup", "sizes", "status", "time ms"]
    if bench:
        header += ["GB/s", "GFLOP/s"]
    header.append("detail")
    rows = []
    for r in results:
        row = [r.case, r.target, r.variant, _sizes_text(r.sizes), r.status,
               f"{r.kernel_ms:.4g}" if r.kernel_ms else "-"]
        if bench:
            row += [f"{r.gbps:.1f}" if r.gbps else "-", f"{r.gflops:.1f}" if r.gflops else "-"]
        detail = _first_line(r.message)
        if r.info.get("arch"):
            res = r.info
            detail = ", ".join(f"{k} {res[k]}" for k in ("vgprs", "sgprs", "lds_bytes", "occupancy") if k in res)
            if r.status != "pass":
                detail = _first_line(r.message)
        row.append(detail)
        rows.append(row)
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(header, widths)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(str(x).ljust(w) for x, w in zip(row, widths)).rstrip() for row in rows]

    devices = sorted({(r.target, r.variant, r.device, r.subgroup_size) for r in results if r.device})
    if devices:
        lines.append("")
        lines.append("devices:")
        lines += [f"  {t} {v}: {d}" + (f" (subgroup size {s})" if s else "") for t, v, d, s in devices]
    problems = [r for r in results if r.status not in ("pass", "skipped") and "\n" in r.message.strip()]
    for r in problems:
        lines.append("")
        lines.append(f"{r.case} on {r.target} {r.variant} {_sizes_text(r.sizes)}: {r.status}")
        lines += ["    " + ln for ln in r.message.strip().splitlines()[:25]]
    counts = _summary(results)
    order = ["pass", "xfail", "skipped", "FAIL", "crash", "timeout", "XPASS"]
    lines.append("")
    lines.append(", ".join(f"{counts[s]} {s}" for s in order if s in counts))
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="cuport verify", description=__doc__)
    add_arguments(parser)
    sys.exit(main(parser.parse_args()))
