"""Run NSMP and the baselines on one case, all seeds (and hyper-parameters) at once.

Every iterative solver is a pure step ``state -> (state, metrics)`` driven by
``repro26.core.train.run_loop`` (chunked ``lax.scan``, NaN check, progress); seeds and
hyper-parameter grids are ``jax.vmap``-ed into one compiled step. Metrics per step: the relative
error ``||x - x*|| / ||x*||`` against the centralised optimum, and the floats, messages and
rounds that step communicated. The stage writes the error curve (iterations thinned
logarithmically after the first 50) and a summary with the exact cost to reach ``tol``.
"""

from __future__ import annotations

import contextlib
import itertools
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import enable_x64

from repro26.core import io
from repro26.core.train import run_loop
from repro26.nsmp import model, solvers
from repro26.nsmp.losses import lipschitz

BASELINES = ("admm", "fedavg", "fedprox")
ITERATIVE = ("nsmp", *BASELINES)


def precision(cfg):
    """Context in which the solvers run: float64 (``enable_x64``) or float32."""
    return enable_x64() if cfg.precision == "float64" else contextlib.nullcontext()


def dtype(cfg):
    return jnp.float64 if cfg.precision == "float64" else jnp.float32


def save_case(path: Path, arrays: dict[str, np.ndarray], info: dict[str, np.ndarray], loss: str,
              x_star: np.ndarray) -> None:
    """The packed instance (all seeds), its per-seed structure numbers and the centralised
    optimum ``x*`` ``[S, d1]``, as one ``.npz``."""
    io.write_npz(path, loss=np.array(loss), x_star=x_star, **arrays,
                 **{f"info_{k}": v for k, v in info.items()})


def instance(arrays: dict[str, np.ndarray], loss: str, cfg) -> model.Instance:
    """The packed arrays as a solver instance in the config's precision."""
    return model.to_instance(arrays, loss, dtype(cfg))


def _iteration_grid(total: int, n_log: int = 150) -> np.ndarray:
    """Iterations kept in the curve table: 1..50 then log-spaced up to ``total``."""
    head = np.arange(1, min(total, 50) + 1)
    tail = np.unique(np.geomspace(51, max(total, 51), n_log).astype(int)) if total > 50 else []
    return np.unique(np.concatenate([head, tail, [total]])).astype(int)


def _tables(method: str, case: str, seeds, hp_labels, history: dict[str, np.ndarray], tol: float,
            meta: dict) -> tuple[list[dict], list[dict]]:
    """Curve rows and summary rows from a history with axes ``[step, hp, seed]``."""
    err = history["loss"]
    cum = {k: np.cumsum(history[k], axis=0) for k in ("floats", "messages", "rounds")}
    T = err.shape[0]
    keep = _iteration_grid(T) - 1
    curve, summary = [], []
    for h, label in enumerate(hp_labels):
        for s, seed in enumerate(seeds):
            e = err[:, h, s]
            for t in keep:
                curve.append({"method": method, "case": case, "seed": seed, "hp": label, "iter": t + 1,
                              "rounds": cum["rounds"][t, h, s], "messages": cum["messages"][t, h, s],
                              "floats": cum["floats"][t, h, s], "rel_err": e[t]})
            hit = np.flatnonzero(e <= tol)
            t0 = hit[0] if hit.size else None
            row = {"method": method, "case": case, "seed": seed, "hp": label,
                   "reached": t0 is not None,
                   "iters_to_tol": t0 + 1 if t0 is not None else np.nan,
                   "rounds_to_tol": cum["rounds"][t0, h, s] if t0 is not None else np.nan,
                   "messages_to_tol": cum["messages"][t0, h, s] if t0 is not None else np.nan,
                   "floats_to_tol": cum["floats"][t0, h, s] if t0 is not None else np.nan,
                   "first_err": e[0], "first_messages": history["messages"][0, h, s],
                   "first_rounds": history["rounds"][0, h, s],
                   "final_err": e[-1], "min_err": e.min(), "iters": T,
                   "total_floats": cum["floats"][-1, h, s],
                   "total_messages": cum["messages"][-1, h, s],
                   "total_rounds": cum["rounds"][-1, h, s]}
            summary.append(row)
    return curve, summary


