"""OpenAI-ES (Salimans et al. 2017, arXiv:1703.03864).

Antithetic sampling x_{+-i} = m +- sigma * eps_i, eps_i ~ N(0, I), i = 1..N/2; centred-rank
shaping F~ of the fitness; the search-gradient estimate

    g = 1/(N sigma) sum_i (F~_{+i} - F~_{-i}) eps_i - lambda (m - m_0)

(weight decay lambda toward the initial mean m_0, not toward 0: NCAP's initial weights are
its prior, and decay toward 0 would prune every synapse, V0 included, alike)

is followed with Adam (ascent). Adaptive sigma: log sigma follows the same search-gradient
estimator for the step size (NES/PEPG, Wierstra et al. 2014):
d log sigma ~ 1/N sum_j F~_j (||eps_j||^2 / P - 1), clipped to [sigma_min, sigma_max].
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import optax
from jaxtyping import Array, Float

from repro26.rat_ncap.es.base import Strategy, centered_ranks


def antithetic_gradient(eps: Float[Array, "H P"], fit_plus: Float[Array, " H"],
                        fit_minus: Float[Array, " H"], sigma) -> Float[Array, " P"]:
    """Search-gradient estimate from antithetic pairs; for a quadratic F it is unbiased for
    grad F(m), since (F(m + s e) - F(m - s e)) / (2 s) = grad F(m) . e exactly."""
    return jnp.mean((fit_plus - fit_minus)[:, None] * eps, axis=0) / (2.0 * sigma)


class OpenAIESState(eqx.Module):
    mean: Float[Array, " P"]
    init_mean: Float[Array, " P"]
    log_sigma: Float[Array, " G"]
    opt_state: optax.OptState
    generation: Array


class OpenAIES(Strategy):
    lr: float = eqx.field(static=True, default=0.02)
    sigma0: float = eqx.field(static=True, default=0.1)
    sigma_lr: float = eqx.field(static=True, default=0.1)
    sigma_min: float = eqx.field(static=True, default=0.01)
    sigma_max: float = eqx.field(static=True, default=0.5)
    weight_decay: float = eqx.field(static=True, default=0.005)
    #: parameter-group id of every entry (a tuple, so the strategy stays hashable); None: one sigma
    groups: tuple[int, ...] | None = eqx.field(static=True, default=None)

    @property
    def n_groups(self) -> int:
        return 1 if self.groups is None else max(self.groups) + 1

    def _optimizer(self):
        return optax.adam(self.lr)

    def _group_ids(self, n: int):
        return jnp.zeros(n, jnp.int32) if self.groups is None else jnp.asarray(self.groups, jnp.int32)

    def init(self, mean):
        return OpenAIESState(mean, mean, jnp.full(self.n_groups, jnp.log(self.sigma0), jnp.float32),
                             self._optimizer().init(mean), jnp.zeros((), jnp.int32))

    def sigma_vector(self, state):
        return jnp.exp(state.log_sigma)[self._group_ids(state.mean.shape[0])]

    def sigma(self, state):
        return jnp.mean(jnp.exp(state.log_sigma))

    def ask(self, state, key):
        if self.pop_size % 2:
            raise ValueError("pop_size must be even (antithetic pairs)")
        eps = jax.random.normal(key, (self.pop_size // 2, state.mean.shape[0]))
        step = self.sigma_vector(state) * eps
        return jnp.concatenate([state.mean + step, state.mean - step])

    def update(self, state, x, fitness):
        """One OpenAI-ES update (shared with the refined ES)."""
        half = self.pop_size // 2
        sigma = self.sigma_vector(state)
        eps = (x[:half] - state.mean) / sigma
        shaped = centered_ranks(fitness)
        grad = antithetic_gradient(eps, shaped[:half], shaped[half:], sigma) - self.weight_decay * (state.mean - state.init_mean)
        updates, opt_state = self._optimizer().update(-grad, state.opt_state, state.mean)
        mean = optax.apply_updates(state.mean, updates)
        ids = self._group_ids(state.mean.shape[0])
        counts = jnp.zeros(self.n_groups).at[ids].add(1.0)
        sq = jax.vmap(lambda e: jnp.zeros(self.n_groups).at[ids].add(e**2) / counts)(eps)  # (H, G)
        pair = shaped[:half] + shaped[half:]
        g_log_sigma = jnp.mean(pair[:, None] * (sq - 1.0), axis=0)
        log_sigma = jnp.clip(state.log_sigma + self.sigma_lr * g_log_sigma,
                             jnp.log(self.sigma_min), jnp.log(self.sigma_max))
        return OpenAIESState(mean, state.init_mean, log_sigma, opt_state, state.generation + 1)

    def tell(self, state, x, fitness, refitness=None):
        return self.update(state, x, fitness)
