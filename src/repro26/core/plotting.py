"""One figure style for the project; every figure saved as PNG and PDF, atomically."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
from matplotlib import ticker  # noqa: E402
import numpy as np  # noqa: E402

from repro26.core import io  # noqa: E402
from repro26.core.stats import mean_ci  # noqa: E402

STYLE = {
    "figure.dpi": 110,
    "savefig.dpi": 150,
    "savefig.bbox": "tight",
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "lines.linewidth": 1.5,
    "errorbar.capsize": 2,
}


def _pyplot():
    """``matplotlib.pyplot``, imported on first use: every stage imports its method's figure
    declarations, and most stages draw nothing."""
    import matplotlib.pyplot as plt

    return plt


def subplots(nrows: int = 1, ncols: int = 1, width: float = 3.4, height: float = 2.8, **kw):
    """``plt.subplots`` in the project style; ``width``/``height`` are per panel, inches."""
    plt = _pyplot()
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows),
                                 squeeze=False, **kw)
    return fig, axes


def save(fig, png_path: str | Path, caption: str | None = None) -> None:
    """Save ``fig`` as ``png_path`` and the same name with ``.pdf`` (and ``caption`` as ``.rst``
    for the reports); then close it. All files are rendered to temporary names first and renamed
    together at the end, so a failure (full disk, bad path) leaves neither half written."""
    png_path = Path(png_path)
    if png_path.suffix != ".png":
        raise ValueError(f"figure path must end in .png, got {png_path}")
    targets = [png_path, png_path.with_suffix(".pdf")]
    plt = _pyplot()
    with ExitStack() as stack:
        temps = [stack.enter_context(io.atomic_path(path)) for path in targets]
        with plt.rc_context(STYLE):
            for path, tmp in zip(targets, temps):
                fig.savefig(tmp, format=path.suffix[1:])
        if caption is not None:
            rst = png_path.with_suffix(".rst")
            tmp = stack.enter_context(io.atomic_path(rst))
            tmp.write_text(rst_text(caption) + "\n")
    plt.close(fig)


def rst_text(text: str) -> str:
    """Plain text safe in reStructuredText (``|x|`` would be read as a substitution)."""
    for char in ("\\", "|", "*", "`", "_"):
        text = text.replace(char, "\\" + char)
    return text


def plain_log_ticks(axis) -> None:
    """Label a log axis with plain numbers ("60", "200") instead of powers ("6×10¹")."""
    axis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(ticker.FuncFormatter(
        lambda v, _: f"{v:g}" if v > 0 and f"{v:.0e}"[0] in "25" else ""))


def line_with_ci(ax, x, y_by_seed, label: str | None = None, positive: bool = False,
                 limits: tuple[float, float] | None = None, **kw):
    """Mean over seeds (rows of ``y_by_seed``) with a shaded 95% CI band. ``positive=True``
    (errors, times, counts on a log axis): geometric mean and the interval of log y, which
    never runs below 0. ``limits`` clips the band to the quantity's range (a probability's
    [0, 1]); a curve of one point is drawn as a marker."""
    y = np.asarray(y_by_seed, float)
    if positive:
        mean, half = mean_ci(np.log(y), axis=0)
        centre, lo, hi = np.exp(mean), np.exp(mean - half), np.exp(mean + half)
    else:
        mean, half = mean_ci(y, axis=0)
        centre, lo, hi = mean, mean - half, mean + half
    if limits is not None:
        lo, hi = np.clip(lo, *limits), np.clip(hi, *limits)
    if np.size(x) < 2:
        kw.setdefault("marker", "o")
    (line,) = ax.plot(x, centre, label=label, **kw)
    ax.fill_between(x, lo, hi, color=line.get_color(), alpha=0.2, linewidth=0)
    return line


def clipped_yerr(mean, half, limits: tuple[float, float]) -> np.ndarray:
    """Asymmetric ``yerr`` for ``errorbar`` of the interval mean ± half clipped to ``limits``
    (a t-interval of few seeds can run past a probability's 0 and 1)."""
    mean, half = np.asarray(mean, float), np.asarray(half, float)
    lo, hi = np.clip(mean - half, *limits), np.clip(mean + half, *limits)
    return np.stack([mean - lo, hi - mean])
