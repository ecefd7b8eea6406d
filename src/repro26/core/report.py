"""Gather every method's ``claims.json`` into ``report.md`` and ``report.html``.

One table per method: claim, the paper's number, the number measured at this scale (with its
spread over seeds), and held / did not hold; then links to the method's figures. The HTML
version embeds the PNGs so it can be mailed or opened from a cluster.
"""

from __future__ import annotations

import base64
import html
import json
import os
import re
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from io import BytesIO
from pathlib import Path
from typing import Any

from repro26.core import io
from repro26.core.claims import VERDICTS, is_summary, read_claims, verdict_of
from repro26.core.registry import METHODS, method_figures


MAX_CELL = 700  # characters of "measured" shown per claim; the rest stays in claims.json
MAX_VALUE = 240  # characters of one measured value in the HTML report
MAX_TEXT = 1500  # characters of any one table cell of the HTML report (statement, context, ...)


def _num(x: Any) -> str:
    """A number to 3 significant digits (integers as they are)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return str(x)
    return str(x) if isinstance(x, int) else f"{x:.3g}"


def _fmt(value: Any) -> str:
    """Compact text of one measured value: summaries as ``mean [lo, hi] (n)``, numbers to 3
    significant digits, long lists cut."""
    if isinstance(value, float):
        return _num(value)
    if is_summary(value):
        lo, hi = value["ci95"]
        n = f" (n={value['n']})" if "n" in value else ""
        if value["mean"] is None:
            return f"undefined{n}"
        return f"{_num(value['mean'])} [{_num(lo)}, {_num(hi)}]{n}"
    if isinstance(value, list):
        shown = ", ".join(_fmt(v) for v in value[:6])
        return f"[{shown}{', …' if len(value) > 6 else ''}]"
    if isinstance(value, dict):
        return "; ".join(f"{k}={_fmt(v)}" for k, v in value.items() if k != "per_seed")
    return str(value)


def flatten(measured: dict, prefix: str = "") -> dict[str, Any]:
    """Nested measurements as one level of dotted keys (``by_family.er.slope``); summaries and
    lists stay whole, ``per_seed`` lists are left to claims.json."""
    out: dict[str, Any] = {}
    for key, value in measured.items():
        if key == "per_seed":
            continue
        name = f"{prefix}{key}"
        if isinstance(value, dict) and not is_summary(value):
            out.update(flatten(value, f"{name}."))
        else:
            out[name] = value
    return out


def _measured(measured: dict) -> str:
    text = "<br>".join(f"{k}: {_fmt(v)}" for k, v in flatten(measured).items())
    if len(text) > MAX_CELL:
        text = text[:MAX_CELL].rsplit("<br>", 1)[0] + " … (all numbers in claims.json)"
    return _cell(text)


def _measured_html(measured: dict) -> str:
    """Measured numbers as a two-column table (name, value), each value cut to a short line."""
    rows = []
    for key, value in flatten(measured).items():
        text = _fmt(value)
        if len(text) > MAX_VALUE:
            text = text[:MAX_VALUE].rsplit(";", 1)[0] + " …"
        rows.append(f"<tr><td>{html.escape(str(key))}</td><td>{html.escape(text)}</td></tr>")
    return "<table class=measured>" + "".join(rows) + "</table>"


def _row_text(claim: dict, which: str) -> str:
    """The trivial or ideal row of a claim in one line: what it is, its numbers, whether it
    passes the claim's predicate."""
    row, note = claim.get(which), claim.get(f"{which}_note", "")
    if row is None:
        return f"{which}: none" + (f" ({note})" if note else "")
    passes = claim.get(f"{which}_passes")
    mark = {True: "passes", False: "fails", None: "?"}[passes]
    numbers = "; ".join(f"{k}: {_fmt(v)}" for k, v in flatten(row).items())
    if len(numbers) > MAX_VALUE:
        numbers = numbers[:MAX_VALUE].rsplit(";", 1)[0] + " …"
    return f"{which}" + (f" ({note})" if note else "") + f": {numbers} → {mark}"


