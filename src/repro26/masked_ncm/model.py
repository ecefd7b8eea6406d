"""The Masked NCM: attention-based mechanisms that read their parents through an adjacency mask.

A Masked NCM over d discrete variables (cardinality K) is the SCM

    V_i = argmax_k ( f_i(pa_i^M, U_c, theta)_k + G_ik ),     G_ik ~ Gumbel(0, 1) i.i.d.,

where M is a (d, d) adjacency mask (``M[j, i] = 1``: j -> i), the logits f_i come from an
attention block and U_c is an optional discrete confounder (``num_latent`` states, learnable
prior pi) read by the variables flagged in ``conf``. The Gumbel variables are the exogenous
noise of each mechanism; by the Gumbel-max trick P(V_i = k | pa_i, u) = softmax(f_i)_k, so the
likelihood and every interventional distribution are exact finite sums (:mod:`losses`).

Mechanism of V_i (one layer, H heads): tokens t_j = E[j, v_j] + P[j] for every variable, an
exogenous token e_i of V_i and the confounder token l_u. The query of V_i is
q_i = (P[i] + e_i) W_q; attention logits q_i . k_j / sqrt(D_h) are set to -inf where
M[j, i] = 0 (and on l_u where V_i is not confounded), so V_i reads exactly its parents in M.
The attended vector (plus P[i]) goes through an MLP to K logits. Because the token of each
(variable, value) pair has its own embedding, the attended sum is injective in pa_i when
D >= d K, so the MLP can realise any CPT: the model is nonparametric over the DAG M.

Masks are inputs, not parameters, but one set of weights is trained per mask (vmapped), and the
"masked" model class is the union over the DAGs of the equivalence class. The abstract's single
model over all masks (shared weights, the mask as input) is not built: sharing couples the
per-mask constrained problems (a step toward one mask's bound moves every other mask's query),
which needs its own optimisation design. In the Markovian setting the per-mask model is
therefore IDA with a neural fit of each DAG's conditionals.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int, PRNGKeyArray

NEG = -1e9


class MaskedNCM(eqx.Module):
    value_embed: Float[Array, "d k e"]
    pos_embed: Float[Array, "d e"]
    exo_embed: Float[Array, "d e"]
    latent_embed: Float[Array, "m e"]
    latent_logits: Float[Array, " m"]
    w_q: Float[Array, "h e c"]
    w_k: Float[Array, "h e c"]
    w_v: Float[Array, "h e c"]
    w_o: Float[Array, "hc e"]
    mlp: eqx.nn.MLP
    num_nodes: int = eqx.field(static=True)
    card: int = eqx.field(static=True)

    def __init__(self, num_nodes: int, card: int, *, embed_dim: int, heads: int, hidden: int,
                 num_latent: int, key: PRNGKeyArray):
        d, k, e = num_nodes, card, embed_dim
        c = max(embed_dim // heads, 1)
        keys = jax.random.split(key, 9)
        self.value_embed = jax.random.normal(keys[0], (d, k, e)) / jnp.sqrt(e)
        self.pos_embed = jax.random.normal(keys[1], (d, e)) / jnp.sqrt(e)
        self.exo_embed = jax.random.normal(keys[2], (d, e)) / jnp.sqrt(e)
        self.latent_embed = jax.random.normal(keys[3], (num_latent, e))
        self.latent_logits = jnp.zeros(num_latent)
        scale = 1.0 / jnp.sqrt(e)
        self.w_q = jax.random.normal(keys[4], (heads, e, c)) * scale
        self.w_k = jax.random.normal(keys[5], (heads, e, c)) * scale
        self.w_v = jax.random.normal(keys[6], (heads, e, c)) * scale
        self.w_o = jax.random.normal(keys[7], (heads * c, e)) / jnp.sqrt(heads * c)
        self.mlp = eqx.nn.MLP(e, k, hidden, depth=2, activation=jax.nn.gelu, key=keys[8])
        self.num_nodes, self.card = d, k

    @property
    def num_latent(self) -> int:
        return self.latent_logits.shape[0]

    def logits(self, values: Int[Array, " d"], latent: Int[Array, ""], mask: Float[Array, "d d"],
               conf: Float[Array, " d"]) -> Float[Array, "d k"]:
        """f_i(pa_i^M, u) for every i at one assignment ``values`` and confounder state ``latent``."""
        d = self.num_nodes
        tokens = self.value_embed[jnp.arange(d), values] + self.pos_embed          # (d, e)
        lat = self.latent_embed[latent]                                            # (e,)
        q = jnp.einsum("ie,hec->hic", self.pos_embed + self.exo_embed, self.w_q)   # (h, d, c)
        k_val = jnp.einsum("je,hec->hjc", tokens, self.w_k)
        v_val = jnp.einsum("je,hec->hjc", tokens, self.w_v)
        k_exo = jnp.einsum("ie,hec->hic", self.exo_embed, self.w_k)
        v_exo = jnp.einsum("ie,hec->hic", self.exo_embed, self.w_v)
        k_lat = jnp.einsum("e,hec->hc", lat, self.w_k)
        v_lat = jnp.einsum("e,hec->hc", lat, self.w_v)
        scale = 1.0 / jnp.sqrt(q.shape[-1])
        s_val = jnp.einsum("hic,hjc->hij", q, k_val) * scale                      # (h, i, j)
        s_val = jnp.where(mask.T[None] > 0, s_val, NEG)                            # i reads j iff M[j, i]
        s_exo = jnp.einsum("hic,hic->hi", q, k_exo)[..., None] * scale
        s_lat = jnp.einsum("hic,hc->hi", q, k_lat)[..., None] * scale
        s_lat = jnp.where(conf[None, :, None] > 0, s_lat, NEG)
        w = jax.nn.softmax(jnp.concatenate([s_val, s_exo, s_lat], axis=-1), axis=-1)
        out = (jnp.einsum("hij,hjc->hic", w[..., :d], v_val)
               + w[..., d:d + 1] * v_exo + w[..., d + 1:] * v_lat[:, None, :])     # (h, d, c)
        h = jnp.transpose(out, (1, 0, 2)).reshape(d, -1) @ self.w_o + self.pos_embed
        return jax.vmap(self.mlp)(h)


def sample(model: MaskedNCM, mask: Float[Array, "d d"], conf: Float[Array, " d"],
           order: Int[Array, " d"], key: PRNGKeyArray, num: int,
           do_var: int = -1, do_val: int = 0) -> Int[Array, "n d"]:
    """Draw ``num`` samples by running the SCM: U_c ~ pi, then V_i = argmax(f_i + G_i) along the
    topological ``order`` of the mask; ``do_var >= 0`` replaces that mechanism by V = do_val."""
    d = model.num_nodes

    def one(k):
        k_lat, k_gum = jax.random.split(k)
        u = jax.random.categorical(k_lat, model.latent_logits)
        gumbel = jax.random.gumbel(k_gum, (d, model.card))

        def step(values, i):
            logit = model.logits(values, u, mask, conf)[i]
            v = jnp.argmax(logit + gumbel[i])
            v = jnp.where(i == do_var, do_val, v)
            return values.at[i].set(v), None

        values, _ = jax.lax.scan(step, jnp.zeros(d, dtype=jnp.int32), order)
        return values

    return jax.vmap(one)(jax.random.split(key, num))
