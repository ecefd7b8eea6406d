"""NBFFG math: backward filter vs exact Gaussian conditioning, Riccati ODE vs closed form,
Girsanov weight for a matched proxy, unbiased pathwise subsampling."""

import jax
import jax.numpy as jnp
import networkx as nx
import numpy as np
import pytest
import scipy.linalg
from jax.experimental import enable_x64

from repro26.nbffg import data as D
from repro26.nbffg import model as M
from repro26.nbffg import solvers as S

B = np.array([[-1.0, 0.5], [-0.3, -0.8]])
BETA = np.array([0.2, -0.1])
SIGMA = np.array([[0.6, 0.1], [0.0, 0.4]])


def _linear_problem(rng, leaves=4, random=False):
    if random:
        parent, length = D.random_tree(rng, leaves, 1.5)
    else:
        parent, length = D.balanced_tree(leaves, 1.5)
    tree = S.make_tree(parent, length)
    n, d = tree.n, 2
    observed = np.asarray(tree.is_leaf)[:n].copy()
    observed[np.asarray(tree.leaves)[-1]] = 0.0  # one leaf unobserved (sparse observations)
    obs = np.where(observed[:, None] > 0, rng.normal(size=(n, d)), 0.0)
    par = np.asarray(tree.parent)[:n].copy()
    par[0] = -1
    return tree, par, np.asarray(tree.length)[:n], obs, observed


def _pad(v):
    return jnp.concatenate([jnp.asarray(v), jnp.zeros_like(jnp.asarray(v[:1]))])


@pytest.mark.parametrize("random", [False, True])
def test_backward_filter_equals_exact_conditioning(random):
    rng = np.random.default_rng(3)
    with enable_x64():
        tree, par, length, obs, observed = _linear_problem(rng, leaves=8, random=random)
        proxy = S.Proxy(jnp.asarray(B), jnp.asarray(BETA), jnp.asarray(SIGMA))
        m0, P0 = np.array([0.3, -0.2]), np.array([[1.0, 0.2], [0.2, 0.5]])
        tree64 = jax.tree_util.tree_map(lambda v: v.astype(jnp.float64) if v.dtype == jnp.float32 else v, tree)
        msg = S.backward_filter(tree64, S.leaf_messages(tree64, _pad(obs), _pad(observed), 0.05), proxy)
        root = jax.tree_util.tree_map(lambda v: v[0], msg)
        mean, cov, log_p = S.root_posterior(root, jnp.asarray(m0), jnp.asarray(P0))
        ref_mean, ref_cov, ref_log_p = S.exact_gaussian_tree(par, length, (B, BETA, SIGMA), m0, P0,
                                                             obs, observed > 0, 0.05)
    np.testing.assert_allclose(float(log_p), ref_log_p, rtol=0, atol=1e-6)
    np.testing.assert_allclose(np.asarray(mean), ref_mean[0], atol=1e-6)
    np.testing.assert_allclose(np.asarray(cov), ref_cov[:2, :2], atol=1e-6)


def test_closed_form_filter_matches_riccati_ode():
    with enable_x64():
        proxy = S.Proxy(jnp.asarray(B), jnp.asarray(BETA), jnp.asarray(SIGMA))
        H = jnp.array([[4.0, 1.0], [1.0, 3.0]])
        msg = S.Message(H, jnp.array([1.0, -2.0]), jnp.array(-0.7))
        closed = S.propagate(msg, proxy, 0.8)
        ode = S.propagate_ode(msg, proxy, 0.8)
        for a, b in zip(jax.tree_util.tree_leaves(closed), jax.tree_util.tree_leaves(ode)):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-8)


def test_expm_matches_scipy():
    rng = np.random.default_rng(0)
    with enable_x64():
        for scale in (1e-3, 1.0, 30.0):
            A = scale * rng.normal(size=(5, 5))
            np.testing.assert_allclose(np.asarray(S.expm(jnp.asarray(A))), scipy.linalg.expm(A),
                                       rtol=1e-10, atol=1e-12)


