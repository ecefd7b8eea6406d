"""Arms, kernel problem instances and the adversaries (the reward sequences f_1..f_T).

Every adversary is an ``eqx.Module`` with ``rewards(t, p_t) -> f_t`` (the values of f_t on all
arms, in [−1, 1]); p_t is the learner's distribution at round t, which only the adaptive adversary
uses (it is a function of the history, so f_t stays a legal adaptive choice). Rewards of the
peak adversaries are finite kernel expansions, f_t = g + h k(·, c_t), with a fixed random
background g = Σ_j a_j k(·, z_j) scaled to max|g| = ``background_scale``, so
‖f_t‖_H ≤ ‖g‖_H + h (reported as ``rkhs_bound``).
Everything is a pure function of a PRNG key and the config.
"""

from __future__ import annotations

import abc
import dataclasses
import math
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from repro26.kernel_bandits.model import MATERN_NU, Kernel, eigen_features

ADVERSARIES: tuple[str, ...] = ("drift", "switch", "adaptive", "bump")


def arm_grid(dim: int, grid: int) -> Float[Array, "n d"]:
    """The regular grid of ``grid`` points per axis on [0, 1]^dim (|X| = grid^dim)."""
    axis = jnp.linspace(0.0, 1.0, grid)
    mesh = jnp.meshgrid(*([axis] * dim), indexing="ij")
    return jnp.stack([m.reshape(-1) for m in mesh], axis=-1)


@dataclasses.dataclass(frozen=True)
class Problem:
    """Arms X, kernel, Gram K and exact features Φ (Φ Φᵀ = K)."""

    arms: Any
    kernel: Kernel
    gram: Any
    features: Any

    @property
    def n_arms(self) -> int:
        return int(self.arms.shape[0])


def make_problem(dim: int, grid: int, kernel: str, lengthscale: float) -> Problem:
    arms = arm_grid(dim, grid)
    k = Kernel(kernel, lengthscale)
    gram = k(arms, arms)
    return Problem(arms, k, gram, eigen_features(gram))


def problem_from_arrays(arrays: dict[str, np.ndarray], kernel: str, lengthscale: float) -> Problem:
    return Problem(jnp.asarray(arrays["arms"]), Kernel(kernel, lengthscale),
                   jnp.asarray(arrays["gram"]), jnp.asarray(arrays["features"]))


# ----------------------------------------------------------------------------- adversaries


class Adversary(eqx.Module):
    noise: Float[Array, ""]

    @abc.abstractmethod
    def rewards(self, t: Int[Array, ""], p: Float[Array, " n"]) -> Float[Array, " n"]: ...


class DriftingPeak(Adversary):
    """Oblivious: a peak of height h whose centre circles slowly (period P rounds).

    d = 1: c_t = ½ + ρ sin(2πt/P + φ); d = 2: c_t = ½ + ρ(cos, sin)(2πt/P + φ).
    """

    arms: Float[Array, "n d"]
    kernel: Kernel
    background: Float[Array, " n"]
    height: Float[Array, ""]
    radius: Float[Array, ""]
    period: Float[Array, ""]
    phase: Float[Array, ""]

    def rewards(self, t, p):
        angle = 2.0 * jnp.pi * t / self.period + self.phase
        d = self.arms.shape[1]
        direction = jnp.stack([jnp.sin(angle), jnp.cos(angle)])[:d]
        centre = 0.5 + self.radius * direction
        return self.background + self.height * self.kernel(self.arms, centre[None])[:, 0]


class SwitchingPeaks(Adversary):
    """Oblivious: abrupt switches between two far-apart peaks.

    Peak 0 is on for L₀ rounds, then peak 1 for L₁ rounds, repeating from a random offset.
    """

    background: Float[Array, " n"]
    peaks: Float[Array, "2 n"]
    durations: Int[Array, " 2"]
    offset: Int[Array, ""]

    def rewards(self, t, p):
        phase = (t + self.offset) % (self.durations[0] + self.durations[1])
        return self.background + self.peaks[(phase >= self.durations[0]).astype(jnp.int32)]


class AdaptivePeak(Adversary):
    """Adaptive: the peak goes to the candidate centre where the learner puts least mass.

    Among far-apart candidate centres c_1..c_C it picks j = argmin_j Σ_x p_t(x) k(x, c_j), the
    peak the learner's current distribution p_t would collect least of. A deterministic learner
    (GP-UCB: p_t one-hot) never meets the peak; a randomised one splits its mass and loses little.
    """

    background: Float[Array, " n"]
    peaks: Float[Array, "c n"]

    def rewards(self, t, p):
        return self.background + self.peaks[jnp.argmin(self.peaks @ p)]


