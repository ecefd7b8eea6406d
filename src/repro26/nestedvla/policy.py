"""Frozen base policy, low-rank adapters, and the nested hypernetwork that generates them.

Base policy: an MLP a = tanh(W_L h_{L-1} + b_L), h_l = gelu(W_l h_{l-1} + b_l), h_0 = [obs, e]
(state and task token). An adapter adds a weight delta to every layer, W_l + dW_l; a low-rank
adapter has dW_l = B_l A_l (A_l: r x in_l, B_l: out_l x r, B zero at init as in LoRA).

NestedVLA: an outer network f_phi(e) outputs the parameter vector theta(e) of an inner
hypernetwork g_theta; g_theta(z_l) (z_l a learned code of layer l) outputs the low-rank
factors of layer l: A_l = A0_l + a_l(e), B_l = b_l(e). The outer network's last layer starts at
zero, so theta = 0, the generated deltas B_l A_l = 0 and the generated policy is the base policy.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from repro26.nestedvla.suites import ACT_DIM, EMB_DIM, OBS_DIM


class BasePolicy(eqx.Module):
    weights: tuple[jax.Array, ...]
    biases: tuple[jax.Array, ...]

    def __init__(self, width: int, depth: int, *, key):
        sizes = [OBS_DIM + EMB_DIM] + [width] * depth + [ACT_DIM]
        keys = jax.random.split(key, len(sizes) - 1)
        self.weights = tuple(jax.random.normal(k, (o, i)) / jnp.sqrt(i)
                             for k, i, o in zip(keys, sizes[:-1], sizes[1:]))
        self.biases = tuple(jnp.zeros(o) for o in sizes[1:])

    @property
    def shapes(self) -> tuple[tuple[int, int], ...]:
        return tuple(w.shape for w in self.weights)


def act(base: BasePolicy, deltas, obs: jax.Array, emb: jax.Array) -> jax.Array:
    """Action of the base policy with weight deltas ``deltas`` (one per layer, or None)."""
    h = jnp.concatenate([obs, emb])
    n = len(base.weights)
    for l, (w, b) in enumerate(zip(base.weights, base.biases)):
        if deltas is not None:
            w = w + deltas[l]
        h = w @ h + b
        h = jnp.tanh(h) if l == n - 1 else jax.nn.gelu(h)
    return h


def zero_deltas(base: BasePolicy):
    return tuple(jnp.zeros(s) for s in base.shapes)


class LoRA(eqx.Module):
    """Low-rank adapter: dW_l = B_l A_l."""

    a: tuple[jax.Array, ...]
    b: tuple[jax.Array, ...]

    def deltas(self):
        return tuple(b @ a for a, b in zip(self.a, self.b))


def init_lora(shapes, rank: int, key) -> LoRA:
    """LoRA initialisation: A ~ N(0, 1/in), B = 0 (so the adapter starts as the base policy)."""
    keys = jax.random.split(key, len(shapes))
    return LoRA(tuple(jax.random.normal(k, (rank, i)) / jnp.sqrt(i)
                      for k, (o, i) in zip(keys, shapes)),
                tuple(jnp.zeros((o, rank)) for o, i in shapes))


def bc_loss(base: BasePolicy, deltas, obs, emb, target, mask) -> jax.Array:
    """Behaviour-cloning loss: squared action error on the suite's action dimensions
    (``mask``, ACT_DIM), averaged over the batch."""
    pred = jax.vmap(lambda o: act(base, deltas, o, emb))(obs)
    return jnp.sum(mask * (pred - target) ** 2) / (obs.shape[0] * jnp.sum(mask))


class NestedHypernetwork(eqx.Module):
    """theta(e) = f_phi(e) (outer MLP, zero-initialised output layer); layer l's factors are
    g_theta(z_l) = W2 tanh(W1 z_l + c1) + c2, sliced into (a_l, b_l)."""

    outer: eqx.nn.MLP
    codes: jax.Array
    a0: tuple[jax.Array, ...]
    shapes: tuple[tuple[int, int], ...] = eqx.field(static=True)
    rank: int = eqx.field(static=True)
    code_dim: int = eqx.field(static=True)
    inner_width: int = eqx.field(static=True)

    def __init__(self, shapes, rank: int, code_dim: int, inner_width: int, outer_width: int,
                 *, key):
        self.shapes, self.rank = tuple(tuple(s) for s in shapes), rank
        self.code_dim, self.inner_width = code_dim, inner_width
        k_outer, k_codes, k_a0 = jax.random.split(key, 3)
        outer = eqx.nn.MLP(EMB_DIM, self.n_inner_params, outer_width, 2, activation=jax.nn.gelu,
                           key=k_outer)
        last = outer.layers[-1]
        last = eqx.tree_at(lambda m: (m.weight, m.bias), last,
                           (jnp.zeros_like(last.weight), jnp.zeros_like(last.bias)))
        self.outer = eqx.tree_at(lambda m: m.layers[-1], outer, last)
        self.codes = jax.random.normal(k_codes, (len(shapes), code_dim))
        keys = jax.random.split(k_a0, len(shapes))
        self.a0 = tuple(jax.random.normal(k, (rank, i)) / jnp.sqrt(i)
                        for k, (o, i) in zip(keys, shapes))

    @property
    def factor_size(self) -> int:
        return max(self.rank * (i + o) for o, i in self.shapes)

    @property
    def n_inner_params(self) -> int:
        c, w, p = self.code_dim, self.inner_width, self.factor_size
        return c * w + w + w * p + p

    def inner_params(self, emb: jax.Array):
        """theta(e) unpacked into the inner hypernetwork's (W1, c1, W2, c2)."""
        theta = self.outer(emb)
        c, w, p = self.code_dim, self.inner_width, self.factor_size
        sizes = [c * w, w, w * p, p]
        w1, c1, w2, c2 = jnp.split(theta, list(np.cumsum(sizes)[:-1]))
        return w1.reshape(w, c), c1, w2.reshape(p, w), c2

    def adapter(self, emb: jax.Array) -> LoRA:
        """The generated low-rank adapter for task token ``emb``."""
        w1, c1, w2, c2 = self.inner_params(emb)
        a, b = [], []
        for l, (o, i) in enumerate(self.shapes):
            flat = w2 @ jnp.tanh(w1 @ self.codes[l] + c1) + c2
            a.append(self.a0[l] + flat[:self.rank * i].reshape(self.rank, i))
            b.append(flat[self.rank * i:self.rank * (i + o)].reshape(o, self.rank))
        return LoRA(tuple(a), tuple(b))

    def deltas(self, emb: jax.Array):
        return self.adapter(emb).deltas()
