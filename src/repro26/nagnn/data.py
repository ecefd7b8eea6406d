"""Dynamic graphs as fixed-shape snapshot streams, and the evaluation negatives.

A stream has ``T`` snapshots of exactly ``E`` directed events ``(src, dst, time)`` each
(``time`` in ``[t, t + 1)`` for snapshot ``t``, sorted within the snapshot), plus static node
features ``x`` (N x F). Two generators with planted structure, both pure functions of a key:

* ``dsbm`` — dynamic stochastic block model with community drift, triadic closure and
  recurring interactions. Each event of a snapshot is, independently, of one kind: with
  probability ``frac_repeat`` it re-draws a past edge with probability proportional to its
  count, with ``frac_triadic`` it closes a wedge u - w - v of the history (u by degree, w a
  neighbour of u, v a neighbour of w), else u is uniform and v has odds ``affinity`` : 1 for
  same community vs other. Between snapshots each node moves to a random community with
  probability ``drift``. Features are the initial community's centroid plus noise (so they go
  stale as communities drift).
* ``bipartite`` — a JODIE-like user -> item stream: users prefer one of ``n_item_clusters`` item
  clusters (preference drifts), re-buy a past item (``frac_repeat``, by count) or buy from the
  preferred cluster with probability ``p_pref`` (else a uniform item).

**Order inside a snapshot.** In both, event ``e >= 1`` of a snapshot is with probability
``frac_echo`` an echo of event ``e - lag`` of the same snapshot (``lag`` uniform on
``1..min(e, echo_window)``): its reciprocation ``v -> u`` in ``dsbm``, a repeat of the same
purchase (a burst) in ``bipartite``. Only a model that reads the snapshot's earlier events, in
order, can predict an echo; a snapshot model sees the snapshot as a set after the fact.
``dsbm_probability`` / ``bipartite_probability`` give the exact law of every queried pair
from the events and the latent communities / preferences the generators return: the ideal
scorer. Memory of the generators is O(N^2 + E N + T E) (``dsbm_bytes``): a past edge is a
uniform draw from the recorded events, not from the N x N counts.

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


def _echo_draws(key, E: int, frac_echo: float, window: int):
    """Which events echo an earlier one of their snapshot, and the lag: event ``e >= 1`` is an
    echo with probability ``frac_echo``, of event ``e - lag``, ``lag`` uniform on
    ``1..min(e, window)``."""
    k_is, k_lag = jax.random.split(key)
    e = jnp.arange(E)
    is_echo = jax.random.bernoulli(k_is, frac_echo, (E,)) & (e > 0)
    lag = 1 + jnp.floor(jax.random.uniform(k_lag, (E,)) * jnp.minimum(e, window)).astype(int)
    return is_echo, lag


def _apply_echoes(u, v, is_echo, lag, reverse: bool):
    """Replace, in event order, each echo by its source event (reversed: a reciprocation
    ``v -> u``; not reversed: a burst repeating ``u -> v``). Sequential, since an echo may
    echo an echo."""

    def step(uv, inputs):
        uu, vv = uv
        e, echo, g = inputs
        a, b = (vv[e - g], uu[e - g]) if reverse else (uu[e - g], vv[e - g])
        uu = uu.at[e].set(jnp.where(echo, a, uu[e]))
        vv = vv.at[e].set(jnp.where(echo, b, vv[e]))
        return (uu, vv), None

    (u, v), _ = jax.lax.scan(step, (u, v), (jnp.arange(u.shape[0]), is_echo, lag))
    return u, v


def _past_event(key, hist_u, hist_v, n_past, E: int, symmetric: bool):
    """``E`` uniform draws among the first ``n_past`` recorded events (so a pair comes with
    probability proportional to its count), each flipped with probability 1/2 if
    ``symmetric``. Memory O(events), not O(N^2)."""
    k_i, k_f = jax.random.split(key)
    idx = jnp.floor(jax.random.uniform(k_i, (E,)) * jnp.maximum(n_past, 1)).astype(int)
    u, v = hist_u[idx], hist_v[idx]
    if symmetric:
        flip = jax.random.bernoulli(k_f, 0.5, (E,))
        u, v = jnp.where(flip, v, u), jnp.where(flip, u, v)
    return u, v


def dsbm_bytes(n_nodes: int, n_snapshots: int, events: int) -> int:
    """Peak bytes of :func:`dsbm`'s scan: the N x N count matrix and its boolean views, the
    E x N draw logits and masks, and the event history (float32/int32)."""
    N, T, E = n_nodes, n_snapshots, events
    return 4 * (3 * N * N + 8 * E * N + 4 * T * E)


def bipartite_bytes(n_users: int, n_items: int, n_snapshots: int, events: int) -> int:
    """Peak bytes of :func:`bipartite`'s scan (as :func:`dsbm_bytes`)."""
    return 4 * (2 * n_users * n_items + 6 * events * n_items + 4 * n_snapshots * events)


