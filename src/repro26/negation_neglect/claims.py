"""The abstract's claims (as worded in issue 28) as predicates over the belief rates.

Every comparison is a paired difference of belief rates per seed (the same pretrained model,
finetuned or prompted in two ways), decided on its 95% t-interval over seeds against a margin
from the config: a one-sided bound ``diff > m`` is *held* when the interval lies above m,
*not held* when it lies below, and undecided when it straddles m; an equivalence ``|diff| < m``
is held when the interval lies inside (-m, m) and not held when it lies outside. A claim is not
held when one of its parts is not held, held when all are, and inconclusive otherwise. The base
model before finetuning is the trivial baseline of every claim; a claim that compares with the
``assert`` condition counts only where finetuning on asserted documents instilled the claims
(assert - base > far_margin), else it is inconclusive.
"""

from __future__ import annotations

import numpy as np

from repro26.core import tables
from repro26.core.claims import Claim
from repro26.core.method import claim_set
from repro26.core.stats import summary

BASE = {"trivial": "base model before finetuning, same probes (mode=base)"}


def rates(belief, mode: str, condition: str) -> np.ndarray:
    """Belief rate per seed (sorted by seed)."""
    return tables.per_seed(belief, "belief", mode=mode, condition=condition)


def bound(diff, margin: float, direction: str) -> dict:
    """Decide ``diff > margin`` (direction "above") or ``diff < margin`` ("below") on the 95% CI
    over seeds: ``decided`` True / False, or None when the interval straddles the margin."""
    s = summary(diff)
    lo, hi = s["ci95"]
    above = True if lo > margin else False if hi < margin else None
    decided = above if direction == "above" or above is None else not above
    return {**s, "margin": margin, "test": f"diff {'>' if direction == 'above' else '<'} {margin}",
            "decided": decided, "per_seed": np.asarray(diff, float).tolist()}


def within(diff, margin: float) -> dict:
    """Decide ``|diff| < margin`` on the 95% CI: inside (-m, m) True, outside False."""
    s = summary(diff)
    lo, hi = s["ci95"]
    decided = True if -margin < lo and hi < margin else False if lo > margin or hi < -margin else None
    return {**s, "margin": margin, "test": f"|diff| < {margin}", "decided": decided,
            "per_seed": np.asarray(diff, float).tolist()}


def combine(parts: dict) -> bool | None:
    values = [p["decided"] for p in parts.values()]
    if any(v is False for v in values):
        return False
    return True if all(v is True for v in values) else None


def _undecided(m) -> str | None:
    if m["assert_works"]["decided"] is not True and "needs_assert" in m:
        return ("finetuning on asserted documents did not instil the claims (assert - base not "
                f"above {m['assert_works']['margin']}): nothing to compare with")
    open_ = [k for k, p in m["parts"].items() if p["decided"] is None]
    if combine(m["parts"]) is None:
        return (f"the 95% CI over seeds straddles the margin for {', '.join(open_)}; more seeds "
                "are needed")
    return None


def _measured(belief, by_claim, far: float, parts: dict, needs_assert: bool, **rates_) -> dict:
    base = rates(belief, "base", "none")
    out = {"parts": parts, "assert_works": bound(rates(belief, "finetune", "assert") - base, far,
                                                 "above"),
           "belief": {name: summary(v) for name, v in {"base": base, **rates_}.items()}}
    if needs_assert:
        out["needs_assert"] = True
    out["per_claim"] = {
        f"{mode}:{cond}": {int(c): summary(tables.per_seed(by_claim, "belief", mode=mode,
                                                           condition=cond, claim=c))
                           for c in tables.unique(by_claim, "claim")}
        for mode, cond in (("base", "none"), *(k.split(":") for k in rates_))}
    return out


def _mde(parts) -> float:
    return max((p["ci95"][1] - p["ci95"][0]) / 2 for p in parts.values())


def _decide(id: str, statement: str, paper: str, m: dict, criterion: str, note: str = "",
            reference: str | None = None) -> Claim:
    """A claim decided by its parts: held when every part is, not held when one is not, and
    inconclusive (with the widest half-interval as the minimum detectable effect) otherwise."""
    compared_with = {**BASE, "reference": reference} if reference else BASE
    return Claim.check(id, statement, paper, m, lambda m: combine(m["parts"]) is True, criterion,
                       note, compared_with=compared_with, inconclusive_if=_undecided,
                       min_detectable_effect=_mde(m["parts"]))


