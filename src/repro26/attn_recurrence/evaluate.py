"""Metrics and tidy tables of the three experiments.

1. *Tightness* (``tightness.csv``): for each target and state N, on held-out sequences of each
   seed, the lower bounds (operator and Frobenius) and the errors ``||P - M||`` of the trained
   surrogate and of the baselines of the same state, all in the same job: the truncated-SVD
   construction at every split (``svd_sweep``), a random recurrence with least-squares readout
   (``random``) and the running average (``causal_mean``, state 1).
2. *State scaling* (``scaling.csv``): MQAR with K pairs and values of dimension d_v; the shared
   state S of a trained diagonal recurrence against the bound on ``P (x) I_{d_v}``; the state
   required for operator error <= tol, per seed.
3. *Head survey* (``survey.csv``): every head of the transformers trained here (and of any GPT-2
   layout checkpoint), trained and at initialisation: bound relative to ``||P||`` per state.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from repro26.attn_recurrence import solvers, train


def _op_frob(E):
    return jnp.linalg.norm(E, 2), jnp.linalg.norm(E)


def _bounds(P_seqs, states, value_dim: int = 1, rank=None, stride: int = 1, key=None):
    """Per sequence and state: ``(operator bound, Frobenius bound, ||P||_2, ||P||_F)``."""
    key = jax.random.PRNGKey(0) if key is None else key
    out = _bounds_jit(jnp.asarray(P_seqs), tuple(int(s) for s in states), value_dim, rank,
                      stride, key)
    return tuple(np.asarray(a) for a in out)


@functools.partial(jax.jit, static_argnames=("states", "value_dim", "rank", "stride"))
def _bounds_jit(P_seqs, states, value_dim, rank, stride, key):
    if rank is None:
        spectra = jax.lax.map(solvers.semiseparable_spectrum, P_seqs)
    else:
        keys = jax.random.split(key, P_seqs.shape[0])
        spectra = jax.lax.map(lambda a: solvers.semiseparable_spectrum(a[0], rank, a[1], stride),
                              (P_seqs, keys))
    states = jnp.asarray(states)
    op = jax.vmap(lambda sp: jax.vmap(lambda s: solvers.operator_bound(sp, s, value_dim))(states))(spectra)
    fro = jax.vmap(lambda sp: jax.vmap(lambda s: solvers.frobenius_bound(sp, s, value_dim))(states))(spectra)
    norms = jax.vmap(_op_frob)(P_seqs)
    return op, fro, norms[0], norms[1]


@functools.partial(jax.jit, static_argnames=("states", "value_dim"))
def baseline_errors(P_seqs, states, key, value_dim: int = 1):
    """Mean over sequences of ``(op, frob)`` errors, shape ``(states, 2)``, of each baseline with
    total state ``S`` (``S // d_v`` per value channel, ``diag(P)`` when 0; the errors of
    ``P (x) I - M (x) I`` equal the scalar ones in operator norm and ``sqrt(d_v)`` times them
    in Frobenius norm). One compiled program for every state of the grid."""
    per = jnp.asarray(states) // value_dim
    state_max = max(1, int(max(states)) // value_dim)
    keys = jax.random.split(key, P_seqs.shape[0])
    T = P_seqs.shape[1]
    scale = jnp.asarray([1.0, np.sqrt(value_dim)])

    def errors(build):
        one = lambda p, s, k: jnp.stack(_op_frob(p - build(p, s, k)))  # noqa: E731
        per_state = lambda s: jax.vmap(lambda p, k: one(p, s, k))(P_seqs, keys).mean(0)  # noqa: E731
        return jax.lax.map(per_state, per) * scale

    return {
        "svd_sweep": errors(lambda p, s, k: solvers.svd_sweep(p, s, state_max)),
        "random": errors(lambda p, s, k: solvers.random_recurrence(p, s, k, state_max)),
        "causal_mean": jnp.broadcast_to(
            jax.vmap(lambda p: jnp.stack(_op_frob(p - solvers.causal_mean(T))))(P_seqs).mean(0)
            * scale, (per.shape[0], 2)),
    }


def surrogate_errors(models, X_test, P_test):
    """``(op, frob)`` of ``P (x) I - M`` per (seed, state), mean over test sequences."""
    Ms = train.mixing_grid(models, X_test)  # (seeds, states, n, T, T, d, d)
    errs = jax.vmap(jax.vmap(jax.vmap(lambda M, P: jnp.stack(solvers.kron_error(P, M)),
                                      in_axes=(0, 0)), in_axes=(0, None)), in_axes=(0, 0))(
        Ms, P_test)
    return np.asarray(errs).mean(axis=2)  # (seeds, states, 2)


def tightness_rows(cfg, target, kind, models, X_test, P_test, seeds, states):
    """Rows of ``tightness.csv`` for one (surrogate kind, target) job."""
    errs = surrogate_errors(models, X_test, P_test)
    rows = []
    for i, seed in enumerate(seeds):
        op_b, fro_b, n_op, n_fro = _bounds(P_test[i], states)
        base = baseline_errors(jnp.asarray(P_test[i]), tuple(states), jax.random.PRNGKey(1_000 + seed))
        for j, state in enumerate(states):
            common = {"target": target, "job": kind, "seed": seed, "state": int(state),
                      "bound_op": op_b[:, j].mean(), "bound_frob": fro_b[:, j].mean(),
                      "norm_op": n_op.mean(), "norm_frob": n_fro.mean()}
            rows.append({**common, "method": kind, "err_op": errs[i, j, 0],
                         "err_frob": errs[i, j, 1]})
            for name, errs_b in base.items():
                rows.append({**common, "method": name, "err_op": errs_b[j, 0],
                             "err_frob": errs_b[j, 1]})
    return rows


def required_state(states, values, tol: float) -> float:
    """Smallest state whose value is <= tol (NaN when none on the grid is)."""
    ok = np.flatnonzero(np.asarray(values) <= tol)
    return float(np.asarray(states)[ok[0]]) if ok.size else float("nan")


def scaling_rows(cfg, pairs, value_dim, models, X_test, P_test, seeds, states):
    """Rows of ``scaling.csv`` for one (K, d_v) job: per seed and state the trained diagonal
    recurrence, the random-recurrence baseline and the bound on ``P (x) I_{d_v}``."""
    errs = surrogate_errors(models, X_test, P_test)
    rows = []
    for i, seed in enumerate(seeds):
        op_b, fro_b, n_op, _ = _bounds(P_test[i], states, value_dim)
        base = baseline_errors(jnp.asarray(P_test[i]), tuple(states), jax.random.PRNGKey(2_000 + seed),
                               value_dim)
        for j, state in enumerate(states):
            common = {"pairs": pairs, "value_dim": value_dim, "load": pairs * value_dim,
                      "seed": seed, "state": int(state), "bound_op": op_b[:, j].mean(),
                      "bound_frob": fro_b[:, j].mean(), "norm_op": n_op.mean()}
            rows.append({**common, "method": "diag", "err_op": errs[i, j, 0],
                         "err_frob": errs[i, j, 1]})
            rows.append({**common, "method": "random", "err_op": base["random"][j, 0],
                         "err_frob": base["random"][j, 1]})
    return rows


def survey_rows(model, ids, states, source: str, seed: int, weights: str, cfg, key):
    """Rows of ``survey.csv``: per layer, head and state, the bounds relative to ``||P||``
    averaged over the evaluation sequences ``ids``."""
    maps = np.asarray(jax.vmap(model.attention_maps)(jnp.asarray(ids)))  # (n, L, H, T, T)
    return map_rows(maps, states, source, seed, weights, cfg, key)


def map_rows(maps, states, source: str, seed: int, weights: str, cfg, key):
    """:func:`survey_rows` from attention maps ``(n, L, H, T, T)`` (a model's, or a constructed
    head's with ``L = H = 1``)."""
    n, L, H, T, _ = maps.shape
    exact = T <= cfg.exact_svd_max_len
    rank = None if exact else int(max(states)) + 1
    stride = 1 if exact else cfg.split_stride
    flat = jnp.asarray(maps.transpose(1, 2, 0, 3, 4).reshape(L * H * n, T, T))
    op_b, fro_b, n_op, n_fro = _bounds(flat, states, rank=rank, stride=stride, key=key)
    op_b = (op_b / n_op[:, None]).reshape(L, H, n, -1).mean(2)
    fro_b = (fro_b / n_fro[:, None]).reshape(L, H, n, -1).mean(2)
    rows = []
    for layer in range(L):
        for head in range(H):
            for j, state in enumerate(states):
                rows.append({"source": source, "seed": seed, "weights": weights, "layer": layer,
                             "head": head, "seq_len": T, "state": int(state),
                             "rel_bound_op": op_b[layer, head, j],
                             "rel_bound_frob": fro_b[layer, head, j]})
    return rows
