"""Next-step surrogates x_{t+1} = x_t + head(body(x_t)) on (C, H, W) fields, side by side: a
small U-Net (convolutional), an FNO (spectral) and a ViT (transformer). Each splits into a
shared ``body`` and a final linear ``head`` (the layer GradNorm balances gradient norms on).
The trivial baselines (persistence, linear extrapolation) live in :mod:`evaluate`."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

MODELS = ("unet", "fno", "vit")


class UNet(eqx.Module):
    """Two-level U-Net: [conv3×3 ×2] down (stride 2) [×2] down [×2] up+skip [×2] up+skip [×2]."""

    enc: list
    down: list
    mid: list
    up: list
    dec: list
    head: eqx.nn.Conv2d

    def __init__(self, channels: int, width: int, *, key):
        k = iter(jax.random.split(key, 16))
        w = [width, 2 * width, 4 * width]

        def block(cin, cout):
            return [eqx.nn.Conv2d(cin, cout, 3, padding=1, key=next(k)),
                    eqx.nn.Conv2d(cout, cout, 3, padding=1, key=next(k))]

        self.enc = [block(channels, w[0]), block(w[0], w[1])]
        self.down = [eqx.nn.Conv2d(w[0], w[0], 2, stride=2, key=next(k)),
                     eqx.nn.Conv2d(w[1], w[1], 2, stride=2, key=next(k))]
        self.mid = block(w[1], w[2])
        self.up = [eqx.nn.ConvTranspose2d(w[2], w[1], 2, stride=2, key=next(k)),
                   eqx.nn.ConvTranspose2d(w[1], w[0], 2, stride=2, key=next(k))]
        self.dec = [block(2 * w[1], w[1]), block(2 * w[0], w[0])]
        self.head = eqx.nn.Conv2d(w[0], channels, 1, key=next(k))

    @staticmethod
    def _run(block, x):
        for conv in block:
            x = jax.nn.gelu(conv(x))
        return x

    def body(self, x):
        s1 = self._run(self.enc[0], x)
        s2 = self._run(self.enc[1], self.down[0](s1))
        h = self._run(self.mid, self.down[1](s2))
        h = self._run(self.dec[0], jnp.concatenate([self.up[0](h), s2]))
        return self._run(self.dec[1], jnp.concatenate([self.up[1](h), s1]))

    def __call__(self, x: Float[Array, "C H W"]) -> Float[Array, "C H W"]:
        return x + self.head(self.body(x))


class SpectralConv(eqx.Module):
    """(K v)(x) = IFFT(R · FFT(v))(x), R complex weights on the lowest ``modes`` frequencies
    (both signs of the first axis, the non-negative half of the last)."""

    wr: Array
    wi: Array
    modes: tuple[int, int] = eqx.field(static=True)

    def __init__(self, width: int, modes: tuple[int, int], *, key):
        scale = 1.0 / (width * width)
        k1, k2 = jax.random.split(key)
        shape = (2, width, width, *modes)
        self.wr = scale * jax.random.uniform(k1, shape)
        self.wi = scale * jax.random.uniform(k2, shape)
        self.modes = modes

    def __call__(self, v):
        c, h, w = v.shape
        m1, m2 = self.modes
        f = jnp.fft.rfft2(v)
        weights = self.wr + 1j * self.wi
        out = jnp.zeros((c, h, w // 2 + 1), f.dtype)
        out = out.at[:, :m1, :m2].set(jnp.einsum("ixy,ioxy->oxy", f[:, :m1, :m2], weights[0]))
        out = out.at[:, -m1:, :m2].set(jnp.einsum("ixy,ioxy->oxy", f[:, -m1:, :m2], weights[1]))
        return jnp.fft.irfft2(out, s=(h, w))


class FNO(eqx.Module):
    """Fourier neural operator: lift (fields + coordinates) → L × [spectral conv + 1×1 conv,
    GELU] → 1×1 head."""

    lift: eqx.nn.Conv2d
    spectral: list
    pointwise: list
    head: eqx.nn.Conv2d

    def __init__(self, channels: int, width: int, modes: tuple[int, int], layers: int, *, key):
        k = iter(jax.random.split(key, 2 * layers + 2))
        self.lift = eqx.nn.Conv2d(channels + 2, width, 1, key=next(k))
        self.spectral = [SpectralConv(width, modes, key=next(k)) for _ in range(layers)]
        self.pointwise = [eqx.nn.Conv2d(width, width, 1, key=next(k)) for _ in range(layers)]
        self.head = eqx.nn.Conv2d(width, channels, 1, key=next(k))

    def body(self, x):
        _, h, w = x.shape
        gy, gx = jnp.meshgrid(jnp.linspace(0, 1, h), jnp.linspace(0, 1, w), indexing="ij")
        v = self.lift(jnp.concatenate([x, gx[None], gy[None]]))
        for spec, point in zip(self.spectral, self.pointwise):
            v = jax.nn.gelu(spec(v) + point(v))
        return v

    def __call__(self, x):
        return x + self.head(self.body(x))


class ViT(eqx.Module):
    """Patch-token transformer: p×p patches → linear embedding + learned positions → pre-norm
    blocks (multi-head attention, MLP) → linear head back to the p×p patch values."""

    embed: eqx.nn.Linear
    pos: Array
    norms: list
    attns: list
    mlps: list
    final_norm: eqx.nn.LayerNorm
    head: eqx.nn.Linear
    patch: int = eqx.field(static=True)
    grid: tuple[int, int] = eqx.field(static=True)

    def __init__(self, channels: int, shape: tuple[int, int], patch: int, dim: int, depth: int,
                 heads: int, *, key):
        k = iter(jax.random.split(key, 3 * depth + 3))
        self.patch, self.grid = patch, (shape[0] // patch, shape[1] // patch)
        n_tokens = self.grid[0] * self.grid[1]
        self.embed = eqx.nn.Linear(channels * patch * patch, dim, key=next(k))
        self.pos = 0.02 * jax.random.normal(next(k), (n_tokens, dim))
        self.norms = [(eqx.nn.LayerNorm(dim), eqx.nn.LayerNorm(dim)) for _ in range(depth)]
        self.attns = [eqx.nn.MultiheadAttention(heads, dim, key=next(k)) for _ in range(depth)]
        self.mlps = [eqx.nn.MLP(dim, dim, 2 * dim, 1, activation=jax.nn.gelu, key=next(k))
                     for _ in range(depth)]
        self.final_norm = eqx.nn.LayerNorm(dim)
        self.head = eqx.nn.Linear(dim, channels * patch * patch, key=next(k))

    def body(self, x):
        c, h, w = x.shape
        p, (gh, gw) = self.patch, self.grid
        tokens = x.reshape(c, gh, p, gw, p).transpose(1, 3, 0, 2, 4).reshape(gh * gw, c * p * p)
        z = jax.vmap(self.embed)(tokens) + self.pos
        for (n1, n2), attn, mlp in zip(self.norms, self.attns, self.mlps):
            a = jax.vmap(n1)(z)
            z = z + attn(a, a, a)
            z = z + jax.vmap(mlp)(jax.vmap(n2)(z))
        return jax.vmap(self.final_norm)(z)

    def unpatch(self, tokens, shape):
        c, h, w = shape
        p, (gh, gw) = self.patch, self.grid
        return tokens.reshape(gh, gw, c, p, p).transpose(2, 0, 3, 1, 4).reshape(c, h, w)

    def __call__(self, x):
        return x + self.unpatch(jax.vmap(self.head)(self.body(x)), x.shape)


def apply_head(model, features, x):
    """x + head(features): the prediction from shared features (used by GradNorm)."""
    if isinstance(model, ViT):
        return x + model.unpatch(jax.vmap(model.head)(features), x.shape)
    return x + model.head(features)


def build(name: str, channels: int, shape: tuple[int, int], cfg, key):
    """A surrogate by name with the widths of ``cfg`` (the method's Config)."""
    if name == "unet":
        return UNet(channels, cfg.unet_width, key=key)
    if name == "fno":
        modes = (min(cfg.fno_modes, shape[0] // 2), min(cfg.fno_modes, shape[1] // 2 + 1))
        return FNO(channels, cfg.fno_width, modes, cfg.fno_layers, key=key)
    if name == "vit":
        return ViT(channels, shape, cfg.vit_patch, cfg.vit_dim, cfg.vit_depth, cfg.vit_heads, key=key)
    raise ValueError(f"unknown model {name!r}; allowed: {', '.join(MODELS)}")
