"""Refined ES: OpenAI-ES plus per-parameter-group sigma and elitist restarts.

The abstract: "we refine an evolutionary algorithm to support reliable and efficient
training". Refinements (issue 9): every parameter group (e.g. RG, pattern formation,
commissural, drive weights; one per MLP layer) has its own adaptive sigma; the best candidate
seen so far (the elite) is kept, and when no candidate has beaten it for ``patience``
generations the search restarts from the elite with fresh sigma and optimiser state. The
restart keeps the weight decay's anchor: decay still pulls toward the *initial* circuit
``m_0`` (the prior of :class:`~repro26.rat_ncap.es.openai_es.OpenAIES`), not toward the elite
it restarted from.

The elite is re-evaluated every generation on that generation's episodes (:meth:`reevaluate`;
its fitness comes back as ``refitness``): a candidate replaces it only by beating it on the
same episodes, so an elite scored high on one lucky episode cannot block progress and cause
restarts. Without ``refitness`` the elite keeps its stored fitness.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from repro26.rat_ncap.es.openai_es import OpenAIES, OpenAIESState


class RefinedESState(eqx.Module):
    inner: OpenAIESState
    elite: Float[Array, " P"]
    elite_fitness: Array
    stall: Array
    restarts: Array

    @property
    def mean(self):
        return self.inner.mean


class RefinedES(OpenAIES):
    patience: int = eqx.field(static=True, default=10)

    def init(self, mean):
        return RefinedESState(super().init(mean), mean, jnp.asarray(-jnp.inf, jnp.float32), jnp.zeros((), jnp.int32),
                              jnp.zeros((), jnp.int32))

    def sigma(self, state):
        return super().sigma(state.inner)

    def ask(self, state, key):
        return super().ask(state.inner, key)

    def reevaluate(self, state):
        return state.elite[None]

    def tell(self, state, x, fitness, refitness=None):
        fitness = jnp.where(jnp.isfinite(fitness), fitness, -jnp.inf)
        current = state.elite_fitness if refitness is None else jnp.where(
            jnp.isfinite(refitness[0]), refitness[0], -jnp.inf)
        best = jnp.argmax(fitness)
        improved = fitness[best] > current
        elite = jnp.where(improved, x[best], state.elite)
        elite_fitness = jnp.maximum(fitness[best], current)
        stall = jnp.where(improved, 0, state.stall + 1)
        inner = self.update(state.inner, x, fitness)
        restart = stall >= self.patience
        fresh = eqx.tree_at(lambda s: s.init_mean, OpenAIES.init(self, elite), state.inner.init_mean)
        inner = jax.tree.map(lambda a, b: jnp.where(restart, a, b), fresh, inner)
        return RefinedESState(inner, elite, elite_fitness, jnp.where(restart, 0, stall),
                              state.restarts + restart.astype(jnp.int32))

