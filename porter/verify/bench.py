"""`cuport verify --bench`: kernel times that compare across targets on one GPU.

Per case and problem size one fresh worker process per lane (a target and variant, plus a library baseline where
the spec names one: `bench_baseline`), so an illegal address or a hang costs that lane only and the next case
starts on clean contexts. Each worker compiles, uploads, launches once and checks the numbers, then waits for
launch requests. The coordinator then
  - warms up: rounds of one launch per lane in the bench order until, for every lane, the median of its last K
    launches is within SETTLE of the median of the K before (and at least WARMUP_MIN_S passed), or a cap;
  - times `rounds` rounds of one launch per lane, interleaved (ABCABC..., or CBACBA... with order "reverse"),
    each launch timed by the GPU (CUDA events, Vulkan timestamp queries, OpenCL profiling events);
  - reports per lane the median, quartiles and IQR, and the speed ratio median(baseline) / median(lane) to the
    CUDA original (the first target when there is no CUDA lane) with a bootstrap 95% interval.
The device, driver and clocks (nvidia-smi, where there is one) go into the JSON document with every time.
"""
from __future__ import annotations

import json
import queue
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from porter.verify.backends import load
from porter.verify.runner import FAILING, Runner, _death, _kill, _pump
from porter.verify.worker import MARK, worker_env

ORDERS = ("forward", "reverse", "alternate")
SETTLE_K, SETTLE = 5, 0.02                 # warm-up: medians of the last two runs of K launches within 2%
WARMUP_MIN_S, WARMUP_MAX_S, WARMUP_MAX_ROUNDS = 0.5, 20.0, 200
BOOTSTRAP = 2000


# ---------------------------------------------------------------------------------------------
# Order and statistics (pure, unit-tested)

def round_order(lanes: list, r: int, mode: str) -> list:
    """Lanes in the order they launch in round r: forward ABC, reverse CBA, alternate ABC CBA ABC..."""
    if mode not in ORDERS:
        raise ValueError(f"unknown bench order {mode!r} (known: {', '.join(ORDERS)})")
    if mode == "reverse" or (mode == "alternate" and r % 2):
        return list(reversed(lanes))
    return list(lanes)


def schedule(lanes: list, rounds: int, mode: str) -> list:
    """Every launch of `rounds` interleaved rounds, in order."""
    return [lane for r in range(rounds) for lane in round_order(lanes, r, mode)]


def settled(times: list[float], k: int = SETTLE_K, tol: float = SETTLE) -> bool:
    """The median of the last k times is within tol of the median of the k before."""
    if len(times) < 2 * k:
        return False
    before, last = float(np.median(times[-2 * k:-k])), float(np.median(times[-k:]))
    return abs(last - before) <= tol * before


def summarize(times: list[float]) -> dict:
    a = np.asarray(times, dtype=float)
    q1, med, q3 = np.percentile(a, [25, 50, 75])
    return {"n": int(a.size), "median_ms": float(med), "q1_ms": float(q1), "q3_ms": float(q3),
            "iqr_ms": float(q3 - q1), "min_ms": float(a.min()), "max_ms": float(a.max())}


def speed_ratio(base: list[float], times: list[float], boot: int = BOOTSTRAP, seed: int = 0):
    """median(base) / median(times) (above 1: faster than the base) and its bootstrap 95% interval
    (each sample resampled with replacement; fixed seed, so a report is reproducible from its times)."""
    b, t = np.asarray(base, dtype=float), np.asarray(times, dtype=float)
    ratio = float(np.median(b) / np.median(t))
    rng = np.random.default_rng(seed)
    rb = np.median(b[rng.integers(0, b.size, (boot, b.size))], axis=1)
    rt = np.median(t[rng.integers(0, t.size, (boot, t.size))], axis=1)
    lo, hi = np.percentile(rb / rt, [2.5, 97.5])
    return ratio, float(lo), float(hi)


# ---------------------------------------------------------------------------------------------
# Device facts

SMI_FIELDS = ("name,driver_version,pstate,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,"
              "clocks.applications.graphics,temperature.gpu,power.draw,power.limit,persistence_mode")


