"""NAGNN and its baselines, side by side, all scoring the same queries.

Every model reads a stream (``data.Stream``: T snapshots of E events) and query pairs
``q_src, q_dst`` of shape ``T x E x M``: the M pairs asked about at event ``e`` of snapshot
``t`` (the positive ``(src, dst)`` and its negatives). What a model may know when scoring them:

* snapshot models (NAGNN, GCN-GRU) and heuristics: every snapshot before ``t``;
* event models (TGN-style, JODIE-style): every event before ``e``, including earlier events of
  snapshot ``t`` (they process the stream edge by edge in one ``lax.scan``).

**LSH topology distiller** (NAGNN). Each neighbour ``w`` is hashed by ``L`` SimHash tables,
``slot_l(w) = sum_i 2^i [<r_li, c_w> > 0]`` (``b`` random hyperplanes ``r_li``, ``S = 2^b``
slots; collision probability ``(1 - theta/pi)^b`` for codes at angle theta). The hashed code
``c_w`` is a fixed random Gaussian vector per node, so a node's neighbours spread over its slots
(``E[slots used] = S (1 - (1 - 1/S)^k)`` for ``k`` distinct neighbours): hashing the node
features instead put the neighbours of a node, mostly of one community with similar features,
into 4-5 of 16 slots (issue 51; ``slot_occupancy`` reports it). Node ``u`` keeps in slot ``(l, s)`` the neighbour with the smallest
priority ``pi_l(w) ~ U(0, 1)`` among all its neighbours hashed there: a bottom-1 reservoir,
i.e. a uniform sample of the slot's distinct neighbours, updated for all nodes and all events
of a snapshot at once by one scatter-min. Because priorities are shared across nodes, slot
``(l, s)`` of ``u`` and of ``v`` hold the same neighbour with probability equal to the
Jaccard index of their slot-restricted neighbour sets (one-permutation MinHash), so
``J_hat = #matching slots / #slots non-empty in either`` estimates the Jaccard index of the
whole neighbourhoods and ``CN_hat = J_hat / (1 + J_hat) (d_u + d_v)`` the common neighbours,
in O(L S) per pair, with ``d`` the number of distinct neighbours estimated from the slots
(``distinct_degree``): repeated events change neither.

**Degree-scaled moments.** Node features for the GRU: mean, variance and skewness over the
reservoir members of ``[x_w, h_w]``, each times the PNA degree scalers ``1``,
``log(d + 1) / delta`` and ``delta / log(d + 1)`` (``delta`` the mean ``log(d + 1)``, ``d``
the distinct-degree estimate).
"""

from __future__ import annotations

from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from repro26.nagnn.data import Stream

LEARNED = ("nagnn", "gcn_gru", "tgn", "jodie")
HEURISTICS = ("edgebank", "common_neighbours", "pref_attachment")
SNAPSHOT_MODELS = ("nagnn", "gcn_gru")
EVENT_MODELS = ("tgn", "jodie")


# ----------------------------------------------------------------------------- LSH + reservoir


def simhash(x: Float[Array, "N F"], planes: Float[Array, "L b F"]) -> Int[Array, "L N"]:
    """SimHash codes: bit i of table l is ``[<planes[l, i], x_n> > 0]``."""
    bits = jnp.einsum("lbf,nf->lnb", planes, x) > 0
    return jnp.sum(bits * (2 ** jnp.arange(planes.shape[1])), axis=-1)


class Reservoir(NamedTuple):
    """Per node and LSH slot: kept neighbour (-1: empty), its priority, events seen; degree."""

    member: Int[Array, "N L S"]
    priority: Float[Array, "N L S"]
    count: Float[Array, "N L S"]
    degree: Float[Array, " N"]


def empty_reservoir(n_nodes: int, n_tables: int, n_slots: int) -> Reservoir:
    shape = (n_nodes, n_tables, n_slots)
    return Reservoir(jnp.full(shape, -1, jnp.int32), jnp.full(shape, 2.0), jnp.zeros(shape),
                     jnp.zeros(n_nodes))


