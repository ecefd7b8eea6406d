"""The synthetic study's exact output laws against brute force / Monte Carlo, and the claims'
decision rule on synthetic tables (held, not held, inconclusive)."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from repro26.core.claims import CANNOT_SHOW
from repro26.neural_ctmc import claims as C
from repro26.neural_ctmc import exact as E
from repro26.neural_ctmc import solvers
from repro26.neural_ctmc.model import make_denoiser
from repro26.neural_ctmc.names import METHODS, SAMPLERS
from repro26.neural_ctmc.solvers import ALL_SAMPLERS

EPS = 1e-3


def test_synthetic_law_is_the_brute_force_hmm_marginal():
    """p(x) of the study's language (V = 4, L = 6, 3 hidden states) by the forward algorithm
    equals the sum over all 3^6 hidden paths, for all 4,096 sequences."""
    sc = SimpleNamespace(data_seed=1234, vocab_size=4, hidden_states=3, seq_len=6,
                         concentration=0.1)
    hmm, p = E.synthetic_language(sc)
    pi, A, B = (np.exp(np.asarray(hmm[k], np.float64)) for k in ("log_pi", "log_A", "log_B"))
    seqs = np.asarray(E.all_sequences(4, 6))
    brute = np.zeros(len(seqs))
    for hs in itertools.product(range(3), repeat=6):
        w = pi[hs[0]] * B[hs[0], seqs[:, 0]]
        for j in range(1, 6):
            w = w * A[hs[j - 1], hs[j]] * B[hs[j], seqs[:, j]]
        brute += w
    np.testing.assert_allclose(brute.sum(), 1.0, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(p), brute, rtol=2e-4, atol=1e-9)


@pytest.fixture(scope="module")
def toy_law():
    return jax.random.dirichlet(jax.random.PRNGKey(0), jnp.full(9, 0.7))  # V = 3, L = 2


@pytest.mark.parametrize("sampler,noise", E.FLOORS)
def test_exact_rate_samplers_converge_to_the_data_law(toy_law, sampler, noise):
    """With the true reverse rates / clean-data predictions, every sampler's exact output law
    tends to p as N grows (its discretisation error is all that is left)."""
    method = "mdlm" if noise == "mask" else "gidd"
    outputs = (E.exact_mask_outputs(toy_law, 3, 2) if noise == "mask"
               else E.exact_uniform_outputs(toy_law, 3, 2, EPS))
    kls = [E.divergences(E.output_law(method, sampler, outputs, 3, 2, n, EPS), toy_law)["kl_qp"]
           for n in (2, 8, 64)]
    assert kls[0] > kls[1] > kls[2] and kls[2] < 5e-3, kls
    for n in (2, 8):
        q = E.output_law(method, sampler, outputs, 3, 2, n, EPS)
        np.testing.assert_allclose(float(q.sum()), 1.0, atol=1e-5)


def _random_denoiser(method, key):
    """A tiny backbone with random (non-zero) output heads, so its rates are far from trivial."""
    model = make_denoiser(method, vocab_size=3, seq_len=2, d_model=8, n_layers=1, n_heads=1,
                          mlp_ratio=1, key=key)
    k1, k2 = jax.random.split(key)
    model = eqx.tree_at(lambda m: m.head.weight, model,
                        jax.random.normal(k1, model.head.weight.shape))
    if model.rate_head is not None:
        model = eqx.tree_at(lambda m: m.rate_head.weight, model,
                            jax.random.normal(k2, model.rate_head.weight.shape))
    return model


@pytest.mark.parametrize("method,sampler", [("neural_ctmc", "tau"), ("gidd", "ancestral"),
                                            ("sedd", "euler"), ("mdlm", "ancestral"),
                                            ("neural_ctmc", "jump")])
def test_exact_law_matches_monte_carlo_of_the_same_sampler(method, sampler):
    """The propagated law q_N of a random network equals the empirical law of
    ``solvers.sample`` (an independent implementation of the same sampler), N = 3."""
    model = _random_denoiser(method, jax.random.PRNGKey(5))
    outputs = E.network_outputs(method, model, 3, 2, EPS)
    q = np.asarray(E.output_law(method, sampler, outputs, 3, 2, 3, EPS))
    n = 40000
    x = np.asarray(solvers.sample(method, sampler, model, jax.random.PRNGKey(6), n, 2,
                                  jnp.int32(3), EPS))
    freq = np.bincount(x[:, 0] * 3 + x[:, 1], minlength=9) / n
    tolerance = 4.5 * np.sqrt(q * (1 - q) / n) + 1e-3
    assert np.all(np.abs(freq - q) <= tolerance), (freq, q)
    assert q.max() < 0.9  # a non-degenerate law


def test_first_jump_law_matches_brute_force_kernel():
    """The ``jump`` sampler's propagated law (V = 3, L = 2, random rates, N = 3) equals the
    product of explicit 9 x 9 kernels built entry by entry: stay with ``exp(-Lambda dt)``,
    else move to a one-position neighbour with ``(1 - exp(-Lambda dt)) lambda_l / Lambda
    J_l(y)``; every kernel row sums to 1."""
    vocab, length, n = 3, 2, 3
    seqs = np.asarray(E.all_sequences(vocab, length))
    rng = np.random.default_rng(3)
    draws = {t: (rng.gamma(1.0, 2.0, (9, length)), rng.dirichlet(np.ones(vocab), (9, length)))
             for t, _ in E.grid(n)}

    def outputs(t):
        lam, j = draws[t]
        own = np.eye(vocab)[seqs].astype(bool)
        j = np.where(own, 0.0, j)
        j = j / j.sum(-1, keepdims=True)
        return {"lam": jnp.asarray(lam, jnp.float32),
                "log_j": jnp.asarray(np.log(np.maximum(j, 1e-30)), jnp.float32)}

    q = np.full(9, 1.0 / 9)
    for t, s in E.grid(n):
        lam, log_j = (np.asarray(v, np.float64) for v in outputs(t).values())
        kernel = np.zeros((9, 9))
        for a, xa in enumerate(seqs):
            total = lam[a].sum()
            kernel[a, a] = np.exp(-total * (t - s))
            for b, xb in enumerate(seqs):
                diff = np.flatnonzero(xa != xb)
                if len(diff) == 1:
                    pos = diff[0]
                    kernel[a, b] = ((1 - np.exp(-total * (t - s))) * lam[a, pos] / total
                                    * np.exp(log_j[a, pos, xb[pos]]))
        np.testing.assert_allclose(kernel.sum(1), 1.0, atol=1e-6)
        q = q @ kernel
    law = np.asarray(E.output_law("neural_ctmc", "jump", outputs, vocab, length, n, EPS))
    np.testing.assert_allclose(law, q, atol=1e-6)
    assert q.max() < 0.9


# ----------------------------------------------------------------------------- claims


STEPS = (4, 16, 32)


def _synthetic_tables(ours_kl, theirs_kl, ours_entropy=4.0, spread=0.01, seeds=3, floor=0.01,
                      fall=None):
    """(synthetic.csv, synthetic_training.csv) in which Neural CTMC's KL is ``ours_kl`` and
    every baseline's ``theirs_kl`` at every N (per-seed jitter ``spread``); every exact-rate
    floor is ``floor``; H(p) = 4. The model after half the steps is ``fall[method]`` (default
    0) above the trained one, with its own jitter."""
    rows, curves = [], []
    rng = np.random.default_rng(0)
    for method in METHODS:
        for seed in range(seeds):
            for sampler in ALL_SAMPLERS[method]:
                for n in STEPS:
                    kl = ours_kl if method == "neural_ctmc" else theirs_kl
                    value = kl + spread * rng.standard_normal()
                    rows += [{"method": method, "sampler": sampler, "seed": seed, "steps": n,
                              "metric": "kl_qp", "value": value},
                             {"method": method, "sampler": sampler, "seed": seed, "steps": n,
                              "metric": "entropy", "value": ours_entropy}]
                    if sampler == ALL_SAMPLERS[method][0]:
                        rows.append({"method": method, "sampler": sampler, "seed": seed,
                                     "steps": n, "metric": "kl_qp_halfway",
                                     "value": value + (fall or {}).get(method, 0.0)
                                     + 0.01 * rng.standard_normal()})
            rows += [{"method": method, "sampler": "-", "seed": seed, "steps": 0, "metric": k,
                      "value": v} for k, v in (("parameters", 1000), ("optimiser_steps", 50),
                                               ("tokens_seen", 6000), ("nll_bound", 4.1),
                                               ("nll_bound_half", 0.05))]
            curves += [{"corpus": "synthetic", "method": method, "seed": seed, "step": s,
                        "tokens": s * 100, "bound": 4.0 + 1.0 / s} for s in range(1, 51)]
    for sampler, noise in E.FLOORS:
        rows += [{"method": f"exact_{noise}", "sampler": sampler, "seed": 0, "steps": n,
                  "metric": metric, "value": v} for n in STEPS
                 for metric, v in (("kl_qp", floor), ("entropy", 4.0))]
    rows += [{"method": "independent", "sampler": "-", "seed": 0, "steps": 0, "metric": "kl_qp",
              "value": 0.8},
             {"method": "independent", "sampler": "-", "seed": 0, "steps": 0,
              "metric": "entropy", "value": 4.5},
             {"method": "data", "sampler": "-", "seed": 0, "steps": 0, "metric": "entropy",
              "value": 4.0}]

    def columns(rs):
        return {k: np.asarray([r[k] for r in rs]) for k in rs[0]}

    return columns(rows), columns(curves)


@pytest.mark.parametrize("ours,theirs,entropy,spread,expected", [
    (0.1, 0.3, 4.0, 0.01, "held"),
    (0.3, 0.1, 4.0, 0.01, "not held"),           # the baselines are closer to p
    (0.1, 0.3, 5.0, 0.01, "not held"),           # closer, but with the wrong diversity
    (0.1, 0.12, 4.0, 0.2, "inconclusive"),       # intervals overlap
    (0.1, 0.9, 4.0, 0.01, "inconclusive"),       # the baselines lose to the trivial law
    (0.1, 0.01, 4.0, 0.0, "inconclusive"),       # baselines on their floor: the ideal cannot win
])
def test_synthetic_claims_verdicts(ours, theirs, entropy, spread, expected):
    few, best = C.synthetic_claims(*_synthetic_tables(ours, theirs, entropy, spread))
    assert few.verdict == expected, (few.verdict, few.inconclusive_reason)
    assert few.measured["steps"] == ["16", "32"]  # the abstract's 16-128 only
    assert "4" in few.measured["fewer_steps"]["neural_ctmc"]["kl"]        # a finding
    if expected == "inconclusive":
        assert np.isfinite(few.min_detectable_effect) and few.effect is not None
    if expected == "inconclusive" and spread > 0.1:
        assert few.min_detectable_effect > 0.02
    if theirs == 0.01:
        assert few.inconclusive_reason == CANNOT_SHOW and few.ideal_passes is False
    elif spread < 0.1:
        assert few.ideal_passes and few.trivial_passes is False
    assert best.id == "best_across_steps_exact"
    assert set(best.budget) == set(METHODS)


@pytest.mark.parametrize("fall,expected", [
    ({}, "held"),                                   # every model at its plateau
    ({"gidd": 0.1}, "inconclusive"),                # a baseline still learning
    ({"neural_ctmc": 0.1}, "inconclusive"),         # ours still learning
])
def test_a_model_that_did_not_plateau_decides_nothing(fall, expected):
    """Doubling the training steps lowered a model's exact KL beyond its paired interval: the
    comparison is inconclusive and names that model; flat (noise only): the verdict stands."""
    few, best = C.synthetic_claims(*_synthetic_tables(0.1, 0.3, fall=fall))
    for claim in (few, best):
        assert claim.verdict == expected, (claim.verdict, claim.inconclusive_reason)
        for m in fall:
            assert "did not plateau" in claim.inconclusive_reason and m in claim.inconclusive_reason
    check = few.measured["plateau_doubling"]
    assert {m for m in METHODS if check[m]["still_falling"]} == set(fall)


def test_propagate_equals_the_sum_over_all_paths():
    """The matrix-product propagation of a product kernel equals the brute-force sum
    ``q'(y) = sum_x q(x) prod_l K_l(y_l | x)`` (odd and even lengths)."""
    for width, length in ((3, 1), (3, 2), (2, 3)):
        n = width ** length
        factors = np.asarray(jax.nn.softmax(jax.random.normal(jax.random.PRNGKey(length),
                                                              (n, length, width)), -1))
        q = np.random.default_rng(length).dirichlet(np.ones(n))
        ys = np.asarray(E.all_sequences(width, length))
        brute = [sum(q[x] * np.prod([factors[x, pos, y[pos]] for pos in range(length)])
                     for x in range(n)) for y in ys]
        np.testing.assert_allclose(np.asarray(E.propagate(jnp.asarray(q), jnp.asarray(factors))),
                                   brute, rtol=1e-5, atol=1e-7)


