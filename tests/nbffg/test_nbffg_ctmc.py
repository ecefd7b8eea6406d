"""NBFFG for discrete traits: Felsenstein pruning vs brute-force enumeration, the discrete
Girsanov weight (zero for a matched proxy, continuous limit, unbiased importance weights), the
exact marginal ELBO, and unbiased pathwise subsampling."""

import functools
import itertools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg
from jax.experimental import enable_x64

from repro26.nbffg import data as D
from repro26.nbffg import model as M
from repro26.nbffg import solvers as S

STATES = 3
EMISSION = np.full((STATES, STATES), 0.1 / (STATES - 1)) + (0.9 - 0.1 / (STATES - 1)) * np.eye(STATES)


def _problem(seed=0, leaves=5, steps=8, kappa=1.5, dtype=np.float32):
    """Random tree, one unobserved leaf, leaf log-messages ``log E(x, y_v)``, guide."""
    rng = np.random.default_rng(seed)
    parent, length = D.random_tree(rng, leaves, 1.5)
    tree = S.make_tree(parent, length)
    tree = jax.tree_util.tree_map(lambda v: v.astype(dtype) if v.dtype == jnp.float32 else v, tree)
    observed = np.asarray(tree.is_leaf).copy()
    observed[int(tree.leaves[0])] = 0
    symbols = rng.integers(0, STATES, tree.n + 1)
    leaf = np.where(observed[:, None] > 0, np.log(EMISSION[:, symbols].T), 0.0).astype(dtype)
    dyn = M.SeasonalCTMC(STATES, 1.0, kappa, 1.0)
    guide = None if steps is None else S.make_ctmc_guide(tree, jnp.asarray(leaf), dyn, steps)
    return tree, jnp.asarray(leaf), dyn, guide


def _brute_force(tree, leaf, P_edge, log_pi0):
    """Sum over every configuration of the internal states (leaf states summed analytically)."""
    n = tree.n
    par = np.asarray(tree.parent)
    internal = [v for v in range(n) if not tree.is_leaf[v]]
    leaves = [v for v in range(n) if tree.is_leaf[v]]
    total, marg = 0.0, np.zeros((n, P_edge.shape[-1]))
    for conf in itertools.product(range(P_edge.shape[-1]), repeat=len(internal)):
        x = dict(zip(internal, conf))
        p = np.exp(log_pi0[x[0]])
        for v in internal[1:]:
            p *= P_edge[v][x[par[v]], x[v]]
        for v in leaves:
            p *= P_edge[v][x[par[v]]] @ np.exp(leaf[v])
        total += p
        for v in internal:
            marg[v, x[v]] += p
    return np.log(total), marg[internal] / total, internal


def test_pruning_and_marginals_match_brute_force():
    with enable_x64():
        tree, leaf, dyn, _ = _problem(steps=None, dtype=np.float64)
        Q = np.asarray(dyn.proxy_rates(), np.float64)
        lengths = np.asarray(tree.length)
        P_edge = np.stack([scipy.linalg.expm(Q * ell) for ell in lengths])
        log_pi0 = np.asarray(dyn.log_prior(), np.float64)
        inside = S.pruning(tree, leaf, jnp.asarray(P_edge))
        marg, log_p = S.node_marginals(tree, inside, jnp.asarray(P_edge), jnp.asarray(log_pi0))
        ref_log_p, ref_marg, internal = _brute_force(tree, np.asarray(leaf), P_edge, log_pi0)
        np.testing.assert_allclose(float(log_p), ref_log_p, atol=1e-6)
        np.testing.assert_allclose(np.asarray(marg)[internal], ref_marg, atol=1e-6)


def test_log_weight_exactly_zero_when_target_is_proxy():
    tree, leaf, dyn, guide = _problem(kappa=0.0)
    assert np.all(np.asarray(guide.logpsi) == 0.0)
    noise = jax.random.normal(jax.random.key(0), (16, tree.n + 1, 8, STATES))
    z0 = jax.random.normal(jax.random.key(1), (16, STATES))
    _, terms = jax.vmap(lambda z, e: S.ctmc_forward_tree(guide, M.ZeroCorrection(STATES), tree, z, e))(
        z0, noise)
    assert np.all(np.asarray(terms) == 0.0)  # every sample's log w = log p~(y) = log p(y)


def test_exact_elbo_and_marginals_when_target_is_proxy():
    """With Q = Q~ the guided chain is the exact posterior: ELBO = log p~(y) = log p(y) (the root
    term log sum_x pi0(x) h~_root(x)) and all marginals exact, the root's (guided root law
    ∝ pi0 h~_root) included."""
    tree, leaf, dyn, guide = _problem(kappa=0.0)
    elbo, marg = S.ctmc_tree_elbo(guide, M.ZeroCorrection(STATES), tree)
    P_edge = jax.vmap(S.ctmc_transition, in_axes=(None, 0))(dyn.proxy_rates(), tree.length)
    ref, log_p = S.node_marginals(tree, S.pruning(tree, leaf, P_edge), P_edge, dyn.log_prior())
    np.testing.assert_allclose(float(elbo), float(log_p), atol=1e-5)
    np.testing.assert_allclose(np.asarray(marg)[: tree.n], np.asarray(ref)[: tree.n], atol=1e-5)


