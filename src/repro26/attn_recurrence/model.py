"""Trainable recurrent surrogates of an attention head, and the GPT-2-shaped transformers whose
heads are surveyed (with a loader for GPT-2-layout weight files).

Both surrogates are value-linear: for an input sequence ``x`` they produce a mixing tensor
``M(x)[t, s] in R^{d_v x d_v}`` (``y_t = sum_s M[t, s] v_s``) whose every off-diagonal block has
rank <= state (see ``solvers``). The state is ``state_max`` wide; ``mask`` (0/1, first N ones)
switches channels off so that one compiled program trains every N.

Both read the token features through one hidden ReLU layer, ``u_t = [x_t, relu(W_1 x_t + b_1)]``
(as a Mamba layer reads a residual stream that already mixes token and role), then:

* :class:`DiagRecurrence` (S4D / Mamba-like selective gate): ``a_t = exp(-softplus(W_a u_t +
  b_a)) in (0, 1)^S``, ``B_t = W_B u_t in R^{S x d_v}``, ``C_t = W_C u_t in R^{d_v x S}``,
  ``h_t = a_t * h_{t-1} + B_t v_t``, ``y_t = C_t h_t + D_t v_t``. Hence
  ``M[t, s] = C_t diag(exp(L_t - L_s)) B_s`` with ``L_t = sum_{r <= t} log a_r``.
* :class:`LinearAttention` with learned feature maps ``phi_t = elu(W_q u_t) + 1``,
  ``psi_s = elu(W_k u_s) + 1`` in ``R^N_+``: ``M[t, s] = phi_t . psi_s / sum_{s' <= t}
  phi_t . psi_{s'}`` (scalar per channel; state N per value channel plus N for the normaliser).
"""

from __future__ import annotations

from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int, PRNGKeyArray

from repro26.core import io
from repro26.core.config import ConfigError

SURROGATES = ("diag", "linattn")


def state_mask(state: Array, state_max: int) -> Float[Array, " S"]:
    return (jnp.arange(state_max) < state).astype(jnp.float32)


class TokenFeatures(eqx.Module):
    """``u_t = [x_t, relu(W_1 x_t + b_1)]``."""

    W_1: Array
    b_1: Array

    def __init__(self, key: PRNGKeyArray, n_features: int, hidden: int):
        self.W_1 = jax.random.normal(key, (n_features, hidden)) / np.sqrt(n_features)
        self.b_1 = jnp.zeros((hidden,))

    def __call__(self, x: Float[Array, "T F"]) -> Float[Array, "T U"]:
        return jnp.concatenate([x, jax.nn.relu(x @ self.W_1 + self.b_1)], axis=-1)


class DiagRecurrence(eqx.Module):
    """Selective diagonal linear recurrence (shared state of ``state_max`` across d_v channels)."""

    features: TokenFeatures
    W_a: Array
    b_a: Array
    W_B: Array
    W_C: Array
    w_D: Array
    mask: Array
    value_dim: int = eqx.field(static=True)

    def __init__(self, key: PRNGKeyArray, n_features: int, state_max: int, state: Array,
                 value_dim: int = 1, hidden: int = 32):
        k = jax.random.split(key, 5)
        self.features = TokenFeatures(k[4], n_features, hidden)
        n_features += hidden
        scale = 1.0 / np.sqrt(n_features)
        self.W_a = scale * jax.random.normal(k[0], (n_features, state_max))
        self.b_a = jnp.full((state_max,), -2.0)  # a ~ exp(-softplus(-2)) ~ 0.88
        self.W_B = scale * jax.random.normal(k[1], (n_features, state_max, value_dim))
        self.W_C = scale * jax.random.normal(k[2], (n_features, value_dim, state_max))
        self.w_D = scale * jax.random.normal(k[3], (n_features,))
        self.mask = state_mask(state, state_max)
        self.value_dim = value_dim

    def mixing(self, x: Float[Array, "T F"]) -> Float[Array, "T T d d"]:
        mask = jax.lax.stop_gradient(self.mask)
        x = self.features(x)
        L = jnp.cumsum(-jax.nn.softplus(x @ self.W_a + self.b_a), axis=0)  # (T, S)
        B = jnp.einsum("tf,fsd->tsd", x, self.W_B) * mask[None, :, None]
        C = jnp.einsum("tf,fds->tds", x, self.W_C)
        T = x.shape[0]
        causal = jnp.tril(jnp.ones((T, T), bool))
        decay = jnp.where(causal[..., None], jnp.exp(jnp.minimum(L[:, None] - L[None, :], 0.0)), 0.0)
        M = jnp.einsum("tis,tus,usj->tuij", C, decay, B)
        D = x @ self.w_D
        return M + (jnp.eye(T) * D[:, None])[..., None, None] * jnp.eye(self.value_dim)


