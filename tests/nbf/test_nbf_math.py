"""nbf math against hand computations, brute force and the exact grid filter."""

import itertools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from repro26.nbf import data, losses, solvers
from repro26.nbf.model import GDE, DeepSetEncoder

ARENA = data.Arena(grid=5, fov_radius=1.5, p_detect=0.9, obs_sigma=0.5, patrol_radius=1.0,
                   patrol_period=8)
WALK = data.Dynamics(speed=1, evasion=0.0, laziness=1.0)


def test_grid_filter_matches_hand_computed_two_steps():
    """Two states, P = [[.9, .1], [.2, .8]], uniform prior, likelihoods (.5, .1) then (.2, .6):
    predict (.55, .45) -> update ∝ (.275, .045) = (.859375, .140625);
    predict (.8015625, .1984375) -> update ∝ (.1603125, .1190625) = (.5738255, .4261745)."""
    P = jnp.array([[0.9, 0.1], [0.2, 0.8]])
    lik = jnp.array([[0.5, 0.1], [0.2, 0.6]])
    beliefs = solvers.grid_filter(jnp.array([0.5, 0.5]), jnp.stack([P, P]), lik)
    np.testing.assert_allclose(beliefs[1], [0.859375, 0.140625], rtol=1e-6)
    np.testing.assert_allclose(beliefs[2], [0.5738255, 0.4261745], rtol=1e-6)


def test_grid_filter_matches_path_enumeration():
    """p(c_T | y_1:T) by summing p(c_0) prod P_t[c_{t-1}, c_t] L_t(c_t) over all paths."""
    rng = np.random.default_rng(0)
    S, T = 3, 3
    P = rng.dirichlet(np.ones(S), size=(T, S))
    L = rng.uniform(0.05, 1.0, size=(T, S))
    prior = rng.dirichlet(np.ones(S))
    post = np.zeros(S)
    for path in itertools.product(range(S), repeat=T + 1):
        w = prior[path[0]]
        for t in range(T):
            w *= P[t, path[t], path[t + 1]] * L[t, path[t + 1]]
        post[path[-1]] += w
    got = solvers.grid_filter(jnp.asarray(prior, jnp.float32), jnp.asarray(P, jnp.float32),
                              jnp.asarray(L, jnp.float32))[-1]
    np.testing.assert_allclose(got, post / post.sum(), rtol=1e-5)


def test_transition_rows_are_distributions_over_neighbours():
    q = jnp.array([2.0, 2.0])
    P = np.asarray(data.transition_matrix(ARENA, WALK, q))
    np.testing.assert_allclose(P.sum(1), 1.0, rtol=1e-6)
    cells = np.asarray(data.cell_centres(ARENA.grid))
    step = np.abs(cells[:, None] - cells[None]).max(-1)
    assert np.all(P[step > 1] == 0)
    # corner cell: itself and 3 neighbours, equally likely under the walk
    np.testing.assert_allclose(P[0][P[0] > 0], 0.25, rtol=1e-6)
    # evasion moves away from the pursuer on average
    evasive = np.asarray(data.transition_matrix(ARENA, data.Dynamics(1, 2.0, 1.0), q))
    dist = np.linalg.norm(cells - np.asarray(q), axis=1)
    assert np.all(evasive @ dist >= P @ dist - 1e-6)


def test_observation_model_is_normalised():
    """p(not seen | c) + ∫ p(seen, y | c) dy = 1 for every cell (y integrated on a grid)."""
    q = jnp.array([2.0, 2.0])
    ys = np.linspace(-4, 8, 121)
    dy = ys[1] - ys[0]
    grid_y = np.stack(np.meshgrid(ys, ys, indexing="ij"), -1).reshape(-1, 2)
    seen = jax.vmap(lambda y: data.likelihood(ARENA, q, jnp.concatenate([jnp.ones(1), y])))(
        jnp.asarray(grid_y, jnp.float32))
    unseen = data.likelihood(ARENA, q, jnp.zeros(3))
    np.testing.assert_allclose(np.asarray(seen).sum(0) * dy * dy + np.asarray(unseen), 1.0,
                               atol=1e-4)


