"""NBFFG: neural backward filtering forward guiding for diffusions on trees (issue 7).

``solvers`` (tree arrays, closed-form/ODE backward information filter, guided forward SDE with
Girsanov weights, pathwise subsampling, exact Gaussian reference; for discrete traits Felsenstein
pruning with a proxy CTMC, the guided chain with its discrete Radon–Nikodym weight, the exact
marginal ELBO, inside–outside reference), ``model`` (dynamics, proxies, the neural residual, the
time-dependent CTMC and its jump-rate correction), ``losses`` (ELBO, importance weights, guided
pCN MCMC), ``data``, ``train``, ``evaluate``, ``layout`` (where the stages write their tables;
no JAX, for ``figures`` and ``claims``), ``figures``, ``claims``, ``cli``.
"""