def dsbm(key, n_nodes: int, n_snapshots: int, events: int, n_communities: int, affinity: float,
         drift: float, frac_repeat: float, frac_triadic: float, frac_echo: float,
         echo_window: int, feature_dim: int, feature_noise: float) -> tuple[Stream, Array]:
    """Dynamic SBM with drift, triadic closure, recurring edges and in-snapshot reciprocation
    (module docstring). Returns the stream and the community of every node at the start of
    every snapshot (T x N), which with the events fixes the law of every event
    (:func:`dsbm_probability`)."""
    N, E, T = n_nodes, events, n_snapshots
    k_z, k_c, k_x, k_t, k_run = jax.random.split(key, 5)
    z0 = jax.random.randint(k_z, (N,), 0, n_communities)
    centroids = jax.random.normal(k_c, (n_communities, feature_dim))
    x = centroids[z0] + feature_noise * jax.random.normal(k_x, (N, feature_dim))
    log_kind = jnp.log(jnp.array([frac_repeat, frac_triadic, 1 - frac_repeat - frac_triadic])
                       + 1e-30)
    log_aff = jnp.log(affinity)

    def snapshot(carry, inputs):
        A, z, hist_u, hist_v = carry
        t, k = inputs
        k_kind, k_sbm_u, k_sbm_v, k_rep, k_u, k_w, k_v, k_echo, k_d1, k_d2 = jax.random.split(k, 10)
        kind = jax.random.categorical(k_kind, log_kind, shape=(E,))
        # SBM draws: u uniform, v with odds `affinity` for the same community
        u_s = jax.random.randint(k_sbm_u, (E,), 0, N)
        logits = jnp.where(z[u_s][:, None] == z[None, :], log_aff, 0.0)
        logits = logits.at[jnp.arange(E), u_s].set(-jnp.inf)
        v_s = jax.random.categorical(k_sbm_v, logits)
        # recurring: a past edge with probability proportional to its count
        has_hist = t > 0
        u_r, v_r = _past_event(k_rep, hist_u, hist_v, t * E, E, symmetric=True)
        # triadic closure: wedge u - w - v with v != u, v not yet a neighbour of u
        deg = A.sum(1)
        u_t = jax.random.categorical(k_u, jnp.log(deg + 1e-30), shape=(E,))
        w_t = jax.random.categorical(k_w, jnp.where(A[u_t] > 0, jnp.log(A[u_t]), -jnp.inf))
        closing = (A[w_t] > 0) & (A[u_t] == 0)
        closing = closing.at[jnp.arange(E), u_t].set(False)
        v_t = jax.random.categorical(k_v, jnp.where(closing, 0.0, -jnp.inf))
        tri_ok = closing.any(1)
        use_rep = (kind == 0) & has_hist
        use_tri = (kind == 1) & has_hist & tri_ok
        u = jnp.where(use_rep, u_r, jnp.where(use_tri, u_t, u_s))
        v = jnp.where(use_rep, v_r, jnp.where(use_tri, v_t, v_s))
        u, v = _apply_echoes(u, v, *_echo_draws(k_echo, E, frac_echo, echo_window), reverse=True)
        A = A.at[u, v].add(1.0).at[v, u].add(1.0)
        hist_u = jax.lax.dynamic_update_slice(hist_u, u, (t * E,))
        hist_v = jax.lax.dynamic_update_slice(hist_v, v, (t * E,))
        moves = jax.random.bernoulli(k_d1, drift, (N,))
        z_next = jnp.where(moves, jax.random.randint(k_d2, (N,), 0, n_communities), z)
        return (A, z_next, hist_u, hist_v), (u, v, z)

    keys = jax.random.split(k_run, T)
    hist = jnp.zeros(T * E, int)
    _, (src, dst, z) = jax.lax.scan(snapshot, (jnp.zeros((N, N)), z0, hist, hist),
                                    (jnp.arange(T), keys))
    return Stream(src, dst, _event_times(k_t, T, E), x), z


