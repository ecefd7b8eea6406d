"""NAGNN solves a graph whose links are exactly the closures of common neighbours; the models
see only what their protocol allows."""

import jax
import jax.numpy as jnp
import numpy as np
import optax

from repro26.core.train import init_train_state, optax_step, run_loop
from repro26.nagnn import evaluate, model
from repro26.nagnn.data import Stream
from repro26.nagnn.losses import link_loss


def closure_stream(k=6, T=5, seed=0):
    """Snapshot t: k wedges u - w - v on fresh nodes, and the k closures u - v of snapshot
    t - 1's wedges (snapshot 0: k more wedge edges). A closure's endpoints share exactly one
    neighbour; any other pair with u shares none."""
    rng = np.random.default_rng(seed)
    N = 3 * k * T
    nodes = rng.permutation(N).reshape(T, k, 3)
    src, dst = [], []
    for t in range(T):
        u, w, v = nodes[t].T
        prev = nodes[t - 1].T if t else (w, w, v)
        src.append(np.r_[prev[0], u, w])
        dst.append(np.r_[prev[2], w, v])
    src, dst = np.array(src), np.array(dst)
    time = np.arange(T)[:, None] + np.linspace(0, 0.9, 3 * k)[None]
    x = rng.normal(size=(N, 4)).astype(np.float32)
    return Stream(jnp.asarray(src), jnp.asarray(dst), jnp.asarray(time, jnp.float32),
                  jnp.asarray(x)), N


def test_nagnn_solves_links_predicted_by_common_neighbours():
    stream, N = closure_stream()
    k = stream.src.shape[1] // 3
    nagnn = model.build("nagnn", N, 4, 8, n_tables=8, n_bits=1, key=jax.random.PRNGKey(0))
    opt = optax.adam(1e-2)
    step = optax_step(link_loss, opt)
    train = Stream(*(a[:4] for a in stream[:3]), stream.x)
    state, hist = run_loop(step, init_train_state(nagnn, opt), (train, jnp.arange(N)),
                           key=jax.random.PRNGKey(1), num_steps=30, chunk_size=30,
                           progress=False)
    rng = np.random.default_rng(2)
    pos_src, pos_dst = np.asarray(stream.src[-1, :k]), np.asarray(stream.dst[-1, :k])
    neg_dst = rng.integers(0, N, (k, 20))
    endpoint = (neg_dst == pos_dst[:, None]) | (neg_dst == pos_src[:, None])
    neg_dst = np.where(endpoint, (np.maximum(pos_dst, pos_src)[:, None] + 1) % N, neg_dst)
    q_src = np.zeros((5, 3 * k, 21), np.int64)
    q_dst = np.zeros_like(q_src)
    q_src[-1, :k] = pos_src[:, None]
    q_dst[-1, :k] = np.c_[pos_dst, neg_dst]
    cn = np.asarray(model.heuristic_scores("common_neighbours", stream, q_src, q_dst))[-1, :k]
    assert evaluate.auroc(cn[:, 0], cn[:, 1:].ravel()) == 1.0  # the construction is exact
    scores = np.asarray(model.stream_scores(state.model, stream, q_src, q_dst))[-1, :k]
    assert evaluate.auroc(scores[:, 0], scores[:, 1:].ravel()) > 0.95
    assert hist["loss"][-1] < hist["loss"][0]


def test_snapshot_models_ignore_the_snapshot_they_predict_and_event_models_only_the_future():
    """Changing event e of snapshot t leaves snapshot-model scores of all of t, and event-model
    scores of events <= e, unchanged (no peeking at what is predicted)."""
    stream, N = closure_stream(k=2, T=3)
    q_src = jnp.broadcast_to(stream.src[..., None], (*stream.src.shape, 2))
    q_dst = jnp.stack([stream.dst, (stream.dst + 1) % N], -1)
    altered = stream._replace(dst=stream.dst.at[2, 3].set((stream.dst[2, 3] + 5) % N))
    for name in ("nagnn", "gcn_gru", "tgn"):
        m = model.build(name, N, 4, 8, 2, 2, jax.random.PRNGKey(0))
        a = model.stream_scores(m, stream, q_src, q_dst)
        b = model.stream_scores(m, altered, q_src, q_dst)
        # snapshot models: all of t = 2; events: up to e = 3
        last = 6 if name in model.SNAPSHOT_MODELS else 4
        np.testing.assert_allclose(a[2, :last], b[2, :last], rtol=1e-6, atol=1e-6)


