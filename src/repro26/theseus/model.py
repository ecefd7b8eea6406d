"""Guide and target networks as one structure: ``stem -> stages[0] -> ... -> stages[K-1] -> head``.

Every network maps one example to logits and exposes ``features(x)``, the output of each stage
(the representations that are aligned). A *part* is what a conversion replaces at stage k:

* images (CNN -> MLP): the whole stage. CNN stage k is ``conv 3x3 -> ReLU -> 2x2 max-pool``
  (last stage: global max-pool); the MLP stage replacing it is ``flatten -> dense -> ReLU ->
  maxout over groups -> reshape`` to the same output shape (:class:`MaxoutStage`, which can
  compute the conv stage exactly), so the guide's later stages accept it; for the globally
  pooled last stage the groups are whole channels (a maxout over every position). The head (a
  linear layer) is the same in both architectures and is kept.
* text (transformer -> RNN): the token mixer of pre-norm residual block k,
  ``x + mixer(LN(x))`` then ``x + MLP(LN(x))``: causal self-attention with rotary position
  encoding (the guide; positions live only inside attention) or a GRU / diagonal linear RNN (the
  target). Embedding, layer norms, MLPs and head are the same in both and are kept.

``swap(net, k, donor)`` puts ``donor``'s part k into ``net``; after swapping every part from a
target-architecture network the result is entirely the target architecture.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int, PRNGKeyArray

RNNKind = Literal["gru", "linear"]


# ----------------------------------------------------------------------------- image parts


class ConvStage(eqx.Module):
    """``conv 3x3 (same padding) -> ReLU -> 2x2 max-pool`` or, with ``global_pool``, global
    max-pool. The convolution is written as patches x weights (im2col), which vmaps over seeds
    into one batched matmul (a vmapped ``lax.conv`` becomes a slow grouped convolution on CPU)."""

    weight: Float[Array, "out in 3 3"]
    bias: Float[Array, " out"]
    global_pool: bool = eqx.field(static=True)

    def __init__(self, c_in: int, c_out: int, global_pool: bool, *, key: PRNGKeyArray):
        bound = 1.0 / math.sqrt(9 * c_in)
        kw, kb = jax.random.split(key)
        self.weight = jax.random.uniform(kw, (c_out, c_in, 3, 3), minval=-bound, maxval=bound)
        self.bias = jax.random.uniform(kb, (c_out,), minval=-bound, maxval=bound)
        self.global_pool = global_pool

    def conv(self, x: Float[Array, "c h w"]) -> Float[Array, "o h w"]:
        _, h, w = x.shape
        p = jnp.pad(x, ((0, 0), (1, 1), (1, 1)))
        patches = jnp.stack([p[:, i:i + h, j:j + w] for i in range(3) for j in range(3)], 1)
        weight = self.weight.reshape(self.weight.shape[0], self.weight.shape[1], 9)
        return jnp.einsum("oik,ikhw->ohw", weight, patches) + self.bias[:, None, None]

    def units(self, x: Float[Array, "c h w"]) -> Float[Array, " units"]:
        """The ReLU units before the pool, ``relu(conv(x))``: flattened channel-major for the
        global pool, in pooling-window order (:func:`window_order`) for the 2x2 pool, the order
        of the hidden units of the maxout that computes this stage (:func:`maxout_from_conv`)."""
        z = jax.nn.relu(self.conv(x))
        return z.reshape(-1) if self.global_pool else window_order(z[None])[0].reshape(-1)

    def __call__(self, x: Float[Array, "c h w"]) -> Array:
        h = jax.nn.relu(self.conv(x))
        if self.global_pool:
            return h.max(axis=(1, 2))
        c, hh, ww = h.shape
        return h[:, : hh // 2 * 2, : ww // 2 * 2].reshape(c, hh // 2, 2, ww // 2, 2).max(axis=(2, 4))


def window_order(z: Float[Array, "n o h w"]) -> Float[Array, "n o hh ww 4"]:
    """The 2x2 pooling windows of a map ``z`` (rows and columns cropped to even): entry
    ``[n, o, i, j, 2a + b] = z[n, o, 2i + a, 2j + b]``, so that flattened, each group of 4 units
    is one pooling window of one channel, in order (o, i, j)."""
    n, o, h, w = z.shape
    hh, ww = h // 2, w // 2
    z = z[:, :, : hh * 2, : ww * 2].reshape(n, o, hh, 2, ww, 2).transpose(0, 1, 2, 4, 3, 5)
    return z.reshape(n, o, hh, ww, 4)


class MaxoutStage(eqx.Module):
    """``flatten -> dense -> ReLU -> max over groups of `pool` units -> reshape(out_shape)``: a
    fully connected maxout layer (Goodfellow et al. 2013) with the CNN stage's input and output
    shapes and as many hidden ReLU units as the CNN stage has before its pool
    (``prod(out_shape) x pool``). It has the capacity of the part it replaces: a convolution is a
    dense matrix with tied, local entries, and a max-pool is a max over fixed groups of units,
    so every ``conv -> ReLU -> max-pool`` stage is one setting of this layer's weights
    (:func:`maxout_from_conv`), while the layer itself has no locality or weight sharing. The
    globally pooled last stage is a maxout over all ``P`` positions of each channel: it passes
    gradient only to each group's winning unit, so on the output alone most of its units hardly
    train (replacing a trained guide's last stage: 74.6% test accuracy after 400 steps against
    81.7% for a two-layer dense block of the same width); the conversion's component match
    (``train.component_pairs``) gives every hidden unit its own target, and with it the maxout
    ended the image conversion at 88.9 / 91.6% on a validation draw (data_seed 4321, seeds 0, 1)
    against the dense block's 85.3 / 85.0%."""

    linear: eqx.nn.Linear
    pool: int = eqx.field(static=True)
    out_shape: tuple[int, ...] = eqx.field(static=True)

    def units(self, x: Array) -> Float[Array, " units"]:
        """The hidden ReLU units before the group max, ``relu(linear(flatten(x)))``: as many as
        the replaced conv stage's :meth:`ConvStage.units`, the components a conversion aligns
        with those (unit by unit equal for :func:`maxout_from_conv`)."""
        return jax.nn.relu(self.linear(x.reshape(-1)))

    def __call__(self, x: Array) -> Array:
        return self.units(x).reshape(-1, self.pool).max(axis=1).reshape(self.out_shape)


