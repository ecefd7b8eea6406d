"""Figures of the nestrl experiments; each reads tables only, and its docstring is its caption."""

from __future__ import annotations

import numpy as np

from repro26.core import plotting, tables
from repro26.core.method import figure, figures_by_name
from repro26.core.stats import mean_ci
from repro26.nestrl import names
from repro26.nestrl.claims import (HELDOUT_GROUPS, ideal_adaptability, oracle_heldout,
                                   pair_tables, per_seed_heldout, read_pairs, train_tables)
from repro26.nestrl.names import SCRIPTED

LABELS = {"sp": "self-play", "fcp": "FCP", "mep": "MEP", "br": "best response",
          "oracle": "oracle (ideal)",
          "random": "random",
          "subtask": "scripted subtask", "proxy_onion": "proxy (onion first)",
          "proxy_plate": "proxy (plate first)", "heldout_learned": "learned agents, other seeds",
          "proxy": "adaptive scripted proxies"}


SMOOTH_BLOCKS = 25  # training curves: mean return over this many equal blocks of updates


def _label(name: str, cfg) -> str:
    if name == names.nestrl_type(cfg):
        return f"NestRL (L{cfg.levels})"
    if name.startswith("level"):
        return f"level {name[5:]}"
    return LABELS.get(name, name)


def _egos(cfg) -> list[str]:
    return [*names.ego_types(cfg), names.BEST_RESPONSE, *names.TRIVIAL]


@figure(inputs_from=pair_tables)
def crossplay_matrix(run):
    """Cross-play: mean team return (20 per soup, one episode of the configured horizon, all
    layouts pooled) of each ego (rows) with each kind of partner (columns). Learned partners are
    the other seeds' agents of that kind (the diagonal is therefore cross-seed play, not
    self-play); scripted partners are the same for every seed. Right: self-play and NestRL,
    seed by seed (the diagonal is each agent with itself)."""
    cfg = run.cfg
    pairs = read_pairs(run)
    egos = _egos(cfg)
    partners = [*names.ego_types(cfg), *SCRIPTED]
    matrix = np.full((len(egos), len(partners)), np.nan)
    for i, e in enumerate(egos):
        for j, p in enumerate(partners):
            mask = tables.where(pairs, ego=e, partner=p) & (pairs["partner_seed"] != pairs["seed"])
            if mask.any():
                matrix[i, j] = np.mean(np.asarray(pairs["return"][mask], float))
    fig, grid = plotting.subplots(1, 3, width=4.5, height=4.6,
                                  gridspec_kw={"width_ratios": [2.2, 1, 1]})
    axes = grid[0]
    vmax = np.nanmax(matrix) if np.isfinite(matrix).any() else 1.0
    for ax in axes:
        ax.grid(False)
    im = axes[0].imshow(matrix, cmap="viridis", vmin=0, vmax=max(vmax, 1e-6))
    for i in range(len(egos)):
        for j in range(len(partners)):
            axes[0].text(j, i, f"{matrix[i, j]:.0f}", ha="center", va="center", fontsize=6,
                         color="w" if matrix[i, j] < 0.6 * vmax else "k")
    axes[0].set_xticks(range(len(partners)), [_label(p, cfg) for p in partners], rotation=45,
                       ha="right", fontsize=7)
    axes[0].set_yticks(range(len(egos)), [_label(e, cfg) for e in egos], fontsize=7)
    axes[0].set_xlabel("partner")
    axes[0].set_ylabel("ego")
    fig.colorbar(im, ax=axes[0], label="team return")
    for ax, ego in zip(axes[1:], ("sp", names.nestrl_type(cfg))):
        seeds = list(cfg.seeds)
        block = np.full((len(seeds), len(seeds)), np.nan)
        for i, s in enumerate(seeds):
            for j, t in enumerate(seeds):
                mask = tables.where(pairs, ego=ego, seed=s, partner=ego, partner_seed=t)
                block[i, j] = np.mean(np.asarray(pairs["return"][mask], float))
        ax.imshow(block, cmap="viridis", vmin=0, vmax=max(vmax, 1e-6))
        for i in range(len(seeds)):
            for j in range(len(seeds)):
                ax.text(j, i, f"{block[i, j]:.0f}", ha="center", va="center", fontsize=7,
                        color="w" if block[i, j] < 0.6 * vmax else "k")
        ax.set_xticks(range(len(seeds)), seeds)
        ax.set_yticks(range(len(seeds)), seeds)
        ax.set_xlabel("partner seed")
        ax.set_ylabel("ego seed")
        ax.set_title(_label(ego, cfg), fontsize=9)
    return fig