def test_excess_is_measured_above_each_samplers_own_floor():
    """A method whose KL equals its own sampler's floor loses nothing: its excess is 0 even when
    that floor is far above another sampler's, and then not even the ideal (excess 0) beats
    it: the task cannot show the claim."""
    table, curves = _synthetic_tables(0.1, 0.3, spread=0.0)
    sel = (table["method"] == "exact_mask") & (table["metric"] == "kl_qp")
    table["value"] = np.where(sel, 0.3, table["value"])
    few, _ = C.synthetic_claims(table, curves)
    np.testing.assert_allclose(few.measured["baselines"]["mdlm"]["excess"]["16"], 0.0, atol=1e-12)
    assert few.verdict == "inconclusive" and few.inconclusive_reason == CANNOT_SHOW


def _text_tables(ours_ppl, theirs_ppl, ours_entropy=2.8, spread=0.5, seeds=3):
    rows = []
    rng = np.random.default_rng(1)
    for method in METHODS:
        for seed in range(seeds):
            rows += [{"corpus": "text", "method": method, "seed": seed, "metric": k,
                      "sampler": "-", "steps": 0, "value": v}
                     for k, v in (("elbo_nll", 2.0), ("parameters", 1000),
                                  ("optimiser_steps", 50), ("tokens_seen", 6000))]
            for n in (16, 32):
                ppl = ours_ppl if method == "neural_ctmc" else theirs_ppl
                ent = ours_entropy if method == "neural_ctmc" else 2.8
                for metric, v in (("gen_ppl", ppl + spread * rng.standard_normal()),
                                  ("entropy", ent)):
                    rows.append({"corpus": "text", "method": method, "seed": seed,
                                 "metric": metric, "sampler": SAMPLERS[method][0],
                                 "steps": n, "value": v})
    table = {k: np.asarray([r[k] for r in rows]) for k in rows[0]}
    ref = {"corpus": np.asarray(["text"] * 4),
           "quantity": np.asarray(["scorer_val_ppl", "unigram_gen_ppl", "unigram_entropy",
                                   "data_unigram_entropy"]),
           "value": np.asarray([5.0, 20.0, 2.9, 2.8])}
    return table, ref


@pytest.mark.parametrize("ours,theirs,entropy,spread,expected", [
    (8.0, 12.0, 2.8, 0.3, "held"),
    (12.0, 8.0, 2.8, 0.3, "not held"),
    (8.0, 12.0, 2.0, 0.3, "not held"),   # lower PPL by repetitive samples
    (8.0, 8.5, 2.8, 3.0, "inconclusive"),
])
def test_text_claims_verdicts(ours, theirs, entropy, spread, expected):
    table, ref = _text_tables(ours, theirs, entropy, spread)
    gen, best = C.text_claims(table, ref)
    assert gen.verdict == expected, (gen.verdict, gen.inconclusive_reason)
    assert gen.ideal_passes is (theirs > 5.0) and gen.trivial_passes is False
    if expected in ("held", "not held") and entropy == 2.8:
        assert best.verdict == expected
