"""The LSH topology distiller against closed forms and brute force."""

import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats

from repro26.nagnn import model


def _pair_at_angle(theta, dim=6):
    x = np.zeros((2, dim), np.float32)
    x[0, 0] = 1.0
    x[1, 0], x[1, 1] = np.cos(theta), np.sin(theta)
    return jnp.asarray(x)


def test_simhash_collision_probability_is_one_minus_angle_over_pi_per_bit():
    """P[h(x) = h(y)] = (1 - theta/pi)^b for b random hyperplanes (Charikar 2002)."""
    tables = 4000
    for theta in (0.3, 1.2, 2.5):
        x = _pair_at_angle(theta)
        for bits in (1, 3):
            planes = jax.random.normal(jax.random.PRNGKey(bits), (tables, bits, x.shape[1]))
            codes = np.asarray(model.simhash(x, planes))
            rate = np.mean(codes[:, 0] == codes[:, 1])
            p = (1 - theta / np.pi) ** bits
            assert abs(rate - p) < 4 * np.sqrt(p * (1 - p) / tables) + 1e-3, (theta, bits, rate, p)


def _insert_all(batches, n_nodes, codes, priority, tables=1, slots=1):
    res = model.empty_reservoir(n_nodes, tables, slots)
    for owner, item in batches:
        res = model.reservoir_insert(res, jnp.asarray(owner), jnp.asarray(item), codes, priority)
    return res


def test_reservoir_keeps_a_uniform_sample_of_distinct_neighbours():
    """Offered items 0..K-1 over three snapshots, some many times: over independent priority
    draws the kept item is uniform over the distinct items (chi-square)."""
    K, draws = 8, 4000
    batches = [([0] * 6, [0, 0, 0, 1, 2, 3]), ([0] * 3, [4, 0, 5]), ([0] * 4, [6, 7, 7, 7])]
    codes = jnp.zeros((1, K), jnp.int32)

    def kept(key):
        pri = jax.random.uniform(key, (1, K))
        return _insert_all(batches, 1, codes, pri).member[0, 0, 0]

    members = np.asarray(jax.vmap(kept)(jax.random.split(jax.random.PRNGKey(0), draws)))
    counts = np.bincount(members, minlength=K)
    assert counts.sum() == draws
    assert stats.chisquare(counts).pvalue > 1e-3, counts


def test_slot_match_probability_is_the_jaccard_index():
    """Shared priorities make a slot match with probability |A n B| / |A u B| (MinHash)."""
    A, B = [0, 1, 2, 3, 4, 5], [3, 4, 5, 6, 7, 8, 9, 10, 11]  # J = 3 / 12
    n_items, tables = 12, 3000
    codes = jnp.zeros((tables, n_items), jnp.int32)
    pri = jax.random.uniform(jax.random.PRNGKey(1), (tables, n_items))
    owner = [0] * len(A) + [1] * len(B)
    res = _insert_all([(owner, A + B)], 2, codes, pri, tables)
    J, _ = model.jaccard_estimate(res, jnp.array([0]), jnp.array([1]))
    assert abs(float(J[0]) - 0.25) < 4 * np.sqrt(0.25 * 0.75 / tables)


def test_reservoir_matches_brute_force_neighbour_search():
    """Each slot holds, among the node's neighbours hashed there, the one of least priority
    (found here by scanning every neighbour); counts and degrees are event counts."""
    rng = np.random.default_rng(0)
    N, L, bits, F = 30, 3, 2, 5
    x = jnp.asarray(rng.normal(size=(N, F)), jnp.float32)
    planes = jax.random.normal(jax.random.PRNGKey(2), (L, bits, F))
    codes = model.simhash(x, planes)
    pri = jax.random.uniform(jax.random.PRNGKey(3), (L, N))
    batches = [(rng.integers(0, N, 40), rng.integers(0, N, 40)) for _ in range(3)]
    res = _insert_all(batches, N, codes, pri, L, 2 ** bits)
    codes, pri = np.asarray(codes), np.asarray(pri)
    owners = np.concatenate([b[0] for b in batches])
    items = np.concatenate([b[1] for b in batches])
    for u in range(N):
        nbrs = items[owners == u]
        assert float(res.degree[u]) == len(nbrs)
        for l in range(L):
            for s in range(2 ** bits):
                here = np.unique(nbrs[codes[l, nbrs] == s])
                want = here[np.argmin(pri[l, here])] if here.size else -1
                assert int(res.member[u, l, s]) == want
                assert float(res.count[u, l, s]) == np.sum(codes[l, nbrs] == s)


