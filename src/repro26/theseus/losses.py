"""Representational similarity, output matching, the alignment loss, and the task losses.

A conversion aligns a converted stage's output with the guide's in one of two ways
(``train.make_loss`` picks by who reads the output): by *output matching*
(:func:`output_match`) where a guide part reads it and needs the guide's exact layout, and by a
representational similarity (linear CKA or the soft mutual-NN score below) where a target part
reads it and can undo rotations and scalings.

Linear CKA (Kornblith et al. 2019). For representations ``X`` (n x p) and ``Y`` (n x q) of the
same n inputs, centre the columns (``H = I - 11^T/n``) and compare the centred Gram matrices
``K = HXX^TH``, ``L = HYY^TH``::

    CKA(X, Y) = <K, L>_F / (||K||_F ||L||_F) = ||Y_c^T X_c||_F^2 / (||X_c^T X_c||_F ||Y_c^T Y_c||_F)

It lies in [0, 1], equals 1 for ``Y = a X Q + 1 b^T`` (Q orthogonal, a != 0) and does not need
p = q. The second (feature-space) form costs O(n p q) and the first O(n^2 (p + q)): we use the
cheaper one for the shapes at hand.

Soft mutual nearest neighbours. The mutual k-NN score of Huh et al. (2024) counts how many of
each point's nearest neighbours the two representations share; it is piecewise constant. Its
smooth version here gives every point ``i`` a neighbour distribution over ``j != i`` in each
representation, ``P_ij = softmax_j(cos(x_i, x_j) / tau)`` (and ``Q`` from ``Y``), and scores the
mean Bhattacharyya overlap ``(1/n) sum_i sum_j sqrt(P_ij Q_ij)`` in [0, 1]: 1 iff the
distributions agree, invariant to rotations and scalings as CKA is. As ``tau -> 0`` ``P_i`` tends
to the indicator of the nearest neighbour and the score to the fraction of points whose nearest
neighbour is the same in both representations (mutual 1-NN).
"""

from __future__ import annotations

from typing import Literal

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

Metric = Literal["cka", "mnn"]


def _centre(x: Float[Array, "n p"]) -> Float[Array, "n p"]:
    return x - x.mean(axis=0, keepdims=True)


def linear_cka(x: Float[Array, "n p"], y: Float[Array, "n q"], eps: float = 1e-12) -> Float[Array, ""]:
    """Linear CKA between two representations of the same n inputs (rows)."""
    x, y = _centre(x.reshape(x.shape[0], -1)), _centre(y.reshape(y.shape[0], -1))
    n, p, q = x.shape[0], x.shape[1], y.shape[1]
    if n * n * (p + q) <= n * (p * q + p * p + q * q):
        k, l_ = x @ x.T, y @ y.T
        cross, kk, ll = jnp.sum(k * l_), jnp.sum(k * k), jnp.sum(l_ * l_)
    else:
        cross = jnp.sum((y.T @ x) ** 2)
        kk, ll = jnp.sum((x.T @ x) ** 2), jnp.sum((y.T @ y) ** 2)
    return cross / (jnp.sqrt(kk * ll) + eps)


def _neighbour_distribution(x: Float[Array, "n p"], tau: float) -> Float[Array, "n n"]:
    x = x.reshape(x.shape[0], -1)
    x = x / (jnp.linalg.norm(x, axis=1, keepdims=True) + 1e-8)
    sim = (x @ x.T) / tau
    sim = jnp.where(jnp.eye(x.shape[0], dtype=bool), -jnp.inf, sim)
    return jax.nn.softmax(sim, axis=1)


def soft_mutual_nn(x: Float[Array, "n p"], y: Float[Array, "n q"], tau: float = 0.1) -> Float[Array, ""]:
    """Mean Bhattacharyya overlap of the soft nearest-neighbour distributions (see above)."""
    p, q = _neighbour_distribution(x, tau), _neighbour_distribution(y, tau)
    return jnp.mean(jnp.sum(jnp.sqrt(p * q + 1e-20), axis=1))


def similarity(metric: Metric, x: Array, y: Array, tau: float = 0.1) -> Float[Array, ""]:
    """The configured representational similarity (1 = identical up to rotation and scale)."""
    if metric == "cka":
        return linear_cka(x, y)
    if metric == "mnn":
        return soft_mutual_nn(x, y, tau)
    raise ValueError(f"unknown similarity metric {metric!r}")