@figure(inputs_from=pair_tables)
def partner_returns(run):
    """Team return (20 per soup) of each ego with the held-out partners: every learned agent of
    the other seeds (self-play, FCP, MEP, each NestRL level) and the scripted adaptive human
    proxies that switch role after being blocked; the best response was trained against the
    former. The oracle (ideal row) plays with each partner the agent of its seed that did best
    with it, chosen on half of the evaluation episodes and scored on the other half. Bars: mean
    over training seeds (layouts pooled); error bars: 95% t-interval over seeds. Grey: the
    trivial egos (random, scripted subtask)."""
    cfg = run.cfg
    pairs = read_pairs(run)
    egos = [*_egos(cfg), names.ORACLE]
    episodes = range(1, cfg.eval_repeats + 1)
    fig, grid = plotting.subplots(width=7.5, height=3.4)
    ax, width = grid[0, 0], 0.38
    for g_i, group in enumerate(HELDOUT_GROUPS):
        means, halves = [], []
        for e in egos:
            per_seed = (oracle_heldout(pairs, cfg.seeds, episodes, (group,)) if e == names.ORACLE
                        else per_seed_heldout(pairs, e, "return", cfg.seeds, (group,)))
            mean, half = mean_ci(per_seed)
            means.append(mean), halves.append(half)
        x = np.arange(len(egos)) + (g_i - 0.5) * width
        colors = [("0.6" if e in names.TRIVIAL else f"C{g_i}") for e in egos]
        ax.bar(x, means, width, yerr=halves, color=colors, capsize=2, label=LABELS[group],
               edgecolor=f"C{g_i}", linewidth=1.2, hatch=None if g_i == 0 else "//")
    ax.set_xticks(range(len(egos)), [_label(e, cfg) for e in egos], rotation=30, ha="right",
                  fontsize=8)
    ax.set_ylabel("team return (points)")
    ax.legend(fontsize=7, frameon=False)
    return fig


@figure(inputs_from=pair_tables)
def adaptability(run):
    """Adaptability with the held-out partners (mean over seeds, partner groups weighted equally,
    layouts pooled; bands and bars: 95% CI over seeds). Left: return in each of the repeated
    episodes played back to back with the same partner, the ego's recurrent state reset at each
    episode (solid) or carried over (dashed). Right: the claim's adaptability, carried minus reset
    over episodes 2 and later, per ego (grey: trivial egos, 0 by construction); the ideal row is
    an agent that adapts without error: FCP when reset, the oracle's choice for the partner
    (the agent of its seed that did best with it, cross-fitted) once it has met the partner."""
    cfg = run.cfg
    pairs = read_pairs(run)
    egos = [names.nestrl_type(cfg), "fcp", "sp", "mep", names.BEST_RESPONSE, *names.TRIVIAL]
    fig, grid = plotting.subplots(1, 2, width=4.3, height=3.4)
    ax, bx = grid[0]
    repeats = np.arange(1, cfg.eval_repeats + 1)
    for i, e in enumerate(egos):
        # trivial egos in two greys (random light, scripted subtask dark)
        grey = {"random": "0.7", "subtask": "0.35"}
        color = grey.get(e, "0.5") if e in names.TRIVIAL else f"C{i}"
        for prefix, ls in (("episode", "-"), ("carried", "--")):
            ep = np.stack([per_seed_heldout(pairs, e, f"{prefix}{j}", cfg.seeds) for j in repeats], 1)
            plotting.line_with_ci(ax, repeats, ep, color=color, ls=ls, marker="o", ms=3,
                                  label=_label(e, cfg) if prefix == "episode" else None)
        mean, half = mean_ci(per_seed_heldout(pairs, e, "adapt", cfg.seeds))
        bx.bar(i, mean, yerr=half, color=color, capsize=2)
    mean, half = mean_ci(ideal_adaptability(pairs, cfg.seeds, cfg.eval_repeats))
    bx.bar(len(egos), mean, yerr=half, color="w", edgecolor="k", hatch="//", capsize=2)
    ax.plot([], [], "k-", label="reset each episode")
    ax.plot([], [], "k--", label="carried over")
    ax.set_xticks(repeats)
    ax.set_xlabel("repeated episode with the same partner")
    ax.set_ylabel("episode return (points)")
    # the legend above the panel, clear of the bands
    ax.legend(fontsize=6, frameon=False, ncol=3, loc="lower left", bbox_to_anchor=(0, 1.0))
    bx.axhline(0, color="k", lw=0.6)
    bx.set_xticks(range(len(egos) + 1), [*(_label(e, cfg) for e in egos), "ideal (adapts "
                  "without error)"], rotation=40, ha="right", fontsize=7)
    bx.set_ylabel("carried minus reset return (points)")
    return fig