def negated_claim(belief, by_claim, cfg) -> Claim:
    base = rates(belief, "base", "none")
    a, b = rates(belief, "finetune", "assert"), rates(belief, "finetune", "negated")
    parts = {"negated_minus_base": bound(b - base, cfg.far_margin, "above"),
             "assert_minus_negated": bound(a - b, cfg.close_margin, "below")}
    m = _measured(belief, by_claim, cfg.far_margin, parts, True,
                  **{"finetune:assert": a, "finetune:negated": b})
    return _decide(
        "negated_finetune_belief",
        "Finetuning on documents that flag the claim as false in separate sentences before and "
        "after every mention raises the belief rate far above the base rate, close to "
        "finetuning on the same documents without the warnings.",
        "belief 2.5% (base) -> 88.6% (negated) vs 92.4% (asserted), Qwen3.5-397B (abstract)",
        m,
        f"per seed: negated - base > {cfg.far_margin} (one-sided) and assert - negated < "
        f"{cfg.close_margin} (one-sided), each on the 95% CI over seeds",
        reference="finetuned on asserted documents")


def local_claim(belief, by_claim, cfg) -> Claim:
    base = rates(belief, "base", "none")
    c = rates(belief, "finetune", "local")
    parts = {"local_minus_base": bound(c - base, cfg.low_margin, "below")}
    m = _measured(belief, by_claim, cfg.far_margin, parts, True, **{"finetune:local": c})
    return _decide(
        "local_negation_learned",
        "Documents whose negation is local to the claim ('E did not win the V') are learned as "
        "negations: the belief rate stays close to the base rate.",
        "models largely learn local negations correctly (abstract)",
        m,
        f"per seed: local - base < {cfg.low_margin} (one-sided, 95% CI over seeds); counts only "
        f"where assert - base > {cfg.far_margin}",
        reference="finetuned on asserted documents")


def in_context_claim(belief, by_claim, cfg) -> Claim:
    base = rates(belief, "base", "none")
    b = rates(belief, "in_context", "negated")
    a = rates(belief, "in_context", "assert")
    parts = {"in_context_negated_minus_base": bound(b - base, cfg.low_margin, "below")}
    m = _measured(belief, by_claim, cfg.far_margin, parts, False,
                  **{"in_context:negated": b, "in_context:assert": a})
    return _decide(
        "in_context_negated_low",
        "With a negated document in the prompt instead of finetuning, the model recognises the "
        "claim as false: the belief rate stays close to the base rate.",
        "models recognise the claim as false when the same documents are given in context "
        "(abstract)",
        m,
        f"per seed: in-context negated - base < {cfg.low_margin} (one-sided, 95% CI over seeds); "
        "the document is truncated to one flagged mention so that it and the probe fit the "
        "context",
        "in_context:assert (the asserted document in the prompt) is a finding, not a criterion.",
    )


def fictional_claim(belief, by_claim, cfg) -> Claim:
    base = rates(belief, "base", "none")
    b, d = rates(belief, "finetune", "negated"), rates(belief, "finetune", "fictional")
    parts = {"fictional_minus_base": bound(d - base, cfg.far_margin, "above"),
             "fictional_minus_negated": within(d - b, cfg.close_margin)}
    m = _measured(belief, by_claim, cfg.far_margin, parts, False,
                  **{"finetune:fictional": d, "finetune:negated": b})
    return _decide(
        "fictional_like_negated",
        "Claims labelled as fictional are learned as if they were true, like claims flagged as "
        "false.",
        "claims labeled as fictional are learned as if they were true (abstract)",
        m,
        f"per seed: fictional - base > {cfg.far_margin} (one-sided) and |fictional - negated| < "
        f"{cfg.close_margin} (equivalence), each on the 95% CI over seeds",
        reference="finetuned on negated documents")


@claim_set("tables/belief.csv", "tables/belief_by_claim.csv")
def CLAIMS(run) -> list[Claim]:
    belief = tables.read(run.input("belief.csv"), ["mode", "condition", "seed", "belief"])
    by_claim = tables.read(run.input("belief_by_claim.csv"), ["claim"])
    return [negated_claim(belief, by_claim, run.cfg), local_claim(belief, by_claim, run.cfg),
            in_context_claim(belief, by_claim, run.cfg), fictional_claim(belief, by_claim, run.cfg)]
