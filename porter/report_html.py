"""`cuport report --html DIR PATH...`: one self-contained HTML page for a porting run (inline CSS and SVG; no
script, no external asset), for people to look at rather than read:

- per file and kernel, the lint findings by severity class (C wrong result, P performance, B build) with the source
  excerpt of each;
- the translation status per target (hip, glsl, opencl): translated, needs manual work (what is left, where), or
  refused (the reason), through porter.translate.api.translate_file in the supervised worker;
- the occupancy estimate per target (porter.report.kernel_reports) as a chart and a table;
- with --verify, the verify results per target and subgroup size (porter.verify.runner; slow), and with --bench the
  speed of each target relative to the CUDA original (or, without a GPU, to the first target timed) as a chart.

collect() gathers the data (a plain dict: `--format json` of the same run is that dict); render() turns it into
the page. Nothing here decides an exit code: the caller's rules apply (1 when anything was found or refused).
"""
from __future__ import annotations

import html
import os
import sys
import time

from porter import __version__
from porter.translate.api import TARGETS, target_names

SEV_CLASS = {"C": "wrong result, hang or crash", "P": "performance", "B": "build break or missing feature"}
STATUS_TEXT = {"translated": "translated", "manual": "needs manual work", "refused": "refused"}


# --- data -------------------------------------------------------------------------------------------------------

def _file_data(path, settings, archs, registers, compile_timeout, popts, targets):
    """Everything about one file that needs libclang (runs in a supervised child: porter.isolate.call)."""
    from porter.frontend.build import build_model
    from porter.lint.checker import lint_source
    from porter.lint.registry import RULES
    from porter.report import kernel_reports
    from porter.source import read_source
    src = read_source(path)
    res = lint_source(src, settings)
    lines = src.text.splitlines()
    findings = []
    for d in res.diagnostics:
        lo, hi = max(1, d.row - 2), min(len(lines), max(d.end_row, d.row) + 2)
        findings.append({"code": d.code, "name": d.name or (RULES[d.code].name if d.code in RULES else ""),
                         "class": RULES[d.code].sev if d.code in RULES else "B", "severity": d.severity,
                         "message": d.message, "row": d.row, "column": d.column, "end_row": d.end_row,
                         "fixable": d.fixable,
                         "excerpt": {"first": lo, "lines": lines[lo - 1:hi], "mark": [d.row, max(d.end_row, d.row)]}})
    model = build_model(src, popts)
    kernels = [{"name": fn.name, "line": src.position(fn.node.start)[0], "end_line": src.position(fn.node.end)[0]}
               for fn in model.kernels if fn.body is not None]
    model.release()
    occ = kernel_reports(path, archs, settings, registers, compile_timeout, popts) if archs else None
    return {"path": src.path, "findings": findings, "kernels": kernels, "occupancy": occ,
            "translations": {t: _translation(path, src.text, t, popts, settings) for t in targets}}