def test_inverse_cdf_draws_follow_the_categorical_law():
    """Frequencies of 200k draws match the (unnormalised) weights, zero-weight cells never
    drawn; rows of a batch are drawn independently with their own law."""
    probs = jnp.array([[0.0, 2.0, 0.0, 1.0, 1.0], [1.0, 0.0, 0.0, 0.0, 3.0]])
    draws = np.asarray(data.sample_categorical(jax.random.PRNGKey(0), probs, 200_000))
    assert draws.shape == (200_000, 2)
    for row in range(2):
        freq = np.bincount(draws[:, row], minlength=5) / len(draws)
        np.testing.assert_allclose(freq, probs[row] / probs[row].sum(), atol=0.005)
        assert np.all(freq[np.asarray(probs[row]) == 0] == 0)


def test_points_and_cells_round_trip():
    cells = jnp.array([[0, 7], [24, 12]])
    pts = data.cells_to_points(jax.random.PRNGKey(0), cells, ARENA.grid)
    assert pts.shape == (2, 4)
    np.testing.assert_array_equal(data.points_to_cells(pts, ARENA.grid), cells)


def test_encoder_is_permutation_invariant():
    enc = DeepSetEncoder(4, 16, 8, key=jax.random.PRNGKey(0))
    x = jax.random.uniform(jax.random.PRNGKey(1), (20, 4))
    perm = jax.random.permutation(jax.random.PRNGKey(2), 20)
    np.testing.assert_allclose(enc(x), enc(x[perm]), rtol=1e-5, atol=1e-6)


def _random_gde(dim, knots=0):
    """A GDE with every weight random (the zero-initialised last layers perturbed)."""
    gde = GDE(dim, 16, 8, 4, knots=knots, key=jax.random.PRNGKey(3))
    params, static = eqx.partition(gde, eqx.is_inexact_array)
    leaves, tree = jax.tree_util.tree_flatten(params)
    keys = jax.random.split(jax.random.PRNGKey(4), len(leaves))
    leaves = [p + 0.3 * jax.random.normal(k, p.shape) for p, k in zip(leaves, keys)]
    return eqx.combine(jax.tree_util.tree_unflatten(tree, leaves), static)


@pytest.mark.parametrize("knots", [0, 8])
def test_flow_density_integrates_to_one_in_2d(knots):
    gde = _random_gde(2, knots)
    z = gde.encoder(jax.random.uniform(jax.random.PRNGKey(5), (10, 2)))
    m = 400
    u = (np.arange(m) + 0.5) / m
    grid = jnp.asarray(np.stack(np.meshgrid(u, u, indexing="ij"), -1).reshape(-1, 2), jnp.float32)
    density = jnp.exp(jax.vmap(lambda x: gde.flow.log_prob(x, z))(grid))
    assert abs(float(density.mean()) - 1.0) < 0.02


@pytest.mark.parametrize("knots", [0, 8])
def test_flow_samples_follow_its_density(knots):
    """Sample mean of g(.|z) equals ∫ x g(x|z) dx computed on a grid (sample is the inverse
    of the map whose log-determinant log_prob uses)."""
    gde = _random_gde(2, knots)
    z = gde.encoder(jax.random.uniform(jax.random.PRNGKey(6), (10, 2)))
    m = 300
    u = (np.arange(m) + 0.5) / m
    grid = jnp.asarray(np.stack(np.meshgrid(u, u, indexing="ij"), -1).reshape(-1, 2), jnp.float32)
    density = np.asarray(jnp.exp(jax.vmap(lambda x: gde.flow.log_prob(x, z))(grid)))
    mean_grid = (density[:, None] * np.asarray(grid)).sum(0) / density.sum()
    samples = gde.flow.sample(jax.random.PRNGKey(7), z, 20000)
    np.testing.assert_allclose(np.asarray(samples).mean(0), mean_grid, atol=0.01)


