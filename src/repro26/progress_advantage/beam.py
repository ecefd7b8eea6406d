"""Step-level beam search ranked by a step scorer, at the sampling budget of best-of-N.

Budget N (steps sampled per depth, so N · horizon steps in all, as best-of-N's N trajectories):
``n_beams`` = max(1, N // expand) beams, each expanded by N // n_beams sampled steps (their tool
calls executed); the children are ranked by the aggregation (min / mean / last) of their step
scores so far and the top ``n_beams`` kept (ties at random). After the last step the top child
is the answer; its value is the exact success probability of its last step.

Rankers: the step scores of :mod:`scores` on each child's new step, and the PRM. The ORM is
trained on whole trajectories, so it ranks no prefixes here. With a Markov π_ref the oracle
``a_star`` (the exact A* table under π_ref) ranks as well: the ideal row. Each ranker runs its own
search.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from repro26.progress_advantage import task as T
from repro26.progress_advantage.scores import token_stats

AGG = {"min": 0, "mean": 1, "last": 2}
# (scorer, aggregation) of every ranker; the column of ``child_scores``' output it reads
RANKERS = (("pa", "min"), ("pa", "mean"), ("pa", "last"), ("prm", "min"), ("prm", "mean"),
           ("prm", "last"), ("logprob", "mean"), ("self_certainty", "mean"), ("step_prob", "min"),
           ("random", "mean"), ("position", "mean"))
ORACLE_RANKERS = (("a_star", "min"), ("a_star", "mean"), ("a_star", "last"))
COLUMNS = ("pa", "prm", "logprob", "self_certainty", "step_prob", "random", "position", "a_star")


def rankers(oracle: bool):
    return RANKERS + (ORACLE_RANKERS if oracle else ())


def budget_shape(n: int, expand: int) -> tuple[int, int]:
    """``(beams, children per beam)`` of budget N."""
    beams = max(1, n // expand)
    return beams, n // beams


def beam_search(spec: T.TaskSpec, key, d0, propose, n_beams, aggregation, width=None,
                n_children=None):
    """Beam search from distance ``d0`` (one problem).

    ``propose(key, t, buf) -> (op, arg, score)``, each ``(width, children)``: sampled steps of
    the beams (``buf``: ``(width, H)`` buffers with ``d[:, t]`` current) and each child's step
    score. ``n_beams`` beams of the ``width`` rows are alive (all copies of the root at the first
    step), and only the first ``n_children`` children of each (default: all); both may be
    traced, so one program serves every budget. ``aggregation``: 0 min, 1 mean, 2 last. Returns
    the top trajectory's buffers ``(H,)``."""
    H = spec.horizon
    width = n_beams if width is None else width
    zeros = jnp.zeros((width, H), jnp.int32)
    init = ({"d": zeros, "op": zeros, "arg": zeros}, jnp.full((width,), d0, jnp.int32),
            jnp.zeros((width, H)), jnp.arange(width) < n_beams)

    def depth(carry, t):
        buf, d, hist, alive = carry
        kp, ke, kt = jax.random.split(jax.random.fold_in(key, t), 3)
        buf = {**buf, "d": buf["d"].at[:, t].set(d)}
        op, arg, score = propose(kp, t, buf)
        c = op.shape[1]
        rep = lambda x: jnp.repeat(x, c, axis=0)  # noqa: E731  children in beam order
        op, arg, score = op.reshape(-1), arg.reshape(-1), score.reshape(-1)
        child = {"d": rep(buf["d"]), "op": rep(buf["op"]).at[:, t].set(op),
                 "arg": rep(buf["arg"]).at[:, t].set(arg)}
        child_alive = rep(alive)
        if n_children is not None:
            child_alive &= jnp.tile(jnp.arange(c), width) < n_children
        hist = rep(hist).at[:, t].set(score)
        seen = jnp.arange(H) <= t
        agg = jnp.stack([jnp.min(jnp.where(seen, hist, jnp.inf), 1),
                         jnp.sum(jnp.where(seen, hist, 0.0), 1) / (t + 1), score])[aggregation]
        agg = jnp.where(child_alive, agg, -jnp.inf)
        d_next = T.step_env(spec, ke, rep(d), op, arg)
        keep = jnp.lexsort((jax.random.uniform(kt, agg.shape), agg))[::-1][:width]
        alive = child_alive[keep] & (jnp.arange(width) < n_beams)
        return (jax.tree.map(lambda x: x[keep], child), d_next[keep], hist[keep], alive), None

    (buf, _, _, _), _ = jax.lax.scan(depth, init, jnp.arange(H))
    return jax.tree.map(lambda x: x[0], buf)


