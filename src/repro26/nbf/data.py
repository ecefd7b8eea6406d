"""Pursuit-evasion on a G x G grid: evader dynamics, the pursuer's field-of-view sensor, and
simulated episodes.

State of one evader: a cell c = (row, col) of the arena, index ``row * G + col``; k independent
evaders give a state in d = 2k dimensions. Continuous particle coordinates x in [0, 1]^d place
an evader uniformly inside its cell, x = (cell + u) / G, u ~ U[0, 1)^2, so every belief over
cells is also a density on [0, 1]^d (cell mass times G^2 inside the cell).

Dynamics (known to every filter, time-varying through the pursuer position q_t):

    P(c' | c) ∝ [c' within Chebyshev distance `speed` of c, inside the arena]
                · exp(evasion · (|c' − q_t| − |c − q_t|)) · (laziness if c' = c else 1)

evasion = 0 is a random walk; evasion > 0 moves away from the pursuer. The pursuer patrols a
circle of radius ``patrol_radius`` (cells) around the arena centre.

Sensor (per evader, independent): with probability ``p_detect`` an evader inside the field of
view |c − q_t| <= fov_radius is seen, and then its position is reported with Gaussian noise,
y = c + N(0, obs_sigma^2 I); otherwise "not seen". Hence

    p(not seen | c) = 1 − p_detect · 1[c in view],
    p(seen, y | c)  = p_detect · 1[c in view] · N(y; c, obs_sigma^2 I).

"Not seen" carves the field of view out of the belief, which makes beliefs multimodal.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int


@dataclasses.dataclass(frozen=True)
class Arena:
    """The arena and sensor (all lengths in cells)."""

    grid: int
    fov_radius: float
    p_detect: float
    obs_sigma: float
    patrol_radius: float
    patrol_period: int


@dataclasses.dataclass(frozen=True)
class Dynamics:
    """Evader policy: steps of up to ``speed`` cells, ``evasion`` >= 0 pushes away from the
    pursuer, ``laziness`` weights staying put."""

    speed: int
    evasion: float
    laziness: float


def cell_centres(grid: int) -> Float[Array, "G2 2"]:
    """(row, col) of every cell, in index order ``row * G + col``."""
    r, c = jnp.meshgrid(jnp.arange(grid), jnp.arange(grid), indexing="ij")
    return jnp.stack([r.ravel(), c.ravel()], -1).astype(jnp.float32)


def pursuer_path(arena: Arena, horizon: int) -> Float[Array, "T1 2"]:
    """Pursuer position q_t, t = 0..horizon, on its patrol circle (cell units)."""
    t = jnp.arange(horizon + 1)
    angle = 2 * jnp.pi * t / arena.patrol_period
    centre = (arena.grid - 1) / 2
    return jnp.stack([centre + arena.patrol_radius * jnp.sin(angle),
                      centre + arena.patrol_radius * jnp.cos(angle)], -1)


def transition_matrix(arena: Arena, dyn: Dynamics, q: Float[Array, "2"]) -> Float[Array, "G2 G2"]:
    """Row-stochastic P[c, c'] of one evader step while the pursuer is at ``q``."""
    cells = cell_centres(arena.grid)
    step = jnp.max(jnp.abs(cells[None, :, :] - cells[:, None, :]), -1)
    allowed = step <= dyn.speed
    dist = jnp.linalg.norm(cells - q, axis=-1)
    weight = jnp.exp(dyn.evasion * (dist[None, :] - dist[:, None]))
    weight = weight * jnp.where(step == 0, dyn.laziness, 1.0)
    weight = jnp.where(allowed, weight, 0.0)
    return weight / weight.sum(1, keepdims=True)


def transitions(arena: Arena, dyn: Dynamics, horizon: int) -> Float[Array, "T G2 G2"]:
    """P_t for the steps t-1 -> t, t = 1..horizon (pursuer at q_{t-1} when the evader moves)."""
    q = pursuer_path(arena, horizon)
    return jax.vmap(lambda qt: transition_matrix(arena, dyn, qt))(q[:-1])


def in_view(arena: Arena, q: Float[Array, "2"]) -> Float[Array, "G2"]:
    cells = cell_centres(arena.grid)
    return (jnp.linalg.norm(cells - q, axis=-1) <= arena.fov_radius).astype(jnp.float32)


def likelihood(arena: Arena, q: Float[Array, "2"], obs: Float[Array, "3"]) -> Float[Array, "G2"]:
    """p(obs | c) for every cell; ``obs = (seen, y_row, y_col)``."""
    view = in_view(arena, q)
    cells = cell_centres(arena.grid)
    gauss = jnp.exp(-0.5 * jnp.sum((obs[1:] - cells) ** 2, -1) / arena.obs_sigma ** 2) / (
        2 * jnp.pi * arena.obs_sigma ** 2)
    return jnp.where(obs[0] > 0.5, arena.p_detect * view * gauss, 1.0 - arena.p_detect * view)


def observe(key, arena: Arena, q: Float[Array, "2"], cell: Int[Array, ""]) -> Float[Array, "3"]:
    """Sample one evader's observation."""
    k_det, k_noise = jax.random.split(key)
    pos = cell_centres(arena.grid)[cell]
    seen = (jnp.linalg.norm(pos - q) <= arena.fov_radius) & (
        jax.random.uniform(k_det) < arena.p_detect)
    y = pos + arena.obs_sigma * jax.random.normal(k_noise, (2,))
    return jnp.concatenate([seen.astype(jnp.float32)[None], jnp.where(seen, y, 0.0)])


def simulate(key, arena: Arena, trans: Float[Array, "T G2 G2"], n_evaders: int
             ) -> tuple[Int[Array, "T1 k"], Float[Array, "T k 3"]]:
    """True cells c_0..c_T (c_0 uniform) and observations y_1..y_T of ``n_evaders`` evaders."""
    horizon = trans.shape[0]
    q = pursuer_path(arena, horizon)
    k0, kr = jax.random.split(key)
    c0 = jax.random.randint(k0, (n_evaders,), 0, arena.grid ** 2)

    def step(cell, inputs):
        key, P, qt = inputs
        k_move, k_obs = jax.random.split(key)
        cell = jax.random.categorical(k_move, jnp.log(P[cell] + 1e-30), axis=-1)
        obs = jax.vmap(lambda kk, c: observe(kk, arena, qt, c))(
            jax.random.split(k_obs, n_evaders), cell)
        return cell, (cell, obs)

    _, (cells, obs) = jax.lax.scan(step, c0, (jax.random.split(kr, horizon), trans, q[1:]))
    return jnp.concatenate([c0[None], cells]), obs


def sample_categorical(key, probs: Float[Array, "... C"], n: int) -> Int[Array, "n ..."]:
    """n independent draws from each categorical ``probs[..., :]`` (rows need not be
    normalised) by inverting the CDF: c = #{j : F_j <= u · F_C}, u ~ U[0, 1), F the cumulative
    sum. One uniform per draw (``jax.random.categorical`` draws C Gumbels per draw)."""
    cdf = jnp.cumsum(probs, -1)
    u = jax.random.uniform(key, (n, *probs.shape[:-1], 1)) * cdf[..., -1:]
    return jnp.minimum(jnp.sum(cdf <= u, -1), probs.shape[-1] - 1)


def cells_to_points(key, cells: Int[Array, "... k"], grid: int) -> Float[Array, "... d"]:
    """Continuous coordinates in [0, 1]^(2k): uniform inside each evader's cell."""
    rc = jnp.stack([cells // grid, cells % grid], -1).astype(jnp.float32)
    u = jax.random.uniform(key, rc.shape)
    return ((rc + u) / grid).reshape(*cells.shape[:-1], -1)


def points_to_cells(x: Float[Array, "... d"], grid: int) -> Int[Array, "... k"]:
    """Cell index of each evader of continuous points (clipped into the arena)."""
    rc = jnp.clip(jnp.floor(x * grid), 0, grid - 1).astype(jnp.int32)
    rc = rc.reshape(*x.shape[:-1], -1, 2)
    return rc[..., 0] * grid + rc[..., 1]