def _context(claim: dict, with_note: bool = True) -> str:
    """Criterion, note, what it was compared with, budgets, timing basis, and why a verdict is
    inconclusive with the minimum detectable effect and the effect the claim is about (the HTML
    report prints the note on a row of its own, ``with_note=False``)."""
    text = claim.get("criterion", "")
    if claim.get("note") and with_note:
        text += f" ({claim['note']})"
    if claim.get("compared_with"):
        text += " Compared with: " + "; ".join(f"{k}: {v}" for k, v in claim["compared_with"].items()) + "."
    if claim.get("budget"):
        groups: dict[str, list[str]] = {}  # equal budgets (the usual case) are listed once
        for model, row in claim["budget"].items():
            groups.setdefault(", ".join(f"{k} {_num(v)}" for k, v in row.items()), []).append(model)
        text += " Budget: " + "; ".join(f"{' = '.join(models)}: {row}"
                                        for row, models in groups.items()) + "."
        if claim.get("budget_note"):
            text += " Differs on purpose: " + "; ".join(f"{k}: {v}" for k, v in claim["budget_note"].items()) + "."
    if claim.get("timing"):
        text += f" Timed by CPU time, noise floor {_num(claim['timing'].get('noise_floor'))}."
    if verdict_of(claim) == "inconclusive":
        text += f" Inconclusive: {claim.get('inconclusive_reason', '')}"
        mde, effect = claim.get("min_detectable_effect"), claim.get("effect")
        if mde is not None:
            text += f" (minimum detectable effect {_num(mde)}"
            text += f"; the claim's effect {_num(effect)})" if effect is not None else ")"
    return text


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell (a literal ``|`` would end the cell)."""
    return text.replace("|", "\\|")


MARK = {"held": "✓", "not held": "✗", "inconclusive": "?"}
COLOUR = {"held": "#1a7f37", "not held": "#cf222e", "inconclusive": "#9a6700"}


def _summary_rows(data: list[dict]) -> list[str]:
    rows = ["| method | held | claims |", "|---|---|---|"]
    for d in data:
        held = sum(verdict_of(c) == "held" for c in d["claims"])
        marks = ", ".join(f"{c['id']} {MARK[verdict_of(c)]}" for c in d["claims"])
        rows.append(f"| [{d['method']}](#{d['method']}) | {held}/{len(d['claims'])} | {marks} |")
    return rows


def _counts(data: list[dict]) -> str:
    verdicts = [verdict_of(c) for d in data for c in d["claims"]]
    parts = ", ".join(f"{verdicts.count(v)} {v}" for v in VERDICTS)
    return f"{len(data)} methods, {len(verdicts)} claims: {parts}."


SAMPLED_AFTER_S = 30.0  # Snakemake's benchmark samples every 30 s after a job's first 30


def job_costs(results: Path, methods: set[str] | None = None) -> list[dict]:
    """Per method (those in ``methods``, or all): jobs, summed CPU time, summed and largest wall
    time, peak resident memory, over the ``benchmarks/*.tsv`` files Snakemake wrote for every
    job. A job's CPU seconds (and peak memory) are the larger of those its log reports
    (:func:`repro26.core.jobs.job_cpu_line`: the whole stage process, not the shell around it)
    and Snakemake's ``cpu_time`` (``max_rss``). A job whose log has no such line (a shell job, an
    older run) counts ``cpu_time`` alone, which Snakemake samples every second for 30 s and every
    30 s after, so a longer job loses up to 30 s of CPU at its end; ``sampled_jobs`` counts those
    longer jobs."""
    from repro26.core.jobs import benchmark_job_cost

    rows = []
    for folder in sorted(p for p in Path(results).glob("*/benchmarks") if p.is_dir()):
        if methods is not None and folder.parent.name not in methods:
            continue
        walls, cpus, rss, sampled = [], [], [], 0
        for tsv in folder.glob("*.tsv"):
            lines = tsv.read_text().splitlines()
            if len(lines) < 2:
                continue
            record = dict(zip(lines[0].split("\t"), lines[-1].split("\t")))
            walls.append(float(record.get("s", "nan")))
            sample: list[float] = []
            _append_float(record, "cpu_time", sample)
            logged = benchmark_job_cost(tsv)
            if logged is not None:  # both are lower bounds: the log's misses the shell around it
                cpus.append(max(sample + [logged["cpu_s"]]))
            elif sample:
                cpus += sample
                sampled += walls[-1] >= SAMPLED_AFTER_S
            _append_float(record, "max_rss", rss)
            if logged is not None and logged["peak_mb"] is not None:
                rss.append(logged["peak_mb"])
        if walls:
            rows.append({"method": folder.parent.name, "jobs": len(walls),
                         "cpu_s": sum(cpus) if cpus else float("nan"), "sampled_jobs": sampled,
                         "wall_s": sum(walls), "longest_s": max(walls),
                         "peak_rss_mb": max(rss) if rss else float("nan")})
    return rows


