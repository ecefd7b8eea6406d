"""Names shared by the stages, the figures and the claims: the metrics, baselines and loss terms,
as plain constants, so that a figure or claims job imports no JAX."""

from __future__ import annotations

#: the per-frame metrics of :func:`repro26.neptuna.evaluate.frame_metrics`
METRICS = ("nrmse", "spec_low", "spec_mid", "spec_high", "ssim", "iou", "shock_err",
           "mass_drift", "energy_drift")
HIGHER_IS_BETTER = {"ssim", "iou"}
BASELINES = ("persistence", "linear")
EXACT = "exact"  # the true frames scored as a prediction: the ideal row of the loss claims

#: the four loss terms of :mod:`repro26.neptuna.losses`, in weight order
TERMS = ("mse", "h1", "interface", "ssim")
SOFTADAPT = ("softadapt", "softadapt_lw")
ADAPTIVE = (*SOFTADAPT, "gradnorm")