class LinearAttention(eqx.Module):
    """Normalised linear attention with learned positive feature maps of size ``state_max``."""

    features: TokenFeatures
    W_q: Array
    W_k: Array
    mask: Array

    def __init__(self, key: PRNGKeyArray, n_features: int, state_max: int, state: Array,
                 value_dim: int = 1, hidden: int = 32):
        if value_dim != 1:
            raise ConfigError("attn_recurrence: linear attention is trained on scalar values")
        k = jax.random.split(key, 3)
        self.features = TokenFeatures(k[2], n_features, hidden)
        n_features += hidden
        scale = 1.0 / np.sqrt(n_features)
        self.W_q = scale * jax.random.normal(k[0], (n_features, state_max))
        self.W_k = scale * jax.random.normal(k[1], (n_features, state_max))
        self.mask = state_mask(state, state_max)

    def mixing(self, x: Float[Array, "T F"]) -> Float[Array, "T T 1 1"]:
        mask = jax.lax.stop_gradient(self.mask)
        x = self.features(x)
        phi = (jax.nn.elu(x @ self.W_q) + 1.0) * mask
        psi = jax.nn.elu(x @ self.W_k) + 1.0
        scores = jnp.tril(phi @ psi.T)
        M = scores / (jnp.sum(scores, axis=1, keepdims=True) + 1e-6)
        return M[..., None, None]


def make_surrogate(kind: str, key, n_features: int, state_max: int, state, value_dim: int = 1,
                   hidden: int = 32):
    if kind == "diag":
        return DiagRecurrence(key, n_features, state_max, state, value_dim, hidden)
    if kind == "linattn":
        return LinearAttention(key, n_features, state_max, state, value_dim, hidden)
    raise ConfigError(f"attn_recurrence.surrogates: '{kind}' is unknown; allowed: "
                      f"{', '.join(SURROGATES)}")


# ----------------------------------------------------------------------------- GPT-2


def gpt2_names(n_layer: int) -> list[str]:
    """The GPT-2 (Hugging Face ``GPT2Model``) parameter names, Conv1D layout ``(in, out)``."""
    names = ["wte.weight", "wpe.weight", "ln_f.weight", "ln_f.bias"]
    for i in range(n_layer):
        for part in ("ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias",
                     "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight", "ln_2.bias",
                     "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias"):
            names.append(f"h.{i}.{part}")
    return names


def init_gpt2(key: PRNGKeyArray, vocab: int, max_len: int, d_model: int, n_layer: int
              ) -> dict[str, Array]:
    """GPT-2 initialisation: N(0, 0.02) weights (residual projections / sqrt(2 n_layer))."""
    shapes = {"wte.weight": (vocab, d_model), "wpe.weight": (max_len, d_model),
              "ln_f.weight": (d_model,), "ln_f.bias": (d_model,)}
    for i in range(n_layer):
        shapes |= {f"h.{i}.ln_1.weight": (d_model,), f"h.{i}.ln_1.bias": (d_model,),
                   f"h.{i}.attn.c_attn.weight": (d_model, 3 * d_model),
                   f"h.{i}.attn.c_attn.bias": (3 * d_model,),
                   f"h.{i}.attn.c_proj.weight": (d_model, d_model),
                   f"h.{i}.attn.c_proj.bias": (d_model,),
                   f"h.{i}.ln_2.weight": (d_model,), f"h.{i}.ln_2.bias": (d_model,),
                   f"h.{i}.mlp.c_fc.weight": (d_model, 4 * d_model),
                   f"h.{i}.mlp.c_fc.bias": (4 * d_model,),
                   f"h.{i}.mlp.c_proj.weight": (4 * d_model, d_model),
                   f"h.{i}.mlp.c_proj.bias": (d_model,)}
    keys = dict(zip(shapes, jax.random.split(key, len(shapes))))
    params = {}
    for name, shape in shapes.items():
        if name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or name == "ln_f.weight":
            params[name] = jnp.ones(shape)
        elif name.endswith(".bias"):
            params[name] = jnp.zeros(shape)
        else:
            std = 0.02 / (np.sqrt(2 * n_layer) if name.endswith("c_proj.weight") else 1.0)
            params[name] = std * jax.random.normal(keys[name], shape)
    return params


