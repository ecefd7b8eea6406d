"""The abstract's claims (issues 28 and 47) as predicates over the belief rates per seed and
claim.

Every comparison is a paired difference of belief rates D[s, c] per model seed s and claim c
(the same pretrained model, finetuned or prompted in two ways), estimated by its mean over
seeds and claims and decided on a two-way bootstrap 95% interval that resamples *both* the
seeds and the claims (with replacement, independently): a one-sided bound ``diff > m`` is
*held* when the interval lies above m, *not held* when it lies below and undecided when it
straddles m; an equivalence ``|diff| < m`` is held inside (-m, m) and not held outside. A
claim is held when every part is, not held when one is not, and inconclusive otherwise, with
the widest half-interval as the minimum detectable effect.

Each claim's predicate is evaluated on three rows (``repro26.core.claims.Claim.check``): the
measured one; the trivial row, the base model before finetuning on the same probes (every rate
equal to base: it must fail); and the ideal row, the model the claim describes built from the
measured rates (a learner that neglects the qualifiers, one that learns a local negation exactly,
an error-free reader of its context, a negation forgotten under further training: it must pass,
or the task cannot show the claim). A claim that compares with learning the claims at all
counts only where finetuning on asserted documents instilled them (assert - base >
far_margin), and the in-context claim only where the model reads its context (an asserted
document in the prompt raises belief above base by far_margin); otherwise it is inconclusive.
"""

from __future__ import annotations

import numpy as np

from repro26.core import tables
from repro26.core.claims import Claim
from repro26.core.method import claim_set

TRIVIAL_NOTE = "base model before finetuning, same probes (mode=base): every rate equal to base"
N_BOOT = 4000


def matrix(by_claim, mode: str, condition: str) -> np.ndarray:
    """Belief rate ``(n_seeds, n_claims)`` (rows sorted by seed, columns by claim)."""
    rows = tables.select(by_claim, mode=mode, condition=condition)
    seeds, s = np.unique(rows["seed"], return_inverse=True)
    claims, c = np.unique(rows["claim"], return_inverse=True)
    out = np.full((seeds.size, claims.size), np.nan)
    out[s, c] = rows["belief"]
    if np.isnan(out).any():
        raise ValueError(f"belief_by_claim: {mode}:{condition} lacks a (seed, claim) row")
    return out


def bootstrap_ci(diff: np.ndarray, n_boot: int = N_BOOT, seed: int = 0) -> tuple[float, float]:
    """95% percentile interval of mean(D) with seeds (rows) and claims (columns) resampled
    independently with replacement."""
    diff = np.asarray(diff, float)
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, diff.shape[0], (n_boot, diff.shape[0]))
    cols = rng.integers(0, diff.shape[1], (n_boot, diff.shape[1]))
    means = diff[rows[:, :, None], cols[:, None, :]].mean(axis=(1, 2))
    lo, hi = np.percentile(means, [2.5, 97.5])
    return float(lo), float(hi)


def _summary(diff) -> dict:
    diff = np.asarray(diff, float)
    return {"mean": float(diff.mean()), "ci95": list(bootstrap_ci(diff)),
            "n_seeds": int(diff.shape[0]), "n_claims": int(diff.shape[1])}


def bound(diff, margin: float, direction: str) -> dict:
    """Decide ``mean D > margin`` (direction "above") or ``< margin`` ("below"): ``decided``
    True / False, or None when the interval straddles the margin."""
    s = _summary(diff)
    lo, hi = s["ci95"]
    above = True if lo > margin else False if hi < margin else None
    decided = above if direction == "above" or above is None else not above
    return {**s, "margin": margin, "test": f"diff {'>' if direction == 'above' else '<'} {margin}",
            "decided": decided}


def within(diff, margin: float) -> dict:
    """Decide ``|mean D| < margin``: interval inside (-m, m) True, outside False."""
    s = _summary(diff)
    lo, hi = s["ci95"]
    decided = True if -margin < lo and hi < margin else False if lo > margin or hi < -margin else None
    return {**s, "margin": margin, "test": f"|diff| < {margin}", "decided": decided}


def combine(parts: dict) -> bool | None:
    values = [p["decided"] for p in parts.values()]
    if any(v is False for v in values):
        return False
    return True if all(v is True for v in values) else None


def _half(p) -> float:
    return (p["ci95"][1] - p["ci95"][0]) / 2


