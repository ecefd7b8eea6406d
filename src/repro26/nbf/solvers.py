"""Filters: the exact grid filter (ground truth) and one particle-filter scan in which the
belief representation is the only thing that changes.

Exact grid filter (forward algorithm) of one evader, with P_t the transition matrix of step
t and L_t(c) = p(y_t | c):

    b_t(c') ∝ L_t(c') · sum_c b_{t-1}(c) P_t[c, c'].

The k evaders are independent a priori and observed independently, so the exact joint belief
is the product of the k per-evader beliefs, in any dimension d = 2k.

Representation-based filter step (NBF, Algorithm 1 of the paper, with its baselines as other
representations). With embedding z_{t-1}:

    x^i ~ g(. | z_{t-1})                     (regenerate N particles)
    x^i <- propagate(x^i) with P_t           (known dynamics)
    w^i ∝ p(y_t | x^i)                        (weight; skipped by the prior-only belief)
    x^i <- resample(x, w)                     (multinomial)
    z_t = E(x^1..x^N)                         (re-embed)

Representations (``embed``, ``sample``):
* ``Identity`` — z is the particle set itself and sampling returns it: the bootstrap particle
  filter (test: NBF with this generator equals the bootstrap PF draw for draw);
* ``Gaussian`` — z = (mean, Cholesky of the covariance): the unimodal parametric filter
  (Gaussian particle filter, Kotecha & Djuric 2003; stands in for the UKF);
* ``Mixture`` — z = a K-component Gaussian mixture fitted by EM: the Gaussian-mixture filter;
* ``Learned`` — z = E(particles) and sampling draws from the conditional flow: NBF.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from repro26.nbf import data
from repro26.nbf.model import GDE

# ----------------------------------------------------------------------------- exact filter


def grid_filter(prior: Float[Array, "G2"], trans: Float[Array, "T G2 G2"],
                lik: Float[Array, "T G2"]) -> Float[Array, "T1 G2"]:
    """Exact beliefs b_0 = prior, b_1..b_T of one evader (forward algorithm)."""

    def step(b, inputs):
        P, L = inputs
        b = L * (b @ P)
        b = b / b.sum()
        return b, b

    _, beliefs = jax.lax.scan(step, prior, (trans, lik))
    return jnp.concatenate([prior[None], beliefs])


def episode_likelihoods(arena: data.Arena, obs: Float[Array, "T k 3"]) -> Float[Array, "T k G2"]:
    """L_t(c) of every evader at every step."""
    q = data.pursuer_path(arena, obs.shape[0])[1:]
    return jax.vmap(lambda qt, ot: jax.vmap(lambda o: data.likelihood(arena, qt, o))(ot))(q, obs)


def exact_beliefs(arena: data.Arena, trans, obs) -> Float[Array, "T1 k G2"]:
    """Exact per-evader beliefs of one episode (uniform prior over the arena)."""
    lik = episode_likelihoods(arena, obs)
    prior = jnp.full(arena.grid ** 2, 1.0 / arena.grid ** 2)
    return jax.vmap(lambda L: grid_filter(prior, trans, L), in_axes=1, out_axes=1)(lik)


def sample_product(key, beliefs: Float[Array, "k G2"], n: int, grid: int) -> Float[Array, "n d"]:
    """n points from the product of the per-evader cell beliefs (uniform inside cells)."""
    k_cell, k_jit = jax.random.split(key)
    cells = data.sample_categorical(k_cell, beliefs, n)
    return data.cells_to_points(k_jit, cells, grid)


def family_predictive(points: Float[Array, "n d"], pool: Float[Array, "P G2"], grid: int,
                      floor: float = 1e-30) -> Float[Array, "k G2"]:
    """The Bayes-optimal belief given N points of a member of the GDE's belief family: the
    posterior predictive over the family (the training pool of exact per-evader beliefs
    b_1..b_P, uniform prior; a joint belief is a product of k members drawn independently),

        p(m | S) ∝ prod_i b_m(c_i),    p(c | S) = sum_m p(m | S) b_m(c),

    per evader (the posterior of a product of independent members given product-form points
    factorises over evaders). A generator trained by maximum likelihood on the pool, given the
    embedding of N points, can do no better than this in expectation: it is the ideal 64-point
    regenerator. Cells a member gives no mass are floored at ``floor`` (test beliefs come from
    other episodes than the pool's)."""
    cells = data.points_to_cells(points, grid)  # (n, k)
    counts = jax.nn.one_hot(cells, pool.shape[-1]).sum(0)  # (k, G2)
    loglik = counts @ jnp.log(jnp.maximum(pool, floor)).T  # (k, P)
    post = jax.nn.softmax(loglik, -1)
    return post @ pool


def sample_family_predictive(key, points, pool, n: int, grid: int) -> Float[Array, "n d"]:
    """n fresh points from :func:`family_predictive` of ``points`` (uniform inside cells)."""
    return sample_product(key, family_predictive(points, pool, grid), n, grid)


# ----------------------------------------------------------------------------- representations


class Identity(eqx.Module):
    """z = the (equally weighted) particle set; sampling returns it (bootstrap PF)."""

    weighted_belief: bool = eqx.field(static=True, default=True)

    def embed(self, key, x):
        return x

    def sample(self, key, z, n):
        return z


class Gaussian(eqx.Module):
    """z = (mean, Cholesky factor of the covariance + jitter)."""

    jitter: float = eqx.field(static=True, default=1e-4)
    weighted_belief: bool = eqx.field(static=True, default=False)

    def embed(self, key, x):
        mean = x.mean(0)
        cov = jnp.cov(x, rowvar=False).reshape(x.shape[1], x.shape[1])
        return mean, jnp.linalg.cholesky(cov + self.jitter * jnp.eye(x.shape[1]))

    def sample(self, key, z, n):
        mean, chol = z
        return jnp.clip(mean + jax.random.normal(key, (n, mean.size)) @ chol.T, 0.0, 1 - 1e-6)


class Mixture(eqx.Module):
    """z = (log weights, means, Cholesky factors) of a K-component Gaussian mixture fitted by
    ``iters`` EM steps started from K particles drawn at random."""

    components: int = eqx.field(static=True)
    iters: int = eqx.field(static=True)
    jitter: float = eqx.field(static=True, default=1e-4)
    weighted_belief: bool = eqx.field(static=True, default=False)

    def _log_resp(self, x, logw, means, chols):
        def comp(m, L):
            return jax.scipy.stats.multivariate_normal.logpdf(x, m, L @ L.T)

        logp = jax.vmap(comp)(means, chols).T + logw  # (n, K)
        return logp - jax.scipy.special.logsumexp(logp, 1, keepdims=True)

    def embed(self, key, x):
        n, d = x.shape
        means = x[jax.random.choice(key, n, (self.components,), replace=False)]
        cov0 = jnp.cov(x, rowvar=False).reshape(d, d) + self.jitter * jnp.eye(d)
        chols = jnp.broadcast_to(jnp.linalg.cholesky(cov0), (self.components, d, d))
        logw = jnp.full(self.components, -jnp.log(self.components))

        def em(params, _):
            logw, means, chols = params
            r = jnp.exp(self._log_resp(x, logw, means, chols))  # (n, K)
            nk = r.sum(0) + 1e-6
            means = (r.T @ x) / nk[:, None]
            diff = x[None] - means[:, None]  # (K, n, d)
            covs = jnp.einsum("nk,kni,knj->kij", r, diff, diff) / nk[:, None, None]
            chols = jnp.linalg.cholesky(covs + self.jitter * jnp.eye(d))
            return (jnp.log(nk / n), means, chols), None

        params, _ = jax.lax.scan(em, (logw, means, chols), None, self.iters)
        return params

    def sample(self, key, z, n):
        logw, means, chols = z
        k1, k2 = jax.random.split(key)
        comp = jax.random.categorical(k1, logw, shape=(n,))
        e = jax.random.normal(k2, (n, means.shape[1]))
        x = means[comp] + jnp.einsum("nij,nj->ni", chols[comp], e)
        return jnp.clip(x, 0.0, 1 - 1e-6)


class Learned(eqx.Module):
    """NBF: z = E(particles), particles regenerated from the conditional flow g(. | z)."""

    gde: GDE
    weighted_belief: bool = eqx.field(static=True, default=False)

    def embed(self, key, x):
        return self.gde.encoder(x)

    def sample(self, key, z, n):
        return self.gde.flow.sample(key, z, n)


# ----------------------------------------------------------------------------- filter scan


def unique_fraction(cells: Int[Array, "n k"]) -> Float[Array, ""]:
    """Fraction of particles whose joint cell differs from every earlier particle's."""
    same = jnp.all(cells[:, None, :] == cells[None, :, :], -1)
    earlier = jnp.tril(same, -1).any(1)
    return 1.0 - earlier.mean()


def run_filter(rep, key, x0: Float[Array, "n d"], trans: Float[Array, "T G2 G2"],
               lik: Float[Array, "T k G2"], grid: int, use_observations: bool = True):
    """Filter one episode. Returns per step t = 1..T the belief as weighted points
    (points (T, n, d), weights (T, n)), the ESS of the importance weights, the unique fraction
    of the propagated particles, and whether all weights vanished (then the update is skipped).
    """
    n = x0.shape[0]
    key, k_init = jax.random.split(key)
    z0 = rep.embed(k_init, x0)

    def step(z, inputs):
        key, P, L = inputs
        k_gen, k_dyn, k_jit, k_res, k_emb, k_bel = jax.random.split(key, 6)
        x = rep.sample(k_gen, z, n)
        cells = data.points_to_cells(x, grid)  # (n, k)
        diversity = unique_fraction(cells)
        cells = data.sample_categorical(k_dyn, P[cells], 1)[0]
        x = data.cells_to_points(k_jit, cells, grid)
        if use_observations:
            logw = jnp.sum(jnp.log(jnp.take_along_axis(L.T, cells, 0) + 1e-38), -1)
            logw = jnp.where(jnp.take_along_axis(L.T, cells, 0).min(-1) > 0, logw, -jnp.inf)
        else:
            logw = jnp.zeros(n)
        collapsed = ~jnp.isfinite(logw).any()
        logw = jnp.where(collapsed, 0.0, logw)
        w = jax.nn.softmax(logw)
        ess = 1.0 / jnp.sum(w ** 2)
        idx = jax.random.choice(k_res, n, (n,), p=w)
        z = rep.embed(k_emb, x[idx])
        if rep.weighted_belief:
            bx, bw = x, w
        else:
            bx, bw = rep.sample(k_bel, z, n), jnp.full(n, 1.0 / n)
        return z, (bx, bw, ess, diversity, collapsed)

    T = trans.shape[0]
    _, out = jax.lax.scan(step, z0, (jax.random.split(key, T), trans, lik))
    return out


def last_seen(obs: Float[Array, "T k 3"], grid: int) -> Float[Array, "T d"]:
    """Point belief at the last reported position of every evader (arena centre before the
    first sighting), in [0, 1]^d coordinates."""

    def step(pos, o):
        pos = jnp.where(o[:, :1] > 0.5, (o[:, 1:] + 0.5) / grid, pos)
        return pos, pos.reshape(-1)

    _, points = jax.lax.scan(step, jnp.full((obs.shape[1], 2), 0.5), obs)
    return points


# ----------------------------------------------------------------------------- metrics


_SINKHORN = {"max_iterations": 300, "threshold": 1e-3}


def reference_self_cost(y, epsilon: float) -> Float[Array, ""]:
    """OT_eps(b, b) for the uniform measure b on ``y``: the (y, y) term of the Sinkhorn divergence,
    solved once per reference and shared by every filter scored against it (with the symmetric
    updates ott-jax uses for that term: parallel dual updates, momentum 0.5)."""
    from ott.geometry import pointcloud
    from ott.solvers import linear
    from ott.solvers.linear import acceleration

    b = jnp.full(y.shape[0], 1.0 / y.shape[0])
    out = linear.solve(pointcloud.PointCloud(y, y, epsilon=epsilon), a=b, b=b,
                       parallel_dual_updates=True, anderson=None,
                       momentum=acceleration.Momentum(start=0, value=0.5), **_SINKHORN)
    return out.reg_ot_cost


def sinkhorn_divergence(x, a, y, epsilon: float, y_self=None) -> Float[Array, ""]:
    """Debiased entropic OT divergence S_eps = OT(a, b) - (OT(a, a) + OT(b, b)) / 2 between
    sum a_i δ_x_i and the uniform measure b on y, squared-Euclidean cost (ott-jax). ``y_self``:
    OT(b, b) from :func:`reference_self_cost`, if already solved."""
    from ott.geometry import pointcloud
    from ott.tools import sinkhorn_divergence as sd

    b = jnp.full(y.shape[0], 1.0 / y.shape[0])
    value, _ = sd.sinkhorn_divergence(pointcloud.PointCloud, x, y, a=a, b=b, epsilon=epsilon,
                                      static_b=y_self is not None, offset_static_b=y_self,
                                      solve_kwargs=_SINKHORN)
    return value


def mmd2(x, a, y, bandwidth: float) -> Float[Array, ""]:
    """Squared MMD with the Gaussian kernel exp(-|x - y|^2 / (2 h^2)) (V-statistic)."""

    def gram(u, v):
        return jnp.exp(-jnp.sum((u[:, None] - v[None]) ** 2, -1) / (2 * bandwidth ** 2))

    b = jnp.full(y.shape[0], 1.0 / y.shape[0])
    return a @ gram(x, x) @ a + b @ gram(y, y) @ b - 2 * a @ gram(x, y) @ b