def hyper_grid(method: str, cfg) -> tuple[list[str], np.ndarray]:
    """Labels and values ``[H, 2]`` of the method's grid (ADMM: rho; Fed*: lr, mu)."""
    if method == "nsmp":
        return ["-"], np.zeros((1, 2))
    if method == "admm":
        return [f"rho={r:g}" for r in cfg.admm_rho], np.array([[r, 0.0] for r in cfg.admm_rho])
    mus = (0.0,) if method == "fedavg" else cfg.fedprox_mu
    pairs = list(itertools.product(cfg.fed_lr, mus))
    labels = [f"lr={lr:g}" if method == "fedavg" else f"lr={lr:g},mu={mu:g}" for lr, mu in pairs]
    return labels, np.array(pairs)


def make_step(method: str, cfg, inst_loss: str):
    """``step(state, data, key)`` over ``[hp, seed]`` for ``data = (inst, x_star, edges, hp)``."""

    def one(state, inst, x_star, edges, hp):
        if method == "nsmp":
            return solvers.nsmp_round(state, inst, x_star)
        if method == "admm":  # one Newton step is the exact x-update of a quadratic
            local = 1 if inst_loss == "squared" else cfg.admm_local_steps
            return solvers.admm_step(state, inst, x_star, edges, hp[0], local)
        lmax = jnp.max(jax.vmap(lipschitz, in_axes=(0, 0, 0, None))(
            inst.A, inst.rowmask, inst.r, inst.loss))
        return solvers.fed_step(state, inst, x_star, edges, hp[0], hp[1], cfg.fed_local_steps, lmax)

    over_seeds = jax.vmap(one, in_axes=(0, 0, 0, 0, None))
    over_hp = jax.vmap(over_seeds, in_axes=(0, None, None, None, 0))

    def step(state, data, key):
        del key
        inst, x_star, edges, hp = data
        return over_hp(state, inst, x_star, edges, hp)

    return step


def init_state(method: str, inst: model.Instance, n_hp: int):
    init = solvers.newton_init if method == "nsmp" else solvers.consensus_init
    state = jax.vmap(init)(inst)
    return jax.tree.map(lambda a: jnp.broadcast_to(a, (n_hp, *a.shape)), state)


def run_method(method: str, case: str, inst: model.Instance, x_star, info, cfg, *, seeds, out: Path,
               progress: bool, meta: dict) -> None:
    """Run ``method`` on every seed and grid point; write ``out`` (curve) and its summary.

    No checkpoint: a job takes seconds to minutes, and a checkpoint left by a run with another
    config (same shapes) would be resumed silently.
    """
    labels, hp = hyper_grid(method, cfg)
    steps = cfg.newton_rounds if method == "nsmp" else (
        cfg.admm_iters if method == "admm" else cfg.fed_iters)
    edges = jnp.asarray(info["nerve_edges"])
    data = (inst, x_star, edges, jnp.asarray(hp, inst.A.dtype))
    state = init_state(method, inst, len(labels))
    _, history = run_loop(make_step(method, cfg, inst.loss), state, data, key=jax.random.key(0),
                          num_steps=steps, chunk_size=min(cfg.chunk_size, steps),
                          desc=f"{method} {case}",
                          progress=progress)
    curve, summary = _tables(method, case, seeds, labels, history, cfg.tol, meta)
    io.write_table(out, curve, meta)
    io.write_table(summary_path(out), summary, meta)


def summary_path(curve_path: Path) -> Path:
    return curve_path.with_name(curve_path.stem + "_summary.csv")


def run_central(inst: model.Instance) -> np.ndarray:
    """``x*`` for every seed, ``[S, d1]``."""
    return np.asarray(eqx.filter_jit(jax.vmap(solvers.central_solve))(inst))
