"""The Generative Distribution Embedding (GDE) of NBF: a permutation-invariant set encoder
E(S) = rho(mean_i phi(s_i)) and a conditional coupling flow g(x | z) on the box [0, 1]^d, either
rational-quadratic spline couplings on the box (``ConditionalSplineFlow``, the default) or affine
couplings after a logit (``ConditionalRealNVP``).

Spline flow: the base is uniform on [0, 1]^d and every coupling moves half of the coordinates by
monotone rational-quadratic splines of [0, 1] onto itself (Durkan et al. 2019, ``knots`` bins,
flowjax's ``Coupling`` and ``RationalQuadraticSpline``), whose knots depend on the other half and
on z. With e = f_L ∘ ... ∘ f_1 (x), log g(x | z) = sum_l log|det ∂f_l|: no logit, and a spline
can put several modes (and the hole a pursuer's empty field of view leaves) in one coordinate
given the others, which an affine map of a Gaussian cannot.

RealNVP:
Density of the flow: x in (0, 1)^d is mapped to u = logit(a + (1 - 2a) x) and then through
affine couplings f_L ∘ ... ∘ f_1 to e ~ N(0, I). With p = a + (1 - 2a) x,

    log g(x | z) = log N(e; 0, I) + sum_l log|det ∂f_l| + sum_i log((1 - 2a) / (p_i (1 - p_i))),

so g integrates to one over [0, 1]^d (the logit is a bijection of (0, 1) onto R).
Coupling l keeps the coordinates with mask m = 1 and updates the others:
u' = m u + (1 - m) (u exp(s) + t), (s, t) = NN_l(m u, z), s = tanh(.) · scale_bound.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from flowjax.bijections import Coupling, RationalQuadraticSpline
from jaxtyping import Array, Float

LOGIT_MARGIN = 1e-3  # a in u = logit(a + (1 - 2a) x)
SCALE_BOUND = 2.0


def coupling_masks(dim: int, n_layers: int) -> tuple[tuple[float, ...], ...]:
    """Alternate parity masks (row/col of each evader) and half masks (evaders against each
    other) so that every coordinate is updated given every other one."""
    masks = []
    for layer in range(n_layers):
        if (layer // 2) % 2 == 0 or dim == 2:
            m = [(i + layer) % 2 for i in range(dim)]
        else:
            m = [(int(i < dim // 2) + layer) % 2 for i in range(dim)]
        masks.append(tuple(float(v) for v in m))
    return tuple(masks)


class DeepSetEncoder(eqx.Module):
    """E(S) = rho(mean_i phi(s_i)): invariant to the order of the particles."""

    phi: eqx.nn.MLP
    rho: eqx.nn.MLP

    def __init__(self, dim: int, hidden: int, embed_dim: int, *, key):
        k1, k2 = jax.random.split(key)
        self.phi = eqx.nn.MLP(dim, hidden, hidden, 2, activation=jax.nn.gelu, key=k1)
        self.rho = eqx.nn.MLP(hidden, embed_dim, hidden, 2, activation=jax.nn.gelu, key=k2)

    def __call__(self, points: Float[Array, "n d"]) -> Float[Array, "z"]:
        return self.rho(jnp.mean(jax.vmap(self.phi)(2.0 * points - 1.0), 0))


class FourierSetEncoder(eqx.Module):
    """E(S) = rho(mean_i [cos(W s_i + b), sin(W s_i + b)]): a kernel mean embedding of the set
    (the empirical characteristic function at ``features`` learned frequencies, initialised at
    scales log-uniform between 1 and ``max_scale`` per unit of the [-1, 1] box), then an MLP.
    Mean pooling of a rich fixed-width feature map: invariant to the order of the particles, in
    any dimension, with no product structure assumed."""

    freqs: Float[Array, "f d"]
    phase: Float[Array, "f"]
    rho: eqx.nn.MLP

    def __init__(self, dim: int, features: int, hidden: int, embed_dim: int,
                 max_scale: float = 40.0, *, key):
        k1, k2, k3, k4 = jax.random.split(key, 4)
        direction = jax.random.normal(k1, (features, dim))
        direction = direction / jnp.linalg.norm(direction, axis=-1, keepdims=True)
        scale = jnp.exp(jax.random.uniform(k2, (features, 1), minval=0.0,
                                           maxval=jnp.log(max_scale)))
        self.freqs = direction * scale
        self.phase = jax.random.uniform(k3, (features,), maxval=2 * jnp.pi)
        self.rho = eqx.nn.MLP(2 * features, embed_dim, hidden, 2, activation=jax.nn.gelu,
                              key=k4)

    def __call__(self, points: Float[Array, "n d"]) -> Float[Array, "z"]:
        arg = (2.0 * points - 1.0) @ self.freqs.T + self.phase
        return self.rho(jnp.concatenate([jnp.cos(arg).mean(0), jnp.sin(arg).mean(0)]))


class ConditionalRealNVP(eqx.Module):
    """Affine-coupling flow on [0, 1]^d conditioned on an embedding z."""

    nets: tuple[eqx.nn.MLP, ...]
    masks: tuple[tuple[float, ...], ...] = eqx.field(static=True)

    def __init__(self, dim: int, embed_dim: int, hidden: int, n_layers: int, *, key):
        keys = jax.random.split(key, n_layers)
        nets = []
        for k in keys:
            net = eqx.nn.MLP(dim + embed_dim, 2 * dim, hidden, 2, activation=jax.nn.gelu, key=k)
            # start at the identity map: zero last layer
            last = net.layers[-1]
            net = eqx.tree_at(lambda n: (n.layers[-1].weight, n.layers[-1].bias), net,
                              (jnp.zeros_like(last.weight), jnp.zeros_like(last.bias)))
            nets.append(net)
        self.nets = tuple(nets)
        self.masks = coupling_masks(dim, n_layers)

    def _shift_scale(self, net, mask, u, z):
        mask = jnp.asarray(mask)
        out = net(jnp.concatenate([mask * u, z]))
        s, t = jnp.split(out, 2)
        return SCALE_BOUND * jnp.tanh(s / SCALE_BOUND) * (1 - mask), t * (1 - mask)

    def log_prob(self, x: Float[Array, "d"], z: Float[Array, "z"]) -> Float[Array, ""]:
        a = LOGIT_MARGIN
        p = a + (1 - 2 * a) * jnp.clip(x, 0.0, 1.0)
        u = jnp.log(p) - jnp.log1p(-p)
        logdet = jnp.sum(jnp.log(1 - 2 * a) - jnp.log(p) - jnp.log1p(-p))
        for net, mask in zip(self.nets, map(jnp.asarray, self.masks)):
            s, t = self._shift_scale(net, mask, u, z)
            u = mask * u + (1 - mask) * (u * jnp.exp(s) + t)
            logdet = logdet + jnp.sum(s)
        return jnp.sum(jax.scipy.stats.norm.logpdf(u)) + logdet

    def sample(self, key, z: Float[Array, "z"], n: int) -> Float[Array, "n d"]:
        e = jax.random.normal(key, (n, len(self.masks[0])))

        def invert(u):
            for net, mask in zip(reversed(self.nets), map(jnp.asarray, self.masks[::-1])):
                s, t = self._shift_scale(net, mask, u, z)
                u = mask * u + (1 - mask) * (u - t) * jnp.exp(-s)
            p = jax.nn.sigmoid(u)
            return jnp.clip((p - LOGIT_MARGIN) / (1 - 2 * LOGIT_MARGIN), 0.0, 1.0 - 1e-6)

        return jax.vmap(invert)(e)


class ConditionalSplineFlow(eqx.Module):
    """Rational-quadratic spline couplings of the box [0, 1]^d onto itself, conditioned on z;
    uniform base. Layer l keeps the coordinates of ``coupling_masks``' mask m_l (moved to the
    front by ``orders[l]``) and splines the others given them and z."""

    layers: tuple[Coupling, ...]
    orders: tuple[tuple[int, ...], ...] = eqx.field(static=True)

    def __init__(self, dim: int, embed_dim: int, hidden: int, n_layers: int, knots: int, *,
                 key):
        masks = coupling_masks(dim, n_layers)
        self.orders = tuple(tuple(sorted(range(dim), key=lambda i: -m[i])) for m in masks)
        self.layers = tuple(
            Coupling(k, transformer=RationalQuadraticSpline(knots=knots, interval=(0.0, 1.0)),
                     untransformed_dim=int(sum(m)), dim=dim, cond_dim=embed_dim,
                     nn_width=hidden, nn_depth=2, nn_activation=jax.nn.gelu)
            for k, m in zip(jax.random.split(key, n_layers), masks))

    def log_prob(self, x: Float[Array, "d"], z: Float[Array, "z"]) -> Float[Array, ""]:
        e = jnp.clip(x, 0.0, 1.0)
        logdet = jnp.zeros(())
        for layer, order in zip(self.layers, map(jnp.asarray, self.orders)):
            moved, step = layer.transform_and_log_det(e[order], z)
            e = e.at[order].set(moved)
            logdet = logdet + step
        return logdet

    def sample(self, key, z: Float[Array, "z"], n: int) -> Float[Array, "n d"]:
        u = jax.random.uniform(key, (n, len(self.orders[0])))

        def invert(e):
            for layer, order in zip(reversed(self.layers), map(jnp.asarray, self.orders[::-1])):
                moved, _ = layer.inverse_and_log_det(e[order], z)
                e = e.at[order].set(moved)
            return jnp.clip(e, 0.0, 1.0 - 1e-6)

        return jax.vmap(invert)(u)


class GDE(eqx.Module):
    """Generative distribution embedding: encoder E and conditional generator g(. | z)."""

    encoder: DeepSetEncoder | FourierSetEncoder
    flow: ConditionalSplineFlow | ConditionalRealNVP

    def __init__(self, dim: int, hidden: int, embed_dim: int, n_layers: int,
                 features: int = 0, knots: int = 0, *, key):
        """``features`` > 0: Fourier set encoder (else DeepSets); ``knots`` > 0: spline
        couplings with that many bins (else affine couplings after a logit)."""
        k1, k2 = jax.random.split(key)
        self.encoder = (FourierSetEncoder(dim, features, hidden, embed_dim, key=k1) if features
                        else DeepSetEncoder(dim, hidden, embed_dim, key=k1))
        self.flow = (ConditionalSplineFlow(dim, embed_dim, hidden, n_layers, knots, key=k2)
                     if knots else ConditionalRealNVP(dim, embed_dim, hidden, n_layers, key=k2))

    def log_prob(self, x: Float[Array, "m d"], points: Float[Array, "n d"]) -> Float[Array, "m"]:
        """log g(x_j | E(points)) for every row x_j."""
        z = self.encoder(points)
        return jax.vmap(lambda xi: self.flow.log_prob(xi, z))(x)
