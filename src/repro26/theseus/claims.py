"""The abstract's claims as predicates over ``tables/final.csv`` (budgets: ``tables/stages.csv``).

Every comparison is a per-seed paired difference (same seed = same initial target parameters
and data order) summarised by its mean and 95% Student-t interval over seeds. A condition is
*decided* when its interval lies on one side of the threshold; a claim is ``held`` when every
condition is decided true, ``not held`` when one is decided false, else ``inconclusive``
(the interval is wider than the distance to the threshold). A comparison with the scratch
target counts only where the scratch target beats the trivial linear model (decided).

The predicate reads only ``measured["per_seed"]`` (``{model: [value per seed]}``), so the ideal
row (a conversion that keeps the guide's function exactly: the converted network's values are
the guide's) and the trivial row (the converted network no better than the linear model) are
judged by the same rule (:class:`repro26.core.claims.Claim`). The ideal row of a "converted
beats scratch" claim passes only where the guide itself beats the scratch target: where it does
not, the task cannot show the claim and the verdict is ``inconclusive``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from repro26.core import tables
from repro26.core.claims import Claim
from repro26.core.method import claim_set
from repro26.core.stats import summary

FEW_POINTS = 3.0  # "keeps the guide's accuracy within a few points": <= 3 percentage points
TRIVIAL = "scratch beats trivial"


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


def _diff(m: Mapping, a: str, b: str) -> dict:
    """Summary of the paired per-seed difference ``a - b`` of ``m["per_seed"]``."""
    v = m["per_seed"]
    return summary(np.asarray(v[a], float) - np.asarray(v[b], float))


def _half(s: Mapping) -> float:
    lo, hi = s["ci95"]
    return (hi - lo) / 2


def _missing(claim_id, statement, paper, models) -> Claim:
    return Claim.check(claim_id, statement, paper, {"missing_models": models}, lambda m: False,
                       "needs the models named in measured.missing_models",
                       inconclusive_if=lambda m: f"not run at this scale: {', '.join(models)}",
                       ideal_note="not run at this scale", effect="not measured",
                       min_detectable_effect=100.0)  # nothing measured: the whole scale


def _compare(final, task, value, models) -> dict | None:
    """Per-seed values of ``models`` (None when one was not run)."""
    got = {m: _per_seed(final, task, m, value) for m in models}
    return None if any(v is None for v in got.values()) else got


def budget_of(stages, final, task: str, models) -> dict:
    """Optimiser steps counted from each job's stage rows (the guide's pretraining is counted
    into every conversion from it) and parameters of each final network."""
    def steps(m):
        return float(np.max(stages["steps"][tables.where(stages, task=task, model=m)]))

    def params(m):
        return float(np.max(final["params"][tables.where(final, task=task, model=m)]))

    out = {m: {"optimiser_steps": steps(m), "parameters": params(m)} for m in models}
    for m in models:
        if m.startswith("not") and m != "not_untrained" and "guide" in out:
            out[m]["optimiser_steps"] += out["guide"]["optimiser_steps"]
    return out


BUDGET_NOTE = {
    "optimiser_steps": ("a conversion's count includes the guide's pretraining (its own row); "
                        "the scratch target and the linear model get the conversion's steps, "
                        "as in the paper"),
    "parameters": "guide, target and linear model are different architectures by design",
}


class Conditions:
    """Named threshold tests on paired differences: ``[(label, a, b, side, threshold)]`` means
    ``mean(a - b)`` is ``side`` (``above``/``below``) ``threshold``, decided on its 95% CI."""

    def __init__(self, *tests):
        self.tests = tests

    def summaries(self, m):
        return [_diff(m, a, b) for _, a, b, _, _ in self.tests]

    def __call__(self, m) -> dict:
        return {label: side(_diff(m, a, b), thr) for label, a, b, side, thr in self.tests}


def _claim(claim_id, statement, paper, per_seed, conditions: Conditions,
           criterion, compared_with, effect: tuple[str, str], converted: str, ideal_from: str,
           ideal_note: str, budget, findings=None, note: str = "") -> Claim:
    """A claim over ``per_seed`` decided by ``conditions(measured) -> {label: bool | None}``
    (minimum detectable effect: the widest half-interval of its differences);
    the ideal row sets the ``converted`` model's values to ``ideal_from``'s, the trivial row to
    the linear model's; ``effect`` is the paired difference the claim is about."""
    measured = {"per_seed": {k: np.asarray(v, float).tolist() for k, v in per_seed.items()},
                "summary": {k: summary(v) for k, v in per_seed.items()}, **(findings or {})}
    measured["conditions"] = conditions(measured)
    row = lambda src: {"per_seed": {**measured["per_seed"],  # noqa: E731
                                    converted: measured["per_seed"][src]}}
    return Claim.check(
        claim_id, statement, paper, measured,
        lambda m: all(v is True for v in conditions(m).values()),
        criterion, note, compared_with=compared_with,
        inconclusive_if=lambda m: _decision(conditions(m)),
        min_detectable_effect=lambda m: max(_half(s) for s in conditions.summaries(m)),
        effect=lambda m: _diff(m, *effect)["mean"],
        ideal=row(ideal_from), ideal_note=ideal_note,
        trivial=row("linear"), trivial_note=f"the {converted} values replaced by the linear model's",
        budget=budget, budget_note=BUDGET_NOTE)