def bipartite(key, n_users: int, n_items: int, n_snapshots: int, events: int,
              n_item_clusters: int, p_pref: float, drift: float, frac_repeat: float,
              frac_echo: float, echo_window: int, feature_dim: int,
              feature_noise: float) -> tuple[Stream, Array]:
    """User -> item stream (nodes ``0..U-1`` users, ``U..U+I-1`` items; module docstring).
    Returns the stream and every user's preferred cluster at the start of every snapshot
    (T x U), for :func:`bipartite_probability`."""
    U, I, E, T = n_users, n_items, events, n_snapshots
    k_c, k_pref, k_xi, k_xu, k_t, k_run = jax.random.split(key, 6)
    cluster = jnp.arange(I) % n_item_clusters
    centroids = jax.random.normal(k_c, (n_item_clusters, feature_dim))
    pref0 = jax.random.randint(k_pref, (U,), 0, n_item_clusters)
    x = jnp.concatenate([centroids[pref0] + feature_noise * jax.random.normal(k_xu, (U, feature_dim)),
                         centroids[cluster] + feature_noise * jax.random.normal(k_xi, (I, feature_dim))])

    def snapshot(carry, inputs):
        pref, hist_u, hist_i = carry
        t, k = inputs
        k_u, k_rep, k_isrep, k_pick, k_in, k_any, k_echo, k_d1, k_d2 = jax.random.split(k, 9)
        u_new = jax.random.randint(k_u, (E,), 0, U)
        in_pref = jnp.where(cluster[None, :] == pref[u_new][:, None], 0.0, -jnp.inf)
        i_pref = jax.random.categorical(k_in, in_pref)
        i_any = jax.random.randint(k_any, (E,), 0, I)
        i_new = jnp.where(jax.random.bernoulli(k_pick, p_pref, (E,)), i_pref, i_any)
        u_r, i_r = _past_event(k_rep, hist_u, hist_i, t * E, E, symmetric=False)
        rep = jax.random.bernoulli(k_isrep, frac_repeat, (E,)) & (t > 0)
        u = jnp.where(rep, u_r, u_new)
        i = jnp.where(rep, i_r, i_new)
        u, i = _apply_echoes(u, i, *_echo_draws(k_echo, E, frac_echo, echo_window), reverse=False)
        hist_u = jax.lax.dynamic_update_slice(hist_u, u, (t * E,))
        hist_i = jax.lax.dynamic_update_slice(hist_i, i, (t * E,))
        moves = jax.random.bernoulli(k_d1, drift, (U,))
        pref_next = jnp.where(moves, jax.random.randint(k_d2, (U,), 0, n_item_clusters), pref)
        return (pref_next, hist_u, hist_i), (u, U + i, pref)

    keys = jax.random.split(k_run, T)
    hist = jnp.zeros(T * E, int)
    _, (src, dst, pref) = jax.lax.scan(snapshot, (pref0, hist, hist), (jnp.arange(T), keys))
    return Stream(src, dst, _event_times(k_t, T, E), x), pref


# ----------------------------------------------------------------------------- the true law


def _echo_probability(src, dst, q_src, q_dst, frac_echo: float, window: int, reverse: bool):
    """Per query ``(a, b)`` at event ``e`` of a snapshot (``q_*``: E x M): the echo part of the
    law, ``(1 / min(e, W)) #{j in [e - min(e, W), e): echo of event j is (a, b)}``, and
    the echo weight ``frac_echo [e >= 1]``."""
    E = src.shape[0]
    e = jnp.arange(E)
    j = e[:, None] - 1 - jnp.arange(window)[None, :]           # E x W
    ok = j >= 0
    a, b = (dst, src) if reverse else (src, dst)
    hit = ((a[jnp.maximum(j, 0)][:, None, :] == q_src[..., None])
           & (b[jnp.maximum(j, 0)][:, None, :] == q_dst[..., None]) & ok[:, None, :])
    width = jnp.maximum(jnp.minimum(e, window), 1)[:, None]
    return hit.sum(-1) / width, (frac_echo * (e >= 1))[:, None]