def test_discrete_weight_tends_to_continuous_girsanov():
    """``log psi_k(x) / d -> sum_y (Q_t - Q~)(x, y) h~_t(y) / h~_t(x)`` as ``d = l / K -> 0``."""
    with enable_x64():
        tree, leaf, dyn, _ = _problem(dtype=np.float64)
        K = 400
        guide = S.make_ctmc_guide(tree, leaf, dyn, K)
        Qt = np.asarray(dyn.proxy_rates())
        for e in range(1, tree.n):
            ell, t0 = float(tree.length[e]), float(tree.time[e] - tree.length[e])
            for k in (0, K // 2, K - 1):
                Q = np.asarray(dyn.rates(t0 + ell * k / K))
                h = np.exp(np.asarray(guide.logh[e, k]))
                cont = (Q - Qt) @ h / h
                np.testing.assert_allclose(np.asarray(guide.logpsi[e, k]) * K / ell, cont,
                                           rtol=0.02, atol=0.02 * np.abs(cont).max() + 1e-9)


@pytest.fixture(scope="module")
def corrected():
    """Time-dependent target and a non-zero rate correction."""
    tree, leaf, dyn, guide = _problem(seed=2, leaves=4, steps=6)
    net = M.RateCorrection(STATES, tree.n + 1, 8, 1, 2, 1.5, key=jax.random.key(0))
    net = jax.tree_util.tree_map(
        lambda v: v + 0.4 * jax.random.normal(jax.random.key(1), v.shape)
        if isinstance(v, jax.Array) and jnp.issubdtype(v.dtype, jnp.floating) else v, net)
    return tree, leaf, dyn, guide, net


def test_importance_weights_unbiased_and_elbo_exact(corrected):
    tree, leaf, dyn, guide, net = corrected
    assert np.abs(np.asarray(guide.logpsi)[1:tree.n]).max() > 1e-2  # target != proxy
    P = np.exp(np.asarray(guide.logP, np.float64))
    P_edge = jnp.asarray(np.stack([functools.reduce(np.matmul, list(p)) for p in P]), jnp.float32)
    _, log_p = S.node_marginals(tree, S.pruning(tree, leaf, P_edge), P_edge, dyn.log_prior())
    N = 4000
    keys = jax.random.split(jax.random.key(5), N)

    def one(k):
        k1, k2 = jax.random.split(k)
        _, terms = S.ctmc_forward_tree(guide, net, tree, jax.random.normal(k1, (STATES,)),
                                       jax.random.normal(k2, (tree.n + 1, 6, STATES)))
        g, lw = S.elbo_terms(terms)
        return jnp.sum(g), jnp.sum(lw)

    g, lw = (np.asarray(v, np.float64) + float(guide.log_pt) for v in jax.jit(jax.vmap(one))(keys))
    w = np.exp(lw - float(log_p))
    assert abs(w.mean() - 1.0) < 4 * w.std() / np.sqrt(N)          # E[w] = p(y)
    elbo, _ = S.ctmc_tree_elbo(guide, net, tree)
    assert abs(g.mean() - float(elbo)) < 4 * g.std() / np.sqrt(N)   # MC ELBO = exact ELBO
    assert float(elbo) < float(log_p)


def test_ctmc_pathwise_subsampling_is_unbiased(corrected):
    tree, _, _, guide, net = corrected
    full, _ = S.ctmc_tree_elbo(guide, net, tree)
    per_leaf = [float(S.subsampled_edge_sum(S.ctmc_path_elbo(guide, net, tree, tree.paths[i])[None],
                                            tree.paths[i:i + 1], tree))
                for i in range(len(tree.leaves))]
    np.testing.assert_allclose(np.mean(per_leaf) + float(guide.log_pt), float(full), rtol=1e-5,
                               atol=1e-5)


def test_exact_elbo_gradient_matches_finite_differences(corrected):
    tree, _, _, guide, net = corrected
    params, static = eqx.partition(net, eqx.is_inexact_array)
    direction = jax.tree_util.tree_map(lambda v: jax.random.normal(jax.random.key(7), v.shape), params)

    @jax.jit
    def elbo(p):
        return S.ctmc_tree_elbo(guide, eqx.combine(p, static), tree)[0]

    grad = jax.jit(jax.grad(elbo))(params)
    analytic = sum(float(jnp.vdot(g, d)) for g, d in zip(jax.tree_util.tree_leaves(grad),
                                                          jax.tree_util.tree_leaves(direction)))
    eps = 1e-2
    shift = lambda a: jax.tree_util.tree_map(lambda p, d: p + a * d, params, direction)  # noqa: E731
    numeric = (float(elbo(shift(eps))) - float(elbo(shift(-eps)))) / (2 * eps)
    assert abs(analytic) > 1e-2
    np.testing.assert_allclose(analytic, numeric, rtol=2e-2)