def test_spline_flow_is_a_density_in_4d():
    """d = 4 (two evaders, couplings over ``coupling_masks``' orders): a Monte Carlo integral
    of g over the box is 1, and the mean of g's samples equals the uniform-weighted mean of x g(x)
    (sampling inverts the map whose log-determinant log_prob sums)."""
    gde = _random_gde(4, knots=6)
    z = gde.encoder(jax.random.uniform(jax.random.PRNGKey(8), (10, 4)))
    x = jax.random.uniform(jax.random.PRNGKey(9), (40000, 4))
    density = np.asarray(jnp.exp(jax.vmap(lambda xi: gde.flow.log_prob(xi, z))(x)))
    assert abs(density.mean() - 1.0) < 0.03
    samples = np.asarray(gde.flow.sample(jax.random.PRNGKey(10), z, 40000))
    np.testing.assert_allclose(samples.mean(0), (density[:, None] * np.asarray(x)).mean(0),
                               atol=0.01)


def test_gde_loss_is_finite_and_differentiable():
    gde = GDE(4, 16, 8, 4, key=jax.random.PRNGKey(0))
    pool = jax.random.dirichlet(jax.random.PRNGKey(1), jnp.ones(25), (6,))
    sets, tgts = losses.sample_training_batch(jax.random.PRNGKey(2), pool, batch=3, n_evaders=2,
                                              set_size=10, target_size=5, grid=5)
    assert sets.shape == (3, 10, 4) and tgts.shape == (3, 5, 4)
    (nll, _), grads = eqx.filter_value_and_grad(losses.gde_nll, has_aux=True)(gde, sets, tgts)
    assert np.isfinite(float(nll))
    norms = [float(jnp.abs(g).sum()) for g in jax.tree_util.tree_leaves(grads)]
    assert all(np.isfinite(norms)) and sum(norms) > 0


class ResampleBack(eqx.Module):
    """An identity generator: z is the particle set, sampling draws from it with replacement."""

    weighted_belief: bool = eqx.field(static=True, default=False)

    def embed(self, key, x):
        return x

    def sample(self, key, z, n):
        return z[jax.random.randint(key, (n,), 0, z.shape[0])]


@pytest.mark.parametrize("rep", [solvers.Identity(), ResampleBack()], ids=["pf", "nbf_identity"])
def test_particle_filters_converge_to_exact_belief(rep):
    """With many particles, the bootstrap PF and NBF with an identity generator (sampling the
    embedded particles back) both reproduce the exact grid-filter belief (TV < 0.06)."""
    T = 6
    trans = data.transitions(ARENA, WALK, T)
    _, obs = data.simulate(jax.random.PRNGKey(11), ARENA, trans, 1)
    exact = solvers.exact_beliefs(ARENA, trans, obs)[1:, 0]  # (T, G2)
    lik = solvers.episode_likelihoods(ARENA, obs)
    n = 6000
    x0 = jax.random.uniform(jax.random.PRNGKey(12), (n, 2))
    bx, bw, ess, div, col = solvers.run_filter(rep, jax.random.PRNGKey(13), x0, trans, lik,
                                               ARENA.grid)
    cells = data.points_to_cells(bx, ARENA.grid)[..., 0]  # (T, n)
    hist = jax.vmap(lambda c, w: jnp.zeros(ARENA.grid ** 2).at[c].add(w))(cells, bw)
    tv = 0.5 * np.abs(np.asarray(hist) - np.asarray(exact)).sum(1)
    assert tv.max() < 0.06, tv
    assert not bool(col.any())