def test_degree_scaled_moments_match_scipy():
    rng = np.random.default_rng(1)
    values = rng.normal(size=(3, 7, 2))
    valid = (rng.random((3, 7)) < 0.7).astype(np.float32)
    valid[:, 0] = 1
    degree = np.array([1.0, 4.0, 9.0])
    out = np.asarray(model.degree_scaled_moments(jnp.asarray(values, jnp.float32),
                                                 jnp.asarray(valid), jnp.asarray(degree)))
    logd = np.log1p(degree)
    amp = logd / logd.mean()
    for n in range(3):
        v = values[n][valid[n] > 0]
        ref = np.concatenate([v.mean(0), v.var(0), stats.skew(v, axis=0)])
        np.testing.assert_allclose(out[n, :6], ref, rtol=2e-3, atol=2e-3)
        np.testing.assert_allclose(out[n, 6:12], ref * amp[n], rtol=2e-3, atol=2e-3)
        np.testing.assert_allclose(out[n, 12:], ref / amp[n], rtol=2e-3, atol=2e-3)


def _random_graph(rng, n_nodes=40, n_edges=160, max_repeat=4):
    """Undirected edges, each offered 1..max_repeat times (repeated events), in both directions."""
    u = rng.integers(0, n_nodes, n_edges)
    v = (u + rng.integers(1, n_nodes, n_edges)) % n_nodes
    reps = rng.integers(1, max_repeat + 1, n_edges)
    a, b = np.repeat(u, reps), np.repeat(v, reps)
    return np.concatenate([a, b]), np.concatenate([b, a])


def test_estimators_count_distinct_neighbours_against_brute_force():
    """Over random slot codes and priorities (one-permutation MinHash), J_hat, the distinct
    degree and CN_hat average to the exact whole-neighbourhood Jaccard index, number of
    distinct neighbours and common neighbours of a graph whose edges repeat; offering every
    event again changes none of them (the estimate counts neighbours, not events)."""
    rng = np.random.default_rng(0)
    N, L, S, draws = 40, 2, 8, 400
    owner, item = _random_graph(rng, N)
    nb = np.zeros((N, N), bool)
    nb[owner, item] = True
    u, v = np.arange(0, N, 2), np.arange(1, N, 2)
    exact_cn = (nb[u] & nb[v]).sum(1)
    exact_j = exact_cn / np.maximum((nb[u] | nb[v]).sum(1), 1)
    exact_d = nb.sum(1)

    def estimates(key, times):
        k_c, k_p = jax.random.split(key)
        codes = jax.random.randint(k_c, (L, N), 0, S)
        pri = jax.random.uniform(k_p, (L, N))
        res = model.empty_reservoir(N, L, S)
        for _ in range(times):
            res = model.reservoir_insert(res, jnp.asarray(owner), jnp.asarray(item), codes, pri)
        J, _ = model.jaccard_estimate(res, jnp.asarray(u), jnp.asarray(v))
        return J, model.distinct_degree(res), model.common_neighbours_estimate(
            res, jnp.asarray(u), jnp.asarray(v))

    keys = jax.random.split(jax.random.PRNGKey(3), draws)
    J, d, cn = map(np.asarray, jax.vmap(lambda k: estimates(k, 1))(keys))
    J2, d2, cn2 = map(np.asarray, jax.vmap(lambda k: estimates(k, 2))(keys))
    np.testing.assert_array_equal(J, J2)
    np.testing.assert_array_equal(d, d2)
    np.testing.assert_array_equal(cn, cn2)
    assert np.abs(J.mean(0) - exact_j).max() < 0.05, (J.mean(0), exact_j)
    assert np.abs(d.mean(0) / exact_d - 1).max() < 0.1, (d.mean(0), exact_d)
    assert np.abs(cn.mean(0) - exact_cn).mean() < 0.15 * max(exact_cn.mean(), 1), (cn.mean(0), exact_cn)
    # the event counts, which the estimate no longer uses, overcount the neighbours here
    events = np.bincount(owner, minlength=N)
    assert (events > exact_d).mean() > 0.5