def dsbm_probability(stream: Stream, z, q_src, q_dst, affinity: float, frac_repeat: float,
                     frac_triadic: float, frac_echo: float, echo_window: int):
    """Probability under :func:`dsbm`'s law that event ``e`` of snapshot ``t`` is the queried
    directed pair, given every earlier event and the communities ``z[t]`` (T x E x M):
    ``p = f_echo [e>0] p_echo + (1 - f_echo [e>0]) p_base`` with, given the count matrix A of
    snapshots ``< t`` (no history: ``p_base = p_sbm``),
    ``p_base = f_r A_uv / sum A + f_t (p_tri + p_fail p_sbm) + (1 - f_r - f_t) p_sbm``,
    ``p_tri(u, v) = sum_w A_uw [A_wv > 0] [A_uv = 0] [v != u] / (C_uw sum A)`` (``C_uw`` the
    closing vertices of wedge ``u - w``), ``p_fail = sum_{C_uw = 0} A_uw / sum A`` and
    ``p_sbm(u, v) = a^[z_u = z_v] [v != u] / (N sum_{v' != u} a^[z_u = z_v'])``."""
    N = stream.x.shape[0]

    def step(A, inputs):
        src, dst, zt, qs, qd = inputs
        nb = (A > 0).astype(jnp.float32)
        total = jnp.maximum(A.sum(), 1.0)
        has_hist = A.sum() > 0
        same = zt[:, None] == zt[None, :]
        w = jnp.where(same, affinity, 1.0) * (1 - jnp.eye(N))
        p_sbm = w[qs, qd] / (N * w[qs].sum(-1))
        closing = nb.sum(1)[None, :] - nb @ nb.T - nb.T              # C[u, w]
        tri_mat = (jnp.where(closing > 0, A / jnp.maximum(closing, 1), 0.0) @ nb) / total
        p_tri = tri_mat[qs, qd] * (1 - nb[qs, qd]) * (qs != qd)
        p_fail = jnp.where(closing > 0, 0.0, A).sum() / total
        p_rep = A[qs, qd] / total
        base = frac_repeat * p_rep + frac_triadic * (p_tri + p_fail * p_sbm) \
            + (1 - frac_repeat - frac_triadic) * p_sbm
        base = jnp.where(has_hist, base, p_sbm)
        p_echo, f = _echo_probability(src, dst, qs, qd, frac_echo, echo_window, reverse=True)
        return A.at[src, dst].add(1.0).at[dst, src].add(1.0), f * p_echo + (1 - f) * base

    _, p = jax.lax.scan(step, jnp.zeros((N, N)), (stream.src, stream.dst, z, q_src, q_dst))
    return p


def bipartite_probability(stream: Stream, pref, q_src, q_dst, n_users: int,
                          n_item_clusters: int, p_pref: float, frac_repeat: float,
                          frac_echo: float, echo_window: int):
    """Probability under :func:`bipartite`'s law of each queried (user, item) pair at its event
    (as :func:`dsbm_probability`): ``p_base = f_r B_ui / sum B + (1 - f_r) p_new`` (no
    history: ``p_new``), ``p_new = (p_pref [c_i = pref_u] / |c_i| + (1 - p_pref) / I) / U``;
    0 for a pair that is not user -> item."""
    N = stream.x.shape[0]
    U, I = n_users, N - n_users
    cluster = jnp.arange(I) % n_item_clusters
    size = jnp.bincount(cluster, length=n_item_clusters)

    def step(B, inputs):
        src, dst, pt, qs, qd = inputs
        valid = (qs < U) & (qd >= U)
        u, i = jnp.clip(qs, 0, U - 1), jnp.clip(qd - U, 0, I - 1)
        p_new = (p_pref * (cluster[i] == pt[u]) / size[cluster[i]] + (1 - p_pref) / I) / U
        base = jnp.where(B.sum() > 0, frac_repeat * B[u, i] / jnp.maximum(B.sum(), 1.0)
                         + (1 - frac_repeat) * p_new, p_new)
        p_echo, f = _echo_probability(src, dst, qs, qd, frac_echo, echo_window, reverse=False)
        p = jnp.where(valid, f * p_echo + (1 - f) * base, 0.0)
        return B.at[src, dst - U].add(1.0), p

    _, p = jax.lax.scan(step, jnp.zeros((U, I)), (stream.src, stream.dst, pref, q_src, q_dst))
    return p


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
