"""Figures: the tabular identity, best-of-N and step-level beam search vs budget, AUROC and
failure attribution per scorer."""

from __future__ import annotations

from repro26.core import plotting, tables
from repro26.core.method import figure, figures_by_name
from repro26.core.stats import mean_ci
from repro26.progress_advantage.claims import application_scores

LABELS = {"pa": "progress adv. (KL)", "pa_clip": "progress adv. (clip only)", "a_star": "oracle A*",
          "prm": "PRM (MC labels)", "orm": "ORM", "logprob": "mean token log-prob",
          "self_certainty": "self-certainty", "step_prob": "min step prob.", "random": "random",
          "position": "step position"}
ORDER = ["pa", "pa_clip", "a_star", "prm", "orm", "logprob", "self_certainty", "step_prob",
         "random", "position"]
COLORS = {"pa": "C3", "pa_clip": "C1", "a_star": "k", "prm": "C2", "orm": "C4", "logprob": "C0",
          "self_certainty": "C9", "step_prob": "C5", "random": "0.6", "position": "0.8"}


def _subplots(*args, **kwargs):
    """``plt.subplots``, importing pyplot on first use (a job that only reads the figure
    declarations draws nothing)."""
    import matplotlib.pyplot as plt

    return plt.subplots(*args, **kwargs)


@figure("tables/tabular_scatter.csv", "tables/tabular_curve.csv")
def tabular_identity(run):
    """Tabular slippery gridworld. Left: optimal advantage A* (soft value iteration) against
    β·log π/π_ref of the policy learned by exact KL-regularised policy gradient from π_ref (every
    decision state-action pair of every seed; dashed: the identity line, on which the
    closed-form π* lies by construction). Right: Pearson correlation of β·log π/π_ref with A*
    during training (mean and 95% CI over seeds), with and without the KL term; dotted: 0.99."""
    sc = tables.read(run.input("tabular_scatter.csv"))
    cu = tables.read(run.input("tabular_curve.csv"))
    fig, (ax1, ax2) = _subplots(1, 2, figsize=(10, 4.2))
    ax1.scatter(sc["log_ratio_learned"], sc["a_star"], s=6, alpha=0.4, color="C3",
                label="KL-regularised PG")
    lim = [min(sc["a_star"].min(), sc["log_ratio_learned"].min()),
           max(sc["a_star"].max(), sc["log_ratio_learned"].max())]
    ax1.plot(lim, lim, "k--", lw=1, label="identity (closed-form π*)")
    ax1.set_xlabel("β · log π_learned(a|s) / π_ref(a|s)")
    ax1.set_ylabel("optimal advantage A*(s, a)")
    ax1.legend(loc="upper left", fontsize=8)
    for col, label, color in (("corr_kl", "with KL (β)", "C3"),
                              ("corr_unregularised", "without KL", "C0")):
        steps, mean, half = tables.mean_ci_by(cu, col, by="step")
        ax2.plot(steps, mean, color=color, label=label)
        ax2.fill_between(steps, mean - half, mean + half, color=color, alpha=0.2)
    ax2.axhline(0.99, color="k", ls=":", lw=1)
    ax2.set_xlabel("policy-gradient step")
    ax2.set_ylabel("corr(β · log π/π_ref, A*)")
    ax2.set_ylim(0, 1.02)
    ax2.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    return fig


def _scaling(ax, table, xlabel):
    for scorer in [s for s in ORDER if s in tables.unique(table, "scorer")]:
        rows = tables.select(table, scorer=scorer, chosen=1)
        ns, mean, half = tables.mean_ci_by(rows, "accuracy", by="n")
        ax.errorbar(ns, mean, yerr=plotting.clipped_yerr(mean, half, (0.0, 1.0)), color=COLORS[scorer], label=LABELS[scorer], capsize=2,
                    ls="--" if scorer in ("random", "position", "a_star") else "-", marker="o", ms=3)
    ax.set_xscale("log", base=2)
    ax.set_xticks(ns, [str(int(n)) for n in ns])
    ax.set_xlabel(xlabel)
    ax.set_ylabel("success probability of the answer")
    ax.legend(fontsize=7, ncol=2)


