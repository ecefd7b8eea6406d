"""The bound optimisation: fit phase, constrained query phase, restarts across masks.

All bound problems of one shape (same d and K) -- every (sample size, mask of the class,
direction, restart) -- are stacked into one batch and trained in one compiled loop: the batched
loss is the sum of the independent per-problem losses, so its gradient is the per-problem
gradient and Adam (coordinate-wise) runs every problem independently.

1. Fit phase: minimise the exact NLL.
2. Query phase: from the fitted weights, minimise s * Q under the likelihood-ratio data-fit
   constraint with an augmented Lagrangian; the multiplier is updated after every gradient step
   (first-order method of multipliers).

Both phases are the same ``optax_step`` (one compiled program, reused from JAX's persistent
compilation cache by the second phase): the trainable part is an offset ``delta`` of base
weights, theta = theta_base + scale * delta, and per-problem weights in the data switch the loss
between "NLL" (fit: theta_base = initial weights, scale = 1) and "augmented Lagrangian"
(query: theta_base = fitted weights, scale = sqrt(n_0 / n)).
3. The bound of the class is the min (max) over masks and restarts of the per-problem results
   (done in :mod:`evaluate`).
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jaxtyping import Array, Float, Int, PRNGKeyArray
from scipy import stats

from repro26.core.train import TrainState, init_train_state, optax_step, run_loop
from repro26.masked_ncm import losses, solvers
from repro26.masked_ncm.model import MaskedNCM
from repro26.masked_ncm.settings import ModelConfig, OptimConfig


class Trainable(eqx.Module):
    """Offset of the base weights and the Lagrange multipliers (one per problem).

    In the query phase theta = theta_fit + sqrt(n_0 / n) * delta: the likelihood-ratio region
    has radius O(n^{-1/2}) around theta_fit, so measuring the step in units of the statistical
    resolution keeps Adam's step (about lr per coordinate) inside the region at every n.
    """

    delta: MaskedNCM
    lam: Float[Array, " b"]
    count: Float[Array, " b"]        # steps taken (not trained; drives the annealing)


class PhaseData(eqx.Module):
    problems: losses.Problem
    base: MaskedNCM
    scale: Float[Array, " b"]
    nll_ref: Float[Array, " b"]
    query: Float[Array, ""]          # 0: fit phase, 1: query phase
    anneal_steps: Float[Array, ""]   # > 0: anneal the constraint's n from n_0 up to n
    n_ref: Float[Array, ""]
    assignments: Int[Array, "c d"]


def annealed_n(n, n_ref, count, anneal_steps):
    """n_t = n_0^(1 - t) n^t with t = min(1, count / anneal_steps) (t = 1 when not annealing).

    The data-fit region starts as wide as with n_0 samples and shrinks to the real one: the query
    first moves far along directions the data do not pin down (latent confounding), and the
    shrinking region then pulls the fit back onto the data without undoing that move."""
    t = jnp.where(anneal_steps > 0, jnp.minimum(1.0, count / jnp.maximum(anneal_steps, 1.0)), 1.0)
    return jnp.exp((1.0 - t) * jnp.log(jnp.minimum(n_ref, n)) + t * jnp.log(n))


def init_models(key: PRNGKeyArray, batch: int, num_nodes: int, card: int, model_cfg: ModelConfig,
                num_latent: int) -> MaskedNCM:
    """``batch`` independently initialised Masked NCMs, stacked along a leading axis."""
    make = lambda k: MaskedNCM(num_nodes, card, embed_dim=model_cfg.embed_dim,  # noqa: E731
                               heads=model_cfg.heads, hidden=model_cfg.hidden,
                               num_latent=num_latent, key=k)
    return eqx.filter_jit(eqx.filter_vmap(make))(jax.random.split(key, batch))


def offset(base: MaskedNCM, delta: MaskedNCM, scale: Float[Array, " b"]) -> MaskedNCM:
    """theta_base + scale * delta, leaf by leaf (``scale`` per problem, the leading axis)."""
    def add(w, dw):
        if not eqx.is_inexact_array(w):
            return w
        return w + scale.reshape((-1,) + (1,) * (w.ndim - 1)) * dw
    return jax.tree.map(add, base, delta)


def _zeros_like(models: MaskedNCM) -> MaskedNCM:
    arrays, static = eqx.partition(models, eqx.is_inexact_array)
    return eqx.combine(jax.tree.map(jnp.zeros_like, arrays), static)


def evaluate_batch(models: MaskedNCM, problems: losses.Problem, assignments):
    """(NLL, Q) of every problem's model."""
    return eqx.filter_vmap(lambda m, p: losses.nll_and_query(m, p, assignments))(models, problems)