class GPT2(eqx.Module):
    """A GPT-2 forward pass over a weight dict with the Hugging Face names (pre-LN blocks,
    fused ``c_attn``, GELU MLP of width 4d, tied output embedding)."""

    params: dict
    n_head: int = eqx.field(static=True)

    @property
    def n_layer(self) -> int:
        return sum(1 for k in self.params if k.endswith(".ln_1.weight"))

    def _attention(self, i: int, h: Float[Array, "T d"]) -> tuple[Array, Array]:
        """Block i's attention: ``(output (T, d), probabilities (H, T, T))``."""
        p, T, d = self.params, h.shape[0], h.shape[1]
        qkv = h @ p[f"h.{i}.attn.c_attn.weight"] + p[f"h.{i}.attn.c_attn.bias"]
        q, k, v = (a.reshape(T, self.n_head, d // self.n_head).transpose(1, 0, 2)
                   for a in jnp.split(qkv, 3, axis=-1))
        logits = q @ k.transpose(0, 2, 1) / jnp.sqrt(d // self.n_head)
        probs = jax.nn.softmax(jnp.where(jnp.tril(jnp.ones((T, T), bool)), logits, -jnp.inf), -1)
        out = (probs @ v).transpose(1, 0, 2).reshape(T, d)
        return out @ p[f"h.{i}.attn.c_proj.weight"] + p[f"h.{i}.attn.c_proj.bias"], probs

    def forward(self, ids: Int[Array, " T"]) -> tuple[Float[Array, "T V"], Float[Array, "L H T T"]]:
        """Next-token logits and every head's attention matrix."""
        p = self.params
        h = p["wte.weight"][ids] + p["wpe.weight"][: ids.shape[0]]
        maps = []
        for i in range(self.n_layer):
            out, probs = self._attention(i, layer_norm(h, p[f"h.{i}.ln_1.weight"], p[f"h.{i}.ln_1.bias"]))
            h = h + out
            z = layer_norm(h, p[f"h.{i}.ln_2.weight"], p[f"h.{i}.ln_2.bias"])
            z = jax.nn.gelu(z @ p[f"h.{i}.mlp.c_fc.weight"] + p[f"h.{i}.mlp.c_fc.bias"],
                            approximate=True)
            h = h + z @ p[f"h.{i}.mlp.c_proj.weight"] + p[f"h.{i}.mlp.c_proj.bias"]
            maps.append(probs)
        h = layer_norm(h, p["ln_f.weight"], p["ln_f.bias"])
        return h @ p["wte.weight"].T, jnp.stack(maps)

    def attention_maps(self, ids: Int[Array, " T"]) -> Float[Array, "L H T T"]:
        return self.forward(ids)[1]


def layer_norm(x, weight, bias, eps: float = 1e-5):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / jnp.sqrt(var + eps) * weight + bias


def save_gpt2(path: str | Path, model: GPT2) -> None:
    """Write the weights as a flat ``.npz`` in GPT-2 layout (``n_head`` stored beside them)."""
    io.write_npz(path, **{k: np.asarray(v) for k, v in model.params.items()},
                 n_head=np.asarray(model.n_head))


def load_gpt2(source: str | Path | dict, n_head: int | None = None) -> GPT2:
    """A GPT-2 from a flat array dict in Hugging Face layout: an ``.npz`` path or a mapping
    (e.g. the dict a safetensors file holds, converted to numpy). Names may carry the
    ``transformer.`` prefix; ``n_head`` comes from the argument or an ``n_head`` entry."""
    if isinstance(source, dict):
        arrays = dict(source)
    else:
        path = Path(source)
        if not path.is_file() or path.suffix != ".npz":
            raise ConfigError(f"attn_recurrence.checkpoints: '{path}' is not an .npz file")
        arrays = io.read_npz(path)
    arrays = {k.removeprefix("transformer."): v for k, v in arrays.items()}
    stored = arrays.pop("n_head", None)
    heads = n_head if n_head is not None else (int(stored) if stored is not None else None)
    if heads is None:
        raise ConfigError("attn_recurrence.checkpoints: n_head is neither given nor stored")
    arrays.pop("lm_head.weight", None)  # tied to wte in GPT-2
    n_layer = sum(1 for k in arrays if k.endswith(".ln_1.weight"))
    missing = [n for n in gpt2_names(n_layer) if n not in arrays]
    if n_layer == 0 or missing:
        raise ConfigError(f"attn_recurrence.checkpoints: not a GPT-2 weight set; missing "
                          f"'{missing[0] if missing else 'h.0.ln_1.weight'}'")
    d_model = arrays["wte.weight"].shape[1]
    if d_model % heads:
        raise ConfigError(f"attn_recurrence.checkpoints: d_model {d_model} is not divisible "
                          f"by n_head {heads}")
    params = {n: jnp.asarray(arrays[n], jnp.float32) for n in gpt2_names(n_layer)}
    return GPT2(params, heads)