def reservoir_insert(res: Reservoir, owner: Int[Array, " K"], item: Int[Array, " K"],
                     codes: Int[Array, "L N"], priority: Float[Array, "L N"]) -> Reservoir:
    """Offer ``item[k]`` to every table's slot ``codes[l, item[k]]`` of node ``owner[k]``, all at
    once: the slot keeps the smallest-priority item ever offered (scatter-min, then the winner
    writes its id; losers write out of bounds and are dropped)."""
    N, L, _ = res.member.shape
    table = jnp.arange(L)[:, None]
    slot = codes[:, item]                                    # L x K
    pri = priority[:, item]
    rows = jnp.broadcast_to(owner, slot.shape)
    best = res.priority.at[rows, table, slot].min(pri)
    wins = best[rows, table, slot] == pri
    member = res.member.at[jnp.where(wins, rows, N), table, slot].set(
        jnp.broadcast_to(item, slot.shape).astype(jnp.int32), mode="drop")
    count = res.count.at[rows, table, slot].add(1.0)
    degree = res.degree.at[owner].add(1.0)
    return Reservoir(member, best, count, degree)


def distinct_degree(res: Reservoir) -> Float[Array, " N"]:
    """Estimated number of distinct neighbours per node from the reservoir alone (a repeated
    event changes nothing: the slot keeps the same minimum). Per table, with ``e`` of its ``S``
    slots non-empty: linear counting ``ln(1 - e/S) / ln(1 - 1/S)`` (the inverse of
    ``E[e] = S (1 - (1 - 1/S)^d)``) while a slot is empty, else the minima estimator
    ``S (S - 1) / sum_s pi_min(s)`` (each slot's minimum priority is Beta(1, d_s)); mean over
    tables."""
    S = res.member.shape[2]
    filled = (res.member >= 0).sum(2).astype(jnp.float32)             # N x L
    linear = jnp.log1p(-jnp.minimum(filled, S - 0.5) / S) / jnp.log1p(-1.0 / S)
    minima = S * (S - 1) / jnp.minimum(res.priority, 1.0).sum(2)
    return jnp.where(filled < S, linear, minima).mean(1)


def jaccard_estimate(res: Reservoir, u: Int[Array, " Q"], v: Int[Array, " Q"]) -> tuple:
    """(J_hat, number of matching slots) per pair. One-permutation MinHash: slot (l, s) of u and
    of v hold the same neighbour with probability ``|N_u & N_v & B_ls| / |(N_u | N_v) & B_ls|``,
    and over the random slot assignment of the neighbours ``#matches / #slots non-empty in
    either`` is unbiased for the Jaccard index of the whole neighbourhoods,
    ``|N_u & N_v| / |N_u | N_v|`` (Li, Owen & Zhang 2012); pooled over the L tables."""
    mu, mv = res.member[u], res.member[v]                    # Q x L x S
    match = ((mu == mv) & (mu >= 0)).sum((1, 2))
    either = ((mu >= 0) | (mv >= 0)).sum((1, 2))
    return match / jnp.maximum(either, 1), match


def common_neighbours_estimate(res: Reservoir, u, v) -> Float[Array, " Q"]:
    """``CN_hat = J_hat / (1 + J_hat) (d_u + d_v)`` with the distinct-degree estimates
    (``|N_u & N_v| = J |N_u | N_v|`` and ``|N_u | N_v| = d_u + d_v - |N_u & N_v|``)."""
    J, _ = jaccard_estimate(res, u, v)
    d = distinct_degree(res)
    return J / (1 + J) * (d[u] + d[v])


def joint_features(res: Reservoir, codes, u, v) -> Float[Array, "Q 7"]:
    """Joint-neighbourhood features of pairs from the two reservoirs (module docstring): J_hat,
    log(1 + matches), log(1 + CN_hat), v kept in u's reservoir (and u in v's), and the share
    of u's events in v's slots (and of v's in u's)."""
    L = res.member.shape[1]
    J, match = jaccard_estimate(res, u, v)
    cn_hat = common_neighbours_estimate(res, u, v)
    table = jnp.arange(L)[None, :]
    cu, cv = codes[:, v].T, codes[:, u].T                    # Q x L: v's slots, u's slots
    hit_uv = (res.member[u[:, None], table, cu] == v[:, None]).mean(1)
    hit_vu = (res.member[v[:, None], table, cv] == u[:, None]).mean(1)
    occ_uv = res.count[u[:, None], table, cu].mean(1) / jnp.maximum(res.degree[u], 1)
    occ_vu = res.count[v[:, None], table, cv].mean(1) / jnp.maximum(res.degree[v], 1)
    return jnp.stack([J, jnp.log1p(match), jnp.log1p(cn_hat), hit_uv, hit_vu, occ_uv, occ_vu], 1)