_evaluate_jit = eqx.filter_jit(evaluate_batch)


def make_step(optimizer, rho: float, dual_lr: float, dual_clip: float, crit: float):
    """The gradient step of both phases; the loss of problem b is
    (1 - query) NLL_b + query * [s_b Q_b + AL(g_b, lambda_b)], then
    lambda_b += eta * query * min(g_b, dual_clip) (clipped so that one large violation early in
    the query phase cannot inflate the multiplier for the rest of the run)."""

    def loss_fn(tr: Trainable, data: PhaseData, key):
        p = data.problems
        nll_b, q_b = evaluate_batch(offset(data.base, tr.delta, data.scale), p, data.assignments)
        n_t = annealed_n(p.n, data.n_ref, jax.lax.stop_gradient(tr.count), data.anneal_steps)
        g = losses.lr_constraint(nll_b, data.nll_ref, n_t, crit)
        al = losses.augmented_lagrangian(p.sign * q_b, g, jax.lax.stop_gradient(tr.lam), rho)
        total = (1.0 - data.query) * nll_b + data.query * al
        return jnp.sum(total), {"q": q_b, "g": g, "nll": nll_b}

    inner = optax_step(loss_fn, optimizer)

    def step(state: TrainState, data: PhaseData, key):
        new_state, metrics = inner(state, data, key)
        g = jnp.minimum(metrics["g"], dual_clip)
        lam = jnp.maximum(0.0, state.model.lam + data.query * dual_lr * g)
        model = eqx.tree_at(lambda t: (t.lam, t.count), new_state.model, (lam, state.model.count + 1.0))
        return TrainState(model, new_state.opt_state), metrics

    return step


def _cleanup(path: Path | None) -> None:
    if path is None:
        return
    for p in (path, path.with_name(path.name + ".history.npz")):
        with contextlib.suppress(FileNotFoundError):
            p.unlink()


def optimise_bounds(problems: losses.Problem, groups: np.ndarray, num_nodes: int, card: int,
                    num_latent: int, model_cfg: ModelConfig, optim: OptimConfig, key: PRNGKeyArray,
                    identified: bool = True, anneal: float = 0.0, checkpoint: Path | None = None,
                    progress: bool = False) -> dict[str, np.ndarray]:
    """Run the fit and query phases on a batch of problems; per-problem Q, NLLs, constraints.

    ``groups[b]`` names the data-fit group of problem b (:func:`build_problems`). Every mask of
    a class spans the same set of distributions, so the data-fit reference of a group is the
    best fit found by any of its masks and restarts: NLL_ref = min over the group of NLL_fit. A restart that fit
    worse starts infeasible and is pulled back to the data by the multiplier.

    ``identified``: within one mask the query is identified (Markovian masks), so the optimum
    lies O(n^{-1/2}) from the fit and query steps are scaled by sqrt(n_0 / n). With latent
    confounding (IV) the query moves O(1) along the set of equally fitting models, so the steps
    are not scaled down with n. ``anneal`` > 0 anneals the constraint's n over that fraction of
    the query steps (:func:`annealed_n`).

    ``checkpoint`` (a path prefix) lets a killed job resume each phase; the files are removed
    once the batch is done, so a later run with another config never resumes stale weights.
    """
    batch = problems.freq.shape[0]
    assignments = jnp.asarray(losses.all_assignments(num_nodes, card))
    k_init, k_fit, k_query = jax.random.split(key, 3)
    init = init_models(k_init, batch, num_nodes, card, model_cfg, num_latent)
    crit = float(stats.chi2.ppf(1.0 - optim.alpha, df=1))
    optimizer = optax.adam(optax.cosine_decay_schedule(optim.lr, optim.steps, alpha=0.01))
    step = make_step(optimizer, optim.rho, optim.dual_lr, optim.dual_clip, crit)
    fresh = Trainable(_zeros_like(init), jnp.zeros(batch), jnp.zeros(batch))

    def phase(name, data, k):
        ckpt = checkpoint.with_name(f"{checkpoint.name}.{name}.ckpt") if checkpoint else None
        state, hist = run_loop(
            step, init_train_state(fresh, optimizer), data, key=k, num_steps=optim.steps,
            chunk_size=optim.chunk_size, checkpoint_path=ckpt,
            checkpoint_every=optim.chunk_size if ckpt else None,
            desc=f"{name} d={num_nodes}", progress=progress)
        return state.model, hist, ckpt

    ones = jnp.ones(batch)
    n_ref = jnp.asarray(optim.n_ref, jnp.float32)
    fit_data = PhaseData(problems, init, ones, jnp.zeros(batch), jnp.zeros(()), jnp.zeros(()),
                         n_ref, assignments)
    tr, fit_hist, ck_fit = phase("fit", fit_data, k_fit)
    fitted = offset(init, tr.delta, ones)
    nll_fit, q_fit = _evaluate_jit(fitted, problems, assignments)

    nll_fit_np = np.asarray(nll_fit)
    best = {g: nll_fit_np[groups == g].min() for g in np.unique(groups)}
    nll_ref = jnp.asarray([best[g] for g in groups], dtype=nll_fit.dtype)
    scale = optim.query_lr_ratio * (jnp.sqrt(optim.n_ref / problems.n) if identified else ones)
    query_data = PhaseData(problems, fitted, scale, nll_ref, jnp.ones(()),
                           jnp.asarray(anneal * optim.steps, jnp.float32), n_ref, assignments)
    tr, _, ck_query = phase("query", query_data, k_query)
    nll_end, q_end = _evaluate_jit(offset(fitted, tr.delta, scale), problems, assignments)
    g_end = losses.lr_constraint(nll_end, nll_ref, problems.n, crit)
    _cleanup(ck_fit)
    _cleanup(ck_query)
    return {
        "q": np.asarray(q_end), "q_fit": np.asarray(q_fit), "nll_fit": nll_fit_np,
        "nll_ref": np.asarray(nll_ref),
        "nll_end": np.asarray(nll_end), "constraint": np.asarray(g_end),
        "lam": np.asarray(tr.lam), "fit_curve": np.asarray(fit_hist["nll"]),
    }


