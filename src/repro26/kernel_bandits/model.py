"""Kernels, feature maps, and the learners: exponential weights (exact and Nyström) and baselines.

Every learner is an ``eqx.Module`` holding its fixed arrays (features, design, rates) with the
same three methods, so the simulation in :mod:`.train` treats them alike and ``vmap``s them over
seeds:

* ``init() -> state``,
* ``policy(state, key) -> p_t`` (the distribution x_t is drawn from; one-hot for GP-UCB and,
  after its posterior sample, for GP-TS),
* ``update(state, p_t, x_t, y_t) -> state``.
"""

from __future__ import annotations

import abc
import math
from typing import Any, Literal

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from repro26.kernel_bandits import solvers

KernelName = Literal["matern12", "matern32", "matern52", "se", "linear"]
KERNELS: tuple[str, ...] = ("matern12", "matern32", "matern52", "se", "linear")
MATERN_NU = {"matern12": 0.5, "matern32": 1.5, "matern52": 2.5}


class Kernel(eqx.Module):
    """k(x, z) as a function of r = ‖x − z‖ / ℓ (linear: xᵀz).

    Matérn ν = 1/2: e^{−r}; ν = 3/2: (1 + √3 r) e^{−√3 r}; ν = 5/2: (1 + √5 r + 5r²/3) e^{−√5 r};
    squared exponential: e^{−r²/2}. All stationary kernels have k(x, x) = 1.
    """

    name: str = eqx.field(static=True)
    lengthscale: float = eqx.field(static=True, default=1.0)

    def __call__(self, x: Float[Array, "n d"], z: Float[Array, "m d"]) -> Float[Array, "n m"]:
        if self.name == "linear":
            return x @ z.T
        sq = jnp.sum((x[:, None, :] - z[None, :, :]) ** 2, axis=-1)
        r = jnp.sqrt(jnp.maximum(sq, 0.0)) / self.lengthscale
        if self.name == "matern12":
            return jnp.exp(-r)
        if self.name == "matern32":
            a = math.sqrt(3.0) * r
            return (1.0 + a) * jnp.exp(-a)
        if self.name == "matern52":
            a = math.sqrt(5.0) * r
            return (1.0 + a + a * a / 3.0) * jnp.exp(-a)
        if self.name == "se":
            return jnp.exp(-0.5 * r * r)
        raise ValueError(f"kernel must be one of {', '.join(KERNELS)}, got {self.name!r}")


def eigen_features(gram: Float[Array, "n n"]) -> Float[Array, "n n"]:
    """Exact features Φ = U diag(√μ) from K = U diag(μ) Uᵀ, so Φ Φᵀ = K (D = n)."""
    mu, u = jnp.linalg.eigh(gram)
    return u * jnp.sqrt(jnp.clip(mu, 0.0, None))


def nystrom_features(gram: Float[Array, "n n"], idx: Int[Array, " m"], rtol: float = 1e-6
                     ) -> Float[Array, "n m"]:
    """Nyström features Φ = K_{XZ} K_{ZZ}^{-1/2} for inducing arms Z = X[idx].

    Φ Φᵀ = K_{XZ} K_{ZZ}⁺ K_{ZX}; directions of K_ZZ with eigenvalue below ``rtol``·max are
    dropped (pseudo-inverse), so with m = |X| the features reproduce K.
    """
    k_xz = gram[:, idx]
    mu, u = jnp.linalg.eigh(k_xz[idx])
    inv_sqrt = jnp.where(mu > rtol * jnp.max(mu), 1.0 / jnp.sqrt(jnp.clip(mu, 1e-30, None)), 0.0)
    return (k_xz @ u) * inv_sqrt


class Learner(eqx.Module):
    """A bandit algorithm over n arms (see the module docstring for the interface)."""

    @abc.abstractmethod
    def init(self) -> Any: ...

    @abc.abstractmethod
    def policy(self, state: Any, key: jax.Array) -> Float[Array, " n"]: ...

    @abc.abstractmethod
    def update(self, state: Any, p: Float[Array, " n"], x: Int[Array, ""], y: Float[Array, ""]) -> Any: ...


class ExpWeights(Learner):
    """Exponential weights with kernel-optimal exploration (the paper's algorithm).

    p_t = (1 − γ) w_t + γ π,   w_t ∝ exp(η Σ_{s<t} f̂_s),
    f̂_s = Φ (Σ_{p_s} + λI)⁻¹ φ_{x_s} y_s (importance-weighted kernel estimate),
    π the Frank–Wolfe design. Exact when Φ Φᵀ = K; the Nyström variant only changes Φ (n × m),
    so a round costs O(n m² + m³) instead of O(n³).
    """

    features: Float[Array, "n D"]
    design: Float[Array, " n"]
    eta: Float[Array, ""]
    gamma: Float[Array, ""]
    lam: Float[Array, ""]

    def init(self) -> Float[Array, " n"]:
        return jnp.zeros(self.features.shape[0], self.features.dtype)

    def policy(self, state, key):
        w = jax.nn.softmax(self.eta * state)
        return (1.0 - self.gamma) * w + self.gamma * self.design

    def update(self, state, p, x, y):
        return state + solvers.importance_weighted_estimate(self.features, p, x, y, self.lam)


