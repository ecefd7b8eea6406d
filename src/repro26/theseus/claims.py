"""The abstract's claims (as worded in issue 20) as predicates over ``tables/final.csv``.

Every comparison is a per-seed paired difference (same seed = same initial target parameters
and data order) summarised by its mean and 95% Student-t interval over seeds. A condition is
*decided* when its interval lies on one side of the threshold; a claim is ``held`` when every
condition is decided true, ``not held`` when one is decided false, else ``inconclusive``
(the interval is wider than the distance to the threshold). A comparison with the scratch
target counts only where the scratch target beats the trivial linear model (decided).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from repro26.core import tables
from repro26.core.claims import Claim
from repro26.core.method import claim_set
from repro26.core.stats import summary

FEW_POINTS = 3.0  # "keeps the guide's accuracy within a few points": <= 3 percentage points


def _per_seed(final, task: str, model: str, value: str) -> np.ndarray | None:
    mask = tables.where(final, task=task, model=model)
    if not mask.any():
        return None
    scale = 100.0 if value == "accuracy" else 1.0
    return scale * tables.per_seed(final, value, task=task, model=model)


def above(s: Mapping, threshold: float) -> bool | None:
    """Is the mean above ``threshold``: True/False when the CI is on one side, else None."""
    lo, hi = s["ci95"]
    return True if lo > threshold else False if hi < threshold else None


def below(s: Mapping, threshold: float) -> bool | None:
    lo, hi = s["ci95"]
    return True if hi < threshold else False if lo > threshold else None


TRIVIAL = "scratch beats trivial"


def _decision(conditions: Mapping[str, bool | None]) -> str | None:
    """Reason for ``inconclusive``, else None. A condition that does not involve the scratch
    target and is decided false decides ``not held``; otherwise a scratch target that does not
    beat the trivial model (decided) leaves the claim undecided, and so does any open CI."""
    own = {k: v for k, v in conditions.items() if "scratch" not in k}
    if any(v is False for v in own.values()):
        return None
    if conditions[TRIVIAL] is not True:
        return ("the scratch target does not beat the trivial linear model (95% CI), so a "
                "comparison with it does not count")
    if any(v is False for v in conditions.values()):
        return None
    open_ = [k for k, v in conditions.items() if v is None]
    return f"95% CI too wide to decide: {', '.join(open_)}" if open_ else None


def _missing(claim_id, statement, paper, models) -> Claim:
    return Claim.check(claim_id, statement, paper, {"missing_models": models}, lambda m: False,
                       "needs the models named in measured.missing_models",
                       inconclusive_if=lambda m: f"not run at this scale: {', '.join(models)}")


def _compare(final, task, value, models) -> dict | None:
    """Per-seed values of ``models`` (None when one was not run)."""
    got = {m: _per_seed(final, task, m, value) for m in models}
    return None if any(v is None for v in got.values()) else got


def cnn_to_mlp(final) -> Claim:
    statement = ("CNN -> MLP: the converted MLP keeps the guide CNN's test accuracy within a few "
                 "points and beats the MLP trained from scratch.")
    paper = "largely preserves the functionality of the guide network (abstract); issue 20"
    v = _compare(final, "images", "accuracy", ("guide", "not", "scratch", "linear"))
    if v is None:
        return _missing("cnn_to_mlp", statement, paper, ["guide", "not", "scratch", "linear"])
    m = {
        "accuracy_pct": {k: summary(x) for k, x in v.items()},
        "guide_minus_scratch": summary(v["guide"] - v["scratch"]),
        "guide_minus_not": summary(v["guide"] - v["not"]),
        "not_minus_scratch": summary(v["not"] - v["scratch"]),
        "scratch_minus_linear": summary(v["scratch"] - v["linear"]),
        "few_points": FEW_POINTS,
    }
    return _claim("cnn_to_mlp", statement, paper, m, {
        "guide - not < few_points": below(m["guide_minus_not"], FEW_POINTS),
        "not - scratch > 0": above(m["not_minus_scratch"], 0.0),
        TRIVIAL: above(m["scratch_minus_linear"], 0.0),
    }, f"95% CI of guide - NoT accuracy (points) below {FEW_POINTS}, of NoT - scratch MLP above "
       "0, and of scratch MLP - linear above 0 (paired over seeds)",
        {"trivial": "linear (softmax regression on pixels)", "baseline": "scratch MLP"},
        "not_minus_scratch")


def transformer_to_rnn(final) -> Claim:
    statement = "Transformer -> RNN: the converted RNN has lower test perplexity than the RNN trained from scratch."
    paper = "converting ... GPT-2 into a recurrent neural network (abstract); issue 20"
    v = _compare(final, "text", "perplexity", ("guide", "not", "scratch", "linear"))
    if v is None:
        return _missing("transformer_to_rnn", statement, paper, ["guide", "not", "scratch", "linear"])
    m = {
        "perplexity": {k: summary(x) for k, x in v.items()},
        "scratch_minus_guide": summary(v["scratch"] - v["guide"]),
        "scratch_minus_not": summary(v["scratch"] - v["not"]),
        "linear_minus_scratch": summary(v["linear"] - v["scratch"]),
    }
    return _claim("transformer_to_rnn", statement, paper, m, {
        "scratch - not > 0": above(m["scratch_minus_not"], 0.0),
        TRIVIAL: above(m["linear_minus_scratch"], 0.0),
    }, "95% CI of scratch RNN - NoT RNN perplexity (per character) above 0, and of linear "
       "c-gram - scratch RNN above 0 (paired over seeds)",
        {"trivial": "linear (log-linear c-gram)", "baseline": "scratch RNN"}, "scratch_minus_not")


def untrained_guide(final) -> Claim:
    statement = ("Even an untrained guide improves the target: the MLP converted from an untrained "
                 "CNN beats the MLP trained from scratch.")
    paper = "a trained, or even untrained, guide network (abstract); issue 20"
    v = _compare(final, "images", "accuracy", ("not_untrained", "scratch", "linear"))
    if v is None:
        return _missing("untrained_guide", statement, paper, ["not_untrained", "scratch", "linear"])
    m = {
        "accuracy_pct": {k: summary(x) for k, x in v.items()},
        "not_untrained_minus_scratch": summary(v["not_untrained"] - v["scratch"]),
        "scratch_minus_linear": summary(v["scratch"] - v["linear"]),
    }
    text = _compare(final, "text", "perplexity", ("not_untrained", "scratch"))
    if text is not None:
        m["text_scratch_minus_not_untrained_ppl"] = summary(text["scratch"] - text["not_untrained"])
    return _claim("untrained_guide", statement, paper, m, {
        "not_untrained - scratch > 0": above(m["not_untrained_minus_scratch"], 0.0),
        TRIVIAL: above(m["scratch_minus_linear"], 0.0),
    }, "95% CI of (NoT from the untrained CNN) - scratch MLP accuracy above 0, and of scratch "
       "MLP - linear above 0 (paired over seeds)",
        {"trivial": "linear (softmax regression on pixels)", "baseline": "scratch MLP"},
        "not_untrained_minus_scratch", note="text_scratch_minus_not_untrained_ppl (when run) is "
        "the same comparison for transformer -> RNN, reported as a finding.")


def _claim(claim_id, statement, paper, measured, conditions, criterion, compared_with, effect,
           note: str = "") -> Claim:
    measured = {**measured, "conditions": {k: v for k, v in conditions.items()}}
    lo, hi = measured[effect]["ci95"]
    return Claim.check(
        claim_id, statement, paper, measured,
        lambda m: all(v is True for v in m["conditions"].values()),
        criterion, note, compared_with=compared_with,
        inconclusive_if=lambda m: _decision(m["conditions"]),
        min_detectable_effect=(hi - lo) / 2)


@claim_set("tables/final.csv")
def CLAIMS(run) -> list[Claim]:
    final = tables.read(run.input("final.csv"), ("task", "model", "seed", "accuracy", "perplexity"))
    return [cnn_to_mlp(final), transformer_to_rnn(final), untrained_guide(final)]
