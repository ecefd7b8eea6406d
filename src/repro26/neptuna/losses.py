"""Training losses and their balancing, on normalised fields (B, C, H, W), channel 4 = α.

The four terms, each a mean over the batch:

* MSE          L_mse = ⟨(ŷ − y)²⟩
* Sobolev      L_h1  = ⟨|∇(ŷ − y)|²⟩ (forward differences; MSE + L_h1 is the H¹ loss)
* interface    L_if  = ⟨w (ŷ − y)²⟩,  w = 1 + γ 1[|∇α_y| > τ] (cells on the true interface)
* structure    L_ss  = 1 − SSIM(ŷ, y) (Gaussian 7×7 window σ = 1.5, Wang et al. 2004)

Fixed composites: ``sobolev`` = L_mse + L_h1, ``interface`` = L_if, ``ssim`` = L_mse + L_ss,
``equal`` = ¼ Σ_i L_i (the four terms with fixed equal weights: the non-adaptive counterpart of
the adaptive losses, which start from these weights). Adaptive: Σ w_i L_i over all four with

* SoftAdapt (Heydari et al. 2019) from the loss slopes s_i = L_i(t) − L_i(t−k) between two weight
  updates, normalised n_i = s_i / Σ_j |s_j| (the paper's remedy for terms of different scales:
  the raw slopes of these terms are ~1e-4, so softmax(β s) would stay at equal weights), with
  temperature β: ``softadapt`` w_i = e^{β n_i} / Σ_j e^{β n_j}; loss-weighted ``softadapt_lw``
  w_i = L_i e^{β n_i} / Σ_j L_j e^{β n_j}. A term whose loss stalls or rises (n_i largest) gains
  weight;
* GradNorm (Chen et al. 2018): learned w, moved by the gradient of Σ_i |G_i − Ḡ r_i^a| with
  G_i = ‖∇_head w_i L_i‖ (the last shared layer), r_i = (L_i/L_i(0)) / mean_j(L_j/L_j(0)),
  the target held constant; then w ≥ 0 renormalised to sum 1.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from repro26.neptuna.names import ADAPTIVE, SOFTADAPT, TERMS  # noqa: F401

ALPHA = 4  # channel index of the volume fraction
FIXED = {"mse": (1.0, 0.0, 0.0, 0.0), "sobolev": (1.0, 1.0, 0.0, 0.0),
         "interface": (0.0, 0.0, 1.0, 0.0), "ssim": (1.0, 0.0, 0.0, 1.0),
         "equal": (0.25, 0.25, 0.25, 0.25)}
LOSSES = (*FIXED, *ADAPTIVE)


def _gaussian_window(size: int = 7, sigma: float = 1.5):
    x = jnp.arange(size) - (size - 1) / 2
    g = jnp.exp(-(x**2) / (2 * sigma**2))
    return g / g.sum()


def _blur(x):
    """Separable Gaussian filter of (..., H, W) fields, 'valid' region (SSIM blurs its five
    moment fields stacked, in one call)."""
    g = _gaussian_window()
    k = g.size
    h, w = x.shape[-2:]
    rows = sum(g[i] * x[..., i:h - k + 1 + i, :] for i in range(k))
    return sum(g[i] * rows[..., :, i:w - k + 1 + i] for i in range(k))


def ssim(a: Float[Array, "... H W"], b: Float[Array, "... H W"], data_range=None):
    """Mean SSIM per leading index of two fields; ``data_range`` defaults to the range of ``b``
    over its last two axes. Equals 1 exactly when a = b."""
    if data_range is None:
        data_range = jnp.max(b, (-2, -1)) - jnp.min(b, (-2, -1))
    L = jnp.maximum(data_range, 1e-6)[..., None, None]
    c1, c2 = (0.01 * L) ** 2, (0.03 * L) ** 2
    mu_a, mu_b, aa, bb, ab = _blur(jnp.stack([a, b, a * a, b * b, a * b]))
    var_a = aa - mu_a**2
    var_b = bb - mu_b**2
    cov = ab - mu_a * mu_b
    s = ((2 * mu_a * mu_b + c1) * (2 * cov + c2)) / ((mu_a**2 + mu_b**2 + c1) * (var_a + var_b + c2))
    return s.mean((-2, -1))


def grad2(x):
    """Forward differences (∂_x, ∂_y) of (..., H, W), cropped to a common (H−1, W−1)."""
    return x[..., :-1, 1:] - x[..., :-1, :-1], x[..., 1:, :-1] - x[..., :-1, :-1]


def interface_weight(alpha_true, gamma: float, tau: float):
    """w = 1 + γ 1[|∇α| > τ] on the (H−1, W−1) grid of :func:`grad2`, padded back to (H, W)."""
    gx, gy = grad2(alpha_true)
    on = (jnp.sqrt(gx**2 + gy**2) > tau).astype(alpha_true.dtype)
    on = jnp.pad(on, [(0, 0)] * (on.ndim - 2) + [(0, 1), (0, 1)], mode="edge")
    return 1.0 + gamma * on


def loss_terms(pred, target, gamma: float = 10.0, tau: float = 0.1,
               active: tuple[bool, ...] = (True,) * 4) -> Float[Array, "4"]:
    """(L_mse, L_h1, L_if, L_ss) of a batch; a term not ``active`` is not computed and reads 0
    (a fixed loss pays only for its own terms)."""
    err = pred - target
    zero = jnp.zeros((), pred.dtype)

    def h1():
        gx, gy = grad2(err)
        return jnp.mean(gx**2 + gy**2)

    def interface():
        w = interface_weight(target[:, ALPHA], gamma, tau)[:, None]
        return jnp.mean(w * err**2)

    makers = (lambda: jnp.mean(err**2), h1, interface, lambda: 1.0 - jnp.mean(ssim(pred, target)))
    return jnp.stack([make() if on else zero for make, on in zip(makers, active)])


def active_terms(loss: str) -> tuple[bool, ...]:
    """The terms a loss evaluates: a fixed composite its nonzero-weight terms, adaptive all."""
    if loss in FIXED:
        return tuple(w != 0.0 for w in FIXED[loss])
    return (True,) * len(TERMS)


def softadapt_weights(current, previous, variant: str = "softadapt", beta: float = 2.0):
    """SoftAdapt weights (sum to one) from the normalised slopes n = s / Σ|s|, s = current −
    previous: e^{β n} / Σ e^{β n}, or for ``softadapt_lw`` L e^{β n} / Σ L e^{β n} with L =
    ``current``. Shifting n by its maximum before the exponential leaves the weights unchanged."""
    s = current - previous
    n = s / (jnp.sum(jnp.abs(s)) + 1e-12)
    e = jnp.exp(beta * (n - jnp.max(n)))
    if variant == "softadapt_lw":
        e = current * e
    return e / jnp.sum(e)


def gradnorm_update(weights, head_grad_norms, terms, initial_terms, lr: float, a: float = 1.5):
    """One GradNorm step on the weights. ``head_grad_norms[i]`` = ‖∇_head L_i‖ (unweighted), so
    G_i = w_i ‖∇_head L_i‖ and ∂/∂w_i Σ_j |G_j − target_j| = sign(G_i − target_i) ‖∇_head L_i‖
    with the target Ḡ r_i^a held constant. Equal terms give G_i = target_i: weights unchanged."""
    G = weights * head_grad_norms
    ratio = terms / initial_terms
    r = ratio / jnp.mean(ratio)
    target = jax.lax.stop_gradient(jnp.mean(G) * r**a)
    grad_w = jnp.sign(G - target) * head_grad_norms
    w = jnp.maximum(weights - lr * grad_w, 1e-4)
    return w / jnp.sum(w)
