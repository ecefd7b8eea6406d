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


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list):
        if len(value) > 6:
            return "[" + ", ".join(_fmt(v) for v in value[:6]) + ", …]"
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    if isinstance(value, dict):
        return "; ".join(f"{k}={_fmt(v)}" for k, v in value.items() if k != "per_seed")
    return str(value)


def _measured(measured: dict) -> str:
    return "<br>".join(f"{k}: {_fmt(v)}" for k, v in measured.items()).replace("|", "\\|")


def build_report(claims_files: list[Path], scale: str, md_path: Path, html_path: Path) -> None:
    md_path, html_path = Path(md_path), Path(html_path)
    data = sorted((read_claims(p) | {"_path": Path(p)} for p in claims_files),
                  key=lambda d: d["method"])
    n_claims = sum(len(d["claims"]) for d in data)
    n_held = sum(c["holds"] for d in data for c in d["claims"])
    md = [f"# repro26 report — scale `{scale}`", "",
          f"{len(data)} methods, {n_claims} claims: {n_held} held, {n_claims - n_held} did not hold.",
          "Measured numbers are means over seeds with 95% CIs unless a claim says otherwise.", ""]
    body = [f"<h1>repro26 report — scale <code>{scale}</code></h1>",
            f"<p>{len(data)} methods, {n_claims} claims: {n_held} held, "
            f"{n_claims - n_held} did not hold.</p>"]
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
            md.append(f"| **{c['id']}**: {c['statement']} | {c['paper']} | {_measured(c['measured'])} "
                      f"| {c.get('criterion', '')}{note} | {verdict} |")
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