def maxout_from_conv(stage: ConvStage, in_shape: tuple[int, int, int]) -> MaxoutStage:
    """The maxout layer that computes ``stage`` exactly on inputs of ``in_shape``: column i of
    the dense matrix is the conv's response to the i-th unit input, rows ordered so that each
    group of ``pool`` units is one pooling window of one channel."""
    c, h, w = in_shape
    pre = jax.vmap(stage.conv)(jnp.eye(c * h * w).reshape(-1, c, h, w))  # (in, o, h, w)
    pre = pre - stage.bias[None, :, None, None]
    o = stage.weight.shape[0]
    if stage.global_pool:
        weight, bias = pre.reshape(c * h * w, o, h * w), jnp.repeat(stage.bias, h * w)
        pool, out_shape = h * w, (o,)
    else:
        hh, ww = h // 2, w // 2
        weight = window_order(pre).reshape(c * h * w, o * hh * ww * 4)
        bias = jnp.repeat(stage.bias, hh * ww * 4)
        pool, out_shape = 4, (o, hh, ww)
    linear = eqx.nn.Linear(c * h * w, bias.size, key=jax.random.PRNGKey(0))
    linear = eqx.tree_at(lambda m: (m.weight, m.bias), linear, (weight.reshape(c * h * w, -1).T, bias))
    return MaxoutStage(linear, pool, out_shape)


class AddChannel(eqx.Module):
    def __call__(self, x: Float[Array, "h w"]) -> Float[Array, "1 h w"]:
        return x[None]


class Flatten(eqx.Module):
    def __call__(self, x: Array) -> Array:
        return x.reshape(-1)


# ----------------------------------------------------------------------------- text parts


