"""The ask/tell interface shared by every strategy, and rank fitness shaping."""

from __future__ import annotations

import abc

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float


def centered_ranks(fitness: Float[Array, " N"]) -> Float[Array, " N"]:
    """Ranks mapped linearly to [-1/2, 1/2] (Salimans et al. 2017); NaN ranks lowest."""
    fitness = jnp.where(jnp.isnan(fitness), -jnp.inf, fitness)
    ranks = jnp.argsort(jnp.argsort(fitness)).astype(jnp.float32)
    return ranks / (fitness.shape[0] - 1) - 0.5


class Strategy(eqx.Module):
    """``state = init(mean)``; ``x = ask(state, key)``; ``state = tell(state, x, fitness)``
    (``tell(state, x, fitness, refitness)`` for a strategy that re-evaluates points)."""

    pop_size: int = eqx.field(static=True)

    @abc.abstractmethod
    def init(self, mean: Float[Array, " P"]) -> eqx.Module: ...

    @abc.abstractmethod
    def ask(self, state: eqx.Module, key: jax.Array) -> Float[Array, "N P"]: ...

    @abc.abstractmethod
    def tell(self, state: eqx.Module, x: Float[Array, "N P"], fitness: Float[Array, " N"],
             refitness: Float[Array, " K"] | None = None) -> eqx.Module:
        """Update from the candidates' fitness; ``refitness``: the fitness of
        :meth:`reevaluate`'s points on the same episodes (``None``: not re-evaluated)."""

    def reevaluate(self, state: eqx.Module) -> Float[Array, "K P"]:
        """Points besides the candidates to score on this generation's episodes (none here)."""
        return jnp.zeros((0, self.mean(state).shape[0]))

    def mean(self, state: eqx.Module) -> Float[Array, " P"]:
        return state.mean

    def sigma(self, state: eqx.Module) -> Float[Array, ""]:
        """Mean search step size (for logging)."""
        return jnp.mean(state.sigma)