def cnn_to_mlp(final, stages) -> Claim:
    statement = ("CNN -> MLP: the converted MLP keeps the guide CNN's test accuracy within a few "
                 "points and beats the MLP trained from scratch.")
    paper = "largely preserves the functionality of the guide network (abstract); issue 20"
    models = ("guide", "not", "scratch", "linear")
    v = _compare(final, "images", "accuracy", models)
    if v is None:
        return _missing("cnn_to_mlp", statement, paper, list(models))
    conditions = Conditions(("guide - not < few_points", "guide", "not", below, FEW_POINTS),
                            ("not - scratch > 0", "not", "scratch", above, 0.0),
                            (TRIVIAL, "scratch", "linear", above, 0.0))
    return _claim(
        "cnn_to_mlp", statement, paper, v, conditions,
        f"95% CI of guide - NoT accuracy (points) below {FEW_POINTS}, of NoT - scratch MLP above "
        "0, and of scratch MLP - linear above 0 (paired over seeds)",
        {"trivial": "linear (softmax regression on pixels)", "ideal": "the guide CNN itself",
         "baseline": "scratch MLP"},
        ("not", "scratch"), "not", "guide",
        "a conversion that keeps the guide's function exactly (NoT accuracy = the guide's)",
        budget_of(stages, final, "images", models), findings={"few_points": FEW_POINTS})


def transformer_to_rnn(final, stages) -> Claim:
    statement = ("Transformer -> RNN: the converted RNN has lower test perplexity than the RNN "
                 "trained from scratch.")
    paper = "converting ... GPT-2 into a recurrent neural network (abstract); issue 20"
    models = ("guide", "not", "scratch", "linear")
    v = _compare(final, "text", "perplexity", models)
    if v is None:
        return _missing("transformer_to_rnn", statement, paper, list(models))
    conditions = Conditions(("scratch - not > 0", "scratch", "not", above, 0.0),
                            (TRIVIAL, "linear", "scratch", above, 0.0))
    return _claim(
        "transformer_to_rnn", statement, paper, v, conditions,
        "95% CI of scratch RNN - NoT RNN perplexity (per character) above 0, and of linear "
        "c-gram - scratch RNN above 0 (paired over seeds); judged only where the guide "
        "transformer itself beats the scratch RNN (the ideal row)",
        {"trivial": "linear (log-linear c-gram)", "ideal": "the guide transformer itself",
         "baseline": "scratch RNN"},
        ("scratch", "not"), "not", "guide",
        "a conversion that keeps the guide's function exactly (NoT perplexity = the guide's): "
        "passes only where the guide beats the scratch RNN",
        budget_of(stages, final, "text", models),
        findings={"scratch_minus_guide": summary(v["scratch"] - v["guide"])})


def untrained_guide(final, stages) -> Claim:
    statement = ("A conversion can start from an untrained guide: converted part by part from an "
                 "untrained CNN, the network ends entirely in the target architecture (every part "
                 "an MLP stage) and works (test accuracy above the trivial linear model); its "
                 "accuracy against the scratch MLP is a finding.")
    paper = "a trained, or even untrained, guide network (abstract)"
    models = ("not_untrained", "scratch", "linear")
    v = _compare(final, "images", "accuracy", models)
    if v is None:
        return _missing("untrained_guide", statement, paper, list(models))
    mask = tables.where(final, task="images", model="not_untrained")
    v["parts_not_target"] = (final["n_parts"][mask] - final["target_parts"][mask]).astype(float)
    v["none"] = np.zeros_like(v["parts_not_target"])
    conditions = Conditions(("every part is the target's", "parts_not_target", "none", below, 0.5),
                            ("not_untrained - linear > 0", "not_untrained", "linear", above, 0.0),
                            (TRIVIAL, "scratch", "linear", above, 0.0))
    findings = {"not_untrained_minus_scratch": summary(v["not_untrained"] - v["scratch"]),
                "accuracy_not_untrained": summary(v["not_untrained"])}
    text = _compare(final, "text", "perplexity", ("not_untrained", "scratch"))
    if text is not None:
        findings["text_scratch_minus_not_untrained_ppl"] = summary(text["scratch"]
                                                                   - text["not_untrained"])
    return _claim(
        "untrained_guide", statement, paper, v, conditions,
        "every part of the final network is a target (MLP) part, counted on the network, and "
        "the 95% CI of (NoT from the untrained CNN) - linear accuracy is above 0 (paired over "
        "seeds), with the scratch MLP beating linear (the target can learn the task at this "
        "budget)",
        {"trivial": "linear (softmax regression on pixels)",
         "ideal": "the scratch MLP (the target trained directly, same steps)",
         "finding": "scratch MLP"},
        ("not_untrained", "linear"), "not_untrained", "scratch",
        "the target architecture trained directly for the same steps stands in for a conversion "
        "that works", budget_of(stages, final, "images", models), findings=findings)


@claim_set("tables/final.csv", "tables/stages.csv")
def CLAIMS(run) -> list[Claim]:
    final = tables.read(run.input("final.csv"),
                        ("task", "model", "seed", "accuracy", "perplexity", "params",
                         "target_parts", "n_parts"))
    stages = tables.read(run.input("stages.csv"), ("task", "model", "seed", "steps"))
    return [cnn_to_mlp(final, stages), transformer_to_rnn(final, stages),
            untrained_guide(final, stages)]