class Exp3(Learner):
    """Exp3 over arms, ignoring the kernel: p_t ∝ exp(−η L̂_t), L̂ += e_x ℓ_t / p_t(x).

    Rewards y ∈ [−1, 1] enter as losses ℓ = (1 − y)/2.
    """

    n_arms: int = eqx.field(static=True)
    eta: Float[Array, ""]

    def init(self):
        return jnp.zeros(self.n_arms)

    def policy(self, state, key):
        return jax.nn.softmax(-self.eta * state)

    def update(self, state, p, x, y):
        return state.at[x].add(0.5 * (1.0 - y) / p[x])


class _GPPosterior(Learner):
    """GP posterior over f = Φθ, θ ~ N(0, I), observation noise σ².

    State: precision A = I + σ⁻² Σ_s φ_{x_s}φ_{x_s}ᵀ, covariance V = A⁻¹, b = σ⁻² Σ_s φ_{x_s} y_s and
    t; posterior mean θ̄ = V b. Each update is a Sherman–Morrison step on V followed by one
    Newton–Schulz refinement V ← V(2I − AV), which removes the float32 drift of repeated rank-one
    updates. Only matrix products: on XLA:CPU, triangular solves with many right-hand sides (a
    fresh Cholesky inverse every round) cost ~10× more. O(n D² + D³) per round.
    """

    features: Float[Array, "n D"]
    noise: Float[Array, ""]

    def init(self):
        d = self.features.shape[1]
        eye = jnp.eye(d, dtype=self.features.dtype)
        return eye, eye, jnp.zeros(d, self.features.dtype), jnp.zeros((), jnp.int32)

    def posterior(self, state):
        """(θ̄, V, A)."""
        prec, cov, b, _ = state
        return cov @ b, cov, prec

    def update(self, state, p, x, y):
        prec, cov, b, t = state
        phi, s2 = self.features[x], self.noise**2
        prec = prec + jnp.outer(phi, phi) / s2
        u = cov @ phi
        cov = cov - jnp.outer(u, u) / (s2 + phi @ u)
        cov = cov @ (2.0 * jnp.eye(cov.shape[0], dtype=cov.dtype) - prec @ cov)
        return prec, 0.5 * (cov + cov.T), b + phi * y / s2, t + 1


class GPUCB(_GPPosterior):
    """GP-UCB: x_t = argmax μ_{t-1}(x) + √β_t σ_{t-1}(x) (Srinivas et al., 2010)."""

    delta: float = eqx.field(static=True, default=0.1)

    def policy(self, state, key):
        theta, cov, _ = self.posterior(state)
        sd = jnp.sqrt(solvers.quadratic_forms(self.features, cov))
        beta = solvers.gp_ucb_beta(self.features.shape[0], state[3] + 1, self.delta)
        return jax.nn.one_hot(jnp.argmax(self.features @ theta + jnp.sqrt(beta) * sd), self.features.shape[0])


class GPTS(_GPPosterior):
    """GP Thompson sampling: θ̃ = θ̄ + V L z with A = L Lᵀ (cov V L Lᵀ V = V), x_t = argmax Φθ̃.

    ``policy`` draws ``samples`` posterior functions and returns the empirical distribution of
    their argmaxes; drawing x_t from it is exactly Thompson sampling (one of i.i.d. posterior
    samples, picked uniformly), and it exposes where TS puts its mass to the adaptive adversary.
    """

    samples: int = eqx.field(static=True, default=16)

    def policy(self, state, key):
        theta, cov, prec = self.posterior(state)
        z = jax.random.normal(key, (theta.shape[0], self.samples), theta.dtype)
        draws = theta[:, None] + cov @ (jnp.linalg.cholesky(prec) @ z)
        best = jnp.argmax(self.features @ draws, axis=0)
        return jnp.mean(jax.nn.one_hot(best, self.features.shape[0], dtype=theta.dtype), axis=0)


class Uniform(Learner):
    """Uniform random play."""

    n_arms: int = eqx.field(static=True)

    def init(self):
        return jnp.zeros(())

    def policy(self, state, key):
        return jnp.full((self.n_arms,), 1.0 / self.n_arms)

    def update(self, state, p, x, y):
        return state