def alignment_loss(metric: Metric, pairs, tau: float = 0.1) -> Float[Array, ""]:
    """``sum_j (1 - S(h_j, g_j))`` over the (converted, guide) representation pairs given."""
    return sum(1.0 - similarity(metric, h, g, tau) for h, g in pairs)


def feature_mse(pairs) -> Float[Array, ""]:
    """``sum_j mean ||h_j - g_j||^2`` (FitNets-style feature distillation; same shapes)."""
    return sum(jnp.mean(jnp.sum((h - g).reshape(h.shape[0], -1) ** 2, axis=1)) for h, g in pairs)


def output_match(h: Float[Array, "n p"], g: Float[Array, "n p"], eps: float = 1e-8) -> Float[Array, ""]:
    """Output matching of a converted stage output ``h`` to the guide's ``g`` (same shape; rows =
    samples, p units): ``(1/n) sum_i ||h_i - g_i||^2 / s^2`` with ``s^2`` the guide's variance
    per unit, ``||g - mean(g)||_F^2 / (n p)``. It is the per-sample negative log-likelihood (up to
    constants) of ``g_i`` as a Gaussian around ``h_i`` with the guide's own spread, summed over
    the p units the next part reads, as the cross-entropy is of the label: 0 iff ``h = g``, p for
    the best constant, and not invariant to any map that mixes units. The sum over units is kept
    on purpose: as a mean over units (divided by p, O(1) like the cross-entropy) the image
    conversion ended 12 points lower on a validation draw (data_seed 4321, 2 seeds: 63.2% against
    75.0%), having lost the guide's function from the first stage on (74.9% against 90.6% after
    it). Where the next part is one
    of the guide's, that part reads the units of ``h`` one by one (a convolution reads channel c
    at pixel (i, j); an attention block fixed residual-stream coordinates), so it needs ``h = g``
    itself: CKA's invariance to rotations would pass ``h = g Q``, which that part cannot undo."""
    h, g = h.reshape(h.shape[0], -1), g.reshape(g.shape[0], -1)
    n, p = g.shape
    spread = jnp.sum((g - g.mean(axis=0)) ** 2) / (n * p)
    return jnp.sum((h - g) ** 2) / (n * (spread + eps))


def component_match(h: Float[Array, "n p"], g: Float[Array, "n p"], units: int) -> Float[Array, ""]:
    """Output matching of the *components* inside a replaced part, scaled to the part's output:
    ``(q / p) output_match(h, g)``, with ``h`` the new part's p hidden units, ``g`` the guide
    part's p units before its pool, and ``q`` (``units``) the number of units the part outputs.
    The best constant scores q, as the part's own output match does (:func:`output_match`
    scores p): summed over the 1,568 hidden units of the image conversion's last part against its
    32 outputs the term would outweigh output and label 49 : 1. On a validation draw (data_seed
    4321, its 2,000 held-out images) the image conversion ended at 78.9 / 78.2 / 72.7 / 75.2%
    (seeds 0-3) with this term on the last part only, against 75.1 / 74.2 / 69.5 / 71.0% without
    it (with the plain sum, no q / p: 76.7 / 75.4%, seeds 0, 1); with it on the maxout parts too
    85.3 / 85.0 / 82.1 / 88.6% (after part 1 93.8 / 94.1 / 92.9 / 94.9%, was 90.3 / 90.7 / 87.6 /
    90.9%; after part 2 92.8 / 92.9 / 92.6 / 93.7%, was 87.4 / 87.9 / 83.4 / 83.7%)."""
    return (units / h.reshape(h.shape[0], -1).shape[1]) * output_match(h, g)


def cross_entropy(logits: Float[Array, "n c"], labels: Int[Array, " n"]) -> Float[Array, ""]:
    """Mean negative log-likelihood of the labels (nats)."""
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, labels[..., None], axis=-1))


def distillation_kl(student: Float[Array, "n c"], teacher: Float[Array, "n c"],
                    temperature: float) -> Float[Array, ""]:
    """Hinton et al. (2015): ``T^2 KL(softmax(t/T) || softmax(s/T))``, mean over rows."""
    pt = jax.nn.softmax(teacher / temperature, axis=-1)
    kl = jnp.sum(pt * (jax.nn.log_softmax(teacher / temperature, -1)
                       - jax.nn.log_softmax(student / temperature, -1)), axis=-1)
    return temperature ** 2 * jnp.mean(kl)