def test_make_tree_against_networkx():
    rng = np.random.default_rng(1)
    parent, length = D.random_tree(rng, 9, 2.0)
    tree = S.make_tree(parent, length)
    g = nx.DiGraph([(int(p), v) for v, p in enumerate(np.asarray(tree.parent)[: tree.n]) if v > 0])
    depth = nx.shortest_path_length(g, 0)
    assert len(tree.leaves) == 9 and sum(1 for v in g if g.out_degree(v) == 0) == 9
    np.testing.assert_allclose(np.asarray(tree.time)[: tree.n],
                               [nx.shortest_path_length(g, 0, v, weight=None) * 0 +
                                sum(float(tree.length[u]) for u in nx.shortest_path(g, 0, v)[1:])
                                for v in range(tree.n)], rtol=1e-5)
    for row, leaf in zip(np.asarray(tree.paths), np.asarray(tree.leaves)):
        nodes = [int(v) for v in row if v != tree.n]
        assert nodes == nx.shortest_path(g, 0, int(leaf)) and len(nodes) == depth[int(leaf)] + 1
    # inclusion probability: fraction of leaves below the edge
    for v in range(1, tree.n):
        below = [u for u in nx.descendants(g, v) | {v} if g.out_degree(u) == 0]
        assert np.isclose(float(tree.inclusion[v]), len(below) / 9)


@pytest.fixture(scope="module")
def guided():
    rng = np.random.default_rng(5)
    tree, par, length, obs, observed = _linear_problem(rng, leaves=4)
    proxy = S.Proxy(jnp.asarray(B, jnp.float32), jnp.asarray(BETA, jnp.float32),
                    jnp.asarray(SIGMA, jnp.float32))
    m0, P0 = jnp.zeros(2), jnp.eye(2)
    leaf = S.leaf_messages(tree, _pad(obs.astype(np.float32)), _pad(observed.astype(np.float32)), 0.05)
    guide = S.make_guide(tree, leaf, proxy, m0, P0, 32)
    return tree, par, length, obs, observed, proxy, guide


def test_log_weight_zero_for_matched_proxy(guided):
    tree, *_, proxy, guide = guided
    dyn = M.LinearSDE(proxy.B, proxy.beta, proxy.sigma)
    key = jax.random.key(0)
    _, terms = S.forward_tree(dyn, proxy, M.ZeroResidual(2), tree, guide,
                              jax.random.normal(key, (2,)),
                              jax.random.normal(key, (tree.n + 1, 32, 2)))
    assert np.all(np.asarray(terms) == 0.0)
    # a mismatched drift gives a non-zero weight on edges above observed leaves
    _, terms = S.forward_tree(M.LinearSDE(proxy.B - 0.5 * jnp.eye(2), proxy.beta, proxy.sigma), proxy,
                              M.ZeroResidual(2), tree, guide, jnp.zeros(2),
                              jax.random.normal(key, (tree.n + 1, 32, 2)))
    assert np.abs(np.asarray(terms[1:tree.n - 1, 0])).min() > 0


def test_guided_samples_match_exact_posterior(guided):
    tree, par, length, obs, observed, proxy, guide = guided
    dyn = M.LinearSDE(proxy.B, proxy.beta, proxy.sigma)

    def one(key):
        k1, k2 = jax.random.split(key)
        return S.forward_tree(dyn, proxy, M.ZeroResidual(2), tree, guide, jax.random.normal(k1, (2,)),
                              jax.random.normal(k2, (tree.n + 1, 32, 2)))[0]

    xs = np.asarray(jax.jit(jax.vmap(one))(jax.random.split(jax.random.key(1), 3000)))[:, : tree.n]
    ref_mean, ref_cov, _ = S.exact_gaussian_tree(par, length, (B, BETA, SIGMA), np.zeros(2),
                                                 np.eye(2), obs, observed > 0, 0.05)
    se = np.sqrt(np.diag(ref_cov).reshape(tree.n, 2) / xs.shape[0])
    # Monte Carlo (4 standard errors) plus Euler discretisation error O(1/K)
    assert np.all(np.abs(xs.mean(0) - ref_mean) < 4 * se + 0.03)