def child_scores(spec, rl, ref, prm, a_star, beta, key, t, buf, children: int):
    """Sample ``children`` steps of π_RL per beam and score each with every column of
    ``COLUMNS``: ``(op, arg, scores (beams, children, len(COLUMNS)))``. π_RL's and π_ref's
    token distributions are computed once per beam (one transformer pass each). ``a_star``:
    the table A*[k−1, d, a] or None (column of zeros)."""
    ks, kr = jax.random.split(key)

    def beam(k, d, op_buf, arg_buf):
        lp_op, lp_arg = rl.next_tokens(d, op_buf, arg_buf, t)
        q_op, q_arg = ref.next_tokens(d, op_buf, arg_buf, t)
        joint = (lp_op[:, None] + lp_arg).reshape(-1)
        a = jax.random.categorical(k, joint, shape=(children,))
        op, arg = a // spec.n_operands, a % spec.n_operands
        lp, sc = token_stats(jnp.broadcast_to(lp_op, (children, 2)), lp_arg[op], op, arg)
        lq, _ = token_stats(jnp.broadcast_to(q_op, (children, 2)), q_arg[op], op, arg)
        sl = jnp.full((children,), spec.horizon - t)
        oracle = (jnp.zeros((children,)) if a_star is None else
                  a_star[spec.horizon - t - 1, d[t], op * spec.n_operands + arg])
        cols = {"pa": beta * (lp.sum(-1) - lq.sum(-1)),
                "prm": jax.nn.sigmoid(jax.vmap(prm)(jnp.full((children,), d[t]), sl, op, arg)),
                "logprob": lp.mean(-1), "self_certainty": sc.mean(-1),
                "step_prob": jnp.exp(lp.sum(-1)), "a_star": oracle,
                "random": jax.random.uniform(jax.random.fold_in(k, 1), (children,)),
                "position": -jnp.full((children,), t, jnp.float32)}
        return op, arg, jnp.stack([cols[c] for c in COLUMNS], -1)

    keys = jax.random.split(ks, buf["d"].shape[0])
    return jax.vmap(beam)(keys, buf["d"], buf["op"], buf["arg"])


def search_values(spec, models, beta, key, d0, ns, expand: int, a_star=None):
    """Exact success probability of the answer of every ranker's beam search at every budget of
    ``ns`` on problems ``d0``: ``(len(ns), len(rankers(a_star is not None)), problems)`` (one
    program for all budgets: beams and children padded to the largest budget's)."""
    rl, ref, prm = models
    shapes = [budget_shape(n, expand) for n in ns]
    width, c_max = max(b for b, _ in shapes), max(c for _, c in shapes)
    used = rankers(a_star is not None)
    cols = jnp.asarray([COLUMNS.index(s) for s, _ in used])
    aggs = jnp.asarray([AGG.get(a, 2) for _, a in used])

    def one(beams, children, col, agg, key, d0):
        def propose(k, t, buf):
            op, arg, sc = child_scores(spec, rl, ref, prm, a_star, beta, k, t, buf, c_max)
            return op, arg, sc[..., col]
        top = beam_search(spec, key, d0, propose, beams, agg, width, children)
        return T.success_probability(spec, top["d"][-1], top["op"][-1], top["arg"][-1])

    def budget(args):
        beams, children, key = args
        keys = jax.random.split(key, d0.shape[0])

        def per_ranker(col, agg):
            return jax.vmap(lambda k, d: one(beams, children, col, agg, k, d))(keys, d0)
        return jax.vmap(per_ranker)(cols, aggs)

    beams, children = (jnp.asarray(x) for x in zip(*shapes))
    return jax.lax.map(budget, (beams, children, jax.random.split(key, len(ns))))