@figure("tables/bon.csv")
def best_of_n(run):
    """Test-time scaling: success probability of the candidate (of N sampled from π_RL) that each
    scorer ranks highest, against N (mean and 95% CI over seeds; pa, pa_clip, prm and the oracle
    use the aggregation chosen on validation problems; ties broken at random)."""
    fig, ax = _subplots(figsize=(7, 4.5))
    _scaling(ax, tables.read(run.input("bon.csv")), "N (candidates per problem)")
    fig.tight_layout()
    return fig


@figure("tables/beam.csv")
def beam_search(run):
    """Test-time scaling by step-level beam search at the sampling budget of best-of-N: at each
    of the horizon's steps N steps of π_RL are sampled (tool calls executed) from
    max(1, N/4) beams, ranked by each scorer's aggregation of the step scores so far (the one
    best-of-N chose on validation problems; the oracle A* ranks a search of its own; the ORM,
    trained on whole trajectories, ranks no prefixes) and the top beams kept;
    the y axis is the exact success probability of the top final trajectory (mean and 95% CI
    over seeds; N = 1 is one sample of π_RL)."""
    fig, ax = _subplots(figsize=(7, 4.5))
    _scaling(ax, tables.read(run.input("beam.csv")), "N (steps sampled per depth = best-of-N budget)")
    fig.tight_layout()
    return fig


def _bars(ax, per_scorer, ylabel, chance=None):
    names = [s for s in ORDER if s in per_scorer]
    means, halves = zip(*(mean_ci(per_scorer[s]) for s in names))
    ax.bar(range(len(names)), means, yerr=plotting.clipped_yerr(means, halves, (0.0, 1.0)), capsize=3, color=[COLORS[s] for s in names])
    ax.set_xticks(range(len(names)), [LABELS[s] for s in names], rotation=35, ha="right",
                  fontsize=8)
    ax.set_ylabel(ylabel)
    if chance is not None:
        ax.axhline(chance, color="k", ls=":", lw=1)
    lo = max(0.0, min(m - h for m, h in zip(means, halves)))
    hi = min(1.0, max(m + h for m, h in zip(means, halves)))
    ax.set_ylim(max(0.0, lo - 0.05), min(1.02, hi + 0.03))


@figure("tables/bon.csv", "tables/auroc.csv", "tables/attribution.csv", "tables/beam.csv")
def auroc(run):
    """Uncertainty quantification: AUROC of each trajectory score for the success of π_RL's
    trajectories on test problems (mean and 95% CI over seeds; dotted: chance)."""
    s = application_scores(*(tables.read(run.input(f)) for f in
                             ("bon.csv", "auroc.csv", "attribution.csv", "beam.csv")))
    fig, ax = _subplots(figsize=(7, 4.2))
    _bars(ax, s["auroc"], "AUROC (success)", chance=0.5)
    fig.tight_layout()
    return fig


@figure("tables/bon.csv", "tables/auroc.csv", "tables/attribution.csv", "tables/beam.csv")
def attribution(run):
    """Failure attribution: fraction of failed trajectories (an expert prefix, then a fast-tool
    call that crashes into the absorbing dead state, then π_RL) whose lowest-scored step is the
    crashing one (mean and 95% CI over seeds; the ORM has no step scores)."""
    s = application_scores(*(tables.read(run.input(f)) for f in
                             ("bon.csv", "auroc.csv", "attribution.csv", "beam.csv")))
    fig, ax = _subplots(figsize=(7, 4.2))
    _bars(ax, s["attribution"], "attribution accuracy")
    fig.tight_layout()
    return fig


FIGURES = figures_by_name(tabular_identity, best_of_n, beam_search, auroc, attribution)
