"""The transformer policy's causal mask and step-level beam search against brute force."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from repro26.progress_advantage import beam as B, model as M, task as T

SPEC = T.TaskSpec(modulus=5, horizon=3, n_operands=2, fault=0.0)


@pytest.fixture(scope="module")
def policy_fns():
    policy = M.TransformerPolicy(SPEC, 16, 2, 2, jax.random.PRNGKey(0))
    step = jax.jit(jax.vmap(policy.step_logprobs))
    nxt = jax.jit(jax.vmap(policy.next_tokens, in_axes=(0, 0, 0, None)))
    return step, nxt


def test_transformer_is_causal_and_consistent(policy_fns):
    """Changing the tokens from step t on (later observations, the step's and later actions)
    leaves the operator distributions up to step t and the operand distributions before t
    unchanged; the step distributions agree with the next-step ones given the prefix."""
    step, nxt = policy_fns
    rng = np.random.default_rng(0)
    H = SPEC.horizon
    d = jnp.asarray(rng.integers(0, 5, (4, H)))
    op, arg = jnp.asarray(rng.integers(0, 2, (4, H))), jnp.asarray(rng.integers(0, 2, (4, H)))
    lp_op, lp_arg = step(d, op, arg)
    t = 1
    d2 = d.at[:, t + 1:].set((d[:, t + 1:] + 1) % 5)
    op2, arg2 = op.at[:, t:].set(1 - op[:, t:]), arg.at[:, t:].set(1 - arg[:, t:])
    lp_op2, lp_arg2 = step(d2, op2, arg2)
    np.testing.assert_allclose(lp_op2[:, :t + 1], lp_op[:, :t + 1], atol=1e-6)
    np.testing.assert_allclose(lp_arg2[:, :t], lp_arg[:, :t], atol=1e-6)
    assert np.abs(np.asarray(lp_op2[:, t + 1:] - lp_op[:, t + 1:])).max() > 1e-4  # not constant
    for s in range(H):
        n_op, n_arg = nxt(d2, op2, arg2, s)
        np.testing.assert_allclose(n_op, lp_op2[:, s], atol=1e-5)
        np.testing.assert_allclose(n_arg[np.arange(4), op2[:, s]], lp_arg2[:, s], atol=1e-5)


def _enumerating_propose(table):
    """Children = every action of every beam (at step 0 only beam 0 is the root: the other
    copies score −inf); step score = table[t, d, action]."""
    A = SPEC.n_actions

    def propose(key, t, buf):
        n = buf["d"].shape[0]
        a = jnp.broadcast_to(jnp.arange(A), (n, A))
        score = table[t, buf["d"][:, t]][:, :A]
        alive = (jnp.arange(n) == 0) | (t > 0)
        return a // SPEC.n_operands, a % SPEC.n_operands, jnp.where(alive[:, None], score, -jnp.inf)
    return propose


def _brute_force(table, d0, aggregate):
    best, best_path = -np.inf, None
    for path in itertools.product(range(SPEC.n_actions), repeat=SPEC.horizon):
        d, s = d0, []
        for t, a in enumerate(path):
            s.append(table[t, d, a])
            move = a % 2 if a // 2 == 0 else -(a % 2)
            d = (d - move) % SPEC.modulus
        if aggregate(s) > best:
            best, best_path = aggregate(s), path
    return best_path


def test_beam_search_matches_brute_force_enumeration():
    """Beam width ≥ the number of distinct prefixes: beam search returns the path of best
    aggregated score over all n_actions^horizon paths (min and mean aggregation); width 1 with
    'last' is greedy."""
    table = np.asarray(jax.random.normal(jax.random.PRNGKey(3), (SPEC.horizon, 5, SPEC.n_actions)))
    n_beams = SPEC.n_actions ** (SPEC.horizon - 1)
    propose = _enumerating_propose(jnp.asarray(table))
    # one program; rows beyond n_beams are padding (dead beams), as for the smaller budgets
    width = n_beams + 3
    search = jax.jit(lambda d0, beams, agg: B.beam_search(
        SPEC, jax.random.PRNGKey(0), d0, propose, beams, agg, width))
    for d0 in (1, 3):
        for agg, f in ((0, np.min), (1, np.mean)):
            top = search(d0, n_beams, agg)
            path = tuple(int(a) for a in np.asarray(top["op"]) * 2 + np.asarray(top["arg"]))
            assert path == _brute_force(table, d0, f)
        top = search(d0, 1, 2)
        d, greedy = d0, []
        for t in range(SPEC.horizon):
            a = int(np.argmax(table[t, d]))
            greedy.append(a)
            d = (d - (a % 2 if a // 2 == 0 else -(a % 2))) % 5
        assert list(np.asarray(top["op"]) * 2 + np.asarray(top["arg"])) == greedy


def test_budget_shapes_spend_the_best_of_n_budget():
    for n in (1, 2, 4, 8, 16):
        beams, children = B.budget_shape(n, 4)
        assert beams * children == n