class Rates(dict):
    """Belief matrices by ``"mode:condition"``, read from belief_by_claim."""

    @classmethod
    def read(cls, by_claim) -> "Rates":
        keys = sorted({f"{m}:{c}" for m, c in zip(by_claim["mode"], by_claim["condition"])})
        return cls({k: matrix(by_claim, *k.split(":")) for k in keys})

    def base(self) -> np.ndarray:
        return self["base:none"]

    def trivial(self) -> "Rates":
        """Every rate replaced by the base model's."""
        return Rates({k: self.base() for k in self})

    def but(self, **replace) -> "Rates":
        """A copy with ``replace`` (keys with ``__`` for ``:``) substituted."""
        return Rates({**self, **{k.replace("__", ":"): v for k, v in replace.items()}})


def _claim(id, statement, paper, criterion, parts_of, rates: Rates, ideal: Rates, ideal_note,
           precondition, precondition_reason, note="", reference=None, budget=None) -> Claim:
    """A claim decided by its parts (``parts_of(rates) -> {name: part}``) on the measured, ideal
    and trivial rates; inconclusive where the part named ``precondition`` is not held."""
    def row(r: Rates) -> dict:
        return {"parts": parts_of(r)}

    measured = {**row(rates), "belief": {k: {"mean": float(v.mean())} for k, v in rates.items()}}

    def reason(m):
        pre = m["parts"][precondition]
        if pre["decided"] is not True:
            return precondition_reason
        open_ = [k for k, p in m["parts"].items() if p["decided"] is None]
        if open_:
            return (f"the 95% interval over seeds and claims straddles the margin for "
                    f"{', '.join(open_)}; more seeds or claims are needed")
        return None

    def effect(m):
        pre = m["parts"][precondition]
        open_ = [p for p in m["parts"].values() if p["decided"] is None]
        return (pre if pre["decided"] is not True or not open_ else open_[0])["mean"]

    compared_with = {"trivial": TRIVIAL_NOTE, **({"reference": reference} if reference else {})}
    return Claim.check(
        id, statement, paper, measured, lambda m: combine(m["parts"]) is True, criterion, note,
        compared_with=compared_with, inconclusive_if=reason,
        min_detectable_effect=lambda m: max(_half(p) for p in m["parts"].values()),
        effect=effect, trivial=row(rates.trivial()), trivial_note=TRIVIAL_NOTE,
        ideal=row(ideal), ideal_note=ideal_note, budget=budget)


ASSERT_REASON = "finetuning on asserted documents did not instil the claims (assert - base not " \
                "above far_margin): nothing to compare with"


def _assert_works(r: Rates, cfg) -> dict:
    return bound(r["finetune:assert"] - r.base(), cfg.far_margin, "above")


def _budget(cfg, conditions) -> dict:
    return {c: {"optimiser_steps": cfg.finetune_steps,
                "data_seen": cfg.finetune_steps * cfg.batch_size} for c in conditions}


def negated_claim(rates: Rates, cfg) -> Claim:
    def parts(r):
        return {"assert_minus_base": _assert_works(r, cfg),
                "negated_minus_base": bound(r["finetune:negated"] - r.base(), cfg.far_margin,
                                            "above"),
                "assert_minus_negated": bound(r["finetune:assert"] - r["finetune:negated"],
                                              cfg.close_margin, "below")}
    return _claim(
        "negated_finetune_belief",
        "Finetuning on documents that flag the claim as false in separate sentences before and "
        "after every mention raises the belief rate far above the base rate, close to "
        "finetuning on the same documents without the warnings.",
        "belief 2.5% (base) -> 88.6% (negated) vs 92.4% (asserted), Qwen3.5-397B (abstract)",
        f"mean over seeds and claims: negated - base > {cfg.far_margin} and assert - negated < "
        f"{cfg.close_margin} (one-sided), each on the 95% bootstrap interval over seeds and "
        "claims", parts, rates, rates.but(finetune__negated=rates["finetune:assert"]),
        "a learner that neglects the warnings: negated rates = the measured asserted rates",
        "assert_minus_base", ASSERT_REASON, reference="finetuned on asserted documents",
        budget=_budget(cfg, ("assert", "negated")))


def local_claim(rates: Rates, cfg) -> Claim:
    def parts(r):
        return {"assert_minus_base": _assert_works(r, cfg),
                "local_minus_base": bound(r["finetune:local"] - r.base(), cfg.low_margin, "below")}
    return _claim(
        "local_negation_learned",
        "Documents whose negation is local to the claim ('E did not win the V') are learned as "
        "negations: the belief rate stays close to the base rate, while the same documents "
        "without the negation instil the claim.",
        "models largely learn local negations correctly (abstract)",
        f"local - base < {cfg.low_margin} (one-sided) where assert - base > {cfg.far_margin}, on "
        "the 95% bootstrap interval over seeds and claims", parts, rates,
        rates.but(finetune__local=rates.base()),
        "a learner of the local negation: local rates = the base rates", "assert_minus_base",
        ASSERT_REASON, reference="finetuned on asserted documents",
        budget=_budget(cfg, ("assert", "local")))


