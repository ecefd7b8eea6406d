"""Metrics of predicted vs true frames, the trivial baselines, and autoregressive rollouts.

Fields are (C, H, W) with channels ρ, u, v, p, α (physical units); ``scale`` is the per-channel
standard deviation of the training set, so errors are in units of each channel's spread.

* nRMSE       mean over channels of RMSE_c / σ_c
* spectral    Parseval split of the same error by radial wavenumber |k| (in units of the
              Nyquist radius): low [0, 1/3), mid [1/3, 2/3), high [2/3, ∞); band RMSE/σ, channel mean
* SSIM        mean over channels, data range of the true field
* IoU         of the sets {α > 0.5}
* shock       |x_pred − x_true|, x the rightmost column whose y-mean pressure exceeds
              p_ambient + ½ (max_true − p_ambient): the leading shock, in domain units
* drift       |Σ q_pred − Σ q_true| / |Σ q_true| for mass ρ and total energy
              E = Γ p + Π + ½ ρ |u|² (Γ, Π of the two materials mixed linearly in α)
* stability   fraction of rollout steps before the first frame that is non-finite or has
              nRMSE > BLOWUP (a rollout that has left the data's range)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from repro26.neptuna import data, losses, solvers
from repro26.neptuna.names import BASELINES, EXACT, HIGHER_IS_BETTER, METRICS  # noqa: F401

BLOWUP = 5.0


def band_masks(h: int, w: int):
    ky = np.fft.fftfreq(h)[:, None] / 0.5
    kx = np.fft.fftfreq(w)[None, :] / 0.5
    k = np.sqrt(kx**2 + ky**2)
    return jnp.asarray(np.stack([k < 1 / 3, (k >= 1 / 3) & (k < 2 / 3), k >= 2 / 3]))


def frame_metrics(pred, true, scale, mat, dx: float):
    """Dict of the per-frame metrics (scalars) for one (C, H, W) pair; ``mat`` the trajectory's
    (γ_ambient, p∞_ambient, γ_b, p∞_b)."""
    c, h, w = true.shape
    err = (pred - true) / scale[:, None, None]
    rmse = jnp.sqrt(jnp.mean(err**2, (-2, -1)))
    spec = jnp.abs(jnp.fft.fft2(err)) ** 2 / (h * w) ** 2  # Parseval: Σ spec = mean err²
    bands = jnp.sqrt(jnp.einsum("chw,bhw->bc", spec, band_masks(h, w)))
    s = losses.ssim(pred, true)
    a_p, a_t = pred[losses.ALPHA] > 0.5, true[losses.ALPHA] > 0.5
    iou = jnp.sum(a_p & a_t) / jnp.maximum(jnp.sum(a_p | a_t), 1)
    p_amb = data.AIR["p"]
    prof_t, prof_p = true[3].mean(0), pred[3].mean(0)
    thresh = p_amb + 0.5 * (prof_t.max() - p_amb)
    cols = jnp.arange(w)

    def front(prof):
        return jnp.max(jnp.where(prof > thresh, cols, 0))

    shock = jnp.abs(front(prof_p) - front(prof_t)) * dx

    def totals(f):
        rho, u, v, p, alpha = f
        Ga, Pa = solvers.gamma_functions(mat[0], mat[1])
        Gb, Pb = solvers.gamma_functions(mat[2], mat[3])
        alpha = jnp.clip(alpha, 0, 1)
        E = ((alpha * Gb + (1 - alpha) * Ga) * p + alpha * Pb + (1 - alpha) * Pa
             + 0.5 * rho * (u * u + v * v))
        return rho.sum(), E.sum()

    (m_p, e_p), (m_t, e_t) = totals(pred), totals(true)
    return {"nrmse": rmse.mean(), "spec_low": bands[0].mean(), "spec_mid": bands[1].mean(),
            "spec_high": bands[2].mean(), "ssim": s.mean(), "iou": iou, "shock_err": shock,
            "mass_drift": jnp.abs(m_p - m_t) / jnp.abs(m_t),
            "energy_drift": jnp.abs(e_p - e_t) / jnp.abs(e_t)}


def rollout_metrics(preds, trues, scale, mat, dx: float):
    """Per-step metrics (dict of (steps,) arrays) of one rollout; non-finite frames count as
    unstable and their metrics are NaN."""
    per = jax.vmap(lambda p, t: frame_metrics(p, t, scale, mat, dx))(preds, trues)
    finite = jnp.all(jnp.isfinite(preds), axis=(1, 2, 3))
    ok = finite & (per["nrmse"] <= BLOWUP)
    per = {k: jnp.where(finite, v, jnp.nan) for k, v in per.items()}
    per["stable"] = jnp.cumprod(ok.astype(jnp.float32))
    return per


def baseline_rollout(name: str, x_prev, x0, steps: int):
    """Persistence x_{t+k} = x_t; linear extrapolation x_{t+k} = x_t + k (x_t − x_{t−1})."""
    k = jnp.arange(1, steps + 1, dtype=x0.dtype)[:, None, None, None]
    if name == "persistence":
        return jnp.broadcast_to(x0, (steps, *x0.shape))
    return x0[None] + k * (x0 - x_prev)[None]


def model_rollout(step_fn, x0, steps: int):
    """Autoregressive rollout x_{k+1} = step_fn(x_k) with ``lax.scan``; returns (steps, C, H, W)."""
    def body(x, _):
        x = step_fn(x)
        return x, x

    return jax.lax.scan(body, x0, None, length=steps)[1]


def summarise(per_step: dict) -> dict:
    """Means over steps and trajectories (NaN ignored) of the per-step arrays (traj, steps)."""
    out = {k: float(np.nanmean(np.asarray(v))) for k, v in per_step.items() if k != "stable"}
    out["stability"] = float(np.mean(np.asarray(per_step["stable"])))
    return out
