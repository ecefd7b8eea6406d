"""GDE training objective: maximum likelihood of fresh samples of a belief given the
embedding of a particle set of the same belief,

    L(θ) = E_b E_{S ~ b^n, s ~ b^m} [ -(1/m) sum_j log g_θ(s_j | E_θ(S)) ],

with b drawn from the domain's belief family: products of k exact per-evader posteriors
(grid filter on simulated held-in episodes), so the joint is an exact posterior of k
independent evaders in d = 2k.

The floor of L is the exact entropy of the training beliefs: a belief b over cells, uniform
inside each cell, has density b(c) G^2 on [0, 1]^2, so a perfect generator scores
E_b[H(b)] = E_b[-sum_c b(c) log(b(c) G^2)] per evader, and k times that for k independent
pool members.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from repro26.nbf import data
from repro26.nbf.model import GDE


def sample_training_batch(key, pool: Float[Array, "P G2"], *, batch: int, n_evaders: int,
                          set_size: int, target_size: int, grid: int):
    """``batch`` joint beliefs (k pool members each); a particle set and targets from each."""
    k_pick, k_set, k_tgt = jax.random.split(key, 3)
    members = jax.random.randint(k_pick, (batch, n_evaders), 0, pool.shape[0])
    beliefs = pool[members]  # (B, k, G2)

    def draw(key, n):
        k_cell, k_jit = jax.random.split(key)
        cells = jnp.moveaxis(data.sample_categorical(k_cell, beliefs, n), 0, 1)  # (B, n, k)
        return data.cells_to_points(k_jit, cells, grid)

    return draw(k_set, set_size), draw(k_tgt, target_size)


def exact_entropy(pool: Float[Array, "P G2"], n_evaders: int, grid: int) -> Float[Array, ""]:
    """k E_b[H(b)] over the pool (nats, density on [0, 1]^(2k)): the NLL of the true density."""
    safe = jnp.where(pool > 0, pool * grid ** 2, 1.0)
    return n_evaders * jnp.mean(-jnp.sum(pool * jnp.log(safe), -1))


def gde_nll(model: GDE, sets: Float[Array, "B n d"], targets: Float[Array, "B m d"]):
    """Mean negative log-likelihood per target point (nats, density on [0, 1]^d)."""
    logp = jax.vmap(model.log_prob)(targets, sets)
    nll = -jnp.mean(logp)
    return nll, {"nll": nll}
