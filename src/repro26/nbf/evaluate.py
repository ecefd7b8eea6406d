"""Scenarios: every filter on the same episodes, scored against the exact belief.

A scenario is (k evaders, dynamics, N particles). For every seed s and episode e it runs

    nbf        — regenerate from the trained GDE of dimension 2k (seed s's model), N particles
    pf         — bootstrap particle filter, N particles
    pf_10n     — bootstrap particle filter, 10 N particles (tracking scenario only: one held-in
                 d = 2 scenario at N = particles; its 10N x 10N Sinkhorn self-term is ~80% of a
                 scenario's cost, and no claim decides on it)
    gaussian   — unimodal Gaussian regeneration (stands in for the UKF), N particles
    gmm        — Gaussian-mixture regeneration (EM), N particles
    prior_only — trivial: dynamics only, no observation updates (N particles)
    last_seen  — trivial: point mass at each evader's last reported position
    exact_n    — N samples of the exact belief (the exact filter drawn as N points): the floor
                 any N-point belief has, and the ideal row of every claim
    regen      — the GDE alone, no filtering: embed exact_n's N exact samples and regenerate N
                 points from g(. | E(samples)); within ~1.5x of exact_n when the GDE has
                 learned the belief family
    regen_ideal — the ideal 64-point (N-point) regenerator: N fresh points from the posterior
                 predictive over the GDE's training family (the pool of exact beliefs) given
                 exact_n's N samples (solvers.family_predictive); what the best generator
                 conditioned on N points can do

and scores each belief at every `eval_every`-th step against ``reference_samples`` points of
the exact belief (grid filter): Sinkhorn divergence (ott-jax), squared MMD, the distance of
the belief mean to the true position (cells), the ESS of the importance weights and the
unique fraction of the propagated particles; CPU seconds per filter step are measured on a
second (compiled) call.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from repro26.core import timing
from repro26.nbf import data, solvers

FILTERS = ("nbf", "pf", "pf_10n", "gaussian", "gmm", "prior_only", "last_seen", "exact_n",
           "regen", "regen_ideal")
TRIVIAL = ("prior_only", "last_seen")
METRICS = ("sinkhorn", "mmd2", "mean_error", "ess", "unique_fraction", "collapsed")


def arena(cfg) -> data.Arena:
    return data.Arena(cfg.grid, cfg.fov_radius, cfg.p_detect, cfg.obs_sigma,
                      cfg.patrol_radius * cfg.grid,
                      cfg.patrol_period)


def dynamics(cfg, name: str) -> data.Dynamics:
    return cfg.dynamics[name]


def scenarios(cfg) -> list[tuple[int, str, int]]:
    """(k, dynamics, N) of every filter job: tracking and error-vs-N at k = 1 (held-in),
    error vs dimension at N = cfg.particles, zero-shot on each held-out dynamics."""
    held_in = cfg.held_in
    out = [(1, held_in, n) for n in cfg.particle_grid]
    out += [(k, held_in, cfg.particles) for k in cfg.evaders]
    out += [(1, dyn, cfg.particles) for dyn in cfg.held_out]
    return list(dict.fromkeys(out))


def tracking_scenario(cfg) -> tuple[int, str, int]:
    """The one scenario that also runs the 10N particle filter (d = 2, held-in, N = particles)."""
    return (1, cfg.held_in, cfg.particles)


def episode_keys(seed: int, k: int, dyn_index: int, n_episodes: int):
    key = jax.random.fold_in(jax.random.fold_in(jax.random.PRNGKey(seed), k), dyn_index)
    return jax.random.split(key, n_episodes)


def simulate_episodes(cfg, dyn_name: str, k: int) -> tuple[np.ndarray, np.ndarray]:
    """True cells (S, E, T+1, k) and observations (S, E, T, k, 3) for every seed."""
    ar, dyn = arena(cfg), dynamics(cfg, dyn_name)
    trans = data.transitions(ar, dyn, cfg.horizon)
    dyn_index = sorted(cfg.dynamics).index(dyn_name)
    keys = jnp.stack([episode_keys(s, k, dyn_index, cfg.episodes) for s in cfg.seeds])
    sim = jax.jit(jax.vmap(jax.vmap(lambda kk: data.simulate(kk, ar, trans, k))))
    cells, obs = sim(keys)
    return np.asarray(cells), np.asarray(obs)


def belief_pool(cfg) -> np.ndarray:
    """Exact single-evader beliefs b_0..b_T of ``pool_episodes`` held-in episodes (the GDE's
    training family), flattened to (episodes * (T+1), G^2)."""
    ar = arena(cfg)
    trans = data.transitions(ar, dynamics(cfg, cfg.held_in), cfg.horizon)
    keys = jax.random.split(jax.random.PRNGKey(10_000), cfg.pool_episodes)

    def one(key):
        _, obs = data.simulate(key, ar, trans, 1)
        return solvers.exact_beliefs(ar, trans, obs)[:, 0]

    beliefs = jax.jit(jax.vmap(one))(keys)
    return np.asarray(beliefs.reshape(-1, cfg.grid ** 2))


def _timed(fn, *args):
    """Result of ``fn(*args)`` and the CPU seconds of this process in a second, compiled call
    (``core.timing.cpu_seconds``: machine load does not move it, wall clock would)."""
    out = jax.block_until_ready(fn(*args))
    return out, timing.cpu_seconds(lambda: fn(*args))


def run_scenario(cfg, models, cells: np.ndarray, obs: np.ndarray, k: int, dyn_name: str,
                 n: int, pool: np.ndarray) -> tuple[list[dict], list[dict]]:
    """Every filter on every (seed, episode); returns (per-step rows, per-seed summary rows).
    ``pool``: the GDE's training beliefs (data stage), for the ideal regenerator."""
    ar = arena(cfg)
    trans = data.transitions(ar, dynamics(cfg, dyn_name), cfg.horizon)
    cells, obs = jnp.asarray(cells), jnp.asarray(obs)
    S, E, T = obs.shape[:3]
    d = 2 * k
    lik = jax.jit(jax.vmap(jax.vmap(lambda o: solvers.episode_likelihoods(ar, o))))(obs)
    exact = jax.jit(jax.vmap(jax.vmap(lambda o: solvers.exact_beliefs(ar, trans, o))))(obs)
    steps = np.arange(cfg.eval_every - 1, T, cfg.eval_every)  # index into t = 1..T
    keys = jax.vmap(lambda s: jax.random.split(jax.random.PRNGKey(50_000 + s), E))(
        jnp.asarray(cfg.seeds))

    def uniform_start(key, m):
        return jax.random.uniform(jax.random.fold_in(key, 7), (m, d))

    def batched(rep_of_seed, m, use_obs=True):
        """(S, E) episodes of one representation with m particles."""

        @eqx.filter_jit
        def go(models, keys, lik, trans):
            def per_seed(model, keys, lik):
                rep = rep_of_seed(model)
                return jax.vmap(lambda kk, L: solvers.run_filter(
                    rep, kk, uniform_start(kk, m), trans, L, cfg.grid, use_obs))(keys, lik)

            return eqx.filter_vmap(per_seed)(models, keys, lik)

        (bx, bw, ess, div, col), seconds = _timed(go, models, keys, lik, trans)
        return (bx[:, :, steps], bw[:, :, steps], ess[:, :, steps], div[:, :, steps],
                col[:, :, steps]), seconds / (S * E * T)

    mix = solvers.Mixture(cfg.gmm_components, cfg.gmm_iters)
    big = cfg.pf_multiplier * n
    runs = {
        "nbf": batched(lambda m: solvers.Learned(m), n),
        "pf": batched(lambda m: solvers.Identity(), n),
        **({"pf_10n": batched(lambda m: solvers.Identity(), big)}
           if (k, dyn_name, n) == tracking_scenario(cfg) else {}),
        "gaussian": batched(lambda m: solvers.Gaussian(), n),
        "gmm": batched(lambda m: mix, n),
        "prior_only": batched(lambda m: solvers.Identity(), n, use_obs=False),
    }
    # trivial point mass and the exact-N floor (no filtering cost)
    point = jax.vmap(jax.vmap(lambda o: solvers.last_seen(o, cfg.grid)))(obs)[:, :, steps]
    ones = jnp.ones((S, E, len(steps), n))
    nan = jnp.full((S, E, len(steps)), jnp.nan)
    runs["last_seen"] = ((jnp.broadcast_to(point[..., None, :], (S, E, len(steps), n, d)),
                          ones / n, nan, nan, jnp.zeros((S, E, len(steps)), bool)), 0.0)
    ref_keys = jax.vmap(jax.vmap(lambda kk: jax.random.split(jax.random.fold_in(kk, 3),
                                                             len(steps))))(keys)
    exact_t = exact[:, :, 1:][:, :, steps]  # (S, E, steps, k, G2)
    draw = jax.jit(jax.vmap(jax.vmap(jax.vmap(
        lambda kk, b: solvers.sample_product(kk, b, cfg.reference_samples, cfg.grid)))))
    reference = draw(ref_keys, exact_t)
    floor_keys = jax.vmap(jax.vmap(jax.vmap(lambda kk: jax.random.fold_in(kk, 11))))(ref_keys)
    exact_n = jax.jit(jax.vmap(jax.vmap(jax.vmap(
        lambda kk, b: solvers.sample_product(kk, b, n, cfg.grid)))))(floor_keys, exact_t)
    runs["exact_n"] = ((exact_n, ones / n, nan, nan, jnp.zeros((S, E, len(steps)), bool)), 0.0)
    regen_keys = jax.vmap(jax.vmap(jax.vmap(lambda kk: jax.random.fold_in(kk, 13))))(ref_keys)

    @eqx.filter_jit
    def regenerate(models, keys, x):
        def one(gde, key, x):
            return gde.flow.sample(key, gde.encoder(x), n)

        per_seed = lambda gde, keys, x: jax.vmap(jax.vmap(lambda kk, xx: one(gde, kk, xx)))(keys, x)
        return eqx.filter_vmap(per_seed)(models, keys, x)

    runs["regen"] = ((regenerate(models, regen_keys, exact_n), ones / n, nan, nan,
                      jnp.zeros((S, E, len(steps)), bool)), 0.0)

    ideal_keys = jax.vmap(jax.vmap(jax.vmap(lambda kk: jax.random.fold_in(kk, 17))))(ref_keys)
    pool = jnp.asarray(pool, jnp.float32)
    ideal = jax.jit(jax.vmap(jax.vmap(jax.vmap(
        lambda kk, x: solvers.sample_family_predictive(kk, x, pool, n, cfg.grid)))))(
        ideal_keys, exact_n)
    runs["regen_ideal"] = ((ideal, ones / n, nan, nan, jnp.zeros((S, E, len(steps)), bool)), 0.0)

    truth = data.cells_to_points(jax.random.PRNGKey(0), cells[:, :, 1:][:, :, steps], cfg.grid)
    truth = (jnp.floor(truth * cfg.grid) + 0.5) / cfg.grid  # cell centres

    per_reference = jax.vmap(jax.vmap(jax.vmap(solvers.reference_self_cost, (0, None)), (0, None)),
                             (0, None))
    reference_self = jax.jit(per_reference, static_argnums=1)(reference, cfg.sinkhorn_epsilon)

    @jax.jit
    def score(x, w, ref, ref_self, true):
        def one(x, w, ref, ref_self, true):
            sink = solvers.sinkhorn_divergence(x, w, ref, cfg.sinkhorn_epsilon, ref_self)
            mmd = solvers.mmd2(x, w, ref, cfg.mmd_bandwidth)
            err = cfg.grid * jnp.sqrt(jnp.mean((w @ x - true) ** 2))
            return sink, mmd, err

        return jax.vmap(jax.vmap(jax.vmap(one)))(x, w, ref, ref_self, true)

    per_step, summary = [], []
    for name in (f for f in FILTERS if f in runs):
        (bx, bw, ess, div, col), seconds = runs[name]
        sink, mmd, err = score(bx, bw, reference, reference_self, truth)
        values = {"sinkhorn": sink, "mmd2": mmd, "mean_error": err, "ess": ess,
                  "unique_fraction": div, "collapsed": col.astype(jnp.float32)}
        values = {m: np.asarray(v, float) for m, v in values.items()}  # (S, E, steps)
        base = {"filter": name, "evaders": k, "dim": d, "dynamics": dyn_name, "particles": n}
        for si, seed in enumerate(cfg.seeds):
            for ti, t in enumerate(steps):
                per_step.append({**base, "seed": seed, "t": int(t) + 1,
                                 **{m: float(np.mean(v[si, :, ti])) for m, v in values.items()}})
            summary.append({**base, "seed": seed, "cpu_seconds_per_step": seconds,
                            **{m: float(np.mean(v[si])) for m, v in values.items()}})
    return per_step, summary