def _translation(path, text, target, popts, settings) -> dict:
    """{status, reason, diagnostics, kernels: {name: {status, reason}}} for one target."""
    from porter.translate.api import translate_file
    opts = {"text": text, "include_dirs": list(popts.include_dirs or []), "defines": list(popts.defines or [])}
    if not TARGETS[target].kernel:
        opts["settings"] = settings           # HIP reads the project's lint settings
    try:
        res = translate_file(path, target, **opts)
    except Exception as exc:          # a translator bug costs this target of this file only, and is shown
        return {"status": "refused", "reason": f"internal error: {type(exc).__name__}: {exc}", "diagnostics": [],
                "kernels": {}}
    diags = [{"code": d.code, "row": d.row, "severity": d.severity, "message": d.message} for d in res.diagnostics]
    errors = [d for d in diags if d["severity"] == "error"]
    kernels = {k: {"status": "refused", "reason": why} for k, why in res.failed_kernels.items()}
    for k in list(res.shaders) + list(res.manifests):
        kernels.setdefault(k, {"status": "translated", "reason": ""})
    refused = res.extra.get("refused")
    if refused:
        return {"status": "refused", "reason": str(refused), "diagnostics": diags, "kernels": kernels}
    left = []
    if res.stats is not None:
        if res.stats.unconverted_refs:
            left.append("not converted: " + ", ".join(sorted(res.stats.unconverted)))
        if res.stats.notes:
            left.append("`// cuport:` notes left: " + ", ".join(f"{c} x{n}" for c, n in sorted(res.stats.notes.items())))
    if not (res.text or res.shaders) and res.failed_kernels:
        return {"status": "refused", "reason": "; ".join(res.failed_kernels.values()), "diagnostics": diags,
                "kernels": kernels}
    if errors or left or res.failed_kernels:
        reason = "; ".join(left + [f"line {d['row']}: {d['code']} {d['message']}" for d in errors
                                   if not any(d["message"].startswith(f"kernel `{k}`") for k in res.failed_kernels)])
        return {"status": "manual", "reason": reason or "some kernels were not translated", "diagnostics": diags,
                "kernels": kernels}
    return {"status": "translated", "reason": "", "diagnostics": diags, "kernels": kernels}


def _kernel_status(f: dict, target: str, k: dict) -> dict:
    """A kernel's status for a target: the translator's per-kernel verdict, made 'needs manual work' by an
    error-level diagnostic inside the kernel; for hip (whole-file) the file's diagnostics within its lines."""
    t = f["translations"][target]
    own = t["kernels"].get(k["name"])
    if own and own["status"] == "refused":
        return own
    inside = [d for d in t["diagnostics"] if d["severity"] == "error" and k["line"] <= d["row"] <= k["end_line"]]
    if t["status"] == "refused":
        return {"status": "refused", "reason": t["reason"]}
    if inside:
        return {"status": "manual", "reason": "; ".join(f"line {d['row']}: {d['code']} {d['message']}"
                                                      for d in inside)}
    if own is None and TARGETS[target].kernel:
        return {"status": "manual", "reason": "no output for this kernel"}
    return {"status": "translated", "reason": ""}


def collect(paths, settings, archs, registers="default", compile_timeout=120, popts=None, limits=None,
            targets=None, verify=None, progress=None) -> dict:
    """The run's data. verify: None, or {targets, subgroups, bench, repeat, timeout, jobs} to run porter.verify."""
    from porter import isolate
    from porter.frontend.parse import ParseOptions
    popts = popts or ParseOptions()
    targets = targets or target_names()
    limits = limits or isolate.Limits.of(settings)
    t0 = time.monotonic()
    files, errors = [], []
    for path in paths:
        try:
            data = isolate.call(lambda p=path: _file_data(p, settings, archs, registers, compile_timeout, popts,
                                                          targets), path, limits)
        except Exception as exc:          # unreadable file, bad -I: this file only
            errors.append(f"{path}: {exc}")
            data = None
        if isinstance(data, isolate.Failure):
            errors.append(f"{path}: {data.message}")
            data = None
        if data is not None:
            for k in data["kernels"]:
                k["targets"] = {t: _kernel_status(data, t, k) for t in targets}
            files.append(data)
        if progress:
            progress(os.path.basename(path))
    run = {"version": __version__, "created": time.strftime("%Y-%m-%d %H:%M"), "paths": list(paths),
           "targets": list(targets), "archs": list(archs), "files": files, "errors": errors, "verify": None}
    if verify is not None:
        run["verify"] = run_verify([f["path"] for f in files], **verify)
    run["seconds"] = round(time.monotonic() - t0, 1)
    return run


