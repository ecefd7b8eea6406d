"""The paper's three headline claims as predicates over ``tables/eval.csv``.

Each method is compared with its own sampler (Neural CTMC: tau-leaping; GIDD and MDLM:
ancestral; SEDD: tau-leaping), at equal training tokens. Means over seeds are compared; the
95% CIs over seeds are reported beside them.
"""

from __future__ import annotations

import numpy as np

from repro26.core import tables
from repro26.core.claims import Claim
from repro26.core.method import claim_set
from repro26.core.stats import summary
from repro26.neural_ctmc.figures import metric_by_seed, reference
from repro26.neural_ctmc.model import METHODS
from repro26.neural_ctmc.solvers import SAMPLERS

#: "comparable sample entropy": within this relative distance of each baseline's entropy
ENTROPY_TOLERANCE = 0.05


def _summ(table, corpus, method, metric, steps):
    """``summary`` over seeds of ``metric`` at each of ``steps`` (method's own sampler)."""
    xs, y = metric_by_seed(table, corpus, method, SAMPLERS[method][0], metric)
    return [summary(y[:, list(xs).index(n)]) for n in steps]


def build_claims(table: dict, ref: dict) -> list[Claim]:
    steps = sorted(int(s) for s in set(table["steps"].tolist()) if int(s) > 0)
    top = steps[-1]
    ppl = {m: _summ(table, "text", m, "gen_ppl", steps) for m in METHODS}
    ent = {m: _summ(table, "text", m, "entropy", [top])[0] for m in METHODS}
    nll = {m: _summ(table, "hmm", m, "exact_nll", [top])[0] for m in METHODS}
    elbo = {}
    for corpus in ("hmm", "text"):
        for m in METHODS:
            elbo[f"{corpus}/{m}"] = tables.seed_summary(table, "value", corpus=corpus, method=m,
                                                        metric="elbo_nll")
    h_true = reference(ref, "hmm", "true_entropy_per_token")
    ar_nll = float(np.log(reference(ref, "text", "scorer_val_ppl") or np.nan))

    def overlaps(a, b):
        return a["ci95"][0] <= b["ci95"][1] and b["ci95"][0] <= a["ci95"][1]

    def convergence_note(corpus, target, what):
        bounds = [elbo[f"{corpus}/{m}"]["mean"] for m in METHODS]
        return (f"{corpus}: validation bounds {min(bounds):.2f}-{max(bounds):.2f} nats/token vs "
                f"{what} {target:.2f}, so the models are far from converged at this scale")

    text_note = convergence_note("text", ar_nll, "the AR scorer's held-out NLL")
    overlap_top = all(overlaps(ppl["neural_ctmc"][-1], ppl[m][-1]) for m in METHODS)

    c1 = Claim.check(
        "gen_ppl_text",
        "Neural CTMC generative perplexity is below GIDD-uniform and MDLM at equal training "
        "tokens on the real-text analogue, with comparable sample entropy",
        "TinyStories, Gemma2-9B scorer: 16.36 vs GIDD 37.60 vs MDLM 42.66",
        {"steps": top,
         "gen_ppl": {m: ppl[m][-1] for m in ("neural_ctmc", "gidd", "mdlm")},
         "entropy_nats": {m: ent[m] for m in ("neural_ctmc", "gidd", "mdlm")},
         "data_entropy_nats": reference(ref, "text", "data_unigram_entropy"),
         "scorer_ppl_on_heldout_text": reference(ref, "text", "scorer_val_ppl")},
        lambda d: (d["gen_ppl"]["neural_ctmc"]["mean"] < d["gen_ppl"]["gidd"]["mean"]
                   and d["gen_ppl"]["neural_ctmc"]["mean"] < d["gen_ppl"]["mdlm"]["mean"]
                   and all(abs(d["entropy_nats"]["neural_ctmc"]["mean"] - d["entropy_nats"][b]["mean"])
                           <= ENTROPY_TOLERANCE * d["entropy_nats"][b]["mean"]
                           for b in ("gidd", "mdlm"))),
        f"mean gen. PPL (KJV text, AR scorer, {top} steps) of Neural CTMC < GIDD and < MDLM, and "
        f"its mean sample unigram entropy within {ENTROPY_TOLERANCE:.0%} of each of theirs",
        note=text_note + ("; the seed CIs of all methods' gen. PPL overlap" if overlap_top else ""),
    )
    c2 = Claim.check(
        "best_across_steps",
        "Neural CTMC has the best generative perplexity at every sampling budget from 16 to 128 "
        "steps among the compared methods, at the same training-token budget",
        "OpenWebText, 128 steps: 183.6 vs MDLM 210.5 vs GIDD 249.8",
        {"steps": steps, "gen_ppl": {m: ppl[m] for m in METHODS}},
        lambda d: all(d["gen_ppl"]["neural_ctmc"][j]["mean"]
                      < min(d["gen_ppl"][m][j]["mean"] for m in METHODS if m != "neural_ctmc")
                      for j in range(len(d["steps"]))),
        "at each step count, mean gen. PPL (KJV text) of Neural CTMC < that of MDLM, GIDD and SEDD",
        note=text_note,
    )
    gap = {m: abs(nll[m]["mean"] - h_true) for m in METHODS}
    c3 = Claim.check(
        "synthetic_nll_closest",
        "On the synthetic language, Neural CTMC's exact sample NLL is closest to the true entropy",
        "(issue's synthetic check; no paper number)",
        {"steps": top, "true_entropy_per_token": h_true,
         "exact_sample_nll": nll, "abs_gap_to_entropy": gap,
         "elbo_bound_nats": elbo,
         "every_hmm_bound_above_entropy": bool(all(
             elbo[f"hmm/{m}"]["mean"] >= h_true for m in METHODS))},
        lambda d: min(d["abs_gap_to_entropy"], key=d["abs_gap_to_entropy"].get) == "neural_ctmc",
        f"|mean exact NLL of samples - true entropy| (HMM, {top} steps) is smallest for Neural CTMC",
        note=convergence_note("hmm", h_true, "the true entropy"),
    )
    return [c1, c2, c3]


@claim_set("tables/eval.csv", "tables/reference.csv")
def CLAIMS(run) -> list[Claim]:
    return build_claims(tables.read(run.input("eval.csv")), tables.read(run.input("reference.csv")))
