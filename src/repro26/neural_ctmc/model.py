"""One Equinox transformer backbone for every method, and the autoregressive scorer.

``DiffusionTransformer`` is a pre-LayerNorm transformer over a length-``L`` token sequence.
Bidirectional (``causal=False``) and time conditioned, it is the shared backbone of Neural CTMC
and the MDLM / SEDD / GIDD baselines: each method reads the same ``(L, V)`` output ``logits``,
and Neural CTMC also reads the scalar ``rate`` head (one number per position). The two heads
of Neural CTMC (abstract: "an exit rate (when to jump) and a jump distribution (where to
jump) via two dedicated network heads") are ``rate`` and ``logits``; how each method turns them
into reverse rates lives in :mod:`repro26.neural_ctmc.losses`.

With ``causal=True`` and no time input it is the autoregressive language model that scores
samples (the scaled stand-in for Gemma2-9B in the paper's generative perplexity).

Time conditioning: ``t`` is embedded with sinusoidal features ``sin/cos(2^k pi t)``, ``t`` and
``log t`` (the reverse rates scale like powers of ``t`` as ``t -> 0``: ``~1/t`` for a noisy token,
``~t`` for a clean one, so the log-rate heads need ``log t``) and an MLP, and the embedding is added to the residual stream before every block. Output heads start at
zero, so an untrained model has uniform jump distributions / predictions.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int, PRNGKeyArray

from repro26.neural_ctmc.names import METHODS


class Block(eqx.Module):
    norm1: eqx.nn.LayerNorm
    attn: eqx.nn.MultiheadAttention
    norm2: eqx.nn.LayerNorm
    fc1: eqx.nn.Linear
    fc2: eqx.nn.Linear

    def __init__(self, d: int, n_heads: int, mlp_ratio: int, *, key: PRNGKeyArray):
        k1, k2, k3 = jax.random.split(key, 3)
        self.norm1 = eqx.nn.LayerNorm(d)
        self.attn = eqx.nn.MultiheadAttention(n_heads, d, key=k1)
        self.norm2 = eqx.nn.LayerNorm(d)
        self.fc1 = eqx.nn.Linear(d, mlp_ratio * d, key=k2)
        self.fc2 = eqx.nn.Linear(mlp_ratio * d, d, key=k3)

    def __call__(self, h: Float[Array, "L d"], mask: jax.Array | None) -> Float[Array, "L d"]:
        a = jax.vmap(self.norm1)(h)
        h = h + self.attn(a, a, a, mask=mask)
        m = jax.vmap(self.norm2)(h)
        return h + jax.vmap(self.fc2)(jax.nn.gelu(jax.vmap(self.fc1)(m)))


class DiffusionTransformer(eqx.Module):
    """``(x, t) -> (logits (L, V_out), rate (L,))``; ``rate`` is zero without a rate head."""

    embed: eqx.nn.Embedding
    pos: Float[Array, "L d"]
    time_mlp: eqx.nn.MLP | None
    blocks: tuple[Block, ...]
    norm: eqx.nn.LayerNorm
    head: eqx.nn.Linear
    rate_head: eqx.nn.Linear | None
    causal: bool = eqx.field(static=True)
    n_freq: int = eqx.field(static=True)

    def __init__(self, *, vocab_in: int, vocab_out: int, seq_len: int, d_model: int,
                 n_layers: int, n_heads: int, mlp_ratio: int = 4, rate_head: bool = False,
                 causal: bool = False, time_cond: bool = True, n_freq: int = 8,
                 pos_scale: float = 0.02, key: PRNGKeyArray):
        keys = jax.random.split(key, n_layers + 5)
        self.embed = eqx.nn.Embedding(vocab_in, d_model, key=keys[0])
        self.pos = pos_scale * jax.random.normal(keys[1], (seq_len, d_model))
        self.time_mlp = (eqx.nn.MLP(2 * n_freq + 2, d_model, d_model, 1, activation=jax.nn.gelu,
                                    key=keys[2]) if time_cond else None)
        self.blocks = tuple(Block(d_model, n_heads, mlp_ratio, key=k) for k in keys[5:])
        self.norm = eqx.nn.LayerNorm(d_model)
        head = eqx.nn.Linear(d_model, vocab_out, key=keys[3])
        self.head = eqx.tree_at(lambda m: (m.weight, m.bias), head,
                                (jnp.zeros_like(head.weight), jnp.zeros_like(head.bias)))
        if rate_head:
            rate = eqx.nn.Linear(d_model, 1, key=keys[4])
            self.rate_head = eqx.tree_at(lambda m: (m.weight, m.bias), rate,
                                         (jnp.zeros_like(rate.weight), jnp.zeros_like(rate.bias)))
        else:
            self.rate_head = None
        self.causal = causal
        self.n_freq = n_freq

    @property
    def vocab_size(self) -> int:
        """Number of output classes ``V`` (real tokens; MDLM's mask is input-only)."""
        return self.head.out_features

    def __call__(self, x: Int[Array, " L"], t: Float[Array, ""]
                 ) -> tuple[Float[Array, "L V"], Float[Array, " L"]]:
        h = jax.vmap(self.embed)(x) + self.pos[: x.shape[0]]
        temb = 0.0
        if self.time_mlp is not None:
            freqs = (2.0 ** jnp.arange(self.n_freq)) * jnp.pi * t
            log_t = jnp.log(jnp.maximum(t, 1e-5))[None] / 5.0
            temb = self.time_mlp(jnp.concatenate([jnp.sin(freqs), jnp.cos(freqs), t[None], log_t]))
        length = x.shape[0]
        mask = jnp.tril(jnp.ones((length, length), bool)) if self.causal else None
        for block in self.blocks:
            h = block(h + temb, mask)
        h = jax.vmap(self.norm)(h)
        logits = jax.vmap(self.head)(h)
        if self.rate_head is None:
            return logits, jnp.zeros(length, logits.dtype)
        return logits, jax.vmap(self.rate_head)(h)[:, 0]


def make_denoiser(method: str, *, vocab_size: int, seq_len: int, d_model: int, n_layers: int,
                  n_heads: int, mlp_ratio: int, key: PRNGKeyArray, pos_scale: float = 0.02
                  ) -> DiffusionTransformer:
    """The backbone for ``method``: MDLM reads one extra input token (the mask, id ``V``);
    Neural CTMC has the extra exit-rate head. Everything else is identical. ``pos_scale``: the
    standard deviation of the initial position embeddings (the token embeddings start at 1; at
    0.02 a width-32 model on character text sat at the unigram level for 1,000 steps, since it
    could not tell its neighbours apart)."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; use one of {METHODS}")
    return DiffusionTransformer(
        vocab_in=vocab_size + (method == "mdlm"), vocab_out=vocab_size, seq_len=seq_len,
        d_model=d_model, n_layers=n_layers, n_heads=n_heads, mlp_ratio=mlp_ratio,
        rate_head=method == "neural_ctmc", pos_scale=pos_scale, key=key)


def make_scorer(*, vocab_size: int, seq_len: int, d_model: int, n_layers: int, n_heads: int,
                mlp_ratio: int, key: PRNGKeyArray) -> DiffusionTransformer:
    """Causal language model over ``[BOS, x_1..x_{L-1}]`` predicting ``x_1..x_L`` (BOS = V)."""
    return DiffusionTransformer(
        vocab_in=vocab_size + 1, vocab_out=vocab_size, seq_len=seq_len, d_model=d_model,
        n_layers=n_layers, n_heads=n_heads, mlp_ratio=mlp_ratio, causal=True, time_cond=False,
        key=key)


def scorer_nll(scorer: DiffusionTransformer, x: Int[Array, "B L"]) -> Float[Array, " B"]:
    """Mean negative log-likelihood per token (nats) of each sequence under the AR scorer."""
    vocab = scorer.vocab_size
    inp = jnp.concatenate([jnp.full((x.shape[0], 1), vocab, x.dtype), x[:, :-1]], axis=1)
    logits, _ = jax.vmap(scorer, in_axes=(0, None))(inp, jnp.zeros(()))
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.take_along_axis(logp, x[..., None], axis=-1)[..., 0].mean(axis=-1)


def n_parameters(model) -> int:
    """Trainable scalars of one (unstacked) model."""
    return int(sum(x.size for x in jax.tree_util.tree_leaves(eqx.filter(model, eqx.is_inexact_array))))
