"""Success rates of every method on every task of every suite (rollouts vmapped over seeds,
tasks and episodes), and the per-seed summaries the figures and claims read.

Methods (rows of every table):

* ``base``: the frozen base policy, no adapter (trivial baseline);
* ``nearest``: the adapter of the nearest training task of the same suite (task-token
  distance), applied as is; for a training task the nearest *other* training task (trivial);
* ``finetune``: the task's own adapter (per-task fine-tuning, upper bound; training tasks only);
* ``task_arithmetic``, ``ties``, ``dare``: one merged delta per suite from its training tasks'
  adapters, lambda picked per suite and seed from the config grid by mean success on the
  suite's training tasks in separate selection episodes;
* ``joint``: one adapter trained on all training tasks (multi-task joint training);
* ``nestedvla``: the adapter the nested hypernetwork generates from the task token.
"""

from __future__ import annotations

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from repro26.core.stats import summary
from repro26.nestedvla import merging, suites
from repro26.nestedvla.policy import act
from repro26.nestedvla.train import reconstruction_error

METHODS = ("base", "nearest", "task_arithmetic", "ties", "dare", "joint", "nestedvla", "finetune")
MERGERS = merging.METHODS


def suite_tasks(cfg) -> dict[str, tuple[suites.Tasks, suites.Tasks]]:
    """(skill tasks, held-out tasks) of every suite."""
    return {s: suites.make_tasks(cfg.task_seed, s, cfg.n_tasks, cfg.n_heldout)
            for s in suites.SUITES}


def pretrain_tasks(cfg) -> dict[str, suites.Tasks]:
    """The base policy's pretraining tasks of every suite (an independent draw)."""
    return {s: suites.make_tasks(cfg.task_seed + 1, s, cfg.n_pretrain, 0)[0] for s in suites.SUITES}


@functools.lru_cache(maxsize=None)
def _success_fn(suite: str, episodes: int, horizon: int):
    """jit(seeds x tasks x episodes) success rate under per-task weight deltas."""
    def one_task(base, deltas, kind, goal, obj, emb, key):
        def episode(k):
            return suites.rollout(suite, lambda o: act(base, deltas, o, emb), kind, goal, obj, k,
                                  horizon)[2]
        return jnp.mean(jax.vmap(episode)(jax.random.split(key, episodes)))

    def per_seed(base, deltas, kind, goal, obj, emb, keys):
        return jax.vmap(one_task, in_axes=(None, 0, 0, 0, 0, 0, 0))(base, deltas, kind, goal,
                                                                     obj, emb, keys)

    return eqx.filter_jit(eqx.filter_vmap(per_seed, in_axes=(eqx.if_array(0), 0, None, None,
                                                             None, None, None)))


def success(cfg, tasks: suites.Tasks, bases, deltas, key) -> np.ndarray:
    """Success rate (n_seeds, n_tasks) of per-seed, per-task deltas ``(S, n_tasks, ...)``, over
    ``cfg.eval_episodes`` random starts (the same starts for every method with the same key)."""
    fn = _success_fn(tasks.suite, cfg.eval_episodes, cfg.horizon)
    keys = jax.random.split(key, len(tasks))
    return np.asarray(fn(bases, deltas, jnp.asarray(tasks.kind), jnp.asarray(tasks.goal),
                         jnp.asarray(tasks.obj), jnp.asarray(tasks.embedding()), keys))


def nearest_index(train_emb: np.ndarray, query_emb: np.ndarray, exclude_self: bool) -> np.ndarray:
    """Index of the nearest training token to each query (Euclidean); ``exclude_self`` for
    queries that are the training tokens themselves."""
    d = np.linalg.norm(query_emb[:, None] - train_emb[None], axis=-1)
    if exclude_self:
        np.fill_diagonal(d, np.inf)
    return np.argmin(d, axis=1)


def _broadcast(deltas, n_tasks: int):
    """Per-seed deltas (S, ...) -> per-seed, per-task (S, n_tasks, ...)."""
    return jax.tree.map(lambda d: jnp.repeat(d[:, None], n_tasks, axis=1), deltas)


def delta_norm(deltas) -> jax.Array:
    """Frobenius norm over all adapted matrices, sqrt(sum_l ||dW_l||^2), per leading index."""
    return jnp.sqrt(sum(jnp.sum(d.reshape(*d.shape[:2], -1) ** 2, -1) for d in deltas))


def same_shape_gap(deltas) -> jax.Array:
    """min over pairs (l, l') of adapted matrices of the same shape of
    ||dW_l - dW_l'|| / max(||dW_l||, ||dW_l'||), per leading (seed, task) index: 0 when two
    same-shape layers get the same generated matrix."""
    gaps = []
    for i, di in enumerate(deltas):
        for dj in deltas[i + 1:]:
            if di.shape == dj.shape:
                ni, nj, nd = (jnp.sqrt(jnp.sum(x.reshape(*x.shape[:2], -1) ** 2, -1))
                              for x in (di, dj, di - dj))
                gaps.append(nd / jnp.maximum(jnp.maximum(ni, nj), 1e-12))
    return jnp.min(jnp.stack(gaps), axis=0)


def token_distance(emb: np.ndarray, n_train: int) -> np.ndarray:
    """Distance of every token to its nearest other training token, in units of the median of
    that distance over the training tokens (1: as far as training tasks are from each other)."""
    d = np.linalg.norm(emb[:, None] - emb[None, :n_train], axis=-1)
    d[np.arange(n_train), np.arange(n_train)] = np.inf
    nearest = d.min(1)
    return nearest / np.median(nearest[:n_train])