# ----------------------------------------------------------------------------- problem batches


def _class_key(dag: np.ndarray) -> bytes:
    """Markov equivalence class of a DAG (its CPDAG), as a dictionary key."""
    return solvers.cpdag_from_dag(dag).tobytes()


def build_problems(instances: list[dict], restarts: int, multiple: int, *, iv: bool
                   ) -> tuple[losses.Problem, np.ndarray, list[dict]]:
    """Every (seed, n, model, mask, direction, restart) of a dataset as one padded batch.

    Graph datasets: the Masked NCM's masks (the union of the true class and PC's class; the
    evaluation picks each class's members) and, as its own model, the single-DAG NCM on the DAG
    of ``single_dag`` (a random consistent extension of PC's CPDAG), all without confounder.
    The IV dataset uses the single mask Z -> X -> Y with X and Y reading the confounder.
    The batch is padded to a multiple of ``multiple`` (repeating the first problem) so that
    datasets of similar size share one compiled program; the index rows describe the real
    problems only. Also returns the data-fit group of every problem (padding included): masks
    of one (seed, n) and one Markov equivalence class share a group (they span the same
    distributions); the single-DAG NCM is a group of its own, fitted only by itself.
    """
    rows, freq, masks, conf, xs, ys, ns, signs, groups = [], [], [], [], [], [], [], [], []
    names: dict[tuple, int] = {}
    for inst in instances:
        for sample in inst["samples"]:
            counts = np.asarray(sample["counts"], dtype=float)
            if iv:
                models = [("masked", 0, IV_MASK)]
            else:
                models = [("masked", m, np.asarray(g)) for m, g in enumerate(sample["masks"])]
                models.append(("single", -1, np.asarray(sample["single_dag"])))
            for model, m, dag in models:
                key = (inst["seed"], sample["n"], model, _class_key(dag) if not iv else b"")
                group = names.setdefault(key, len(names))
                for sign in (1.0, -1.0):
                    for r in range(restarts):
                        rows.append({"seed": inst["seed"], "n": sample["n"], "model": model,
                                     "mask": m, "direction": "min" if sign > 0 else "max",
                                     "restart": r})
                        freq.append(counts / counts.sum())
                        masks.append(dag)
                        conf.append(IV_CONF if iv else np.zeros(dag.shape[0]))
                        xs.append(1 if iv else inst["x"])
                        ys.append(2 if iv else inst["y"])
                        ns.append(sample["n"])
                        signs.append(sign)
                        groups.append(group)
    pad = (-len(rows)) % multiple
    groups = np.asarray(groups + [groups[0]] * pad)
    cols = [freq, masks, conf, xs, ys, ns, signs]
    cols = [c + [c[0]] * pad for c in cols]
    problems = losses.Problem(*(jnp.asarray(np.stack(c), dtype=jnp.int32 if i in (3, 4) else jnp.float32)
                                for i, c in enumerate(cols)))
    return problems, groups, rows


#: Z -> X -> Y (variables 0, 1, 2); X and Y read the confounder U
IV_MASK = np.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]])
IV_CONF = np.array([0.0, 1.0, 1.0])