def test_pathwise_subsampling_is_unbiased():
    rng = np.random.default_rng(2)
    parent, length = D.random_tree(rng, 6, 2.0)
    tree = S.make_tree(parent, length)
    dyn = M.DoubleWell(2.0, 0.5, 2)
    proxy = dyn.proxy()
    obs = jnp.asarray(rng.normal(size=(tree.n + 1, 2)), jnp.float32)
    leaf = S.leaf_messages(tree, obs, tree.is_leaf, 0.1)
    K = 8
    guide = S.make_guide(tree, leaf, proxy, jnp.zeros(2), jnp.eye(2), K)
    res = M.Residual(2, 2, tree.n + 1, 8, 1, 2, 1.0, key=jax.random.key(0))
    res = jax.tree_util.tree_map(lambda v: v + 0.3 if eqx_is_array(v) else v, res)  # non-zero u
    k1, k2 = jax.random.split(jax.random.key(3))
    z0, noise = jax.random.normal(k1, (2,)), jax.random.normal(k2, (tree.n + 1, K, 2))
    _, terms = S.forward_tree(dyn, proxy, res, tree, guide, z0, noise)
    full = float(jnp.sum(S.elbo_terms(terms)[0]))
    assert abs(full) > 1e-3

    def path_estimate(paths):
        g = jax.vmap(lambda p: S.elbo_terms(S.forward_path(dyn, proxy, res, tree, guide, p, z0,
                                                           noise[p[1:]]))[0])(paths)
        return S.subsampled_edge_sum(g, paths, tree)

    # exact expectation over a uniformly drawn leaf (same driving noise per edge)
    per_leaf = jnp.stack([path_estimate(tree.paths[i:i + 1]) for i in range(len(tree.leaves))])
    np.testing.assert_allclose(float(jnp.mean(per_leaf)), full, rtol=1e-4, atol=1e-4)
    # Monte Carlo over random draws of 2 paths
    idx = jax.random.randint(jax.random.key(4), (400, 2), 0, len(tree.leaves))
    draws = np.asarray(jax.jit(jax.vmap(lambda i: path_estimate(tree.paths[i])))(idx))
    assert abs(draws.mean() - full) < 4 * draws.std() / np.sqrt(draws.size) + 1e-4


def eqx_is_array(v):
    return isinstance(v, jax.Array) and jnp.issubdtype(v.dtype, jnp.floating)


def test_elbo_below_exact_evidence_and_log_z_converges_with_steps():
    """Linear tree, a mismatched proxy (drift B + 0.2 I): on the time-changed Euler grid with
    enough steps the ELBO is below the exact log p(y) and log Z-hat is close to it; a coarse grid
    (2 steps per edge) misses log p(y) by more (and its "ELBO" exceeds log p(y) here)."""
    rng = np.random.default_rng(7)
    tree, par, length, obs, observed = _linear_problem(rng, leaves=4)
    obs_var = 0.01  # stiff guiding near the leaves, as in the experiments (H = 100)
    dyn = M.LinearSDE(jnp.asarray(B, jnp.float32), jnp.asarray(BETA, jnp.float32),
                      jnp.asarray(SIGMA, jnp.float32))
    proxy = S.Proxy(dyn.B + 0.2 * jnp.eye(2), dyn.beta, dyn.sigma)
    m0, P0 = jnp.zeros(2), jnp.eye(2)
    obs = 0.5 * obs  # observations the model finds plausible
    _, _, log_p = S.exact_gaussian_tree(par, length, (B, BETA, SIGMA), np.zeros(2), np.eye(2),
                                        obs, observed > 0, obs_var)
    leaf = S.leaf_messages(tree, _pad(obs.astype(np.float32)), _pad(observed.astype(np.float32)),
                           obs_var)
    N = 2048

    def estimates(K):
        guide = S.make_guide(tree, leaf, proxy, m0, P0, K)

        @jax.jit
        def one(key):
            k1, k2 = jax.random.split(key)
            _, terms = S.forward_tree(dyn, proxy, M.ZeroResidual(2), tree, guide,
                                      jax.random.normal(k1, (2,)),
                                      jax.random.normal(k2, (tree.n + 1, K, 2)))
            return guide.log_pt + S.elbo_terms(terms)[1].sum()

        lw = jax.lax.map(one, jax.random.split(jax.random.key(K), N), batch_size=256)
        return float(jnp.mean(lw)), float(jax.nn.logsumexp(lw) - np.log(N)), float(S.normalised_ess(lw))

    coarse, fine = estimates(2), estimates(32)
    assert fine[0] <= log_p
    assert fine[2] > 0.05  # enough effective samples for log Z-hat to mean something
    assert abs(fine[1] - log_p) < 0.1
    assert abs(fine[1] - log_p) < abs(coarse[1] - log_p)