def run_verify(paths, targets, subgroups=None, bench=False, repeat=5, timeout=60.0, jobs=1, check=True,
               bench_sizes=None) -> dict:
    """porter.verify on the cases of these files: check at the specs' sizes and/or (bench) time at their bench
    sizes. {results, notes, bench, ratios}."""
    from porter.verify.runner import Runner
    from porter.verify.spec import SpecError, find_specs
    cases, notes = [], []
    for p in paths:
        try:
            cases += [c for _, cs in find_specs([p]) for c in cs]
        except SpecError as exc:
            notes.append(f"{exc} (cuport verify --init {p} writes a spec to edit)")
        except Exception as exc:          # a spec is the user's Python
            notes.append(f"{p}: cannot load the spec: {type(exc).__name__}: {exc}")
    results, timed = [], []
    if cases and check:
        results = [r.as_dict() for r in Runner(list(targets), subgroups, None, timeout, False, 1, jobs).run(cases)]
    if cases and bench:                   # timings at the specs' bench sizes, a run of its own
        timed = [dict(r.as_dict(), run="bench")
                 for r in Runner(list(targets), subgroups, bench_sizes, timeout, True, repeat, jobs).run(cases)]
        results += timed
    for r in results:
        r["source"] = next((str(c.source_path) for c in cases if c.id == r["case"] and str(c.spec_path) == str(r["spec"])), "")
    return {"results": results, "notes": notes, "bench": bench, "ratios": _ratios(timed) if bench else []}


def _ratios(results) -> list:
    """Speed of each timed target relative to the CUDA original of the same case and size (> 1: faster);
    without a CUDA time (no GPU) relative to the first target timed, which is then named as the baseline."""
    groups = {}
    for r in results:
        if r["status"] == "pass" and r.get("kernel_ms"):
            key = (r["case"], str(r["sizes"]))
            groups.setdefault(key, []).append(r)
    out = []
    for (case, sizes), rs in groups.items():
        base = next((r for r in rs if r["target"] == "cuda"), rs[0])
        for r in rs:
            label = r["target"] + (f" {r['variant']}" if r["variant"] not in ("-", "", None) else "")
            base_label = base["target"] + (f" {base['variant']}" if base["variant"] not in ("-", "", None) else "")
            out.append({"case": case, "sizes": sizes, "label": label, "ms": r["kernel_ms"],
                        "baseline": base_label, "ratio": base["kernel_ms"] / r["kernel_ms"]})
    return out


