"""Diagonal (separable) CMA-ES (Ros & Hansen 2008, PPSN X; Hansen 2016, arXiv:1604.00772).

x_k = m + sigma sqrt(c) * z_k, z_k ~ N(0, I); with the mu best (maximisation) and log weights
w_i:  y_w = sum w_i y_i,  m <- m + sigma y_w,
p_s <- (1 - c_s) p_s + sqrt(c_s (2 - c_s) mu_eff) y_w / sqrt(c),
sigma <- sigma exp(c_s / d_s (|p_s| / E|N(0, I)| - 1)),
p_c <- (1 - c_c) p_c + h_s sqrt(c_c (2 - c_c) mu_eff) y_w,
c <- (1 - c_1 - c_mu) c + c_1 (p_c^2 + (1 - h_s) c_c (2 - c_c) c) + c_mu sum w_i y_i^2,
with the learning rates c_1, c_mu scaled by (P + 2) / 3 for the diagonal model.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from repro26.rat_ncap.es.base import Strategy


class DiagCMAState(eqx.Module):
    mean: Float[Array, " P"]
    sigma: Array
    c: Float[Array, " P"]
    p_sigma: Float[Array, " P"]
    p_c: Float[Array, " P"]
    generation: Array


class DiagCMAES(Strategy):
    sigma0: float = eqx.field(static=True, default=0.1)

    def _consts(self, n: int):
        lam, mu = self.pop_size, self.pop_size // 2
        w = np.log(mu + 0.5) - np.log(np.arange(1, mu + 1))
        w = w / w.sum()
        mu_eff = 1.0 / np.sum(w**2)
        c_s = (mu_eff + 2) / (n + mu_eff + 5)
        d_s = 1 + 2 * max(0.0, np.sqrt((mu_eff - 1) / (n + 1)) - 1) + c_s
        c_c = (4 + mu_eff / n) / (n + 4 + 2 * mu_eff / n)
        c_1 = 2 / ((n + 1.3) ** 2 + mu_eff)
        c_mu = min(1 - c_1, 2 * (mu_eff - 2 + 1 / mu_eff) / ((n + 2) ** 2 + mu_eff))
        scale = (n + 2) / 3
        c_1, c_mu = min(1.0, c_1 * scale), min(1 - min(1.0, c_1 * scale), c_mu * scale)
        chi = np.sqrt(n) * (1 - 1 / (4 * n) + 1 / (21 * n**2))
        return dict(lam=lam, mu=mu, w=jnp.asarray(w, jnp.float32), mu_eff=mu_eff, c_s=c_s, d_s=d_s,
                    c_c=c_c, c_1=c_1, c_mu=c_mu, chi=chi)

    def init(self, mean):
        n = mean.shape[0]
        return DiagCMAState(mean, jnp.asarray(self.sigma0, jnp.float32), jnp.ones(n), jnp.zeros(n),
                            jnp.zeros(n), jnp.zeros((), jnp.int32))

    def ask(self, state, key):
        z = jax.random.normal(key, (self.pop_size, state.mean.shape[0]))
        return state.mean + state.sigma * jnp.sqrt(state.c) * z

    def tell(self, state, x, fitness, refitness=None):
        n = state.mean.shape[0]
        k = self._consts(n)
        fitness = jnp.where(jnp.isfinite(fitness), fitness, -jnp.inf)
        order = jnp.argsort(-fitness)[: k["mu"]]
        y = (x[order] - state.mean) / state.sigma
        y_w = k["w"] @ y
        mean = state.mean + state.sigma * y_w
        p_s = (1 - k["c_s"]) * state.p_sigma + np.sqrt(k["c_s"] * (2 - k["c_s"]) * k["mu_eff"]) * y_w / jnp.sqrt(state.c)
        norm = jnp.linalg.norm(p_s)
        sigma = state.sigma * jnp.exp(k["c_s"] / k["d_s"] * (norm / k["chi"] - 1))
        g = state.generation + 1
        h_s = (norm / jnp.sqrt(1 - (1 - k["c_s"]) ** (2 * g)) < (1.4 + 2 / (n + 1)) * k["chi"]).astype(jnp.float32)
        p_c = (1 - k["c_c"]) * state.p_c + h_s * np.sqrt(k["c_c"] * (2 - k["c_c"]) * k["mu_eff"]) * y_w
        c = ((1 - k["c_1"] - k["c_mu"]) * state.c
             + k["c_1"] * (p_c**2 + (1 - h_s) * k["c_c"] * (2 - k["c_c"]) * state.c)
             + k["c_mu"] * (k["w"] @ (y**2)))
        # floors keep float32 finite once the fitness stops resolving differences
        return DiagCMAState(mean, jnp.clip(sigma, 1e-8, 1e3), jnp.clip(c, 1e-8, 1e8), p_s, p_c, g)