def degree_scaled_moments(values: Float[Array, "N K D"], valid: Float[Array, "N K"],
                          degree: Float[Array, " N"]) -> Float[Array, "N 9D"]:
    """[mean, var, skew] over the valid members, times the scalers [1, amp, att] (PNA)."""
    w = valid[..., None]
    n = jnp.maximum(w.sum(1), 1.0)
    mean = (w * values).sum(1) / n
    centred = (values - mean[:, None]) * w
    var = (centred ** 2).sum(1) / n
    skew = (centred ** 3).sum(1) / n / (var + 1e-6) ** 1.5
    moments = jnp.concatenate([mean, var, skew], -1)
    logd = jnp.log1p(degree)
    delta = jax.lax.stop_gradient(jnp.sum(logd) / jnp.maximum(jnp.sum(degree > 0), 1) + 1e-6)
    amp = logd / delta
    att = jnp.where(degree > 0, delta / jnp.maximum(logd, 1e-6), 0.0)
    return jnp.concatenate([moments, moments * amp[:, None], moments * att[:, None]], -1)


# ----------------------------------------------------------------------------- shared parts


def _snapshot_mean(x_and_h, a, b, n_nodes):
    """Mean over this snapshot's neighbours b of a (both directions given), and the count."""
    sums = jax.ops.segment_sum(x_and_h[b], a, n_nodes)
    cnt = jax.ops.segment_sum(jnp.ones_like(a, jnp.float32), a, n_nodes)
    return sums / jnp.maximum(cnt, 1)[:, None], cnt


class Decoder(eqx.Module):
    """logit(u, v) = MLP([e_u * e_v, e_u, e_v, log(1 + d_u), log(1 + d_v), pair features])."""

    mlp: eqx.nn.MLP

    def __init__(self, hidden: int, n_pair: int, key):
        self.mlp = eqx.nn.MLP(3 * hidden + 2 + n_pair, "scalar", hidden, 2, key=key)

    def __call__(self, eu, ev, du, dv, pair):
        feats = jnp.concatenate([eu * ev, eu, ev, jnp.log1p(du)[:, None], jnp.log1p(dv)[:, None],
                                 pair], -1)
        return jax.vmap(self.mlp)(feats)


# ----------------------------------------------------------------------------- snapshot models


class SnapshotState(NamedTuple):
    h: Float[Array, "N d"]
    res: Reservoir


