"""Metrics per task and seed: ELBO, ESS, log-evidence, posterior of internal nodes; and the
cost of a training step against tree size (experiment 4).

Methods: ``nbffg`` (trained residual), ``bffg`` (linear guiding with the paper's proxy, the
guide NBFFG starts from), ``bffg_lin`` (the fair BFFG: guiding with the drift linearised around
the observations below each edge; continuous tasks only), ``naive`` (unguided forward
simulation + importance weights), ``mcmc`` (guided-proposal pCN, ``mcmc_ref_chains`` chains sharing the same number of
forward solves). Posterior means of importance samplers are self-normalised. References: exact Gaussian
conditioning (linear tasks), a long multi-chain pCN run (nonlinear tasks), the simulated truth
(shape tasks: ancestral reconstruction error), exact inside–outside marginals with the TRUE
time-dependent chain (discrete ``ctmc`` tasks: posterior means are the marginals
``p(x_v = s | y)`` and ``exact_log_p`` is the exact evidence).
"""

from __future__ import annotations

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from repro26.core.train import init_train_state, optax_step
from repro26.nbffg import data as D
from repro26.nbffg import losses as L
from repro26.nbffg import solvers as S
from repro26.nbffg import train as T

IS_METHODS = ("nbffg", "bffg", "bffg_lin", "naive")


@eqx.filter_jit
def _importance(residuals, problems: L.Problem, keys, num: int, naive):
    """Self-normalised importance sampling with ``num`` forward samples for every seed of a batch
    (``jax.vmap`` over the leading seed axis of ``residuals``, ``problems`` and ``keys``): mean
    ELBO sample, ``log Z = logsumexp(log w) - log num``, ESS / N and the weighted node means."""
    def seed(residual, problem, key):
        def one(k):
            z0, noise = L.draw_noise(k, problem, problem.tree.n + 1)
            return L.tree_sample(residual, problem, z0, noise, naive)

        xs, elbo, lw = jax.lax.map(one, jax.random.split(key, num), batch_size=64)
        return {"elbo": jnp.mean(elbo), "log_z": jax.nn.logsumexp(lw) - jnp.log(num),
                "ess": S.normalised_ess(lw), "mean": S.weighted_mean(lw, xs)}

    return eqx.filter_vmap(seed)(residuals, problems, keys)