class BumpLowerBound(Adversary):
    """The lower-bound construction for Matérn-ν kernels: one hidden bump among M^d cells.

    [0, 1]^d is cut into M^d cells of width w = 1/M; f(x) = ε Π_i b(2(x_i − c_i)/w) with
    b(u) = exp(1 − 1/(1 − u²)) on |u| < 1 sits on a uniformly random cell c, observed with
    Gaussian noise σ. With M = ⌈T^{1/(2ν+d)}⌉ and ε = σ√(M^d/T), no algorithm can tell the cell
    apart in T rounds, so regret ≳ Tε = σ√(T M^d) = Θ(√(T γ_T)) up to logs, while the bump's
    Sobolev (≅ Matérn-ν RKHS) norm ≍ ε w^{−ν} = σ√(M^{2ν+d}/T) stays O(σ).
    """

    values: Float[Array, " n"]

    def rewards(self, t, p):
        return self.values


def bump_construction(horizon: int, nu: float, dim: int, noise: float) -> tuple[int, float]:
    """Cells per axis M and bump height ε of :class:`BumpLowerBound` for horizon T."""
    cells = max(2, math.ceil(horizon ** (1.0 / (2.0 * nu + dim))))
    return cells, min(1.0, noise * math.sqrt(cells**dim / horizon))


def _background(key, arms, kernel: Kernel, n_centres: int, scale: float):
    kz, ka = jax.random.split(key)
    centres = jax.random.uniform(kz, (n_centres, arms.shape[1]))
    coef = jax.random.normal(ka, (n_centres,))
    raw = kernel(arms, centres) @ coef
    factor = scale / jnp.max(jnp.abs(raw))
    norm = factor * jnp.sqrt(jnp.maximum(coef @ kernel(centres, centres) @ coef, 0.0))
    return raw * factor, norm


def _far_apart_centres(key, count: int, dim: int):
    """``count`` centres spread along the diagonal (0.2 → 0.8), jittered by ±0.05."""
    base = jnp.linspace(0.2, 0.8, count)[:, None] * jnp.ones((1, dim))
    return jnp.clip(base + jax.random.uniform(key, (count, dim), minval=-0.05, maxval=0.05), 0.0, 1.0)


def make_adversary(kind: str, key: jax.Array, arms, kernel: Kernel, cfg, horizon: int
                   ) -> tuple[Adversary, Float[Array, ""]]:
    """Adversary ``kind`` for one seed; returns it and its RKHS-norm bound B ≥ max_t ‖f_t‖_H.

    ``cfg`` is the method's ``AdversaryConfig``; ``horizon`` only matters for ``bump``.
    """
    kb, kp, kc = jax.random.split(key, 3)
    dim = arms.shape[1]
    noise = jnp.asarray(cfg.noise, jnp.float32)
    height = jnp.asarray(cfg.peak_height, jnp.float32)
    if kind == "bump":
        nu = MATERN_NU.get(kernel.name)
        if nu is None:
            raise ValueError(f"the bump adversary needs a Matérn kernel, got {kernel.name}")
        cells, eps = bump_construction(horizon, nu, dim, cfg.bump_noise)
        cell = jax.random.randint(kc, (dim,), 0, cells)
        centre = (cell + 0.5) / cells
        u = 2.0 * (arms - centre) * cells
        inside = jnp.abs(u) < 1.0
        bump = jnp.where(inside, jnp.exp(1.0 - 1.0 / jnp.where(inside, 1.0 - u * u, 1.0)), 0.0)
        values = eps * jnp.prod(bump, axis=1)
        return BumpLowerBound(jnp.asarray(cfg.bump_noise, jnp.float32), values), jnp.asarray(jnp.nan)
    background, bg_norm = _background(kb, arms, kernel, cfg.background_centres, cfg.background_scale)
    bound = bg_norm + height
    if kind == "drift":
        phase = jax.random.uniform(kp, (), minval=0.0, maxval=2.0 * jnp.pi)
        adversary = DriftingPeak(noise, arms, kernel, background, height,
                                 jnp.asarray(cfg.drift_radius, jnp.float32),
                                 jnp.asarray(float(cfg.drift_period), jnp.float32), phase)
    elif kind == "switch":
        centres = _far_apart_centres(kc, 2, dim)
        durations = jnp.round(cfg.switch_period * jax.random.uniform(kp, (2,), minval=0.5, maxval=1.5))
        durations = jnp.maximum(durations, 1).astype(jnp.int32)
        offset = jax.random.randint(kb, (), 0, cfg.switch_period)
        adversary = SwitchingPeaks(noise, background, height * kernel(centres, arms), durations, offset)
    elif kind == "adaptive":
        centres = _far_apart_centres(kc, cfg.adaptive_candidates, dim)
        adversary = AdaptivePeak(noise, background, height * kernel(centres, arms))
    else:
        raise ValueError(f"adversary must be one of {', '.join(ADVERSARIES)}, got {kind!r}")
    return adversary, bound