def test_identity_generator_equals_bootstrap_pf_draw_for_draw():
    """NBF's step with the identity representation is the bootstrap PF: with the same key the
    propagated particles and weights are those of a hand-written bootstrap PF step."""
    T = 3
    trans = data.transitions(ARENA, WALK, T)
    _, obs = data.simulate(jax.random.PRNGKey(21), ARENA, trans, 1)
    lik = solvers.episode_likelihoods(ARENA, obs)
    n = 50
    key = jax.random.PRNGKey(22)
    x0 = jax.random.uniform(jax.random.PRNGKey(23), (n, 2))
    bx, bw, *_ = solvers.run_filter(solvers.Identity(), key, x0, trans, lik, ARENA.grid)

    key, _ = jax.random.split(key)
    x = x0
    for t, k_t in enumerate(jax.random.split(key, T)):
        _, k_dyn, k_jit, k_res, _, _ = jax.random.split(k_t, 6)
        c = data.points_to_cells(x, ARENA.grid)[:, 0]
        c = data.sample_categorical(k_dyn, trans[t][c], 1)[0]
        x = data.cells_to_points(k_jit, c[:, None], ARENA.grid)
        w = lik[t, 0][c] / lik[t, 0][c].sum()
        np.testing.assert_allclose(bx[t], x, rtol=1e-6)
        np.testing.assert_allclose(bw[t], w, rtol=1e-4, atol=1e-7)
        x = x[jax.random.choice(k_res, n, (n,), p=w)]


def test_unique_fraction_counts_joint_cells():
    cells = jnp.array([[1, 2], [1, 2], [1, 3], [0, 2]])
    assert float(solvers.unique_fraction(cells)) == pytest.approx(0.75)


def test_mixture_em_recovers_two_clusters_and_gaussian_moments():
    key = jax.random.PRNGKey(0)
    a = 0.2 + 0.03 * jax.random.normal(key, (300, 2))
    b = 0.8 + 0.03 * jax.random.normal(jax.random.fold_in(key, 1), (100, 2))
    x = jnp.concatenate([a, b])
    logw, means, chols = solvers.Mixture(2, 30).embed(jax.random.PRNGKey(1), x)
    order = np.argsort(np.asarray(means[:, 0]))
    np.testing.assert_allclose(np.exp(logw)[order], [0.75, 0.25], atol=0.02)
    np.testing.assert_allclose(np.asarray(means)[order], [[0.2, 0.2], [0.8, 0.8]], atol=0.02)
    mean, chol = solvers.Gaussian(jitter=0.0).embed(key, x)
    np.testing.assert_allclose(mean, np.asarray(x).mean(0), rtol=1e-5)
    np.testing.assert_allclose(chol @ chol.T, np.cov(np.asarray(x), rowvar=False), rtol=1e-4)


def test_divergences_vanish_on_identical_sets_only():
    x = jax.random.uniform(jax.random.PRNGKey(0), (40, 2))
    w = jnp.full(40, 1 / 40)
    assert abs(float(solvers.mmd2(x, w, x, 0.1))) < 1e-6
    assert abs(float(solvers.sinkhorn_divergence(x, w, x, 0.01))) < 1e-4
    y = x * 0.5
    assert float(solvers.mmd2(x, w, y, 0.1)) > 1e-3
    assert float(solvers.sinkhorn_divergence(x, w, y, 0.01)) > 1e-3
    # the reference's self term solved once and passed in gives the same divergence
    y_self = solvers.reference_self_cost(y, 0.01)
    np.testing.assert_allclose(solvers.sinkhorn_divergence(x, w, y, 0.01, y_self),
                               solvers.sinkhorn_divergence(x, w, y, 0.01), rtol=1e-3, atol=1e-6)


def test_last_seen_holds_the_last_report():
    obs = jnp.array([[[0.0, 0, 0]], [[1.0, 2.0, 3.0]], [[0.0, 0, 0]]])
    pts = solvers.last_seen(obs, grid=5)
    np.testing.assert_allclose(pts, [[0.5, 0.5], [0.5, 0.7], [0.5, 0.7]])