def _append_float(record: dict, key: str, into: list[float]) -> bool:
    """Append ``record[key]`` as a number; False when it is not one ("-" or "NA" when the job
    was too short to sample)."""
    try:
        into.append(float(record.get(key, "nan")))
    except ValueError:
        return False
    return True


COST_HEADER = ("method", "jobs", "summed CPU time (s)", "summed wall time (s)", "longest job (s)",
               "peak memory (MB)")


def _cost_cells(c: dict) -> tuple[str, ...]:
    return (c["method"], str(c["jobs"]), f"{c['cpu_s']:.0f}", f"{c['wall_s']:.0f}",
            f"{c['longest_s']:.0f}", f"{c['peak_rss_mb']:.0f}")


def _cost_rows(costs: list[dict]) -> list[str]:
    rows = ["| " + " | ".join(COST_HEADER) + " |", "|" + "---|" * len(COST_HEADER)]
    rows += ["| " + " | ".join(_cost_cells(c)) + " |" for c in costs]
    total = sum(c["cpu_s"] for c in costs)
    rows += ["", f"All {len(costs)} methods: {total:.0f} s of CPU time, "
             f"{sum(c['wall_s'] for c in costs):.0f} s of summed job wall time."]
    sampled = sum(c["sampled_jobs"] for c in costs)
    if sampled:
        rows += ["", f"A job's CPU time is the larger of its log's own count and Snakemake's; "
                 f"{sampled} jobs of over {SAMPLED_AFTER_S:.0f} s have no log count (an older run) "
                 "and count Snakemake's sampled `cpu_time` alone, which can be up to 30 s low each."]
    return rows


def _caption(png: Path) -> str:
    rst = png.with_suffix(".rst")
    return rst.read_text().replace("\\", "") if rst.is_file() else png.stem


def _figures(folder: Path) -> list[Path]:
    """The method's figure PNGs in declaration (paper) order, then any others."""
    pngs = sorted(folder.glob("*.png"))
    try:
        order = list(method_figures(folder.parent.name))
    except ImportError:
        order = []
    rank = {name: i for i, name in enumerate(order)}
    return sorted(pngs, key=lambda f: (rank.get(f.stem, len(rank)), f.stem))


def _stale_note(method: str, meta: dict) -> str:
    """A warning when the method's code has changed since its claims were computed."""
    made_with = meta.get("code_hash")
    if made_with is None or method not in METHODS:
        return ""
    now = io.code_hash(method)
    if made_with == now:
        return ""
    return (f". **Stale:** these claims were computed with code {made_with}; the method's code is "
            f"now {now} (Snakemake reruns a job when its inputs, parameters or rule change, not "
            f"when imported code does): `snakemake --cores all --forceall {method}` reruns it")


def _verdict_html(verdict: str) -> str:
    return f"<b style='color:{COLOUR[verdict]}'>{html.escape(verdict)}</b>"