def test_linearised_proxy_and_anchors():
    """The fair-BFFG proxy: a (contracting) linear SDE is its own linearisation; the double well
    linearised at y has B = min(alpha (1 - 3 y^2), 0) and passes through b(y); anchors are subtree means of the
    observations (brute force over descendants)."""
    from repro26.nbffg.losses import subtree_anchors

    lin = M.LinearSDE(jnp.asarray(B, jnp.float32), jnp.asarray(BETA, jnp.float32),
                      jnp.asarray(SIGMA, jnp.float32))
    anchors = jnp.asarray(np.random.default_rng(0).normal(size=(3, 2)), jnp.float32)
    p = M.linearised_proxy(lin, anchors)
    np.testing.assert_allclose(np.asarray(p.B), np.broadcast_to(B, (3, 2, 2)), atol=1e-6)
    np.testing.assert_allclose(np.asarray(p.beta), np.broadcast_to(BETA, (3, 2)), atol=1e-6)
    dw = M.DoubleWell(2.0, 0.5, 2)
    p = M.linearised_proxy(dw, anchors)
    y = np.asarray(anchors)
    np.testing.assert_allclose(np.asarray(p.B), np.stack([np.diag(np.minimum(2.0 * (1 - 3 * v**2), 0)) for v in y]),
                               rtol=1e-5, atol=1e-5)
    through = np.einsum("nij,nj->ni", np.asarray(p.B), y) + np.asarray(p.beta)
    np.testing.assert_allclose(through, np.asarray(jax.vmap(dw.drift)(anchors)), atol=1e-5)

    rng = np.random.default_rng(1)
    tree, par, _, obs, observed = _linear_problem(rng, leaves=8, random=True)
    got = subtree_anchors(par, obs, observed, np.array([0.3, -0.3]))
    g = nx.DiGraph([(int(p_), v) for v, p_ in enumerate(par) if p_ >= 0])
    for v in range(tree.n):
        below = [u for u in nx.descendants(g, v) | {v} if observed[u] > 0]
        want = obs[below].mean(0) if below else np.array([0.3, -0.3])
        np.testing.assert_allclose(got[v], want, atol=1e-6)


def test_padding_a_tree_changes_nothing():
    """A tree padded to a larger level table (how the seeds of a random-tree task are stacked
    for ``jax.vmap``) gives the same guide, forward pass and path terms."""
    rng = np.random.default_rng(2)
    tree = S.make_tree(*D.random_tree(rng, 6, 2.0))
    D1, W = tree.levels.shape
    padded = S.pad_tree(tree, D1 + 2, W + 3)
    assert padded.levels.shape == (D1 + 2, W + 3) and padded.paths.shape[1] == D1 + 2
    dyn = M.DoubleWell(2.0, 0.5, 2)
    proxy = dyn.proxy()
    obs = jnp.asarray(rng.normal(size=(tree.n + 1, 2)), jnp.float32)
    leaf = S.leaf_messages(tree, obs, tree.is_leaf, 0.1)
    K = 8
    guides = [S.make_guide(t, leaf, proxy, jnp.zeros(2), jnp.eye(2), K) for t in (tree, padded)]
    for a, b in zip(jax.tree_util.tree_leaves(guides[0]), jax.tree_util.tree_leaves(guides[1])):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-6)
    res = M.Residual(2, 2, tree.n + 1, 8, 1, 2, 1.0, key=jax.random.key(0))
    res = jax.tree_util.tree_map(lambda v: v + 0.3 if eqx_is_array(v) else v, res)
    k1, k2 = jax.random.split(jax.random.key(3))
    z0, noise = jax.random.normal(k1, (2,)), jax.random.normal(k2, (tree.n + 1, K, 2))
    (xs, terms), (xs_p, terms_p) = (S.forward_tree(dyn, proxy, res, t, guides[0], z0, noise)
                                    for t in (tree, padded))
    np.testing.assert_allclose(np.asarray(xs), np.asarray(xs_p), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.asarray(terms), np.asarray(terms_p), rtol=1e-6, atol=1e-6)
    sums = [float(S.subsampled_edge_sum(
        S.elbo_terms(S.forward_path(dyn, proxy, res, t, guides[0], t.paths[1], z0,
                                    noise[t.paths[1][1:]]))[0][None], t.paths[1:2], t))
        for t in (tree, padded)]
    np.testing.assert_allclose(sums[0], sums[1], rtol=1e-6)
