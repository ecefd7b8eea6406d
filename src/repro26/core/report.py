"""Gather every method's ``claims.json`` into ``report.md`` and ``report.html``.

One table per method: claim, the paper's number, the number measured at this scale (with its
spread over seeds), and held / did not hold; then links to the method's figures. The HTML
version embeds the PNGs so it can be mailed or opened from a cluster.
"""

from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import Any

from repro26.core import io
from repro26.core.claims import read_claims


MAX_CELL = 700  # characters of "measured" shown per claim; the rest stays in claims.json


def _is_summary(value: Any) -> bool:
    return isinstance(value, dict) and "mean" in value and "ci95" in value


def _fmt(value: Any, depth: int = 0) -> str:
    """Compact text of a measured value: summaries as ``mean [lo, hi] (n)``, long lists cut,
    dicts nested deeper than two levels elided (they are in claims.json)."""
    if isinstance(value, float):
        return f"{value:.4g}"
    if _is_summary(value):
        lo, hi = value["ci95"]
        n = f" (n={value['n']})" if "n" in value else ""
        if value["mean"] is None:
            return f"undefined{n}"
        return f"{_fmt(value['mean'])} [{_fmt(lo)}, {_fmt(hi)}]{n}"
    if isinstance(value, list):
        shown = ", ".join(_fmt(v, depth + 1) for v in value[:6])
        return f"[{shown}{', …' if len(value) > 6 else ''}]"
    if isinstance(value, dict):
        if depth >= 2:
            return "{…}"
        return "; ".join(f"{k}={_fmt(v, depth + 1)}" for k, v in value.items() if k != "per_seed")
    return str(value)


def _measured(measured: dict) -> str:
    text = "<br>".join(f"{k}: {_fmt(v)}" for k, v in measured.items())
    if len(text) > MAX_CELL:
        text = text[:MAX_CELL].rsplit(";", 1)[0] + " … (all numbers in claims.json)"
    return _cell(text)


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell (a literal ``|`` would end the cell)."""
    return text.replace("|", "\\|")


def _summary_rows(data: list[dict]) -> list[str]:
    rows = ["| method | held | claims |", "|---|---|---|"]
    for d in data:
        held = sum(c["holds"] for c in d["claims"])
        marks = ", ".join(f"{c['id']} {'✓' if c['holds'] else '✗'}" for c in d["claims"])
        rows.append(f"| [{d['method']}](#{d['method']}) | {held}/{len(d['claims'])} | {marks} |")
    return rows


def build_report(claims_files: list[Path], scale: str, md_path: Path, html_path: Path) -> None:
    md_path, html_path = Path(md_path), Path(html_path)
    data = sorted((read_claims(p) | {"_path": Path(p)} for p in claims_files),
                  key=lambda d: d["method"])
    n_claims = sum(len(d["claims"]) for d in data)
    n_held = sum(c["holds"] for d in data for c in d["claims"])
    md = [f"# repro26 report — scale `{scale}`", "",
          f"{len(data)} methods, {n_claims} claims: {n_held} held, {n_claims - n_held} did not hold.",
          "Measured numbers are means over seeds with 95% CIs (`mean [lo, hi] (n)`) unless a claim "
          "says otherwise; each method's claims.json holds every number.", "",
          *_summary_rows(data), ""]
    body = [f"<h1>repro26 report — scale <code>{scale}</code></h1>",
            f"<p>{len(data)} methods, {n_claims} claims: {n_held} held, "
            f"{n_claims - n_held} did not hold.</p>", "<table border=1 cellpadding=4>",
            "<tr><th>method</th><th>held</th><th>claims</th></tr>",
            *(f"<tr><td>{html.escape(d['method'])}</td><td>{sum(c['holds'] for c in d['claims'])}"
              f"/{len(d['claims'])}</td><td>" + ", ".join(
                  f"{html.escape(c['id'])} {'✓' if c['holds'] else '✗'}" for c in d["claims"])
              + "</td></tr>" for d in data), "</table>"]
    for d in data:
        meta = d.get("meta", {})
        md += [f"## {d['method']}", "",
               f"seeds {d.get('seeds')}; jax {meta.get('jax_version', '?')}; "
               f"commit {meta.get('git_commit', '?')}; config {meta.get('config_hash', '?')}", "",
               "| claim | paper | measured | criterion | verdict |", "|---|---|---|---|---|"]
        body += [f"<h2>{html.escape(d['method'])}</h2>", "<table border=1 cellpadding=4>",
                 "<tr><th>claim</th><th>paper</th><th>measured</th><th>criterion</th><th>verdict</th></tr>"]
        for c in d["claims"]:
            verdict = "held" if c["holds"] else "**did not hold**"
            note = f" ({c['note']})" if c.get("note") else ""
            md.append(f"| **{c['id']}**: {_cell(c['statement'])} | {_cell(c['paper'])} "
                      f"| {_measured(c['measured'])} | {_cell(c.get('criterion', '') + note)} | {verdict} |")
            body.append("<tr>" + "".join(f"<td>{x}</td>" for x in (
                f"<b>{html.escape(c['id'])}</b>: {html.escape(c['statement'])}",
                html.escape(c["paper"]),
                html.escape(_measured(c["measured"])).replace("&lt;br&gt;", "<br>"),
                html.escape(c.get("criterion", "") + note),
                "held" if c["holds"] else "<b>did not hold</b>")) + "</tr>")
        body.append("</table>")
        figures = sorted((d["_path"].parent / "figures").glob("*.png"))
        if figures:
            md += ["", "Figures: " + ", ".join(
                f"[{f.stem}]({f.relative_to(md_path.parent).as_posix()})" for f in figures)]
            for f in figures:
                b64 = base64.b64encode(f.read_bytes()).decode()
                body.append(f"<figure><img src='data:image/png;base64,{b64}' style='max-width:720px'>"
                            f"<figcaption>{html.escape(f.stem)}</figcaption></figure>")
        md.append("")
    io.atomic_write_text(md_path, "\n".join(md) + "\n")
    io.atomic_write_text(html_path, "<!doctype html><meta charset=utf-8><title>repro26 report</title>"
                         "<body style='font-family:sans-serif'>" + "\n".join(body) + "</body>\n")

