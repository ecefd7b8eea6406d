"""Dynamic graphs as fixed-shape snapshot streams, and the evaluation negatives.

A stream has ``T`` snapshots of exactly ``E`` directed events ``(src, dst, time)`` each
(``time`` in ``[t, t + 1)`` for snapshot ``t``, sorted within the snapshot), plus static node
features ``x`` (N x F). Two generators with planted structure, both pure functions of a key:

* ``dsbm`` — dynamic stochastic block model with community drift, triadic closure and
  recurring interactions. Each snapshot's events are a mixture: a fraction ``frac_repeat``
  re-draws a past edge with probability proportional to its count, ``frac_triadic`` closes a
  wedge u - w - v of the history (u by degree, w a neighbour of u, v a neighbour of w), the
  rest draw u uniformly and v with odds ``affinity`` : 1 for same community vs other. Between
  snapshots each node moves to a random community with probability ``drift``. Features are the
  initial community's centroid plus noise (so they go stale as communities drift).
* ``bipartite`` — a JODIE-like user -> item stream: users prefer one of ``n_item_clusters`` item
  clusters (preference drifts), re-buy a past item (``frac_repeat``, by count) or buy from the
  preferred cluster with probability ``p_pref`` (else a uniform item).

``load_event_csv`` reads the JODIE/TGB CSV layout (``user,item,timestamp,...``) from a path the
user supplies, and cuts the time-ordered events into snapshots of ``E`` consecutive events.

Negatives (``negatives``), fixed per seed and shared by every model: for each positive event of
a snapshot, a *random* destination, a *historical* pair (an edge seen in an earlier snapshot),
an *inductive* pair (an edge of the test period never seen in training), and ``K`` random
destinations for MRR; none of them is a positive of the same snapshot.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from repro26.core.config import UsageError


class Stream(NamedTuple):
    """One dynamic graph: events per snapshot and node features."""

    src: Int[Array, "T E"]
    dst: Int[Array, "T E"]
    time: Float[Array, "T E"]
    x: Float[Array, "N F"]


def _event_times(key, T: int, E: int):
    return jnp.arange(T)[:, None] + jnp.sort(jax.random.uniform(key, (T, E)), axis=1)


def dsbm(key, n_nodes: int, n_snapshots: int, events: int, n_communities: int, affinity: float,
         drift: float, frac_repeat: float, frac_triadic: float, feature_dim: int,
         feature_noise: float) -> Stream:
    """Dynamic SBM with drift, triadic closure and recurring edges (module docstring)."""
    N, E = n_nodes, events
    k_z, k_c, k_x, k_t, k_run = jax.random.split(key, 5)
    z0 = jax.random.randint(k_z, (N,), 0, n_communities)
    centroids = jax.random.normal(k_c, (n_communities, feature_dim))
    x = centroids[z0] + feature_noise * jax.random.normal(k_x, (N, feature_dim))
    n_rep = int(round(frac_repeat * E))
    n_tri = int(round(frac_triadic * E))
    kind = jnp.concatenate([jnp.zeros(n_rep, int), jnp.ones(n_tri, int),
                            jnp.full(E - n_rep - n_tri, 2)])
    log_aff = jnp.log(affinity)

    def snapshot(carry, k):
        A, z = carry
        k_sbm_u, k_sbm_v, k_rep, k_u, k_w, k_v, k_d1, k_d2 = jax.random.split(k, 8)
        # SBM draws: u uniform, v with odds `affinity` for the same community
        u_s = jax.random.randint(k_sbm_u, (E,), 0, N)
        logits = jnp.where(z[u_s][:, None] == z[None, :], log_aff, 0.0)
        logits = logits.at[jnp.arange(E), u_s].set(-jnp.inf)
        v_s = jax.random.categorical(k_sbm_v, logits)
        # recurring: a past edge with probability proportional to its count
        has_hist = A.sum() > 0
        flat = jax.random.categorical(k_rep, jnp.log(A.reshape(-1) + 1e-30), shape=(E,))
        u_r, v_r = flat // N, flat % N
        # triadic closure: wedge u - w - v with v != u, v not yet a neighbour of u
        deg = A.sum(1)
        u_t = jax.random.categorical(k_u, jnp.log(deg + 1e-30), shape=(E,))
        w_t = jax.random.categorical(k_w, jnp.log(A[u_t] + 1e-30))
        closing = (A[w_t] > 0) & (A[u_t] == 0)
        closing = closing.at[jnp.arange(E), u_t].set(False)
        v_t = jax.random.categorical(k_v, jnp.where(closing, 0.0, -jnp.inf))
        tri_ok = closing.any(1)
        use_rep = (kind == 0) & has_hist
        use_tri = (kind == 1) & has_hist & tri_ok
        u = jnp.where(use_rep, u_r, jnp.where(use_tri, u_t, u_s))
        v = jnp.where(use_rep, v_r, jnp.where(use_tri, v_t, v_s))
        A = A.at[u, v].add(1.0).at[v, u].add(1.0)
        moves = jax.random.bernoulli(k_d1, drift, (N,))
        z = jnp.where(moves, jax.random.randint(k_d2, (N,), 0, n_communities), z)
        return (A, z), (u, v)

    keys = jax.random.split(k_run, n_snapshots)
    _, (src, dst) = jax.lax.scan(snapshot, (jnp.zeros((N, N)), z0), keys)
    return Stream(src, dst, _event_times(k_t, n_snapshots, E), x)


def bipartite(key, n_users: int, n_items: int, n_snapshots: int, events: int,
              n_item_clusters: int, p_pref: float, drift: float, frac_repeat: float,
              feature_dim: int, feature_noise: float) -> Stream:
    """User -> item stream (nodes ``0..U-1`` users, ``U..U+I-1`` items; module docstring)."""
    U, I, E = n_users, n_items, events
    k_c, k_pref, k_xi, k_xu, k_t, k_run = jax.random.split(key, 6)
    cluster = jnp.arange(I) % n_item_clusters
    centroids = jax.random.normal(k_c, (n_item_clusters, feature_dim))
    pref0 = jax.random.randint(k_pref, (U,), 0, n_item_clusters)
    x = jnp.concatenate([centroids[pref0] + feature_noise * jax.random.normal(k_xu, (U, feature_dim)),
                         centroids[cluster] + feature_noise * jax.random.normal(k_xi, (I, feature_dim))])
    n_rep = int(round(frac_repeat * E))
    is_rep = jnp.arange(E) < n_rep

    def snapshot(carry, k):
        B, pref = carry  # B: U x I interaction counts
        k_u, k_ur, k_ir, k_pick, k_in, k_any, k_d1, k_d2 = jax.random.split(k, 8)
        u_new = jax.random.randint(k_u, (E,), 0, U)
        in_pref = jnp.where(cluster[None, :] == pref[u_new][:, None], 0.0, -jnp.inf)
        i_pref = jax.random.categorical(k_in, in_pref)
        i_any = jax.random.randint(k_any, (E,), 0, I)
        i_new = jnp.where(jax.random.bernoulli(k_pick, p_pref, (E,)), i_pref, i_any)
        has_hist = B.sum() > 0
        flat = jax.random.categorical(k_ur, jnp.log(B.reshape(-1) + 1e-30), shape=(E,))
        rep = is_rep & has_hist
        u = jnp.where(rep, flat // I, u_new)
        i = jnp.where(rep, flat % I, i_new)
        B = B.at[u, i].add(1.0)
        moves = jax.random.bernoulli(k_d1, drift, (U,))
        pref = jnp.where(moves, jax.random.randint(k_d2, (U,), 0, n_item_clusters), pref)
        return (B, pref), (u, U + i)

    keys = jax.random.split(k_run, n_snapshots)
    _, (src, dst) = jax.lax.scan(snapshot, (jnp.zeros((U, I)), pref0), keys)
    return Stream(src, dst, _event_times(k_t, n_snapshots, E), x)


def load_event_csv(path: str | Path, events: int, max_snapshots: int, feature_dim: int,
                   key) -> tuple[Stream, np.ndarray]:
    """Read a JODIE/TGB event CSV (header line, then ``user,item,timestamp[,...]``) and cut the
    time-sorted events into snapshots of ``events`` consecutive events (at most
    ``max_snapshots``; the tail is dropped). Items are renumbered after the users. No node
    features ship with these files: ``x`` is a fixed Gaussian draw from ``key`` (the LSH then
    hashes neighbours at random). Returns the stream and the destination pool (the items)."""
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"csv_files: {path} does not exist")
    with path.open() as f:
        rows = list(csv.reader(f))
    try:
        body = [(r[0], r[1], float(r[2])) for r in rows[1:] if r]
    except (IndexError, ValueError):
        raise UsageError(f"{path}: expected columns user,item,timestamp (JODIE/TGB layout)") from None
    users = {u: k for k, u in enumerate(dict.fromkeys(r[0] for r in body))}
    items = {i: k for k, i in enumerate(dict.fromkeys(r[1] for r in body))}
    order = np.argsort([r[2] for r in body], kind="stable")
    T = min(len(body) // events, max_snapshots)
    if T < 3:
        raise UsageError(f"{path}: {len(body)} events make fewer than 3 snapshots of {events}")
    order = order[: T * events]
    src = np.array([users[body[k][0]] for k in order]).reshape(T, events)
    dst = np.array([len(users) + items[body[k][1]] for k in order]).reshape(T, events)
    stamps = np.array([body[k][2] for k in order]).reshape(T, events)
    span = np.ptp(stamps, axis=1, keepdims=True)
    frac = (stamps - stamps[:, :1]) / np.where(span > 0, span, 1.0)
    time = np.arange(T)[:, None] + np.minimum(frac, 1 - 1e-6)
    N = len(users) + len(items)
    x = np.asarray(jax.random.normal(key, (N, feature_dim)))
    return Stream(src, dst, time, x), np.arange(len(users), N)


# ----------------------------------------------------------------------------- negatives


def _pair_code(u, v, N: int):
    return np.asarray(u, np.int64) * N + np.asarray(v, np.int64)


def _draw_destinations(rng, src, positives: set, pool: np.ndarray, N: int, shape) -> np.ndarray:
    """Destinations from ``pool`` with ``(src, dst)`` not in ``positives`` (rejection; a source
    whose every pair is positive keeps a draw equal to itself, which is never an event)."""
    out = rng.choice(pool, size=shape)
    src_b = np.broadcast_to(np.asarray(src).reshape(shape[:1] + (1,) * (len(shape) - 1)), shape)
    for _ in range(100):
        bad = np.isin(_pair_code(src_b, out, N), list(positives)) if positives else np.zeros(shape, bool)
        if not bad.any():
            return out
        out[bad] = rng.choice(pool, size=int(bad.sum()))
    out[bad] = src_b[bad]
    return out


def _draw_pairs(rng, pool_codes: np.ndarray, positives: set, fallback, n: int, N: int):
    """``n`` pairs from ``pool_codes`` minus ``positives``; where that is empty, ``fallback``.
    Returns (src, dst, from_pool)."""
    allowed = np.setdiff1d(pool_codes, np.fromiter(positives, np.int64, len(positives)))
    if allowed.size == 0:
        return (*fallback, np.zeros(n, bool))
    codes = rng.choice(allowed, size=n)
    return codes // N, codes % N, np.ones(n, bool)


def negatives(stream: Stream, n_train: int, dst_pool: np.ndarray, k_mrr: int,
              seed: int) -> dict[str, np.ndarray]:
    """Evaluation negatives for every snapshot ``t >= 1`` (row 0 is unused), as arrays T x E
    (``mrr``: T x E x K). Historical pairs come from snapshots before ``t``; inductive pairs from
    test snapshots (``t >= n_train``) other than ``t`` whose edge never occurs in training."""
    src, dst = np.asarray(stream.src), np.asarray(stream.dst)
    T, E = src.shape
    N = stream.x.shape[0]
    rng = np.random.default_rng(seed)
    codes = _pair_code(src, dst, N)
    train_codes = set(codes[:n_train].ravel().tolist())
    out = {k: np.zeros((T, E), np.int64) for k in
           ("rand_dst", "hist_src", "hist_dst", "ind_src", "ind_dst")}
    out["hist_ok"] = np.zeros((T, E), bool)
    out["ind_ok"] = np.zeros((T, E), bool)
    out["mrr_dst"] = np.zeros((T, E, k_mrr), np.int64)
    for t in range(1, T):
        pos = set(codes[t].tolist())
        rand = _draw_destinations(rng, src[t], pos, dst_pool, N, (E,))
        out["rand_dst"][t] = rand
        out["mrr_dst"][t] = _draw_destinations(rng, src[t], pos, dst_pool, N, (E, k_mrr))
        fb = (src[t], rand)
        out["hist_src"][t], out["hist_dst"][t], out["hist_ok"][t] = _draw_pairs(
            rng, np.unique(codes[:t]), pos, fb, E, N)
        test_other = np.unique(np.concatenate([codes[s] for s in range(n_train, T) if s != t]
                                              or [np.zeros(0, np.int64)]))
        inductive = np.array([c for c in test_other.tolist() if c not in train_codes], np.int64)
        out["ind_src"][t], out["ind_dst"][t], out["ind_ok"][t] = _draw_pairs(
            rng, inductive, pos, fb, E, N)
    return out
