"""The ideal row of the agentic task with every model exact, before any policy is learned.

π_ref := the demonstrators' law (:func:`task.demonstrator_probs`), π_RL := the exact KL-optimal
π* = π_ref exp(A*/β), pa := A* (= β log π*/π_ref). Candidates are sampled from π*; the confidence
scores are π*'s own (token log-probabilities of the operator and of the operand given it). This
is the check the task was designed against (issue 46): whether the task lets progress advantage
beat every confidence score at all. Run: ``python -m repro26.progress_advantage.ideal [scale]``
(prints per application the mean over seeds and the paired 95% CI of pa − each score; pa's
aggregation is the best one on these problems: a diagnostic of the task, not a claim).
"""

from __future__ import annotations

import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from repro26.core.stats import summary
from repro26.progress_advantage import scores as S, task as T

CONFIDENCE = (("logprob", "mean"), ("self_certainty", "mean"), ("step_prob", "min"))
TRIVIAL = (("random", "mean"), ("position", "mean"))


def _step_scores(spec, A, log_star, traj, key):
    H, n = spec.horizon, spec.n_operands
    k = H - jnp.arange(H)
    lp = log_star[k - 1, traj["d"]].reshape(traj["d"].shape + (2, n))
    lop = jax.scipy.special.logsumexp(lp, -1)
    larg = jnp.take_along_axis(lp - lop[..., None], traj["op"][..., None, None], -2)[..., 0, :]
    lp_op = jnp.take_along_axis(lop, traj["op"][..., None], -1)[..., 0]
    lp_arg = jnp.take_along_axis(larg, traj["arg"][..., None], -1)[..., 0]
    sc = 0.5 * ((-jnp.log(2.0) - lop.mean(-1)) + (-jnp.log(float(n)) - larg.mean(-1)))
    return {"pa": A[k - 1, traj["d"], traj["op"] * n + traj["arg"]],
            "logprob": 0.5 * (lp_op + lp_arg), "self_certainty": sc,
            "step_prob": jnp.exp(lp_op + lp_arg),
            "random": jax.random.uniform(key, traj["d"].shape),
            "position": -jnp.broadcast_to(jnp.arange(H, dtype=jnp.float32), traj["d"].shape)}


def ideal_row(cfg, n_problems: int = 128, n_attr: int = 1024):
    """``{application: {(scorer, aggregation): per-seed metric}}`` with exact models."""
    from repro26.progress_advantage.evaluate import task_spec

    spec = task_spec(cfg)
    H, n = spec.horizon, spec.n_operands
    log_ref = T.reference_table(spec, cfg.demo_noise, cfg.demo_habit, cfg.demo_retry)
    A = T.soft_optimal_advantage(spec, log_ref, cfg.kl_coef)
    log_star = log_ref + A / cfg.kl_coef
    Q = T.optimal_q(spec)
    N = cfg.n_candidates
    ns = [m for m in cfg.bon_ns if 1 < m <= N]

    def star(key, t, buf):
        a = jax.random.categorical(key, log_star[H - t - 1, buf["d"][:, t]])
        return a // n, a % n

    out = {"best_of_n": {}, "auroc": {}, "attribution": {}}
    for seed in cfg.seeds:
        k1, k2, k3, k4, k5, k6 = jax.random.split(jax.random.PRNGKey(seed), 6)
        traj = T.rollout(spec, k2, jnp.repeat(T.sample_problems(spec, k1, n_problems), N), star)
        st = _step_scores(spec, A, log_star, traj, k3)
        value = np.asarray(T.success_probability(spec, traj["d"][:, -1], traj["op"][:, -1],
                                                 traj["arg"][:, -1]))
        rng = np.random.default_rng(seed)
        ts = S.trajectory_scores({**st, "pa_clip": st["pa"], "prm": st["pa"]},
                                 np.zeros(len(value)))
        for key, v in ts.items():
            if key[0] in ("pa_clip", "prm", "orm"):
                continue
            b = S.best_of_n(v.reshape(-1, N), value.reshape(-1, N), ns, rng)
            out["best_of_n"].setdefault(key, []).append(np.mean(list(b.values())))
            out["auroc"].setdefault(key, []).append(S.auroc(v, np.asarray(traj["success"])))
        d0 = T.sample_problems(spec, k4, n_attr)
        first = jax.random.randint(k5, (n_attr,), 0, H)

        def act(key, t, buf):
            ka, kb, kc = jax.random.split(key, 3)
            q = Q[H - t - 1, buf["d"][:, t]]
            best = jax.random.categorical(ka, jnp.where(q >= q.max(-1, keepdims=True) - 1e-6,
                                                        0.0, -jnp.inf))
            oe, ae = T.risky_call(spec, kc, first.shape)
            op_p, arg_p = star(kb, t, buf)
            return (jnp.where(t < first, best // n, jnp.where(t == first, oe, op_p)),
                    jnp.where(t < first, best % n, jnp.where(t == first, ae, arg_p)))

        tr = T.rollout(spec, k6, d0, act, crash_at=first)
        st = _step_scores(spec, A, log_star, tr, k3)
        for name in st:
            out["attribution"].setdefault((name, "step"), []).append(
                S.attribution_accuracy(np.asarray(st[name]), np.asarray(first), rng))
    return out


def report(out) -> list[str]:
    lines = []
    for app, rows in out.items():
        pa = max((k for k in rows if k[0] == "pa"), key=lambda k: np.mean(rows[k]))
        lines.append(f"{app}: pa ({pa[1]}) {np.mean(rows[pa]):.3f}")
        for key in rows:
            if key[0] == "pa":
                continue
            ci = summary(np.asarray(rows[pa]) - np.asarray(rows[key]))["ci95"]
            lines.append(f"  {key[0]:15s} {np.mean(rows[key]):.3f}   pa − it: "
                         f"[{ci[0]:+.3f}, {ci[1]:+.3f}]")
    return lines


if __name__ == "__main__":
    from repro26.core.cli import resolve_run_config
    from repro26.progress_advantage import cli

    root = Path(__file__).resolve().parents[3]
    scale = sys.argv[1] if len(sys.argv) > 1 else "small"
    _, cfg, _ = resolve_run_config(cli, "progress_advantage", root / "config" / "config.yaml",
                                   scale)
    print("\n".join(report(ideal_row(cfg))))