@pytest.mark.parametrize("features,knots", [(0, 0), (8, 0), (8, 6)])
def test_every_gde_parameter_learns(features, knots):
    """Every leaf of the GDE (encoder, DeepSets or Fourier with its frequencies and phases, and
    every coupling net: affine ones with their zero-initialised output layers and the layers
    behind them, spline ones with every knot parameter) gets gradient within a few Adam steps."""
    from repro26.core.learning import assert_every_parameter_learns

    gde = GDE(4, 8, 4, 4, features, knots, key=jax.random.PRNGKey(0))
    pool = jax.random.dirichlet(jax.random.PRNGKey(1), jnp.ones(25), (6,))
    batches = [losses.sample_training_batch(k, pool, batch=2, n_evaders=2, set_size=6,
                                            target_size=3, grid=5)
               for k in jax.random.split(jax.random.PRNGKey(2), 3)]
    assert_every_parameter_learns(gde, lambda m, b: losses.gde_nll(m, *b)[0], batches)


def test_exact_entropy_is_the_nll_of_the_true_density():
    """Monte Carlo NLL of the true cell-uniform density equals k E_b[H(b)]."""
    pool = jax.random.dirichlet(jax.random.PRNGKey(3), jnp.ones(25), (4,))
    sets, targets = losses.sample_training_batch(jax.random.PRNGKey(4), pool, batch=4000,
                                                 n_evaders=2, set_size=1, target_size=8, grid=5)
    # reconstruct which pool members were drawn is not needed: the density of a target point
    # under its own belief pair is b1(c1) b2(c2) G^4; the estimator below uses the same draw
    members = jax.random.randint(jax.random.split(jax.random.PRNGKey(4), 3)[0], (4000, 2), 0, 4)
    cells = data.points_to_cells(targets, 5)  # (B, m, 2)
    dens = jnp.prod(jnp.take_along_axis(pool[members][:, None], cells[..., None], -1)[..., 0],
                    -1) * 5 ** 4
    mc = -float(jnp.mean(jnp.log(dens)))
    np.testing.assert_allclose(mc, float(losses.exact_entropy(pool, 2, 5)), atol=0.05)


def test_family_predictive_is_the_posterior_mixture_of_the_pool():
    """Ideal N-point regenerator: per evader, p(m | S) ∝ prod_i b_m(c_i) over the pool (uniform
    prior) and the predictive is sum_m p(m | S) b_m, checked by hand in float64; with many
    points of one member it concentrates on that member, and the Fourier set encoder is
    invariant to the order of the points."""
    from repro26.nbf.model import FourierSetEncoder

    pool = jax.random.dirichlet(jax.random.PRNGKey(5), jnp.ones(25), (3,))
    x = solvers.sample_product(jax.random.PRNGKey(6), pool[jnp.array([1, 2])], 7, 5)
    got = np.asarray(solvers.family_predictive(x, pool, 5))
    cells = np.asarray(data.points_to_cells(x, 5))
    p = np.asarray(pool, np.float64)
    for j in range(2):
        loglik = np.log(p[:, cells[:, j]]).sum(1)
        post = np.exp(loglik - loglik.max())
        np.testing.assert_allclose(got[j], (post / post.sum()) @ p, rtol=1e-4, atol=1e-7)
    many = solvers.sample_product(jax.random.PRNGKey(7), pool[jnp.array([1, 2])], 400, 5)
    np.testing.assert_allclose(solvers.family_predictive(many, pool, 5), pool[jnp.array([1, 2])],
                               atol=1e-4)
    enc = FourierSetEncoder(4, 8, 8, 3, key=jax.random.PRNGKey(8))
    pts = jax.random.uniform(jax.random.PRNGKey(9), (6, 4))
    np.testing.assert_allclose(enc(pts), enc(pts[::-1]), rtol=1e-5, atol=1e-6)