class NAGNN(eqx.Module):
    """Snapshot model: LSH reservoirs + degree-scaled moments -> GRU; decoder with joint
    features. ``use_reservoir=False`` is the GCN-GRU baseline (GCRN / ROLAND-style): two
    graph-convolution layers on the snapshot's graph, ``g1 = relu(W1 [x_u, h_u, mean_{w ~ u}
    [x_w, h_w], log(1 + snapshot degree), log(1 + degree)])`` and ``g2 = relu(W2 [g1_u,
    mean_{w ~ u} g1_w])`` (two hops), then ``h <- GRU(g2, h)``; decoder without
    joint-neighbourhood features. With ``node_emb`` (GCN-GRU) every node's input is
    ``[x_u, q_u]`` with ``q_u`` a learned embedding of width ``hidden`` (the transductive node
    embeddings of EvolveGCN / ROLAND on graphs whose features do not tell nodes apart: here
    the features are a community centroid plus noise), in the graph convolutions and the
    decoder alike: the strongest node-wise snapshot model we have, since node identities let
    the GRU state carry a sketch of who a node met (issue 51: without them GCN-GRU scored below
    common neighbours on dsbm, so the claim could not decide there)."""

    gru: eqx.nn.GRUCell
    inp: eqx.nn.Linear
    inp2: eqx.nn.Linear | None  # GCN-GRU's second graph-convolution layer
    embed_x: eqx.nn.Linear
    dec: Decoder
    planes: Float[Array, "L b F"]
    priority: Float[Array, "L N"]
    node_codes: Float[Array, "N F"]
    node_emb: Float[Array, "N d"] | None  # GCN-GRU's learned node embeddings (transductive)
    use_reservoir: bool = eqx.field(static=True)

    def __init__(self, n_nodes: int, feature_dim: int, hidden: int, n_tables: int, n_bits: int,
                 use_reservoir: bool, key, node_emb: bool = False):
        k = jax.random.split(key, 7)
        n_emb = hidden if node_emb else 0
        D = feature_dim + n_emb + hidden
        n_in = 2 * D + 2 + (9 * D if use_reservoir else 0)
        self.inp = eqx.nn.Linear(n_in, hidden, key=k[0])
        self.inp2 = None if use_reservoir else eqx.nn.Linear(2 * hidden, hidden,
                                                              key=jax.random.fold_in(key, 7))
        self.gru = eqx.nn.GRUCell(hidden, hidden, key=k[1])
        self.embed_x = eqx.nn.Linear(feature_dim + n_emb, hidden, key=k[2])
        self.dec = Decoder(hidden, 7 if use_reservoir else 0, k[3])
        self.planes = jax.random.normal(k[4], (n_tables, n_bits, feature_dim))
        self.priority = jax.random.uniform(k[5], (n_tables, n_nodes))
        self.node_codes = jax.random.normal(k[6], (n_nodes, feature_dim))
        self.node_emb = (jax.random.normal(jax.random.fold_in(key, 8), (n_nodes, n_emb))
                         if node_emb else None)
        self.use_reservoir = use_reservoir

    def init_state(self, n_nodes: int) -> SnapshotState:
        L, b, _ = self.planes.shape
        return SnapshotState(jnp.zeros((n_nodes, self.gru.hidden_size)),
                             empty_reservoir(n_nodes, L, 2 ** b))

    def codes(self, x):
        """Slot of every node in every table, ``L x N`` (SimHash of its fixed random code;
        ``x`` only fixes the shapes)."""
        del x
        return simhash(jax.lax.stop_gradient(self.node_codes), jax.lax.stop_gradient(self.planes))

    def inputs(self, x):
        """Node inputs: the features, and the learned node embeddings where the model has them."""
        return x if self.node_emb is None else jnp.concatenate([x, self.node_emb], -1)

    def update(self, state: SnapshotState, x, src, dst) -> SnapshotState:
        """Fold one snapshot's events into every node at once."""
        N = x.shape[0]
        x = self.inputs(x)
        a, b = jnp.concatenate([src, dst]), jnp.concatenate([dst, src])
        xh = jnp.concatenate([x, state.h], -1)
        snap_mean, snap_deg = _snapshot_mean(xh, a, b, N)
        res = state.res
        parts = [xh, snap_mean, jnp.log1p(snap_deg)[:, None]]
        if self.use_reservoir:
            res = reservoir_insert(res, a, b, self.codes(x), jax.lax.stop_gradient(self.priority))
            members = res.member.reshape(N, -1)
            valid = (members >= 0).astype(jnp.float32)
            parts.append(degree_scaled_moments(xh[jnp.maximum(members, 0)], valid,
                                               distinct_degree(res)))
        else:
            res = res._replace(degree=res.degree.at[a].add(1.0))
        parts.append(jnp.log1p(res.degree)[:, None])
        inputs = jax.nn.relu(jax.vmap(self.inp)(jnp.concatenate(parts, -1)))
        if self.inp2 is not None:  # second hop
            hop2, _ = _snapshot_mean(inputs, a, b, N)
            inputs = jax.nn.relu(jax.vmap(self.inp2)(jnp.concatenate([inputs, hop2], -1)))
        return SnapshotState(jax.vmap(self.gru)(inputs, state.h), res)

    def score(self, state: SnapshotState, x, u, v):
        e = state.h + jax.vmap(self.embed_x)(self.inputs(x))
        pair = (joint_features(state.res, self.codes(x), u, v) if self.use_reservoir
                else jnp.zeros((u.shape[0], 0)))
        return self.dec(e[u], e[v], state.res.degree[u], state.res.degree[v], pair)


