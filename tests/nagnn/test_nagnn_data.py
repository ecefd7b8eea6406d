"""Generators, the CSV loader and the negative samplers."""

import jax
import numpy as np

from repro26.nagnn import data


DSBM = dict(n_communities=3, affinity=8.0, drift=0.05, frac_repeat=0.3, frac_triadic=0.3,
            frac_echo=0.3, echo_window=4, feature_dim=4, feature_noise=0.5)
BIP = dict(n_item_clusters=3, p_pref=0.8, drift=0.05, frac_repeat=0.3, frac_echo=0.3,
           echo_window=4, feature_dim=4, feature_noise=0.5)


def _dsbm(seed=0):
    return data.dsbm(jax.random.PRNGKey(seed), n_nodes=30, n_snapshots=6, events=20, **DSBM)[0]


def _codes(src, dst, N):
    return np.asarray(src, np.int64) * N + np.asarray(dst, np.int64)


def test_dsbm_has_no_self_loops_and_sorted_times():
    s = _dsbm()
    src, dst = np.asarray(s.src), np.asarray(s.dst)
    assert src.shape == (6, 20) and s.x.shape == (30, 4)
    assert np.all(src != dst)
    assert np.all(np.diff(np.asarray(s.time), axis=1) >= 0)
    # the rates of recurring and echoed events are checked against the law below


def test_bipartite_stream_goes_from_users_to_items():
    s, _ = data.bipartite(jax.random.PRNGKey(0), n_users=10, n_items=15, n_snapshots=4,
                          events=12, **BIP)
    assert np.all(np.asarray(s.src) < 10) and np.all((np.asarray(s.dst) >= 10) & (np.asarray(s.dst) < 25))


def test_negative_samplers_never_return_a_positive_of_the_snapshot():
    s = _dsbm(1)
    N, n_train = 30, 4
    neg = data.negatives(s, n_train, np.arange(N), k_mrr=5, seed=0)
    src, dst = np.asarray(s.src), np.asarray(s.dst)
    codes = _codes(src, dst, N)
    train = set(codes[:n_train].ravel().tolist())
    for t in range(1, 6):
        pos = set(codes[t].tolist())
        for a, b in ((src[t], neg["rand_dst"][t]), (neg["hist_src"][t], neg["hist_dst"][t]),
                     (neg["ind_src"][t], neg["ind_dst"][t])):
            assert not set(_codes(a, b, N).tolist()) & pos
        mrr = _codes(np.repeat(src[t][:, None], 5, 1), neg["mrr_dst"][t], N)
        assert not set(mrr.ravel().tolist()) & pos
        hist = _codes(neg["hist_src"][t], neg["hist_dst"][t], N)[neg["hist_ok"][t]]
        assert set(hist.tolist()) <= set(codes[:t].ravel().tolist())
        ind = _codes(neg["ind_src"][t], neg["ind_dst"][t], N)[neg["ind_ok"][t]]
        assert not set(ind.tolist()) & train
    assert neg["hist_ok"][1:].all()


def test_event_csv_is_cut_into_snapshots_of_consecutive_events(tmp_path):
    path = tmp_path / "wiki.csv"
    lines = ["user_id,item_id,timestamp,state_label,f0"]
    rng = np.random.default_rng(0)
    for k in range(47):
        lines.append(f"u{rng.integers(5)},i{rng.integers(7)},{100 - k}.0,0,0.1")
    path.write_text("\n".join(lines) + "\n")
    stream, pool = data.load_event_csv(path, events=10, max_snapshots=9, feature_dim=3,
                                       key=jax.random.PRNGKey(0))
    assert stream.src.shape == (4, 10)
    n_users = int(stream.src.max()) + 1
    assert np.all(stream.dst >= n_users) and set(pool.tolist()) >= set(stream.dst.ravel().tolist())
    assert np.all(np.diff(stream.time.ravel()) >= 0)  # time-sorted (the file is reversed)


def _all_pairs(N, T, E):
    uu, vv = np.meshgrid(np.arange(N), np.arange(N), indexing="ij")
    shape = (T, E, N * N)
    return np.broadcast_to(uu.ravel(), shape), np.broadcast_to(vv.ravel(), shape)


def _law_checks(streams, p, N, reverse):
    """p sums to 1 over all N^2 pairs at every event; the predicted rates of 'the event
    repeats a past edge' and 'the event echoes one of the last W events of its snapshot'
    match their empirical frequencies (within 4 standard errors)."""
    np.testing.assert_allclose(p.sum(-1), 1.0, atol=1e-4)
    src, dst = np.asarray(streams.src), np.asarray(streams.dst)
    n_seeds, T, E = src.shape
    W = 4
    pred, seen = {"past": [], "echo": []}, {"past": [], "echo": []}
    for k in range(n_seeds):
        past = np.zeros((N, N), bool)
        for t in range(T):
            for e in range(E):
                window = np.zeros((N, N), bool)
                for j in range(max(0, e - W), e):
                    a, b = (dst[k, t, j], src[k, t, j]) if reverse else (src[k, t, j], dst[k, t, j])
                    window[a, b] = True
                pk = p[k, t, e].reshape(N, N)
                for name, mask in (("past", past), ("echo", window)):
                    pred[name].append(pk[mask].sum())
                    seen[name].append(mask[src[k, t, e], dst[k, t, e]])
            past[src[k, t], dst[k, t]] = True
            if reverse:
                past[dst[k, t], src[k, t]] = True
    for name in pred:
        q, y = np.array(pred[name]), np.array(seen[name], float)
        se = np.sqrt(np.sum(q * (1 - q))) / len(q)
        assert abs(y.mean() - q.mean()) < 4 * se + 1e-3, (name, y.mean(), q.mean(), se)


def test_dsbm_probability_is_the_law_of_the_generator():
    N, T, E, seeds = 16, 4, 15, 24
    keys = jax.random.split(jax.random.PRNGKey(5), seeds)
    streams, z = jax.vmap(lambda k: data.dsbm(k, N, T, E, **DSBM))(keys)
    qs, qd = _all_pairs(N, T, E)
    law = lambda s, zz: data.dsbm_probability(s, zz, qs, qd, DSBM["affinity"], 0.3, 0.3, 0.3, 4)
    p = np.asarray(jax.jit(jax.vmap(law))(streams, z), np.float64)
    assert np.all(p[..., np.arange(N) * (N + 1)] == 0)  # no self loops
    _law_checks(streams, p, N, reverse=True)


def test_bipartite_probability_is_the_law_of_the_generator():
    U, I, T, E, seeds = 6, 10, 4, 15, 24
    keys = jax.random.split(jax.random.PRNGKey(6), seeds)
    streams, pref = jax.vmap(lambda k: data.bipartite(k, U, I, T, E, **BIP))(keys)
    qs, qd = _all_pairs(U + I, T, E)
    law = lambda s, pr: data.bipartite_probability(s, pr, qs, qd, U, 3, 0.8, 0.3, 0.3, 4)
    p = np.asarray(jax.jit(jax.vmap(law))(streams, pref), np.float64)
    _law_checks(streams, p, U + I, reverse=False)


def test_generator_memory_grows_with_events_not_n_squared_events():
    """The old repeat draw held E x N^2 Gumbel noise (89 GB at the paper's N = 2000); the
    generators now hold O(N^2 + E N + T E)."""
    assert data.dsbm_bytes(2000, 100, 1000) < 2**30
    assert data.bipartite_bytes(1500, 500, 100, 1000) < 2**30