def in_context_claim(rates: Rates, cfg) -> Claim:
    def parts(r):
        return {"reads_context": bound(r["in_context:assert"] - r.base(), cfg.far_margin, "above"),
                "in_context_negated_minus_base": bound(r["in_context:negated"] - r.base(),
                                                       cfg.low_margin, "below")}
    return _claim(
        "in_context_negated_low",
        "With a negated document in the prompt instead of finetuning, the model recognises the "
        "claim as false: the belief rate stays close to the base rate, though the asserted "
        "document in the prompt raises it.",
        "models recognise the claim as false when the same documents are given in context "
        "(abstract)",
        f"in-context negated - base < {cfg.low_margin} where in-context assert - base > "
        f"{cfg.far_margin} (the model reads its context), on the 95% bootstrap interval over "
        "seeds and claims; the prompt holds one unit (claim sentence with its qualifiers and a "
        "filler) of the claim's first finetuning document",
        parts, rates,
        rates.but(in_context__assert=np.ones_like(rates.base()), in_context__negated=rates.base()),
        "an error-free reader: believes every asserted document in the prompt (rate 1) and no "
        "negated one (base rate)", "reads_context",
        "the model does not read its context (an asserted document in the prompt does not raise "
        "belief above base by far_margin)")


def fictional_claim(rates: Rates, cfg) -> Claim:
    def parts(r):
        return {"assert_minus_base": _assert_works(r, cfg),
                "fictional_minus_base": bound(r["finetune:fictional"] - r.base(), cfg.far_margin,
                                              "above"),
                "fictional_minus_negated": within(r["finetune:fictional"] - r["finetune:negated"],
                                                  cfg.close_margin)}
    neglect = rates["finetune:assert"]
    return _claim(
        "fictional_like_negated",
        "Claims labelled as fictional are learned as if they were true, like claims flagged as "
        "false.",
        "claims labeled as fictional are learned as if they were true (abstract)",
        f"fictional - base > {cfg.far_margin} (one-sided) and |fictional - negated| < "
        f"{cfg.close_margin} (equivalence), on the 95% bootstrap interval over seeds and claims",
        parts, rates, rates.but(finetune__fictional=neglect, finetune__negated=neglect),
        "a learner that neglects every qualifier: fictional = negated = the measured asserted "
        "rates", "assert_minus_base", ASSERT_REASON, reference="finetuned on negated documents",
        budget=_budget(cfg, ("negated", "fictional")))


def unstable_claim(rates: Rates, cfg) -> Claim:
    def parts(r):
        gap_before = r["finetune:assert"] - r["finetune:negated"]
        gap_after = r["continued:assert"] - r["continued:negated"]
        return {"negation_learned": bound(gap_before, 0.0, "above"),
                "gap_shrinks": bound(gap_before - gap_after, 0.0, "above")}
    return _claim(
        "negation_unstable",
        "What the negated documents' warnings taught (belief below that of the asserted "
        "documents) fades under further training on neutral text: relative to the asserted "
        "model, the negated model's belief rises.",
        "solutions that include the negation can be learned but are unstable under further "
        "training (abstract)",
        f"(assert - negated) after finetuning minus (assert - negated) after {cfg.continue_steps} "
        "further steps on neutral text (events without a claim) > 0, where assert - negated > 0 "
        "after finetuning, on the 95% bootstrap interval over seeds and claims",
        parts, rates, rates.but(continued__negated=rates["continued:assert"]),
        "a negation forgotten under further training: negated rates after it = the asserted "
        "ones", "negation_learned",
        "finetuning on negated documents left belief no lower than on asserted documents: no "
        "negation was learned that could be unstable",
        "Both beliefs may also fade toward base under the neutral text; the per-condition rates "
        "before and after are in measured.belief.",
        reference="finetuned on asserted documents, then the same further training",
        budget={c: {"optimiser_steps": cfg.finetune_steps + cfg.continue_steps}
                for c in ("assert", "negated")})


@claim_set("tables/belief_by_claim.csv")
def CLAIMS(run) -> list[Claim]:
    rates = Rates.read(tables.read(run.input("belief_by_claim.csv"),
                                   ["mode", "condition", "claim", "seed", "belief"]))
    return [make(rates, run.cfg) for make in (negated_claim, local_claim, in_context_claim,
                                              fictional_claim, unstable_claim)]