def slot_occupancy(model: NAGNN, stream: Stream) -> tuple[Float[Array, " N"], Float[Array, " N"]]:
    """After the whole stream: per node, the fraction of its ``L S`` reservoir slots holding a
    neighbour, and the number of its distinct neighbours (exact, for the comparison with
    ``S (1 - (1 - 1/S)^k)``)."""
    N = stream.x.shape[0]

    def step(carry, inputs):
        state, seen = carry
        src, dst = inputs
        seen = seen.at[src, dst].set(True).at[dst, src].set(True)
        return (model.update(state, stream.x, src, dst), seen), None

    (state, seen), _ = jax.lax.scan(step, (model.init_state(N), jnp.zeros((N, N), bool)),
                                    (stream.src, stream.dst))
    used = (state.res.member >= 0).mean((1, 2))
    return used, seen.sum(1).astype(jnp.float32)


def remat_block(n: int) -> int:
    """The divisor of ``n`` nearest to ``sqrt(n)`` (ties: the smaller): the block length of
    :func:`scan_steps`' checkpointing."""
    divisors = [d for d in range(1, n + 1) if n % d == 0]
    return min(divisors, key=lambda d: (abs(d - n ** 0.5), d))


def scan_steps(step, init, xs, remat: bool):
    """``jax.lax.scan(step, init, xs)``; with ``remat``, the ``n`` steps run as blocks of
    ``B = remat_block(n)`` under ``jax.checkpoint``, so reverse-mode keeps ``n / B`` carries
    and one block's residuals instead of every step's (about ``sqrt(n)`` of each: a stream of
    snapshots or events of the paper's length fits one accelerator). Same values and gradients;
    the backward pass recomputes each block's forward once."""
    if not remat:
        return jax.lax.scan(step, init, xs)
    n = jax.tree_util.tree_leaves(xs)[0].shape[0]
    B = remat_block(n)
    blocks = jax.tree_util.tree_map(lambda a: a.reshape(n // B, B, *a.shape[1:]), xs)
    carry, ys = jax.lax.scan(jax.checkpoint(lambda c, xb: jax.lax.scan(step, c, xb)), init,
                             blocks)
    return carry, jax.tree_util.tree_map(lambda a: a.reshape(n, *a.shape[2:]), ys)


def snapshot_scores(model: NAGNN, stream: Stream, q_src, q_dst,
                    remat: bool = False) -> Float[Array, "T E M"]:
    """Queries of snapshot t scored from the state after snapshots < t; one scan step per
    snapshot (checkpointed in blocks with ``remat``: :func:`scan_steps`)."""
    N = stream.x.shape[0]
    shape = q_src.shape[1:]

    def step(state, inputs):
        src, dst, qs, qd = inputs
        s = model.score(state, stream.x, qs.reshape(-1), qd.reshape(-1)).reshape(shape)
        return model.update(state, stream.x, src, dst), s

    _, scores = scan_steps(step, model.init_state(N), (stream.src, stream.dst, q_src, q_dst),
                           remat)
    return scores


# ----------------------------------------------------------------------------- event models


class EventState(NamedTuple):
    memory: Float[Array, "N d"]
    last: Float[Array, " N"]
    adjacency: Float[Array, "N N"]  # symmetric event counts (exact co-occurrence)
    neighbours: Int[Array, "N K"]  # the last K neighbours, newest first (-1: none yet)
    neighbour_time: Float[Array, "N K"]  # time of the event with each of them


class EventMemory(eqx.Module):
    """Edge-by-edge memory model. Each event (u, v, t) updates both memories,
    ``m_u <- GRU([m_v, x_v, cos(omega (t - t_u))], m_u)`` (and symmetrically), and pushes v
    onto u's list of its last K neighbours (and u onto v's).
    ``tgn``: embedding ``m_u + W x_u + sum_k a_k V [m_w_k, x_w_k, cos(omega (t - t_k))]``, one
    attention head over the last K neighbours (``a = softmax(<Q [m_u, x_u], K [...]> /
    sqrt(d))``, TGN's temporal graph attention), and exact joint-neighbourhood features of the
    pair counted event by event (Jaccard, common neighbours, seen before, repeat count — the
    neighbour co-occurrence encoding of DyGFormer-type event models). ``jodie``: time
    projection ``m_u (1 + w (t - t_u)) + W x_u``, no attention, no joint features."""

    gru: eqx.nn.GRUCell
    embed_x: eqx.nn.Linear
    omega: Float[Array, " k"]
    proj: Float[Array, " d"]
    dec: Decoder
    att_q: eqx.nn.Linear | None  # attention of ``tgn`` only
    att_k: eqx.nn.Linear | None
    att_v: eqx.nn.Linear | None
    joint: bool = eqx.field(static=True)
    n_neighbours: int = eqx.field(static=True)

    def __init__(self, feature_dim: int, hidden: int, joint: bool, key, n_time: int = 8,
                 n_neighbours: int = 10):
        k = jax.random.split(key, 7)
        self.gru = eqx.nn.GRUCell(hidden + feature_dim + n_time, hidden, key=k[0])
        self.embed_x = eqx.nn.Linear(feature_dim, hidden, key=k[1])
        self.omega = jnp.logspace(0, -2, n_time) * 2 * jnp.pi
        self.proj = 0.01 * jax.random.normal(k[2], (hidden,))
        self.dec = Decoder(hidden, 4 if joint else 0, k[3])
        n_kv = hidden + feature_dim + n_time
        self.att_q = eqx.nn.Linear(hidden + feature_dim, hidden, key=k[4]) if joint else None
        self.att_k = eqx.nn.Linear(n_kv, hidden, key=k[5]) if joint else None
        self.att_v = eqx.nn.Linear(n_kv, hidden, key=k[6]) if joint else None
        self.joint = joint
        self.n_neighbours = n_neighbours

    def init_state(self, n_nodes: int) -> EventState:
        K = self.n_neighbours
        return EventState(jnp.zeros((n_nodes, self.gru.hidden_size)), jnp.zeros(n_nodes),
                          jnp.zeros((n_nodes, n_nodes)), jnp.full((n_nodes, K), -1, jnp.int32),
                          jnp.zeros((n_nodes, K)))

    def update(self, state: EventState, x, time, u, v) -> EventState:
        m = state.memory
        enc = lambda dt: jnp.cos(self.omega * dt)
        mu = self.gru(jnp.concatenate([m[v], x[v], enc(time - state.last[u])]), m[u])
        mv = self.gru(jnp.concatenate([m[u], x[u], enc(time - state.last[v])]), m[v])
        memory = m.at[u].set(mu).at[v].set(mv)
        last = state.last.at[u].set(time).at[v].set(time)
        adjacency = state.adjacency.at[u, v].add(1.0).at[v, u].add(1.0)
        push = lambda rows, a, val: rows.at[a].set(jnp.concatenate([val[None], rows[a, :-1]]))
        nbrs = push(push(state.neighbours, u, v.astype(jnp.int32)), v, u.astype(jnp.int32))
        ntime = push(push(state.neighbour_time, u, time), v, time)
        return EventState(memory, last, adjacency, nbrs, ntime)

    def attend(self, state: EventState, x, time, nodes) -> Float[Array, "Q d"]:
        """TGN's temporal attention of each node over its last K neighbours (zero without
        any)."""
        m = state.memory
        w, tw = state.neighbours[nodes], state.neighbour_time[nodes]        # Q x K
        valid = w >= 0
        w = jnp.maximum(w, 0)
        feats = jnp.concatenate([m[w], x[w], jnp.cos(self.omega * (time - tw)[..., None])], -1)
        q = jax.vmap(self.att_q)(jnp.concatenate([m[nodes], x[nodes]], -1))  # Q x d
        keys = jax.vmap(jax.vmap(self.att_k))(feats)
        vals = jax.vmap(jax.vmap(self.att_v))(feats)
        logits = jnp.where(valid, jnp.einsum("qd,qkd->qk", q, keys) / jnp.sqrt(q.shape[-1]),
                           -jnp.inf)
        a = jnp.where(valid.any(1, keepdims=True), jax.nn.softmax(
            jnp.where(valid.any(1, keepdims=True), logits, 0.0), axis=1), 0.0)
        return jnp.einsum("qk,qkd->qd", a, vals)

    def score(self, state: EventState, x, time, u, v):
        A = state.adjacency
        degree = (A > 0).sum(1).astype(jnp.float32)
        nodes = jnp.concatenate([u, v])
        e = state.memory[nodes]
        if not self.joint:
            dt = time - state.last[nodes]
            e = e * (1 + dt[:, None] * self.proj)
        else:
            e = e + self.attend(state, x, time, nodes)
        e = e + jax.vmap(self.embed_x)(x[nodes])
        eu, ev = jnp.split(e, 2)
        if self.joint:
            nu, nv = A[u] > 0, A[v] > 0
            cn = (nu & nv).sum(1)
            union = (nu | nv).sum(1)
            pair = jnp.stack([cn / jnp.maximum(union, 1), jnp.log1p(cn), (A[u, v] > 0) * 1.0,
                              jnp.log1p(A[u, v])], 1)
        else:
            pair = jnp.zeros((u.shape[0], 0))
        return self.dec(eu, ev, degree[u], degree[v], pair)


def event_scores(model: EventMemory, stream: Stream, q_src, q_dst,
                 remat: bool = False) -> Float[Array, "T E M"]:
    """Queries of event e scored from the memory after every earlier event; one scan step per
    event (T * E sequential steps; checkpointed in blocks with ``remat``: :func:`scan_steps`)."""
    T, E, M = q_src.shape
    N = stream.x.shape[0]

    def step(state, inputs):
        u, v, t, qs, qd = inputs
        s = model.score(state, stream.x, t, qs, qd)
        return model.update(state, stream.x, t, u, v), s

    flat = lambda a: a.reshape(T * E, *a.shape[2:])
    _, scores = scan_steps(step, model.init_state(N),
                           tuple(map(flat, (stream.src, stream.dst, stream.time, q_src, q_dst))),
                           remat)
    return scores.reshape(T, E, M)


# ----------------------------------------------------------------------------- dispatch


def build(name: str, n_nodes: int, feature_dim: int, hidden: int, n_tables: int, n_bits: int,
          key):
    """A freshly initialised learned model by name."""
    if name in SNAPSHOT_MODELS:
        return NAGNN(n_nodes, feature_dim, hidden, n_tables, n_bits, name == "nagnn", key,
                     node_emb=name == "gcn_gru")
    if name in EVENT_MODELS:
        return EventMemory(feature_dim, hidden, name == "tgn", key)
    raise ValueError(f"unknown learned model {name!r}; one of {LEARNED}")


def stream_scores(model, stream: Stream, q_src, q_dst, remat: bool = False):
    """Logits of every query, by the model's own protocol (snapshot or event)."""
    if isinstance(model, NAGNN):
        return snapshot_scores(model, stream, q_src, q_dst, remat)
    return event_scores(model, stream, q_src, q_dst, remat)


def heuristic_scores(name: str, stream: Stream, q_src, q_dst) -> Float[Array, "T E M"]:
    """EdgeBank (pair seen before, unlimited memory), common neighbours and preferential
    attachment ``d_u d_v`` on the exact graph of all snapshots before t."""
    N = stream.x.shape[0]

    def step(A, inputs):
        src, dst, qs, qd = inputs
        nb = A > 0
        if name == "edgebank":
            s = nb[qs, qd] * 1.0
        elif name == "common_neighbours":
            s = (nb[qs] & nb[qd]).sum(-1) * 1.0
        elif name == "pref_attachment":
            deg = nb.sum(1) * 1.0
            s = deg[qs] * deg[qd]
        else:
            raise ValueError(f"unknown heuristic {name!r}; one of {HEURISTICS}")
        return A.at[src, dst].add(1.0).at[dst, src].add(1.0), s

    _, scores = jax.lax.scan(step, jnp.zeros((N, N)), (stream.src, stream.dst, q_src, q_dst))
    return scores
