"""Local objectives ``f_i`` on a client's padded slot layout, and their second-order models.

``f_i(x) = sum_k rowmask_k * loss(a_k^T x, b_k) + 1/2 sum_t r_t x_t^2`` with

* squared:  ``loss(u, b) = (u - b)^2 / 2``           (ridge, sensor localisation: quadratic F)
* logistic: ``loss(u, b) = log(1 + exp(-b u))``      (``b in {-1, +1}``)
* huber:    ``loss(u, b) = huber_1(u - b)``          (``optax.losses.huber_loss``, delta 1)

Slots outside ``S_i`` have zero columns in ``A`` and ``r = 0``, so ``f_i`` ignores them.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax
from jaxtyping import Array, Bool, Float

#: sup of the loss's second derivative in ``u`` (a Lipschitz bound for the gradient)
CURVATURE = {"squared": 1.0, "logistic": 0.25, "huber": 1.0}


def row_loss(u: Float[Array, " M"], b: Float[Array, " M"], loss: str) -> Float[Array, " M"]:
    if loss == "squared":
        return 0.5 * (u - b) ** 2
    if loss == "logistic":
        return jnp.logaddexp(0.0, -b * u)
    if loss == "huber":
        return optax.losses.huber_loss(u, b, delta=1.0)
    raise ValueError(f"loss '{loss}' is unknown; use squared, logistic or huber")


def local_value(x: Float[Array, " B"], A: Float[Array, "M B"], b: Float[Array, " M"],
                rowmask: Bool[Array, " M"], r: Float[Array, " B"], loss: str) -> Float[Array, ""]:
    """``f_i(x)`` on the client's slot layout."""
    return jnp.sum(jnp.where(rowmask, row_loss(A @ x, b, loss), 0.0)) + 0.5 * jnp.sum(r * x**2)


def local_model(x: Float[Array, " B"], A: Float[Array, "M B"], b: Float[Array, " M"],
                rowmask: Bool[Array, " M"], r: Float[Array, " B"], loss: str):
    """Second-order model of ``f_i`` at ``x`` in the step ``D``:
    ``q(D) = 1/2 D^T H D - g^T D + c`` with ``H = hess f_i(x)``, ``g = -grad f_i(x)``,
    ``c = f_i(x)`` (exact for the squared loss). Returns ``(H, g, c)``."""
    fn = lambda z: local_value(z, A, b, rowmask, r, loss)  # noqa: E731
    c, grad = jax.value_and_grad(fn)(x)
    return jax.hessian(fn)(x), -grad, c


def lipschitz(A: Float[Array, "M B"], rowmask: Bool[Array, " M"], r: Float[Array, " B"],
              loss: str) -> Float[Array, ""]:
    """Bound on the gradient's Lipschitz constant: ``lambda_max(kappa A^T A + diag r)``."""
    Am = jnp.where(rowmask[:, None], A, 0.0)
    return jnp.linalg.eigvalsh(CURVATURE[loss] * Am.T @ Am + jnp.diag(r))[-1]