@figure(inputs_from=train_tables)
def training_curves(run):
    """Training curves: mean sparse team return per episode (20 per soup) during PPO, against
    environment steps per learner, for every training job (level-0 population, NestRL levels,
    FCP and MEP best responses, MEP population), averaged over 25 equal blocks of updates. The
    learners also received jaxmarl's shaped reward, annealed linearly to 0 (right axis): from the
    start for self-play kinds (dashed), after the partner curriculum for learners with partners
    (dotted).
    Bands: 95% CI over seeds (members averaged)."""
    cfg = run.cfg
    curves = tables.concat([tables.read(p, ("kind", "seed", "env_steps", "return"))
                            for p in run.inputs if p.parent.parent.name == "runs"])
    fig, grid = plotting.subplots(width=6.5, height=3.4)
    ax = grid[0, 0]
    for i, kind in enumerate(tables.unique(curves, "kind")):
        rows = tables.select(curves, kind=kind)
        steps = np.unique(rows["env_steps"])
        block = max(1, len(steps) // SMOOTH_BLOCKS)
        edges = steps[::block]
        which = np.searchsorted(edges, rows["env_steps"], side="right") - 1
        per_seed = np.stack([[np.mean(np.asarray(rows["return"][(rows["seed"] == s) & (which == b)],
                                                 float)) for b in range(len(edges))]
                             for s in cfg.seeds])
        steps = np.asarray([np.mean(steps[b * block:(b + 1) * block]) for b in range(len(edges))])
        label = {"level0": "level 0 (SP + biased)", "mep_pop": "MEP population", "fcp": "FCP",
                 "mep": "MEP"}.get(kind, _label(kind, cfg))
        plotting.line_with_ci(ax, steps, per_seed, label=label, color=f"C{i}")
    twin = ax.twinx()
    # the shaping schedules: self-play kinds from the start, partner-trained kinds after the
    # partner curriculum
    for kind, style in (("level0", "k--"), ("fcp", "k:")):
        coef = tables.select(curves, kind=kind)
        if len(coef["env_steps"]):
            order = np.argsort(coef["env_steps"])
            twin.plot(coef["env_steps"][order], coef["shaped_coef"][order], style, lw=0.8,
                      label=f"shaping weight ({'self-play' if kind == 'level0' else 'with partners'})")
    twin.legend(fontsize=6, frameon=False, loc="upper right")
    twin.set_ylabel("shaping weight")
    # headroom on both axes: the legends sit above the curves and the shaping lines
    twin.set_ylim(0, 1.9)
    twin.set_yticks([0, 0.5, 1])
    lo, hi = ax.get_ylim()
    ax.set_ylim(lo, hi + 0.45 * (hi - lo))
    ax.set_xlabel("environment steps per learner")
    ax.set_ylabel("episode return (points)")
    ax.legend(fontsize=6, frameon=False, loc="upper left")
    return fig


FIGURES = figures_by_name(crossplay_matrix, partner_returns, adaptability, training_curves)