def rotary(x: Float[Array, "t h d"]) -> Float[Array, "t h d"]:
    """Rotary position encoding (Su et al. 2021): rotate feature pairs by angle t * 10000^(-2i/d)."""
    t, _, d = x.shape
    freq = 10000.0 ** (-jnp.arange(d // 2) * 2.0 / d)
    angle = jnp.arange(t)[:, None] * freq[None]
    cos, sin = jnp.cos(angle)[:, None], jnp.sin(angle)[:, None]
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return jnp.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)


class CausalAttention(eqx.Module):
    """Multi-head causal self-attention with rotary positions."""

    qkv: eqx.nn.Linear
    out: eqx.nn.Linear
    n_heads: int = eqx.field(static=True)

    def __init__(self, d: int, n_heads: int, *, key: PRNGKeyArray):
        k1, k2 = jax.random.split(key)
        self.qkv = eqx.nn.Linear(d, 3 * d, key=k1)
        self.out = eqx.nn.Linear(d, d, key=k2)
        self.n_heads = n_heads

    def __call__(self, x: Float[Array, "t d"]) -> Float[Array, "t d"]:
        t, d = x.shape
        q, k, v = jnp.split(jax.vmap(self.qkv)(x).reshape(t, 3, self.n_heads, d // self.n_heads), 3, 1)
        q, k, v = rotary(q[:, 0]), rotary(k[:, 0]), v[:, 0]
        scores = jnp.einsum("thd,shd->hts", q, k) / jnp.sqrt(d // self.n_heads)
        scores = jnp.where(jnp.tril(jnp.ones((t, t), bool))[None], scores, -jnp.inf)
        y = jnp.einsum("hts,shd->thd", jax.nn.softmax(scores, axis=-1), v).reshape(t, d)
        return jax.vmap(self.out)(y)


class GRUMixer(eqx.Module):
    """``y_t = W h_t``, ``h_t = GRU(h_{t-1}, x_t)``, ``h_0 = 0``: a causal recurrent token mixer."""

    cell: eqx.nn.GRUCell
    out: eqx.nn.Linear

    def __init__(self, d: int, *, key: PRNGKeyArray):
        k1, k2 = jax.random.split(key)
        self.cell = eqx.nn.GRUCell(d, d, key=k1)
        self.out = eqx.nn.Linear(d, d, key=k2)

    def __call__(self, x: Float[Array, "t d"]) -> Float[Array, "t d"]:
        def step(h, xt):
            h = self.cell(xt, h)
            return h, h

        _, hs = jax.lax.scan(step, jnp.zeros(x.shape[-1]), x)
        return jax.vmap(self.out)(hs)


class LinearRNNMixer(eqx.Module):
    """Diagonal linear recurrence ``h_t = a * h_{t-1} + (1 - a) * (W_in x_t)``, ``y_t = W_out h_t``
    with ``a = sigmoid(nu)`` per channel, run as an associative scan."""

    inp: eqx.nn.Linear
    out: eqx.nn.Linear
    nu: Float[Array, " d"]

    def __init__(self, d: int, *, key: PRNGKeyArray):
        k1, k2, k3 = jax.random.split(key, 3)
        self.inp = eqx.nn.Linear(d, d, key=k1)
        self.out = eqx.nn.Linear(d, d, key=k2)
        self.nu = jax.random.uniform(k3, (d,), minval=0.0, maxval=4.0)  # a in ~[0.5, 0.98]

    def __call__(self, x: Float[Array, "t d"]) -> Float[Array, "t d"]:
        a = jax.nn.sigmoid(self.nu)
        u = (1 - a) * jax.vmap(self.inp)(x)

        def combine(left, right):
            (a_l, b_l), (a_r, b_r) = left, right
            return a_l * a_r, a_r * b_l + b_r

        _, h = jax.lax.associative_scan(combine, (jnp.broadcast_to(a, u.shape), u))
        return jax.vmap(self.out)(h)


class Block(eqx.Module):
    """Pre-norm residual block: ``x + mixer(LN(x))``, then ``x + MLP(LN(x))``."""

    ln1: eqx.nn.LayerNorm
    mixer: eqx.Module
    ln2: eqx.nn.LayerNorm
    mlp: eqx.nn.MLP

    def __call__(self, x: Float[Array, "t d"]) -> Float[Array, "t d"]:
        x = x + self.mixer(jax.vmap(self.ln1)(x))
        return x + jax.vmap(self.mlp)(jax.vmap(self.ln2)(x))


class TokenHead(eqx.Module):
    ln: eqx.nn.LayerNorm
    linear: eqx.nn.Linear

    def __call__(self, x: Float[Array, "t d"]) -> Float[Array, "t v"]:
        return jax.vmap(lambda h: self.linear(self.ln(h)))(x)


class TokenEmbedding(eqx.Module):
    embedding: eqx.nn.Embedding

    def __call__(self, x: Int[Array, " t"]) -> Float[Array, "t d"]:
        return jax.vmap(self.embedding)(x)


class NgramLinear(eqx.Module):
    """The trivial text model: ``logits_t = b + sum_{i<c} W_i[x_{t-i}]``, linear in the one-hot
    codes of the last ``c`` characters (a log-linear c-gram)."""

    weight: Float[Array, "c v v"]
    bias: Float[Array, " v"]

    def __call__(self, x: Int[Array, " t"]) -> Float[Array, "t v"]:
        c = self.weight.shape[0]
        padded = jnp.concatenate([jnp.full(c - 1, -1), x])
        logits = self.bias + sum(
            jnp.where(padded[c - 1 - i: c - 1 - i + x.shape[0], None] >= 0,
                      self.weight[i][padded[c - 1 - i: c - 1 - i + x.shape[0]]], 0.0)
            for i in range(c))
        return logits


# ----------------------------------------------------------------------------- the network


class Network(eqx.Module):
    """``head(stages[K-1](... stages[0](stem(x))))``; ``part`` says what a conversion swaps:
    ``"stage"`` (the whole stage) or ``"mixer"`` (the stage's token mixer)."""

    stem: eqx.Module
    stages: tuple[eqx.Module, ...]
    head: eqx.Module
    part: str = eqx.field(static=True)

    def features(self, x: Array) -> list[Array]:
        """Output of every stage (the aligned representations), for one example."""
        h, out = self.stem(x), []
        for s in self.stages:
            h = s(h)
            out.append(h)
        return out

    def __call__(self, x: Array) -> Array:
        h = self.stem(x)
        for s in self.stages:
            h = s(h)
        return self.head(h)


def _part_of(k: int):
    return lambda net: net.stages[k] if net.part == "stage" else net.stages[k].mixer


def get_part(net: Network, k: int) -> eqx.Module:
    return _part_of(k)(net)


def swap(net: Network, k: int, donor: Network) -> Network:
    """``net`` with its part k replaced by ``donor``'s part k."""
    return eqx.tree_at(_part_of(k), net, get_part(donor, k))


def swap_all(net: Network, ks: Sequence[int], donor: Network) -> Network:
    for k in ks:
        net = swap(net, k, donor)
    return net


def n_parts(net: Network) -> int:
    return len(net.stages)


# ----------------------------------------------------------------------------- builders


def image_shapes(canvas: int, channels: Sequence[int]) -> list[tuple[int, ...]]:
    """Output shape of every CNN stage: halving pools, then a global pool."""
    shapes, side = [], canvas
    for c in channels[:-1]:
        side //= 2
        shapes.append((c, side, side))
    return shapes + [(channels[-1],)]


def make_cnn(key: PRNGKeyArray, canvas: int, channels: Sequence[int]) -> Network:
    """The guide: ``len(channels)`` conv stages (the last with a global max-pool) + linear head."""
    keys = jax.random.split(key, len(channels) + 1)
    ins = (1, *channels[:-1])
    stages = tuple(ConvStage(i, o, j == len(channels) - 1, key=k)
                   for j, (i, o, k) in enumerate(zip(ins, channels, keys)))
    return Network(AddChannel(), stages, eqx.nn.Linear(channels[-1], 10, key=keys[-1]), "stage")


def make_mlp(key: PRNGKeyArray, canvas: int, channels: Sequence[int]) -> Network:
    """The target: one maxout stage per CNN stage, with the same input and output shapes and as
    many hidden units as the CNN stage has before its pool (groups of 4 for a 2x2 pool, of every
    position of a channel for the global pool)."""
    shapes = image_shapes(canvas, channels)
    keys = jax.random.split(key, len(shapes) + 1)
    sizes = [canvas * canvas] + [math.prod(s) for s in shapes]
    pools = [4] * (len(shapes) - 1) + [(canvas >> (len(shapes) - 1)) ** 2]
    stages = tuple(MaxoutStage(eqx.nn.Linear(sizes[j], sizes[j + 1] * pools[j], key=keys[j]),
                               pools[j], shapes[j]) for j in range(len(shapes)))
    return Network(AddChannel(), stages, eqx.nn.Linear(channels[-1], 10, key=keys[-1]), "stage")


def make_image_linear(key: PRNGKeyArray, canvas: int) -> Network:
    """The trivial image model: softmax regression on the raw pixels."""
    return Network(Flatten(), (), eqx.nn.Linear(canvas * canvas, 10, key=key), "stage")


def make_sequence_model(key: PRNGKeyArray, vocab: int, d: int, n_layers: int, n_heads: int,
                        mlp_ratio: int, mixer: Literal["attention", "gru", "linear"]) -> Network:
    """A pre-norm residual language model whose token mixers are all ``mixer``."""
    keys = jax.random.split(key, 2 * n_layers + 2)

    def make_mixer(k):
        if mixer == "attention":
            return CausalAttention(d, n_heads, key=k)
        if mixer == "gru":
            return GRUMixer(d, key=k)
        return LinearRNNMixer(d, key=k)

    blocks = tuple(
        Block(eqx.nn.LayerNorm(d), make_mixer(keys[2 * j]), eqx.nn.LayerNorm(d),
              eqx.nn.MLP(d, d, mlp_ratio * d, 1, activation=jax.nn.gelu, key=keys[2 * j + 1]))
        for j in range(n_layers))
    emb = TokenEmbedding(eqx.nn.Embedding(vocab, d, key=keys[-2]))
    head = TokenHead(eqx.nn.LayerNorm(d), eqx.nn.Linear(d, vocab, key=keys[-1]))
    return Network(emb, blocks, head, "mixer")


def make_text_linear(key: PRNGKeyArray, vocab: int, context: int) -> Network:
    w = 0.01 * jax.random.normal(key, (context, vocab, vocab))
    return Network(eqx.nn.Identity(), (), NgramLinear(w, jnp.zeros(vocab)), "stage")