def gpu_state() -> list[dict] | None:
    """nvidia-smi's view of each GPU (clocks in MHz, as it prints them), or None without nvidia-smi."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None
    fields = SMI_FIELDS.split(",")
    for extra in ("clocks_event_reasons.active", "clocks_throttle_reasons.active", None):
        query = fields + ([extra] if extra else [])
        try:
            r = subprocess.run([smi, f"--query-gpu={','.join(query)}", "--format=csv,noheader"],
                               capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired) as e:
            return [{"error": str(e)}]
        if r.returncode == 0:
            return [dict(zip(query, (v.strip() for v in line.split(","))))
                    for line in r.stdout.splitlines() if line.strip()]
    return [{"error": (r.stderr or r.stdout).strip()[:200]}]


# ---------------------------------------------------------------------------------------------
# Workers

class _Gone(Exception):
    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status, self.message = status, message


class _Worker:
    """One bench worker process (its own session, so a kill takes its children)."""

    def __init__(self, request: dict, env_extra: dict, target: str):
        cmd, env = [sys.executable, "-m", "porter.verify.worker", "--bench"], worker_env(env_extra)
        backend = load(target) if target != "cublas" else None
        if backend is not None and hasattr(backend, "wrap_command"):
            cmd = backend.wrap_command(cmd, env)
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env, start_new_session=True)
        self.lines: queue.Queue = queue.Queue()
        self.stderr: list[str] = []
        threading.Thread(target=_pump, args=(self.proc.stdout, self.lines), daemon=True).start()
        self.err = threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr), daemon=True)
        self.err.start()
        self.send(request)

    def send(self, obj: dict) -> None:
        try:
            self.proc.stdin.write(json.dumps(obj) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass                        # the read that follows reports how it died

    def get(self, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                _kill(self.proc)
                raise _Gone("timeout", f"no answer within {timeout:g} s (hang?); worker killed") from None
            if line is None:
                rc = self.proc.wait()
                self.err.join(timeout=2)
                raise _Gone("crash", _death(rc, self.stderr))
            if line.startswith(MARK):
                return json.loads(line[len(MARK):])

    def stop(self) -> None:
        self.send({"quit": True})
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            _kill(self.proc)


@dataclass
class Lane:
    target: str
    variant: object                     # backends.Variant
    expect: str | None = None
    status: str = "pending"
    message: str = ""
    device: str = ""
    subgroup_size: int | None = None
    info: dict = field(default_factory=dict)
    warmup: list[float] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    worker: _Worker | None = None

    @property
    def label(self) -> str:
        v = getattr(self.variant, "label", "-")
        return self.target if v in ("-", "") else f"{self.target}/{v}"

    def fail(self, status: str, message: str) -> None:
        self.status, self.message = status, message
        if self.worker is not None:
            _kill(self.worker.proc)
            self.worker = None

    def launch(self, n: int, timeout: float) -> list[float]:
        try:
            self.worker.send({"n": n})
            return self.worker.get(timeout)["times"]
        except _Gone as e:
            self.fail(e.status, e.message)
            return []


# ---------------------------------------------------------------------------------------------
# One case

@dataclass
class Options:
    rounds: int = 30
    orders: tuple[str, ...] = ("forward",)
    timeout: float = 120.0
    warmup_min_s: float = WARMUP_MIN_S
    warmup_max_s: float = WARMUP_MAX_S

    def __post_init__(self):
        for order in self.orders:
            round_order([], 0, order)           # ValueError for an unknown order
    warmup_max_rounds: int = WARMUP_MAX_ROUNDS
    baseline: bool = True               # time the spec's bench_baseline (cuBLAS) beside CUDA


def bench_case(case, sizes: dict, lanes: list[Lane], opts: Options, progress=None) -> list[dict]:
    """Set every lane up in parallel, then per order warm up and time them interleaved; one JSON record
    per order."""
    request = {"spec": case.spec_path, "case": case.index, "sizes": sizes}
    if getattr(case, "derived", None):
        request["derived"] = case.derived
    for lane in lanes:
        lane.worker = _Worker({**request, "target": lane.target, "variant": lane.variant.as_dict()},
                              lane.variant.env, lane.target)
    for lane in lanes:                  # set-up (compile, upload, first launch, check) runs in all at once
        try:
            ready = lane.worker.get(opts.timeout)
        except _Gone as e:
            lane.fail(e.status, e.message)
            continue
        lane.status, lane.message = ready["status"], ready.get("message", "")
        lane.device, lane.subgroup_size = ready.get("device", ""), ready.get("subgroup_size")
        lane.info = ready.get("info") or {}
        if lane.status != "pass":
            lane.fail(lane.status, lane.message)
    records = []
    for order in opts.orders:           # the same set-up timed in each order: ABCABC..., then CBACBA...
        live = [ln for ln in lanes if ln.worker is not None]
        for lane in lanes:
            lane.warmup, lane.times = [], []
        start, rounds = time.monotonic(), 0
        while live and rounds < opts.warmup_max_rounds:
            for lane in round_order(live, rounds, order):
                lane.warmup += lane.launch(1, opts.timeout)
            live = [ln for ln in live if ln.worker is not None]
            rounds += 1
            spent = time.monotonic() - start
            if spent >= opts.warmup_max_s or (spent >= opts.warmup_min_s and all(settled(ln.warmup) for ln in live)):
                break
        warm_settled = all(settled(ln.warmup) for ln in live)
        for r in range(opts.rounds):
            for lane in round_order(live, r, order):
                lane.times += lane.launch(1, opts.timeout)
            live = [ln for ln in live if ln.worker is not None]
        records.append(_record(case, sizes, lanes, opts, order, rounds, warm_settled))
        if progress:
            progress(records[-1])
    for lane in lanes:
        if lane.worker is not None:
            lane.worker.stop()
            lane.worker = None
    return records


def _record(case, sizes, lanes: list[Lane], opts: Options, order: str, warm_rounds: int,
            warm_settled: bool) -> dict:
    timed = [ln for ln in lanes if ln.status == "pass" and ln.times]
    base = next((ln for ln in timed if ln.target == "cuda"), timed[0] if timed else None)
    metrics = case.metrics(sizes) if sizes else {}
    out = []
    for lane in lanes:
        status, message = lane.status, lane.message
        if lane.expect == "fail":
            if status in ("FAIL", "crash", "timeout"):
                status, message = "xfail", f"expected failure ({status}): {message}"
            elif status == "pass":
                status, message = "XPASS", "marked expect='fail' but passed: " + message
        d = {"target": lane.target, "variant": getattr(lane.variant, "label", "-"), "label": lane.label,
             "status": status, "message": message, "device": lane.device, "subgroup_size": lane.subgroup_size,
             "info": lane.info, "warmup_ms": lane.warmup, "times_ms": lane.times}
        if lane.status == "pass" and len(lane.times) < opts.rounds:
            d["status"], d["message"] = "crash", f"only {len(lane.times)} of {opts.rounds} timed launches"
        if lane.times:
            d.update(summarize(lane.times))
            d["warmup_settled"] = settled(lane.warmup)
            for key, value in metrics.items():
                d["gbps" if key == "bytes" else "gflops"] = value / (d["median_ms"] * 1e-3) / 1e9
            if base is not None and lane is not base:
                d["ratio"], d["ratio_lo"], d["ratio_hi"] = speed_ratio(base.times, lane.times)
        out.append(d)
    return {"case": case.id, "kernel": case.kernel, "spec": case.spec_path, "sizes": sizes, "metrics": metrics,
            "baseline": base.label if base else None, "order": order, "rounds": opts.rounds,
            "warmup_rounds": warm_rounds, "warmup_settled": warm_settled, "lanes": out}


# ---------------------------------------------------------------------------------------------
# A whole bench run

def run(cases: list, targets: list[str], opts: Options, subgroups=None, sizes=None, progress=None) -> dict:
    runner = Runner(targets, subgroups, sizes, opts.timeout, bench=True)
    jobs, skipped = runner.plan(cases)
    records, gpu_before = [], gpu_state()
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    for case in cases:
        mine = [j for j in jobs if j.case is case]
        skips = [r for r in skipped if r.case == case.id and r.spec == case.spec_path]
        for size in (mine[0].sizes if mine else []):
            lanes = [Lane(j.target, j.variant, case.expect_for(j.target, j.variant.label)) for j in mine]
            for lane in lanes:
                if size is None or not hasattr(load(lane.target), "open_session"):
                    lane.status, lane.message = "skipped", "compile-only target: not timed"
            if opts.baseline and case.bench_baseline and any(ln.target == "cuda" for ln in lanes):
                from porter.verify.backends import Variant
                lanes.append(Lane("cublas", Variant()))
            timed = [ln for ln in lanes if ln.status == "pending"]
            recs = bench_case(case, size, timed, opts) if timed and size is not None else \
                [_record(case, size or {}, [], opts, order, 0, False) for order in opts.orders]
            done = {id(ln) for ln in timed}
            for rec in recs:
                rec["lanes"] += [_skip_lane(ln.label, ln.target, ln.message) for ln in lanes if id(ln) not in done]
                rec["lanes"] += [_skip_lane(r.target, r.target, r.message) for r in skips]
                records.append(rec)
            if progress:             # the document so far: a run cut short still leaves its finished cases
                progress(recs, _doc(records, targets, opts, started, gpu_before, None))
        if not mine and skips:
            records += [{"case": case.id, "kernel": case.kernel, "spec": case.spec_path, "sizes": None,
                         "metrics": {}, "baseline": None, "order": order,
                         "lanes": [_skip_lane(r.target, r.target, r.message) for r in skips]} for order in opts.orders]
    return _doc(records, targets, opts, started, gpu_before, gpu_state())


def _doc(records, targets, opts: Options, started, gpu_before, gpu_after) -> dict:
    summary: dict[str, int] = {}
    for rec in records:
        for lane in rec["lanes"]:
            summary[lane["status"]] = summary.get(lane["status"], 0) + 1
    return {"bench": {"version": 1, "started": started, "orders": list(opts.orders), "rounds": opts.rounds,
                      "targets": targets, "warmup": {"k": SETTLE_K, "settle": SETTLE, "min_s": opts.warmup_min_s,
                                                     "max_s": opts.warmup_max_s,
                                                     "max_rounds": opts.warmup_max_rounds},
                      "ratio": "median(baseline) / median(lane), bootstrap 95% interval",
                      "gpu_before": gpu_before, "gpu_after": gpu_after},
            "cases": records, "summary": summary}


def _skip_lane(label: str, target: str, message: str) -> dict:
    return {"target": target, "variant": "-", "label": label, "status": "skipped", "message": message}


def exit_code(doc: dict) -> int:
    return 1 if any(ln["status"] in FAILING for rec in doc["cases"] for ln in rec["lanes"]) else 0


# ---------------------------------------------------------------------------------------------
# Reports

def _sizes_text(sizes) -> str:
    return ",".join(f"{k}={v}" for k, v in (sizes or {}).items()) or "-"


def _ratio_text(lane: dict) -> str:
    if "ratio" not in lane:
        return "-"
    return f"{lane['ratio']:.3f} [{lane['ratio_lo']:.3f}, {lane['ratio_hi']:.3f}]"


def format_table(doc: dict) -> str:
    header = ["kernel", "order", "target", "sizes", "status", "median ms", "IQR ms", "n", "GB/s", "GFLOP/s",
              "vs baseline [95%]", "detail"]
    rows = []
    for rec in doc["cases"]:
        for ln in rec["lanes"]:
            timed = "median_ms" in ln
            detail = "" if ln["status"] == "pass" else (ln.get("message") or "").strip().splitlines()[0:1]
            rows.append([rec["case"], rec.get("order", "-"), ln["label"], _sizes_text(rec["sizes"]), ln["status"],
                         f"{ln['median_ms']:.4g}" if timed else "-", f"{ln['iqr_ms']:.3g}" if timed else "-",
                         str(ln.get("n", "-")), f"{ln['gbps']:.1f}" if ln.get("gbps") else "-",
                         f"{ln['gflops']:.1f}" if ln.get("gflops") else "-",
                         (_ratio_text(ln) + f" vs {rec['baseline']}") if "ratio" in ln else "-",
                         (detail[0][:90] if detail else "")])
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(header, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(str(x).ljust(w) for x, w in zip(row, widths)).rstrip() for row in rows]
    b = doc["bench"]
    lines += ["", f"order {', then '.join(b['orders'])}: {b['rounds']} timed rounds of one launch per target, "
                  f"interleaved; ratio = {b['ratio']}"]
    for g in b.get("gpu_before") or []:
        lines.append("gpu: " + ", ".join(f"{k} {v}" for k, v in g.items()))
    order = ["pass", "xfail", "skipped", "FAIL", "crash", "timeout", "XPASS"]
    lines += ["", ", ".join(f"{doc['summary'][s]} {s}" for s in order if s in doc["summary"])]
    return "\n".join(lines)


def by_order(doc: dict) -> list[tuple[str, dict]]:
    """One (order, document) per order a run timed, for tables and plots that set the orders side by side."""
    orders = list(dict.fromkeys(rec.get("order", "forward") for rec in doc["cases"]))
    return [(o, {**doc, "cases": [r for r in doc["cases"] if r.get("order", "forward") == o]}) for o in orders]


def markdown_table(docs: list[tuple[str, dict]]) -> str:
    """One row per case and lane; median, IQR and ratio for each run (e.g. forward and reverse order)."""
    head = "| kernel (size) | target |" + "".join(f" {name}: median ms (IQR) | {name}: vs CUDA [95%] |"
                                                 for name, _ in docs)
    lines = [head, "|" + "---|" * (2 + 2 * len(docs))]
    first = docs[0][1]
    for i, rec in enumerate(first["cases"]):
        for j, ln in enumerate(rec["lanes"]):
            cells = [f"{rec['case']} ({_sizes_text(rec['sizes'])})", ln["label"]]
            for _, doc in docs:
                other = _find_lane(doc, rec, ln)
                if other is None or "median_ms" not in other:
                    why = other["status"] if other else "-"
                    cells += [why, "-"]
                    continue
                rate = ""
                if other.get("gflops") and other["gflops"] > 1000 and other.get("gbps", 0) < 100:
                    rate = f", {other['gflops'] / 1000:.1f} TFLOP/s"
                elif other.get("gbps"):
                    rate = f", {other['gbps']:.0f} GB/s"
                cells += [f"{other['median_ms']:.4g} ({other['iqr_ms']:.2g}){rate}",
                          _ratio_text(other) if "ratio" in other else "(baseline)"]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _find_lane(doc: dict, rec: dict, lane: dict) -> dict | None:
    for r in doc["cases"]:
        if r["case"] == rec["case"] and r["spec"] == rec["spec"] and r["sizes"] == rec["sizes"]:
            return next((ln for ln in r["lanes"] if ln["label"] == lane["label"]), None)
    return None


COLORS = {"hip-nvidia": "#1f77b4", "vulkan": "#d62728", "opencl": "#2ca02c", "cublas": "#7f7f7f",
          "hip-amd": "#9467bd", "oclgrind": "#8c564b"}


def svg_plot(docs: list[tuple[str, dict]], title: str = "speed relative to the CUDA original") -> str:
    """Ratio to the baseline per kernel (rows) and target (colour), one marker shape per run, with the
    bootstrap 95% interval as error bars; lines at 1.0 and at the 0.97 / 0.95 goals."""
    rows = []                                                   # (case label, [(run i, lane)])
    for rec in docs[0][1]["cases"]:
        points = []
        for ln in rec["lanes"]:
            for i, (_, doc) in enumerate(docs):
                other = _find_lane(doc, rec, ln)
                if other and "ratio" in other:
                    points.append((i, other))
        if points:
            rows.append((rec["case"], points))
    values = [v for _, pts in rows for _, ln in pts for v in (ln["ratio_lo"], ln["ratio_hi"])] or [1.0]
    lo, hi = min(0.5, min(values) - 0.05), max(1.2, max(values) + 0.05)
    left, width, top, row_h = 230, 520, 40, 26
    labels = sorted({ln["label"] for _, pts in rows for _, ln in pts})
    height = top + row_h * max(1, len(rows)) + 40 + 18 * (len(labels) + len(docs))

    def x(v: float) -> float:
        return left + (v - lo) / (hi - lo) * width

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 30}" height="{height}" '
           f'font-family="sans-serif" font-size="12">',
           f'<text x="{left}" y="20" font-size="14">{_esc(title)}</text>']
    bottom = top + row_h * len(rows)
    for v, dash in ((1.0, ""), (0.97, ' stroke-dasharray="4,3"'), (0.95, ' stroke-dasharray="2,2"')):
        out.append(f'<line x1="{x(v):.1f}" y1="{top - 5}" x2="{x(v):.1f}" y2="{bottom}" stroke="#444"{dash}/>')
    tick = 0.1 if hi - lo <= 1.5 else 0.25
    t = np.ceil(lo / tick) * tick
    while t <= hi + 1e-9:
        out.append(f'<text x="{x(t):.1f}" y="{bottom + 15}" text-anchor="middle">{t:.2f}</text>')
        t += tick
    shapes = ["circle", "square", "diamond", "triangle"]
    for r, (name, pts) in enumerate(rows):
        y0 = top + r * row_h + row_h / 2
        out.append(f'<text x="{left - 8}" y="{y0 + 4:.1f}" text-anchor="end">{_esc(name)}</text>')
        for k, (i, ln) in enumerate(pts):
            y = y0 - row_h * 0.35 + row_h * 0.7 * (k + 0.5) / len(pts)
            c = COLORS.get(ln["target"], "#000")
            out.append(f'<line x1="{x(ln["ratio_lo"]):.1f}" y1="{y:.1f}" x2="{x(ln["ratio_hi"]):.1f}" '
                       f'y2="{y:.1f}" stroke="{c}"/>')
            out.append(_marker(shapes[i % len(shapes)], x(ln["ratio"]), y, c))
    y = bottom + 35
    for lab in labels:
        target = lab.split("/")[0]
        out.append(f'<rect x="{left}" y="{y - 9}" width="10" height="10" fill="{COLORS.get(target, "#000")}"/>'
                   f'<text x="{left + 16}" y="{y}">{_esc(lab)}</text>')
        y += 18
    for i, (name, _) in enumerate(docs):
        out.append(_marker(shapes[i % len(shapes)], left + 5, y - 4, "#000") +
                   f'<text x="{left + 16}" y="{y}">{_esc(name)}</text>')
        y += 18
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _marker(shape: str, cx: float, cy: float, color: str) -> str:
    if shape == "square":
        return f'<rect x="{cx - 4:.1f}" y="{cy - 4:.1f}" width="8" height="8" fill="{color}"/>'
    if shape == "diamond":
        return f'<polygon points="{cx:.1f},{cy - 5:.1f} {cx + 5:.1f},{cy:.1f} {cx:.1f},{cy + 5:.1f} ' \
               f'{cx - 5:.1f},{cy:.1f}" fill="{color}"/>'
    if shape == "triangle":
        return f'<polygon points="{cx:.1f},{cy - 5:.1f} {cx + 5:.1f},{cy + 4:.1f} {cx - 5:.1f},{cy + 4:.1f}" ' \
               f'fill="{color}"/>'
    return f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="4" fill="{color}"/>'


def _esc(text: str) -> str:
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def main(argv: list[str]) -> int:
    """`python -m porter.verify.bench plot OUT.svg RUN.json...` / `table RUN.json...`: the plot and the Markdown
    table of saved runs, one column per order a run timed (or NAME=RUN.json for one named column)."""
    if len(argv) < 2 or argv[0] not in ("plot", "table"):
        print("usage: python -m porter.verify.bench plot OUT.svg NAME=RUN.json... | table NAME=RUN.json...",
              file=sys.stderr)
        return 2
    what, rest = argv[0], argv[1:]
    out = rest.pop(0) if what == "plot" else None
    docs = []
    try:
        for item in rest:
            name, eq, path = item.partition("=")
            with open(path if eq else name) as f:
                doc = json.load(f)
            parts = by_order(doc)
            if eq or len(parts) == 1:
                docs.append((name if eq else parts[0][0], doc))
            else:
                docs += parts
    except (OSError, ValueError) as e:
        print(f"cuport: error: {e}", file=sys.stderr)
        return 2
    if not docs:
        print("cuport: error: no runs given", file=sys.stderr)
        return 2
    if what == "table":
        print(markdown_table(docs))
        return 0
    with open(out, "w") as f:
        f.write(svg_plot(docs))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