def build_report(claims_files: list[Path], scale: str, md_path: Path, html_path: Path) -> None:
    md_path, html_path = Path(md_path), Path(html_path)
    data = sorted((read_claims(p) | {"_path": Path(p)} for p in claims_files),
                  key=lambda d: d["method"])
    costs = job_costs(md_path.parent, {d['method'] for d in data})
    md = [f"# repro26 report — scale `{scale}`", "", _counts(data),
          "Measured numbers are means over seeds with 95% CIs (`mean [lo, hi] (n)`) unless a claim "
          "says otherwise; each method's claims.json holds every number. ✓ held, ✗ not held, "
          "? inconclusive at this scale.", "",
          *_summary_rows(data), ""]
    body = [f"<h1>repro26 report — scale <code>{scale}</code></h1>",
            f"<p>{html.escape(_counts(data))}</p>", "<table border=1 cellpadding=4>",
            "<tr><th>method</th><th>held</th><th>claims</th></tr>",
            *(f"<tr><td>{html.escape(d['method'])}</td><td>"
              f"{sum(verdict_of(c) == 'held' for c in d['claims'])}/{len(d['claims'])}</td><td>"
              + ", ".join(f"{html.escape(c['id'])} {_verdict_html(verdict_of(c))}"
                          for c in d["claims"]) + "</td></tr>" for d in data), "</table>"]
    if costs:
        md += ["## What each method cost", "", *_cost_rows(costs), ""]
        body += ["<h2>What each method cost</h2>", "<table border=1 cellpadding=4>",
                 "<tr>" + "".join(f"<th>{h}</th>" for h in COST_HEADER) + "</tr>",
                 *("<tr>" + "".join(f"<td>{html.escape(x)}</td>" for x in _cost_cells(c)) + "</tr>"
                   for c in costs), "</table>"]
    for d in data:
        meta = d.get("meta", {})
        md += [f"## {d['method']}", "",
               f"seeds {d.get('seeds')}; jax {meta.get('jax_version', '?')}; "
               f"commit {meta.get('git_commit', '?')}; config {meta.get('config_hash', '?')}"
               + _stale_note(d["method"], meta), "",
               "| claim | paper | measured | trivial / ideal | criterion | verdict |",
               "|---|---|---|---|---|---|"]
        body += [f"<h2 id='{html.escape(d['method'])}'>{html.escape(d['method'])}</h2>",
                 "<table border=1 cellpadding=4>",
                 "<tr><th>claim</th><th>paper</th><th>measured</th><th>trivial / ideal</th><th>criterion</th>"
                 "<th>verdict</th></tr>"]
        for c in d["claims"]:
            verdict = verdict_of(c)
            rows = [_row_text(c, "trivial"), _row_text(c, "ideal")]
            shown = {"held": "held", "not held": "**did not hold**",
                     "inconclusive": "*inconclusive*"}[verdict]
            md.append(f"| **{c['id']}**: {_cell(c['statement'])} | {_cell(c['paper'])} "
                      f"| {_measured(c['measured'])} | {_cell('<br>'.join(rows))} "
                      f"| {_cell(_context(c))} | {shown} |")
            body.append("<tr>" + "".join(f"<td>{x}</td>" for x in (
                f"<b>{html.escape(c['id'])}</b>: {html.escape(c['statement'])}",
                html.escape(c["paper"]),
                _measured_html(c["measured"]),
                "<br>".join(html.escape(r) for r in rows),
                html.escape(_context(c, with_note=False)),
                _verdict_html(verdict))) + "</tr>")
            if c.get("note"):
                body.append(f"<tr><td colspan=6 style='font-size:90%;color:#444'>"
                            f"{html.escape(c['note'])}</td></tr>")
        body.append("</table>")
        figures = _figures(d["_path"].parent / "figures")
        if figures:
            md += ["", "Figures: " + ", ".join(
                f"[{f.stem}]({f.relative_to(md_path.parent).as_posix()})" for f in figures)]
            for f in figures:
                b64 = base64.b64encode(f.read_bytes()).decode()
                body.append(f"<figure><img src='data:image/png;base64,{b64}' style='max-width:100%'>"
                            f"<figcaption><b>{html.escape(f.stem)}</b>: "
                            f"{html.escape(_caption(f))}</figcaption></figure>")
        md.append("")
    io.atomic_write_text(md_path, "\n".join(md) + "\n")
    io.atomic_write_text(html_path, "<!doctype html><meta charset=utf-8><title>repro26 report</title>"
                         "<style>table.measured td{border:none;padding:0 6px 0 0;font-size:90%}"
                         "table.measured td:first-child{color:#555}</style>"
                         "<body style='font-family:sans-serif;max-width:1200px'>"
                         + "\n".join(body) + "</body>\n")