# --- rendering -----------------------------------------------------------------------------------------------------

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d232b;background:#f6f7f9}
header{background:#1d2733;color:#fff;padding:18px 28px}header h1{margin:0;font-size:22px}
header p{margin:4px 0 0;color:#b7c2cf}main{padding:16px 28px;max-width:1200px}
section{background:#fff;border:1px solid #dde2e8;border-radius:8px;padding:14px 18px;margin:14px 0}
h2{font-size:17px;margin:0 0 10px}h3{font-size:14px;margin:16px 0 6px;color:#3b4654}
table{border-collapse:collapse;width:100%;margin:6px 0}th,td{text-align:left;padding:5px 8px;
border-bottom:1px solid #eceff3;vertical-align:top}th{background:#f0f2f5;font-weight:600}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;font-weight:600;white-space:nowrap}
.sev-C{background:#fde2e1;color:#a3111a}.sev-P{background:#fff1d6;color:#8a5a00}.sev-B{background:#e4ecfb;color:#23439a}
.status.translated{background:#dff5e3;color:#17692d}.status.manual{background:#fff1d6;color:#8a5a00}
.status.refused{background:#fde2e1;color:#a3111a}.v-pass{color:#17692d}.v-FAIL,.v-crash,.v-timeout,.v-XPASS{color:#a3111a;
font-weight:600}.v-skipped{color:#7a8491}.v-xfail{color:#8a5a00}
pre.excerpt{background:#f7f8fa;border:1px solid #e3e7ec;border-radius:4px;padding:6px 0;margin:4px 0 0;overflow-x:auto;
font:12px/1.4 ui-monospace,Menlo,Consolas,monospace}pre.excerpt span{display:block;padding:0 10px}
pre.excerpt .hit{background:#fff4c2}pre.excerpt .ln{color:#97a0ab;display:inline;padding:0 8px 0 0}
.cards{display:flex;gap:12px;flex-wrap:wrap}.card{background:#fff;border:1px solid #dde2e8;border-radius:8px;
padding:10px 16px;min-width:120px}.card b{display:block;font-size:24px}.muted{color:#6b7685}.reason{font-size:12px;color:#555}
svg text{font:12px system-ui,sans-serif}
"""


def _e(x) -> str:
    return html.escape(str(x), quote=True)


def _badge(text, cls, title=""):
    return f'<span class="badge {cls}"{f" title={chr(34)}{_e(title)}{chr(34)}" if title else ""}>{_e(text)}</span>'


def bar_chart(rows, cls, unit="", max_value=None, ref=None, title="") -> str:
    """Horizontal bars: rows = [(label, value, colour)]. ref: a vertical reference line (1.0 for ratios)."""
    if not rows:
        return ""
    label_w, bar_w, row_h = 300, 420, 22
    top = max([v for _, v, _ in rows] + ([ref] if ref else []) + [max_value or 0]) or 1
    h = row_h * len(rows) + 28
    out = [f'<svg class="chart {cls}" role="img" width="{label_w + bar_w + 90}" height="{h}" '
           f'viewBox="0 0 {label_w + bar_w + 90} {h}" xmlns="http://www.w3.org/2000/svg">']
    if title:
        out.append(f"<title>{_e(title)}</title>")
    for i, (label, value, colour) in enumerate(rows):
        y = 6 + i * row_h
        w = max(1.0, bar_w * value / top)
        out.append(f'<text x="{label_w - 8}" y="{y + 14}" text-anchor="end">{_e(label)}</text>'
                   f'<rect class="bar" x="{label_w}" y="{y + 2}" width="{w:.1f}" height="{row_h - 6}" rx="3" '
                   f'fill="{colour}" data-label="{_e(label)}" data-value="{value:.4g}"/>'
                   f'<text x="{label_w + w + 6:.1f}" y="{y + 14}">{value:.3g}{_e(unit)}</text>')
    if ref:
        x = label_w + bar_w * ref / top
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="2" y2="{h - 18}" stroke="#333" stroke-dasharray="4 3"/>'
                   f'<text x="{x:.1f}" y="{h - 4}" text-anchor="middle">{ref:g}{_e(unit)}</text>')
    out.append("</svg>")
    return "".join(out)


_TARGET_COLOUR = {"sm_90": "#76b900", "gfx90a": "#ed1c24", "gfx1030": "#b5121b", "vulkan": "#7b3fb5"}
_CLASS_COLOUR = {"C": "#d64545", "P": "#e0a21b", "B": "#4a6fd1"}


def _summary(run) -> str:
    files = run["files"]
    kernels = sum(len(f["kernels"]) for f in files)
    by_class = {c: sum(1 for f in files for d in f["findings"] if d["class"] == c) for c in "CPB"}
    cards = [("files", len(files)), ("kernels", kernels), ("findings", sum(by_class.values()))]
    out = ['<section id="summary"><h2>Summary</h2><div class="cards">']
    out += [f'<div class="card" data-key="{k}"><b>{v}</b><span class="muted">{k}</span></div>' for k, v in cards]
    out.append("</div><h3>Findings by severity</h3>")
    out.append(bar_chart([(f"{c}: {SEV_CLASS[c]}", n, _CLASS_COLOUR[c]) for c, n in by_class.items()],
                         "findings-chart", title="findings by severity class"))
    out.append('<h3>Translation per target</h3><table class="translation-summary"><tr><th>target</th>'
               '<th>translated</th><th>needs manual work</th><th>refused</th></tr>')
    for t in run["targets"]:
        n = {s: sum(1 for f in files for k in f["kernels"] if k["targets"][t]["status"] == s) for s in STATUS_TEXT}
        out.append(f'<tr data-target="{t}"><td>{t}</td>' + "".join(
            f'<td class="n-{s}">{n[s]}</td>' for s in STATUS_TEXT) + "</tr>")
    out.append("</table>")
    out.append('<h3>Files</h3><table class="files"><tr><th>file</th><th>kernels</th><th>C</th><th>P</th><th>B</th>'
               + "".join(f"<th>{t}</th>" for t in run["targets"]) + "</tr>")
    for i, f in enumerate(files):
        n = {c: sum(1 for d in f["findings"] if d["class"] == c) for c in "CPB"}
        cells = []
        for t in run["targets"]:
            st = [k["targets"][t]["status"] for k in f["kernels"]]
            worst = next((s for s in ("refused", "manual") if s in st), "translated" if st else None)
            cells.append(f'<td data-target="{t}">' + (_badge(STATUS_TEXT[worst], "status " + worst) if worst
                                                      else '<span class="muted">no kernels</span>') + "</td>")
        out.append(f'<tr class="file-row" data-path="{_e(f["path"])}"><td><a href="#file-{i}">{_e(f["path"])}</a>'
                   f'</td><td>{len(f["kernels"])}</td>' + "".join(f"<td>{n[c] or ''}</td>" for c in "CPB")
                   + "".join(cells) + "</tr>")
    out.append("</table>")
    if run["errors"]:
        out.append('<h3>Files not analysed</h3><ul class="errors">' +
                   "".join(f"<li>{_e(e)}</li>" for e in run["errors"]) + "</ul>")
    out.append("</section>")
    return "".join(out)


def _excerpt(x) -> str:
    lo, hi = x["mark"]
    rows = []
    for i, text in enumerate(x["lines"], x["first"]):
        cls = ' class="hit"' if lo <= i <= hi else ""
        rows.append(f'<span{cls}><span class="ln">{i:>4}</span>{_e(text)}</span>')
    return '<pre class="excerpt">' + "".join(rows) + "</pre>"


def _file(f, run, idx) -> str:
    out = [f'<section class="file" id="file-{idx}" data-path="{_e(f["path"])}"><h2>{_e(f["path"])}</h2>']
    # kernels x targets
    out.append('<h3>Kernels</h3><table class="kernels"><tr><th>kernel</th><th>line</th><th>findings</th>' +
               "".join(f"<th>{t}</th>" for t in run["targets"]) + "</tr>")
    for k in f["kernels"]:
        n = sum(1 for d in f["findings"] if k["line"] <= d["row"] <= k["end_line"])
        cells = "".join(
            f'<td data-target="{t}">{_badge(STATUS_TEXT[s["status"]], "status " + s["status"])}'
            + (f'<div class="reason">{_e(s["reason"])}</div>' if s["reason"] else "") + "</td>"
            for t, s in k["targets"].items())
        out.append(f'<tr class="kernel" data-kernel="{_e(k["name"])}"><td><code>{_e(k["name"])}</code></td>'
                   f'<td>{k["line"]}</td><td>{n}</td>{cells}</tr>')
    if not f["kernels"]:
        out.append(f'<tr><td colspan="{3 + len(run["targets"])}" class="muted">no kernels</td></tr>')
    out.append("</table>")
    # findings
    fs = sorted(f["findings"], key=lambda d: ("CBP".index(d["class"]) if d["class"] in "CBP" else 3, d["row"]))
    out.append(f'<h3>Findings ({len(fs)})</h3>')
    if fs:
        out.append('<table class="findings"><tr><th>severity</th><th>code</th><th>where and what</th></tr>')
        for d in fs:
            fix = ' <span class="muted">[fix available]</span>' if d["fixable"] else ""
            out.append(f'<tr class="finding" data-code="{d["code"]}" data-class="{d["class"]}">'
                       f'<td>{_badge(d["class"], "sev-" + d["class"], SEV_CLASS.get(d["class"], ""))}</td>'
                       f'<td><b>{d["code"]}</b><div class="muted">{_e(d["name"])}</div></td>'
                       f'<td>line {d["row"]}:{d["column"]} {_e(d["message"])}{fix}{_excerpt(d["excerpt"])}</td></tr>')
        out.append("</table>")
    else:
        out.append('<p class="muted">no findings</p>')
    # occupancy
    occ = f.get("occupancy")
    if occ and occ["kernels"]:
        out.append("<h3>Occupancy per target</h3>")
        rows = [(f'{k["kernel"]} / {a}', e["occupancy"], _TARGET_COLOUR.get(a, "#667"))
                for k in occ["kernels"] for a, e in k["targets"].items()]
        out.append(bar_chart(rows, "occupancy-chart", "%", max_value=100, title="occupancy per kernel and target"))
        out.append('<table class="occupancy"><tr><th>kernel</th><th>block</th><th>target</th><th>registers</th>'
                   '<th>blocks / unit</th><th>occupancy</th><th>limited by</th></tr>')
        from porter.report import TARGETS, label
        for k in occ["kernels"]:
            for a, e in k["targets"].items():
                lim = ", ".join(label(TARGETS[a], x) for x in e["limited_by"]) if a in TARGETS else ""
                out.append(f'<tr data-kernel="{_e(k["kernel"])}" data-target="{a}"><td>{_e(k["kernel"])}</td>'
                           f'<td>{k["block"]["threads"]}</td><td>{a}</td>'
                           f'<td>{e["registers"]["count"]} ({_e(e["registers"]["source"])})</td>'
                           f'<td>{e["blocks"]}/{e["unit"]}</td><td>{e["occupancy"]:.0f}%</td>'
                           f'<td>{"" if e["fits"] else "does not fit: "}{_e(lim)}</td></tr>')
        out.append("</table>")
        for n in occ["notes"] + occ["assumptions"]:
            out.append(f'<p class="muted">note: {_e(n)}</p>')
    out.append("</section>")
    return "".join(out)


def _verify(v) -> str:
    out = ['<section id="verify"><h2>Verification</h2>']
    for n in v["notes"]:
        out.append(f'<p class="muted note">{_e(n)}</p>')
    if v["results"]:
        counts = {}
        for r in v["results"]:
            counts[r["status"]] = counts.get(r["status"], 0) + 1
        out.append('<p class="verify-counts">' + ", ".join(f'<span class="v-{s}">{n} {s}</span>'
                                                        for s, n in sorted(counts.items())) + "</p>")
        out.append('<table class="verify"><tr><th>case</th><th>target</th><th>subgroup</th><th>sizes</th>'
                   '<th>status</th><th>time ms</th><th>run</th><th>detail</th></tr>')
        for r in v["results"]:
            sizes = ",".join(f"{k}={x}" for k, x in (r["sizes"] or {}).items()) or "-"
            msg = (r["message"] or "").strip().splitlines()
            ms = f'{r["kernel_ms"]:.4g}' if r.get("kernel_ms") else "-"
            out.append(f'<tr class="verify-row" data-target="{_e(r["target"])}" data-status="{_e(r["status"])}">'
                       f'<td>{_e(r["case"])}</td><td>{_e(r["target"])}</td><td>{_e(r["variant"])}</td>'
                       f'<td>{_e(sizes)}</td><td class="v-{_e(r["status"])}">{_e(r["status"])}</td><td>{ms}</td>'
                       f'<td>{r.get("run", "check")}</td><td class="reason">{_e(msg[0][:160]) if msg else ""}</td></tr>')
        out.append("</table>")
    if v["bench"]:
        out.append("<h3>Speed relative to the original</h3>")
        if v["ratios"]:
            base = {r["baseline"] for r in v["ratios"]}
            if base != {"cuda"}:
                out.append(f'<p class="muted">no CUDA original timed here (no NVIDIA GPU): ratios to '
                           f'{_e(", ".join(sorted(base)))} (the first target timed); above 1 is faster</p>')
            rows = [(f'{r["case"]} / {r["label"]}', r["ratio"], "#3b7dd8") for r in v["ratios"]]
            out.append(bar_chart(rows, "bench-chart", "x", ref=1.0, title="speed relative to the original"))
        else:
            out.append('<p class="muted">no passing timed results</p>')
    out.append("</section>")
    return "".join(out)


def render(run: dict) -> str:
    body = [_summary(run)] + [_file(f, run, i) for i, f in enumerate(run["files"])]
    if run.get("verify") is not None:
        body.append(_verify(run["verify"]))
    title = "cuport porting report"
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width\"><title>{title}</title>"
            f"<style>{CSS}</style></head><body><header><h1>{title}</h1>"
            f"<p>cuport {_e(run['version'])}, {_e(run['created'])}: {_e(' '.join(run['paths']))}; translation "
            f"targets {_e(', '.join(run['targets']))}; occupancy for {_e(', '.join(run['archs']) or 'none')}; "
            f"{run.get('seconds', 0)} s</p></header><main>" + "".join(body) + "</main></body></html>\n")


def exit_status(run: dict) -> int:
    """1 when anything was found, left for a human, refused or failed verification; else 0."""
    bad = run["errors"] or any(f["findings"] for f in run["files"]) or any(
        k["targets"][t]["status"] != "translated" for f in run["files"] for k in f["kernels"] for t in k["targets"])
    if run.get("verify"):
        bad = bad or any(r["status"] in ("FAIL", "crash", "timeout", "XPASS") for r in run["verify"]["results"])
    return 1 if bad else 0


def main(args, archs, settings, registers, popts, limits) -> int:
    """The --html / --format html branch of `cuport report` (porter/report.py)."""
    from porter.lint.files import discover
    from porter.progress import Progress
    from porter.source import STDIN, OutputError, write_output
    paths, status = [], 0
    for p, err in discover(args.paths, settings.is_excluded):
        if err or p == STDIN:
            print(f"cuport: error: {err or 'the HTML report reads files, not standard input'}", file=sys.stderr)
            status = 2
        else:
            paths.append(p)
    if not paths:
        return 2
    targets = [t.strip() for item in (args.translate_targets or [",".join(target_names())]) for t in item.split(",")
               if t.strip()]
    bad = [t for t in targets if t not in target_names()]
    if bad:
        print(f"cuport: error: unknown translation target {', '.join(bad)} (known: {', '.join(target_names())})",
              file=sys.stderr)
        return 2
    verify = None
    if args.verify or args.bench:
        verify = {"targets": [t.strip() for t in args.verify_targets.split(",") if t.strip()],
                  "subgroups": args.subgroup_sizes, "bench": args.bench, "repeat": args.repeat,
                  "check": args.verify, "bench_sizes": getattr(args, "bench_sizes", None)}
        from porter.verify.backends import TARGETS as VT
        bad = [t for t in verify["targets"] if t not in VT]
        if bad:
            print(f"cuport: error: unknown verify target {', '.join(bad)} (known: {', '.join(VT)})", file=sys.stderr)
            return 2
    bar = Progress(len(paths), "report")
    with bar:
        run = collect(paths, settings, archs, registers, args.compile_timeout, popts, limits, targets, verify,
                      progress=bar.advance)
    page = render(run)
    out = args.html
    try:
        if out:
            os.makedirs(out, exist_ok=True)
            dest = os.path.join(out, "report.html")
        else:
            dest = args.output_file or STDIN
        write_output(dest, page.encode("utf-8"))
    except (OSError, OutputError) as exc:
        print(f"cuport: error: {getattr(exc, 'strerror', None) or exc}", file=sys.stderr)
        return 2
    if dest != STDIN:
        print(f"cuport report: wrote {dest}", file=sys.stderr)
    for e in run["errors"]:
        print(f"cuport report: {e}", file=sys.stderr)
    return max(status, exit_status(run))