@eqx.filter_jit
def _mcmc(residuals, problems: L.Problem, keys, num_iters, rho: float, chains: int):
    """``chains`` pCN chains per seed of a batch (vmapped over seeds and chains): posterior node
    means averaged over the chains, and the mean acceptance rate."""
    def seed(residual, problem, key):
        means, acc = jax.vmap(lambda k: L.pcn_chain(residual, problem, k, num_iters, rho,
                                                    num_iters // 5))(jax.random.split(key, chains))
        return jnp.mean(means, 0), jnp.mean(acc)

    return eqx.filter_vmap(seed)(residuals, problems, keys)


def ctmc_reference(problem: L.CTMCProblem):
    """Exact marginals ``p(x_v | y)`` ``(n+1, S)`` and ``log p(y)`` of the target chain (rates
    frozen per step, as in every estimator): Felsenstein pruning and the outside pass with the
    edge transition matrices ``prod_k exp(d Q_{t_k})`` (time-ordered product, taken in float64)."""
    P = np.exp(np.asarray(problem.guide.logP, np.float64))
    P_edge = np.stack([functools.reduce(np.matmul, list(steps)) for steps in P])
    P_edge = jnp.asarray(P_edge, jnp.float32)
    inside = S.pruning(problem.tree, problem.leaf_logh, P_edge)
    prior = problem.naive_guide.root_logp  # the unguided root law is the prior
    marg, log_p = S.node_marginals(problem.tree, inside, P_edge, prior)
    return np.asarray(marg), float(log_p)


def internal_rmse(est: np.ndarray, ref: np.ndarray, internal: np.ndarray) -> float:
    return float(np.sqrt(np.mean((est[internal] - ref[internal]) ** 2)))


def evaluate(cfg, task: D.Task, arrays: list[dict], problems, models, seeds,
             shape: tuple[int, int]):
    """All methods on one task for the seeds ``seeds`` at once: their data ``arrays``, their
    problems and trained residuals stacked on a leading seed axis (trees padded to ``shape``,
    ``losses.tree_shape``); seed ``s`` draws from ``key(10_000 + s)``. Returns one
    ``(metric rows, node-posterior rows)`` pair per seed."""
    e = cfg.evaluate
    n = problems.tree.n
    keys = jax.vmap(lambda s: jax.random.split(jax.random.key(10_000 + s), 3))(jnp.asarray(seeds))
    k_is, k_mc, k_ref = keys[:, 0], keys[:, 1], keys[:, 2]
    split = jax.vmap(lambda k: jax.random.split(k, 4))(k_is)
    k_nb, k_bf, k_lin, k_nv = (split[:, j] for j in range(4))
    zero = L.zeroed(models)
    results = {  # independent draws per method
        "nbffg": _importance(models, problems, k_nb, e.samples, jnp.array(False)),
        "bffg": _importance(zero, problems, k_bf, e.samples, jnp.array(False)),
    }
    ctmc = isinstance(problems, L.CTMCProblem)
    if not ctmc:
        linearised = L.build_problems(cfg, task, arrays, shape, proxy="linearised")
        results["bffg_lin"] = _importance(zero, linearised, k_lin, e.samples, jnp.array(False))
    results["naive"] = _importance(zero, problems, k_nv, e.samples, jnp.array(True))
    chains = e.mcmc_ref_chains
    mc_mean, mc_acc = _mcmc(zero, problems, k_mc, jnp.array(max(e.samples // chains, 2)),
                            e.mcmc_rho, chains)
    long_mcmc = not ctmc and task.dynamics not in ("linear", "shapes")
    if long_mcmc:
        ref_means, _ = _mcmc(zero, problems, k_ref, jnp.array(e.mcmc_ref_iters), e.mcmc_rho,
                             chains)
    out = []
    for i, (seed, a) in enumerate(zip(seeds, arrays)):
        problem = S.unstack(problems, i)
        internal = np.asarray(problem.tree.is_leaf)[:n] == 0
        if ctmc:
            marg, log_p = ctmc_reference(problem)
            reference, ref_kind = marg[:n], "exact"
        elif task.dynamics == "linear":
            dyn, m0, P0 = D.make_dynamics(cfg, task)
            mean, _, log_p = S.exact_gaussian_tree(
                a["parent"], a["length"],
                tuple(np.asarray(v) for v in (dyn.B, dyn.beta, dyn.sigma)),
                np.asarray(m0, np.float64), np.asarray(P0, np.float64),
                a["obs"], a["observed"] > 0, problem.obs_var)
            reference, ref_kind = mean, "exact"
        elif task.dynamics == "shapes":
            reference, ref_kind, log_p = a["truth"], "truth", np.nan
        else:
            reference, ref_kind, log_p = np.asarray(ref_means[i])[:n], "mcmc_long", np.nan
        rows = []
        for method, r in results.items():
            rows.append({"task": task.name, "seed": seed, "method": method,
                         "elbo": float(r["elbo"][i]), "log_z": float(r["log_z"][i]),
                         "ess": float(r["ess"][i]),
                         "post_rmse": internal_rmse(np.asarray(r["mean"][i])[:n], reference,
                                                    internal),
                         "reference": ref_kind, "exact_log_p": float(log_p), "accept": np.nan,
                         "samples": e.samples})
        rows.append({"task": task.name, "seed": seed, "method": "mcmc", "elbo": np.nan,
                     "log_z": np.nan, "ess": np.nan,
                     "post_rmse": internal_rmse(np.asarray(mc_mean[i])[:n], reference, internal),
                     "reference": ref_kind, "exact_log_p": float(log_p),
                     "accept": float(mc_acc[i]), "samples": e.samples})
        estimates = {**{m: np.asarray(r["mean"][i])[:n] for m, r in results.items()},
                     "mcmc": np.asarray(mc_mean[i])[:n], "reference": np.asarray(reference),
                     "truth": a["truth"]}
        node_rows = [{"node": v, "method": m, "coord": c, "value": float(x[v, c]),
                      "internal": bool(internal[v]), "parent": int(a["parent"][v])}
                     for m, x in estimates.items() for v in range(n) for c in range(x.shape[1])]
        out.append((rows, node_rows))
    return out


def step_program(cfg, leaves: int, num_paths: int, seed: int):
    """One balanced tree's NBFFG training step and its ELBO-gradient variance.

    Returns ``(run_steps, gradient_variance)``: ``run_steps()`` performs
    ``cost.steps_per_timing`` chained training steps (forward + backward + Adam) and blocks on
    the result, for :func:`repro26.core.timing.interleaved_cpu_times`;
    ``gradient_variance(r)`` draws ``cost.grad_keys`` independent gradients at the initial
    network (keys from repeat ``r``) and returns ``(tr Cov g, tr Cov g / ||E g||^2)`` — the
    absolute variance and the relative one. SGD steps to a fixed *relative* accuracy scale with
    the relative variance, which does not grow merely because a larger tree sums more terms."""
    c = cfg.cost
    task = D.parse_task(f"{c.dynamics}_balanced_{leaves}")
    problem = L.build_problem(cfg, task, D.generate(cfg, task, [seed])[0])
    model = T.init_residual(cfg, task, problem, jax.random.key(seed))
    loss = L.make_loss(c.batch, num_paths)
    grads = eqx.filter_jit(eqx.filter_vmap(
        lambda k: eqx.filter_grad(lambda mdl: loss(mdl, problem, k)[0])(model)))
    optimizer = optax.adam(cfg.train.lr)
    step = eqx.filter_jit(optax_step(loss, optimizer))
    state0 = init_train_state(model, optimizer)
    keys = jax.random.split(jax.random.key(1), c.steps_per_timing)

    def run_steps():
        state = state0
        for k in keys:
            state, metrics = step(state, problem, k)
        return metrics["loss"]

    def gradient_variance(r: int) -> tuple[float, float]:
        g = grads(jax.random.split(jax.random.key(10_000 + r), c.grad_keys))
        flat = jnp.concatenate([v.reshape(c.grad_keys, -1) for v in jax.tree_util.tree_leaves(
            eqx.filter(g, eqx.is_inexact_array))], 1)
        var = float(jnp.sum(jnp.var(flat, 0, ddof=1)))
        return var, var / max(float(jnp.sum(jnp.mean(flat, 0) ** 2)), 1e-30)

    return run_steps, gradient_variance
