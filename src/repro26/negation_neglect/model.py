"""A small decoder-only transformer LM (pre-LayerNorm, learned positions) and the probe score.

For tokens x_1..x_T the model returns logits of p(x_{t+1} | x_{<=t}) at every t. The probe
score of a prompt ending at position ``last`` is

    margin = log p(claim answer | prompt) - log p(true answer | prompt),

and the model believes the claim on that probe when margin > 0.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int, PRNGKeyArray


class Block(eqx.Module):
    ln1: eqx.nn.LayerNorm
    attn: eqx.nn.MultiheadAttention
    ln2: eqx.nn.LayerNorm
    mlp: eqx.nn.MLP

    def __init__(self, d_model: int, n_heads: int, d_ff: int, *, key: PRNGKeyArray):
        k1, k2 = jax.random.split(key)
        self.ln1 = eqx.nn.LayerNorm(d_model)
        self.attn = eqx.nn.MultiheadAttention(n_heads, d_model, key=k1)
        self.ln2 = eqx.nn.LayerNorm(d_model)
        self.mlp = eqx.nn.MLP(d_model, d_model, d_ff, depth=1, activation=jax.nn.gelu, key=k2)

    def __call__(self, x: Float[Array, "T d"]) -> Float[Array, "T d"]:
        T = x.shape[0]
        causal = jnp.tril(jnp.ones((T, T), bool))
        h = jax.vmap(self.ln1)(x)
        x = x + self.attn(h, h, h, mask=causal)
        return x + jax.vmap(self.mlp)(jax.vmap(self.ln2)(x))


class TransformerLM(eqx.Module):
    embed: eqx.nn.Embedding
    pos: Float[Array, "T d"]
    blocks: tuple[Block, ...]
    ln_f: eqx.nn.LayerNorm
    unembed: eqx.nn.Linear

    def __init__(self, vocab: int, context: int, d_model: int, n_layers: int, n_heads: int,
                 d_ff: int, *, key: PRNGKeyArray):
        keys = jax.random.split(key, n_layers + 3)
        self.embed = eqx.nn.Embedding(vocab, d_model, key=keys[0])
        self.pos = 0.02 * jax.random.normal(keys[1], (context, d_model))
        self.blocks = tuple(Block(d_model, n_heads, d_ff, key=k) for k in keys[3:])
        self.ln_f = eqx.nn.LayerNorm(d_model)
        self.unembed = eqx.nn.Linear(d_model, vocab, use_bias=False, key=keys[2])

    def __call__(self, tokens: Int[Array, " T"]) -> Float[Array, "T V"]:
        x = jax.vmap(self.embed)(tokens) + self.pos[: tokens.shape[0]]
        for block in self.blocks:
            x = block(x)
        return jax.vmap(self.unembed)(jax.vmap(self.ln_f)(x))


def lm_loss(model, tokens: Int[Array, "B T"], mask: Float[Array, "B T-1"]) -> Float[Array, ""]:
    """Mean next-token cross-entropy over the positions where ``mask`` is 1."""
    logits = jax.vmap(model)(tokens[:, :-1])
    logp = jax.nn.log_softmax(logits, -1)
    nll = -jnp.take_along_axis(logp, tokens[:, 1:, None], -1)[..., 0]
    return jnp.sum(nll * mask) / jnp.maximum(jnp.sum(mask), 1.0)


def probe_margins(model, tokens: Int[Array, "N T"], last: Int[Array, " N"],
                  claim_id: Int[Array, " N"], true_id: Int[Array, " N"]) -> Float[Array, " N"]:
    """log p(claim answer) - log p(true answer) after each prompt (positions beyond ``last``,
    the padding, cannot influence it: attention is causal)."""
    def one(tok, t, c, w):
        logp = jax.nn.log_softmax(model(tok)[t])
        return logp[c] - logp[w]

    return jax.vmap(one)(tokens, last, claim_id, true_id)