def test_gcn_gru_node_embeddings_tell_apart_nodes_that_features_do_not():
    """All nodes share one feature vector and every snapshot repeats the same perfect matching
    (i, i + 8): without node embeddings a snapshot model scores every pair alike (each node's
    inputs, states and degrees are equal), so it ranks a node's partner no better than chance;
    GCN-GRU's learned embeddings let it learn the partners (AUROC > 0.9)."""
    N, T, half = 16, 4, 8
    src = jnp.tile(jnp.arange(half), (T, 1))
    stream = Stream(src, src + half, jnp.arange(T)[:, None] + jnp.linspace(0, 0.9, half)[None],
                    jnp.ones((N, 4)))
    q_src = jnp.broadcast_to(src[..., None], (T, half, N - 1))
    others = np.array([np.r_[u + half, [v for v in range(N) if v not in (u, u + half)]]
                       for u in range(half)])  # the partner first, then the rest
    q_dst = jnp.broadcast_to(jnp.asarray(others), (T, half, N - 1))
    plain = model.NAGNN(N, 4, 8, 2, 2, use_reservoir=False, key=jax.random.PRNGKey(0))
    s = np.asarray(model.stream_scores(plain, stream, q_src, q_dst))[-1]
    np.testing.assert_allclose(s, s[0, 0], rtol=1e-5)  # one score for every pair
    gcn_gru = model.build("gcn_gru", N, 4, 8, 2, 2, jax.random.PRNGKey(0))
    assert gcn_gru.node_emb is not None and gcn_gru.node_emb.shape == (N, 8)
    opt = optax.adam(1e-2)
    state, _ = run_loop(optax_step(link_loss, opt), init_train_state(gcn_gru, opt),
                        (Stream(*(a[:-1] for a in stream[:3]), stream.x), jnp.arange(N)),
                        key=jax.random.PRNGKey(1), num_steps=30, chunk_size=30, progress=False)
    s = np.asarray(model.stream_scores(state.model, stream, q_src, q_dst))[-1]
    assert evaluate.auroc(s[:, 0], s[:, 1:].ravel()) > 0.9


def test_remat_block_is_the_divisor_nearest_sqrt():
    assert [model.remat_block(n) for n in (1, 7, 12, 70, 70_000)] == [1, 1, 3, 7, 250]


def test_block_checkpointed_scan_keeps_values_and_gradients():
    """``remat`` (blocks under jax.checkpoint) changes the memory of the backward pass, not
    what is computed: the loss and every gradient leaf equal the plain scan's, for the
    snapshot model (4 snapshots in blocks of 2) and an event model (24 events in blocks of 4)."""
    import equinox as eqx

    stream, N = closure_stream(k=2, T=4)
    data = (stream, jnp.arange(N))
    key = jax.random.PRNGKey(3)
    for name in ("nagnn", "jodie"):
        net = model.build(name, N, 4, 8, n_tables=2, n_bits=1, key=jax.random.PRNGKey(0))
        grad = eqx.filter_value_and_grad(lambda m, r: link_loss(m, data, key, r)[0])
        (plain, g_plain), (remat, g_remat) = grad(net, False), grad(net, True)
        assert np.allclose(plain, remat, rtol=1e-6)
        for a, b in zip(jax.tree_util.tree_leaves(g_plain), jax.tree_util.tree_leaves(g_remat)):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
