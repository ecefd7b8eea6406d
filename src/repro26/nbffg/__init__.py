"""NBFFG: neural backward filtering forward guiding for diffusions on trees (issue 7).

``solvers`` (tree arrays, closed-form/ODE backward information filter, guided forward SDE with
Girsanov weights, pathwise subsampling, exact Gaussian reference), ``model`` (dynamics, proxies,
the neural residual), ``losses`` (ELBO, importance weights, guided pCN MCMC), ``data``,
``train``, ``evaluate``, ``figures``, ``claims``, ``cli``.
"""
