"""Frozen transformer base policy ("VLA"), low-rank adapters on its projections, and the nested
hypernetwork that generates them.

Base policy: a small pre-LN transformer over tokens. The observation gives three state tokens
(proprioception q, v; end effector and held flag; object), the task instruction three
instruction tokens (embodiment and kind; target; object start) (``PLANAR``; another suite
passes its own ``layout``); each feature group f_i (zero padded to the longest group) is embedded as x_i = E_i f_i + p_i, and a learned action token is
appended. Each of ``depth`` blocks computes

    x <- x + W_o MHA(W_q n(x), W_k n(x), W_v n(x)),   x <- x + W_down gelu(W_up n(x)),

(n: layer norm, biases omitted), and the action is a = tanh(W_head n(x_action)). The adapted
matrices are the attention and MLP projections (W_q, W_k, W_v, W_o, W_up, W_down of every
block), listed in ``weights``; an adapter adds a delta to each, W + dW, and a low-rank adapter
has dW = B A (A: r x in, B: out x r, B zero at init as in LoRA). Token embeddings, layer norms,
biases and the head stay frozen.

NestedVLA: an outer network f_phi(e) outputs the parameter vector theta(e) of an inner
hypernetwork g_theta; g_theta(z_l) (z_l a learned code of adapted matrix l) outputs the
low-rank factors of matrix l as a residual from their value at initialisation,

    (a_l(e), b_l(e)) = g_{f_phi(e)}(z_l) - g_{f_phi0(e)}(z0_l),   A_l = A0_l + a_l(e),
    B_l = b_l(e),

(phi0, z0: a frozen copy of the initial outer network and codes). So at initialisation b_l = 0,
every generated delta B_l A_l = 0 and the generated policy is the base policy, while the outer
network's output layer is randomly initialised: theta(e) != 0, and the gradient of the loss
through B_l reaches the inner network's W1, c1, W2, c2, the codes z_l and every layer of the
outer network from the first step (a zero output layer would give theta = 0, tanh(W1 z + c1) = 0
and zero gradient to all of them, and every same-shape layer the same generated matrix c2(e)).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from repro26.nestedvla.suites import ACT_DIM, EMB_DIM, OBS_DIM



def token_layout(groups) -> tuple[tuple[int, ...], ...]:
    """Feature indices of every token into concat([obs, emb]), padded with -1 (a zero) to the
    longest group."""
    size = max(len(g) for g in groups)
    return tuple(tuple(g) + (-1,) * (size - len(g)) for g in groups)


# the planar suites: three state tokens and three instruction tokens
PLANAR = token_layout(((0, 1, 2, 3, 4),                        # state: q (3), velocity (2)
                       (5, 6, 9),                              # state: end effector, held flag
                       (7, 8),                                 # state: object
                       tuple(OBS_DIM + i for i in range(5)),   # instruction: suite, kind
                       (OBS_DIM + 5, OBS_DIM + 6),             # instruction: target
                       (OBS_DIM + 7, OBS_DIM + 8)))            # instruction: object start
PROJECTIONS = ("q", "k", "v", "o", "up", "down")
MLP_RATIO = 2


def _layer_norm(x: jax.Array, gamma: jax.Array, beta: jax.Array) -> jax.Array:
    mu = jnp.mean(x, -1, keepdims=True)
    var = jnp.var(x, -1, keepdims=True)
    return gamma * (x - mu) / jnp.sqrt(var + 1e-5) + beta


class BasePolicy(eqx.Module):
    """The transformer policy; ``weights``/``biases``: the adapted projections of every block in
    the order of ``PROJECTIONS``."""

    weights: tuple[jax.Array, ...]
    biases: tuple[jax.Array, ...]
    embed: jax.Array        # (groups, width, features per token)
    position: jax.Array     # (groups + 1, width); the last row is the action token
    norms: jax.Array        # (2 * depth + 1, 2, width): (gamma, beta) of every layer norm
    head_w: jax.Array
    head_b: jax.Array
    heads: int = eqx.field(static=True)
    layout: tuple[tuple[int, ...], ...] = eqx.field(static=True)

    def __init__(self, width: int, depth: int, heads: int = 2, layout=PLANAR,
                 act_dim: int = ACT_DIM, *, key):
        if width % heads:
            raise ValueError(f"width {width} is not a multiple of heads {heads}")
        self.heads, self.layout = heads, tuple(tuple(int(i) for i in g) for g in layout)
        n_tokens, token_dim = len(self.layout) + 1, len(self.layout[0])
        hidden = MLP_RATIO * width
        shapes = [(width, width)] * 4 + [(hidden, width), (width, hidden)]
        keys = jax.random.split(key, 6 * depth + 3)
        scale = {"o": 1 / np.sqrt(2 * depth), "down": 1 / np.sqrt(2 * depth)}
        weights = []
        for l in range(depth):
            for j, (name, (o, i)) in enumerate(zip(PROJECTIONS, shapes)):
                weights.append(jax.random.normal(keys[6 * l + j], (o, i)) * scale.get(name, 1.0)
                               / np.sqrt(i))
        self.weights = tuple(weights)
        self.biases = tuple(jnp.zeros(w.shape[0]) for w in weights)
        self.embed = jax.random.normal(keys[-3], (n_tokens - 1, width, token_dim))
        self.position = 0.1 * jax.random.normal(keys[-2], (n_tokens, width))
        self.norms = jnp.stack([jnp.ones((2 * depth + 1, width)),
                                jnp.zeros((2 * depth + 1, width))], axis=1)
        self.head_w = jax.random.normal(keys[-1], (act_dim, width)) / np.sqrt(width)
        self.head_b = jnp.zeros(act_dim)

    @property
    def shapes(self) -> tuple[tuple[int, int], ...]:
        return tuple(w.shape for w in self.weights)


def tokens(base: BasePolicy, obs: jax.Array, emb: jax.Array) -> jax.Array:
    """Input tokens (groups + 1, width): embedded feature groups and the action token."""
    features = jnp.concatenate([obs, emb, jnp.zeros(1)])[np.asarray(base.layout)]
    x = jnp.einsum("tdf,tf->td", base.embed, features)
    return jnp.concatenate([x, jnp.zeros((1, x.shape[1]))]) + base.position


def act(base: BasePolicy, deltas, obs: jax.Array, emb: jax.Array) -> jax.Array:
    """Action of the base policy with weight deltas ``deltas`` (one per adapted projection, or
    None)."""
    weights = base.weights if deltas is None else tuple(w + d for w, d in zip(base.weights,
                                                                             deltas))
    x = tokens(base, obs, emb)
    n, width = x.shape
    head_dim = width // base.heads

    def linear(j, h):
        return h @ weights[j].T + base.biases[j]

    for l in range(len(weights) // len(PROJECTIONS)):
        j = len(PROJECTIONS) * l
        h = _layer_norm(x, *base.norms[2 * l])
        q, k, v = (linear(j + i, h).reshape(n, base.heads, head_dim) for i in range(3))
        att = jax.nn.softmax(jnp.einsum("qhd,khd->hqk", q, k) / np.sqrt(head_dim), axis=-1)
        x = x + linear(j + 3, jnp.einsum("hqk,khd->qhd", att, v).reshape(n, width))
        h = _layer_norm(x, *base.norms[2 * l + 1])
        x = x + linear(j + 5, jax.nn.gelu(linear(j + 4, h)))
    return jnp.tanh(base.head_w @ _layer_norm(x[-1], *base.norms[-1]) + base.head_b)


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
    """theta(e) = f_phi(e) (outer MLP); layer l's factors are the residual
    g_theta(z_l) - g_theta0(z0_l) with g_theta(z) = W2 tanh(W1 z + c1) + c2, sliced into
    (a_l, b_l); ``initial`` (phi0, z0) is the frozen initial copy (no gradient flows into it)."""

    outer: eqx.nn.MLP
    codes: jax.Array
    a0: tuple[jax.Array, ...]
    initial: tuple[eqx.nn.MLP, jax.Array]
    shapes: tuple[tuple[int, int], ...] = eqx.field(static=True)
    rank: int = eqx.field(static=True)
    code_dim: int = eqx.field(static=True)
    inner_width: int = eqx.field(static=True)

    def __init__(self, shapes, rank: int, code_dim: int, inner_width: int, outer_width: int,
                 emb_dim: int = EMB_DIM, *, key):
        self.shapes, self.rank = tuple(tuple(s) for s in shapes), rank
        self.code_dim, self.inner_width = code_dim, inner_width
        k_outer, k_codes, k_a0 = jax.random.split(key, 3)
        self.outer = eqx.nn.MLP(emb_dim, self.n_inner_params, outer_width, 2,
                                activation=jax.nn.gelu, key=k_outer)
        self.codes = jax.random.normal(k_codes, (len(shapes), code_dim))
        self.initial = (self.outer, self.codes)
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

    def inner_params(self, outer: eqx.nn.MLP, emb: jax.Array):
        """theta(e) = outer(e) unpacked into the inner hypernetwork's (W1, c1, W2, c2)."""
        theta = outer(emb)
        c, w, p = self.code_dim, self.inner_width, self.factor_size
        sizes = [c * w, w, w * p, p]
        w1, c1, w2, c2 = jnp.split(theta, list(np.cumsum(sizes)[:-1]))
        return w1.reshape(w, c), c1, w2.reshape(p, w), c2

    def factors(self, outer: eqx.nn.MLP, codes: jax.Array, emb: jax.Array) -> jax.Array:
        """g_theta(z_l) of every adapted matrix l: (layers, factor_size)."""
        w1, c1, w2, c2 = self.inner_params(outer, emb)
        return jnp.tanh(codes @ w1.T + c1) @ w2.T + c2

    def adapter(self, emb: jax.Array) -> LoRA:
        """The generated low-rank adapter for task token ``emb``."""
        outer0, codes0 = jax.tree.map(lambda x: jax.lax.stop_gradient(x) if eqx.is_array(x) else x,
                                      self.initial)
        flat = self.factors(self.outer, self.codes, emb) - self.factors(outer0, codes0, emb)
        a, b = [], []
        for l, (o, i) in enumerate(self.shapes):
            a.append(self.a0[l] + flat[l, :self.rank * i].reshape(self.rank, i))
            b.append(flat[l, self.rank * i:self.rank * (i + o)].reshape(o, self.rank))
        return LoRA(tuple(a), tuple(b))

    def deltas(self, emb: jax.Array):
        return self.adapter(emb).deltas()