class _Cells(HTMLParser):
    """The text of every innermost table cell and the source of every image of a page."""

    def __init__(self):
        super().__init__()
        self.cells: list[str] = []
        self.images: list[str] = []
        self._open: list[list[str]] = []

    def handle_starttag(self, tag, attrs):
        if tag == "td":
            self._open.append([])
        elif tag == "img":
            self.images.append(dict(attrs).get("src", ""))

    def handle_endtag(self, tag):
        if tag == "td" and self._open:
            self.cells.append("".join(self._open.pop()))

    def handle_data(self, data):
        if self._open:
            self._open[-1].append(data)


def html_problems(path: str | Path, max_cell: int = MAX_TEXT) -> list[str]:
    """What a reader of ``report.html`` would hit: a table cell longer than ``max_cell``
    characters, or a figure that is not an embedded PNG an image reader can decode."""
    import matplotlib.image

    page = _Cells()
    page.feed(Path(path).read_text())
    problems = [f"a cell of {len(c)} characters: {c[:60]}…" for c in page.cells
                if len(c) > max_cell]
    for i, src in enumerate(page.images):
        prefix = "data:image/png;base64,"
        if not src.startswith(prefix):
            problems.append(f"figure {i}: not an embedded PNG")
            continue
        try:
            image = matplotlib.image.imread(BytesIO(base64.b64decode(src[len(prefix):])), "png")
        except Exception as err:  # noqa: BLE001  any decoding failure is the finding
            problems.append(f"figure {i}: does not decode ({type(err).__name__})")
            continue
        if image.ndim < 2 or min(image.shape[:2]) < 50:
            problems.append(f"figure {i}: {image.shape[:2]} pixels")
    return problems


_BROWSER_CHECK = """<script>
window.addEventListener("load", () => {
  const cells = [...document.querySelectorAll("td")].filter(c => !c.querySelector("td"));
  const images = [...document.images];
  const out = {
    cells: cells.length,
    long: cells.map(c => c.innerText.length).filter(n => n > %d),
    images: images.length,
    broken: images.map((im, i) => [i, im.naturalWidth, im.naturalHeight])
                  .filter(([, w, h]) => !(w >= 50 && h >= 50)),
  };
  const pre = document.createElement("pre");
  pre.id = "repro26-browser-check";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""

#: Chromium's flags for a closed network: no background connections, no first-run, no sandbox
#: (CI runs as root), a fresh profile per call.
_CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                   "--disable-background-networking", "--disable-component-update",
                   "--disable-sync", "--virtual-time-budget=10000", "--dump-dom")


def chromium_binary() -> str | None:
    """The headless browser to render the report with: ``$REPRO26_CHROMIUM``, else ``chromium``
    or ``chromium-browser`` on the PATH, else None."""
    return os.environ.get("REPRO26_CHROMIUM") or shutil.which("chromium") or shutil.which(
        "chromium-browser")


def browser_problems(path: str | Path, max_cell: int = MAX_TEXT,
                     chromium: str | None = None) -> list[str]:
    """What a reader of ``report.html`` sees in a real browser: the page is rendered by headless
    Chromium, and a script run after the page's ``load`` event counts every innermost table cell
    whose rendered text is longer than ``max_cell`` characters and every figure the browser did
    not decode to at least 50×50 pixels. Raises FileNotFoundError when no Chromium is installed."""
    chromium = chromium or chromium_binary()
    if chromium is None:
        raise FileNotFoundError("no headless Chromium: install Debian's `chromium` or set "
                                "REPRO26_CHROMIUM")
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "report.html"
        text = Path(path).read_text()
        check = _BROWSER_CHECK % max_cell
        page.write_text(text.replace("</body>", check + "</body>") if "</body>" in text
                        else text + check)
        done = subprocess.run([chromium, *_CHROMIUM_FLAGS, f"--user-data-dir={tmp}/profile",
                               page.as_uri()], capture_output=True, text=True, timeout=180)
    found = re.search(r'<pre id="repro26-browser-check">(.*?)</pre>', done.stdout, re.S)
    if found is None:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return [f"Chromium did not render the page (exit {done.returncode}): {last}"]
    result = json.loads(html.unescape(found.group(1)))
    problems = [f"a cell of {n} characters as rendered" for n in result["long"]]
    problems += [f"figure {i}: rendered at {w}×{h} pixels" for i, w, h in result["broken"]]
    if result["cells"] == 0:
        problems.append("no table cells rendered")
    return problems