def evaluate_suite(cfg, suite: str, train_tasks, held_tasks, offset: int, bases, adapter_deltas,
                   joint_deltas, hyper, key) -> tuple[list[dict], list[dict]]:
    """Rows (method, suite, task, split, kind, seed, success, lam) for one suite; ``offset`` is
    the suite's first index among all training tasks (the adapters' task axis). Also diagnostic
    rows per task and seed: the token's distance to the training tokens (:func:`token_distance`),
    the generated adapter's norm relative to the mean norm of the trained per-task adapters,
    its reconstruction error against the task's own adapter (training tasks,
    :func:`repro26.nestedvla.train.reconstruction_error`), the smallest gap between its
    same-shape matrices (:func:`same_shape_gap`), and the success of NestedVLA and of the
    frozen base."""
    n_train = len(train_tasks)
    both = suites.concat(train_tasks, held_tasks)
    n = len(both)
    own = jax.tree.map(lambda d: d[:, offset:offset + n_train], adapter_deltas)
    emb = both.embedding()
    near = np.concatenate([nearest_index(emb[:n_train], emb[:n_train], True),
                           nearest_index(emb[:n_train], emb[n_train:], False)])
    k_eval, k_select, k_dare = jax.random.split(key, 3)
    zeros = jax.tree.map(lambda d: jnp.zeros((d.shape[0], n, *d.shape[2:])), own)
    per_task = {
        "base": zeros,
        "nearest": jax.tree.map(lambda d: d[:, near], own),
        "joint": _broadcast(joint_deltas, n),
        "nestedvla": eqx.filter_vmap(lambda h: jax.vmap(h.deltas)(jnp.asarray(emb)))(hyper),
        "finetune": jax.tree.map(lambda d, z: z.at[:, :n_train].set(d), own, zeros),
    }
    rates = {m: success(cfg, both, bases, d, k_eval) for m, d in per_task.items()}
    lams = {m: np.full(len(cfg.seeds), np.nan) for m in METHODS}
    for method in MERGERS:
        grid = cfg.ties_lambdas if method == "ties" else cfg.sum_lambdas
        merged_at = []
        for lam in grid:
            merged = jax.vmap(lambda d, k: merging.merge(method, d, lam, keep=cfg.ties_keep,
                                                         drop=cfg.dare_drop, key=k))(
                own, jax.random.split(k_dare, len(cfg.seeds)))
            merged_at.append(_broadcast(merged, n))
        select = np.stack([success(cfg, both, bases, d, k_select)[:, :n_train].mean(1)
                           for d in merged_at])  # (grid, seeds)
        best = np.argmax(select, axis=0)
        chosen = sorted(set(best))
        evals = np.stack([success(cfg, both, bases, merged_at[g], k_eval) for g in chosen])
        rows = {g: i for i, g in enumerate(chosen)}
        rates[method] = np.stack([evals[rows[g], s] for s, g in enumerate(best)])
        lams[method] = np.asarray(grid, float)[best]
    norm = np.asarray(delta_norm(per_task["nestedvla"]))            # (seeds, tasks)
    trained = np.asarray(delta_norm(own)).mean(1, keepdims=True)    # (seeds, 1)
    distance = token_distance(emb, n_train)
    generated = jax.tree.map(lambda d: d[:, :n_train], per_task["nestedvla"])
    rec = np.asarray(jax.vmap(jax.vmap(reconstruction_error))(generated, own))  # (seeds, train)
    gap = np.asarray(same_shape_gap(per_task["nestedvla"]))                   # (seeds, tasks)
    diagnostics = [{"suite": suite, "task": t, "split": "heldout" if t >= n_train else "train",
                    "seed": int(seed), "token_distance": float(distance[t]),
                    "delta_norm_ratio": float(norm[s, t] / trained[s, 0]),
                    "reconstruction_error": float(rec[s, t]) if t < n_train else float("nan"),
                    "same_shape_gap": float(gap[s, t]),
                    "nestedvla": float(rates["nestedvla"][s, t]), "base": float(rates["base"][s, t])}
                   for s, seed in enumerate(cfg.seeds) for t in range(n)]
    out = []
    for method in METHODS:
        for s, seed in enumerate(cfg.seeds):
            for t in range(n):
                held = t >= n_train
                if method == "finetune" and held:
                    continue
                out.append({"method": method, "suite": suite, "task": t,
                            "split": "heldout" if held else "train",
                            "kind": suites.KINDS[int(both.kind[t])], "seed": int(seed),
                            "success": float(rates[method][s, t]),
                            "lam": float(lams[method][s])})
    return out, diagnostics


def by_suite(rows: list[dict], split: str) -> list[dict]:
    """Mean success per (method, suite, seed) over the split's tasks, plus suite ``all`` (the
    mean of the three suites)."""
    cells: dict = {}
    for r in rows:
        if r["split"] == split:
            cells.setdefault((r["method"], r["suite"], r["seed"]), []).append(r["success"])
    out = [{"method": m, "suite": s, "seed": seed, "success": float(np.mean(v))}
           for (m, s, seed), v in cells.items()]
    for m in dict.fromkeys(k[0] for k in cells):
        for seed in dict.fromkeys(k[2] for k in cells):
            per = [np.mean(v) for (mm, s, sd), v in cells.items() if mm == m and sd == seed]
            out.append({"method": m, "suite": "all", "seed": seed, "success": float(np.mean(per))})
    return out


def describe(rows: list[dict]) -> dict:
    """Mean and 95% CI over seeds of every (method, suite) cell, for the log."""
    cells: dict = {}
    for r in rows:
        cells.setdefault(f"{r['method']}/{r['suite']}", []).append(r["success"])
    return {k: summary(v) for k, v in cells.items()}
