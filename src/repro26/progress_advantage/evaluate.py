"""Experiments: the tabular identity, and the three applications on the agentic task.

Tabular (every seed: its own random π_ref on the same slippery gridworld):
  * closed form: β log π*/π_ref vs A* (exact up to float error, true by construction);
  * learned: the policy after ``tab_steps`` exact policy-gradient steps on the KL-regularised
    objective (and, as a finding, on the unregularised one), its β log-ratio vs A*;
  * trivial: i.i.d. normal scores vs A*.

Agentic (every seed: its own π_ref, π_RL, PRM, ORM; candidates sampled from π_RL):
  1. best-of-N: the mean exact success probability of the top-scored of N candidates;
  2. AUROC of a trajectory score for the realised success;
  3. failure attribution: an expert prefix (the unregularised optimum), at a known step a
     fast-tool call that crashes into the dead state, then π_RL; accuracy of argmin step score =
     the crashing step.
  4. step-level beam search (:mod:`beam`) at the budgets of best-of-N, every ranker on the same
     ``n_beam`` problems: the mean exact success probability of its answer.
Aggregations of pa / pa_clip / prm (min, mean, last) are chosen per seed on validation problems
(beam search: the aggregation best-of-N chose). The oracle a_star needs a Markov π_ref (MLP).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from repro26.core import memory
from repro26.progress_advantage import beam, mdp, scores as S, task as T
from repro26.progress_advantage.model import MLPPolicy


def task_spec(cfg) -> T.TaskSpec:
    return T.TaskSpec(cfg.modulus, cfg.horizon, cfg.n_operands, cfg.fault, cfg.crash,
                      cfg.risky_from)


# ------------------------------------------------------------------------------ tabular


NON_NEGLIGIBLE = 0.01  # π*(a|s) from which an action's identity error counts


def tabular(cfg, progress: bool = False):
    """Rows of the three tabular tables: ``final`` (per seed), ``curve`` (per seed and recorded
    step), ``scatter`` (per seed, decision state and action).

    Per score x (closed form β log π*/π_ref, learned β log π/π_ref, random): the slope of x
    against A* over decision pairs (least squares; 1 when the scale is right) and the largest
    |x − A*| over pairs with π*(a|s) >= NON_NEGLIGIBLE; for the learned policy also the
    start-weighted KL(π* ‖ π)."""
    grid = mdp.slippery_gridworld(cfg.grid_width, tuple(map(tuple, cfg.pits)), cfg.slip,
                                  cfg.step_cost, cfg.gamma)
    S_, A_ = grid.R.shape
    keys = jax.vmap(lambda s: jax.random.fold_in(jax.random.PRNGKey(s), 7))(jnp.asarray(cfg.seeds))
    pi_ref = jax.vmap(lambda k: mdp.random_reference(k, S_, A_))(keys)
    beta = cfg.tab_beta
    Q, V, A = jax.vmap(lambda p: mdp.soft_value_iteration(grid, p, beta))(pi_ref)
    pi_star = mdp.optimal_policy(pi_ref, A, beta)
    closed = beta * (jnp.log(pi_star) - jnp.log(pi_ref))
    n = len(cfg.seeds)
    logits, hist = mdp.train_policy_gradient(
        grid, jnp.concatenate([pi_ref, pi_ref]), jnp.concatenate([A, A]),
        jnp.repeat(jnp.asarray([beta, 0.0]), n), beta, cfg.tab_steps, cfg.tab_lr, progress)
    logits_kl, logits_0 = logits[:n], logits[n:]
    h_kl, h_0 = {"corr": hist["corr"][:, :n]}, {"corr": hist["corr"][:, n:]}
    learned = beta * (jax.nn.log_softmax(logits_kl, -1) - jnp.log(pi_ref))
    unreg = beta * (jax.nn.log_softmax(logits_0, -1) - jnp.log(pi_ref))
    noise = jax.vmap(lambda k: jax.random.normal(k, (S_, A_)))(jax.vmap(jax.random.split)(keys)[:, 1])
    mask = np.broadcast_to(np.asarray(grid.decision)[:, None] > 0, (S_, A_))
    start = grid.decision / jnp.sum(grid.decision)
    gap = V @ start - jax.vmap(lambda lg, p: mdp.regularised_objective(grid, lg, p, beta, start))(
        logits_kl, pi_ref)
    pi_learned = jax.nn.softmax(logits_kl, -1)
    kl = jnp.sum(pi_star * (jnp.log(pi_star) - jnp.log(pi_learned)), -1)  # (seeds, S)
    final, curve, scatter = [], [], []
    for i, seed in enumerate(cfg.seeds):
        a = np.asarray(A[i])[mask]
        big = np.asarray(pi_star[i])[mask] >= NON_NEGLIGIBLE
        corr = lambda x: float(np.corrcoef(np.asarray(x[i])[mask], a)[0, 1])  # noqa: E731
        slope = lambda x: float(np.polyfit(a, np.asarray(x[i])[mask], 1)[0])  # noqa: E731
        err = lambda x: float(np.max(np.abs(np.asarray(x[i])[mask] - a)[big]))  # noqa: E731
        lr = np.asarray(learned[i])[mask]
        final.append({
            "seed": seed, "steps": cfg.tab_steps,
            "corr_closed_form": corr(closed),
            "max_abs_err_closed_form": float(np.max(np.abs(np.asarray(closed[i])[mask] - a))),
            "slope_closed_form": slope(closed), "max_err_big_closed_form": err(closed),
            "corr_learned": corr(learned),
            "slope_learned": slope(learned), "max_err_big_learned": err(learned),
            "max_abs_err_learned": float(np.max(np.abs(lr - a))),
            "objective_gap_learned": float(gap[i]),
            "kl_to_pi_star": float(np.sum(np.asarray(kl[i]) * np.asarray(start))),
            "corr_unregularised": corr(unreg),
            "corr_random": corr(noise),
            "slope_random": slope(noise), "max_err_big_random": err(noise),
            "a_star_std": float(a.std()),
        })
        every = max(1, cfg.tab_steps // 100)
        for t in range(0, cfg.tab_steps, every):
            curve.append({"seed": seed, "step": t, "corr_kl": float(h_kl["corr"][t, i]),
                          "corr_unregularised": float(h_0["corr"][t, i])})
        for (s, act), a_val, l_val, u_val in zip(np.argwhere(mask), a, lr,
                                                 np.asarray(unreg[i])[mask]):
            scatter.append({"seed": seed, "state": int(s), "action": int(act), "a_star": float(a_val),
                            "log_ratio_learned": float(l_val), "log_ratio_unregularised": float(u_val)})
    return final, curve, scatter


# ------------------------------------------------------------------------------ agentic


def _keys(seeds, salt):
    return jax.vmap(lambda s: jax.random.fold_in(jax.random.PRNGKey(s), salt))(jnp.asarray(seeds))


def _candidates(spec, policy, key, n_problems, n_cand):
    k1, k2 = jax.random.split(key)
    d0 = jnp.repeat(T.sample_problems(spec, k1, n_problems), n_cand)
    return T.rollout(spec, k2, d0, policy.sample)


def _attribution_trajectories(spec, policy, key, n):
    """An expert prefix (an action of the unregularised optimum, ties at random), at step
    k ~ U{0..H−1} a fast-tool call that crashes (the irreversible failure), then π_RL (in the dead
    state); returns the trajectories and k."""
    k1, k2, k3 = jax.random.split(key, 3)
    d0 = T.sample_problems(spec, k1, n)
    first_error = jax.random.randint(k2, (n,), 0, spec.horizon)
    Q = T.optimal_q(spec)

    def act(key, t, buf):
        ka, kb, kc = jax.random.split(key, 3)
        d = buf["d"][:, t]
        q = Q[spec.horizon - t - 1, d]
        best = jax.random.categorical(ka, jnp.where(q >= q.max(-1, keepdims=True) - 1e-6, 0.0,
                                                    -jnp.inf))
        op_e, arg_e = T.risky_call(spec, kc, d.shape)
        op_p, arg_p = policy.sample(kb, t, buf)
        op = jnp.where(t < first_error, best // spec.n_operands,
                       jnp.where(t == first_error, op_e, op_p))
        arg = jnp.where(t < first_error, best % spec.n_operands,
                        jnp.where(t == first_error, arg_e, arg_p))
        return op, arg

    return T.rollout(spec, k3, d0, act, crash_at=first_error), first_error


def policy_table(spec, policy):
    """log π[k−1, d, a] of a Markov policy over every state."""
    ds = jnp.arange(spec.n_obs)
    return jax.vmap(lambda k: jax.vmap(lambda d: policy.joint_logprobs(d, k))(ds))(
        jnp.arange(1, spec.horizon + 1))


def exact_success(spec, log_pi):
    """Expected success of a Markov policy ``log_pi[k−1, d, a]`` from the problem distribution."""
    P = T.transition_matrix(spec)

    def backup(V, lp):
        V_new = jnp.sum(jnp.exp(lp) * (P @ V), -1)
        return V_new, None

    V0 = (jnp.arange(spec.n_obs) == 0).astype(jnp.float32)
    V, _ = jax.lax.scan(backup, V0, log_pi)
    return jnp.mean(V[1:spec.modulus])


def _oracle(spec, ref, beta):
    """Step scores A*[k, d, a] of the exact soft-optimal advantage under a Markov π_ref, and the
    table log π* = log π_ref + A*/β."""
    log_ref = policy_table(spec, ref)
    A_star = T.soft_optimal_advantage(spec, log_ref, beta)

    def oracle(traj):
        k = spec.horizon - jnp.arange(spec.horizon)
        return A_star[k - 1, traj["d"], traj["op"] * spec.n_operands + traj["arg"]]
    return oracle, log_ref + A_star / beta


@eqx.filter_jit
def _scored(spec, beta, n_val, n_test, n_cand, n_attr, n_beam, beam_ns, expand, models, key):
    rl, ref, clip, prm, orm = models
    markov = isinstance(ref, MLPPolicy)

    def one(rl, ref, clip, prm, orm, key):
        kv, kt, ka, k1, k2, kb, kr, kc = jax.random.split(key, 8)
        oracle, log_star = _oracle(spec, ref, beta) if markov else (None, None)

        out = {}
        for name, k, n in (("val", kv, n_val), ("test", kt, n_test)):
            traj = _candidates(spec, rl, k, n, n_cand)
            steps = S.step_scores(rl, ref, clip, prm, beta, traj, k1)
            value = T.success_probability(spec, traj["d"][:, -1], traj["op"][:, -1], traj["arg"][:, -1])
            if markov:
                steps["a_star"] = oracle(traj)
            out[name] = {"traj": traj, "steps": steps, "value": value,
                         "orm": jax.vmap(orm)(traj["d"], traj["op"], traj["arg"])}
        traj, first = _attribution_trajectories(spec, rl, ka, n_attr)
        steps = S.step_scores(rl, ref, clip, prm, beta, traj, k2)
        if markov:
            steps["a_star"] = oracle(traj)
        out["attr"] = {"traj": traj, "first_error": first, "steps": steps}
        for name, pol in (("ref", ref), ("rl_kl", rl), ("rl_clip", clip)):
            tr = _candidates(spec, pol, jax.random.fold_in(kc, len(name)), n_test, 1)
            out[f"success_{name}"] = jnp.mean(T.success_probability(
                spec, tr["d"][:, -1], tr["op"][:, -1], tr["arg"][:, -1]))
            if markov:
                lp = policy_table(spec, pol)
                out[f"exact_success_{name}"] = exact_success(spec, lp)
                # KL(π* ‖ π) on the states of π_RL's test trajectories
                tt = out["test"]["traj"]
                k = spec.horizon - jnp.arange(spec.horizon)
                ls, lq = log_star[k - 1, tt["d"]], lp[k - 1, tt["d"]]
                out[f"kl_star_{name}"] = jnp.mean(jnp.sum(jnp.exp(ls) * (ls - lq), -1))
        if markov:
            out["exact_success_pi_star"] = exact_success(spec, log_star)
        d0 = T.sample_problems(spec, jax.random.fold_in(kb, 0), n_beam)
        out["beam"] = beam.search_values(spec, (rl, ref, prm), beta, kb, d0, beam_ns, expand,
                                         a_star=None if not markov else beta * (
                                             log_star - policy_table(spec, ref)))
        return out

    # one seed at a time (lax.map; each seed's values are those of a vmap): the evaluation's
    # arrays scale with n_test × n_candidates and the seeds, ~2 GB a seed at `paper`
    dynamic, static = eqx.partition((rl, ref, clip, prm, orm), eqx.is_array)
    return jax.lax.map(lambda a: one(*eqx.combine(a[0], static), a[1]), (dynamic, key))


def agentic(cfg, models, progress: bool = False):
    """Rows of ``bon``, ``auroc``, ``attribution`` and ``policies`` for every seed."""
    spec = task_spec(cfg)
    ns = [n for n in cfg.bon_ns if n <= cfg.n_candidates]
    args = (spec, cfg.kl_coef, cfg.n_val, cfg.n_test, cfg.n_candidates, cfg.n_attribution,
            cfg.n_beam, tuple(ns), cfg.beam_expand, models, _keys(cfg.seeds, 11))
    compiled = _scored.lower(*args).compile()
    memory.require_compiled(compiled, f"evaluation of {len(cfg.seeds)} seeds (n_test={cfg.n_test}, "
                            f"n_candidates={cfg.n_candidates}, n_beam={cfg.n_beam})")
    res = compiled(*args)
    res = jax.tree.map(np.asarray, res)
    bon, roc, attr, pol, bs = [], [], [], [], []
    for i, seed in enumerate(cfg.seeds):
        rng = np.random.default_rng(seed)
        split = {name: jax.tree.map(lambda x: x[i], res[name]) for name in ("val", "test")}
        traj_scores = {name: S.trajectory_scores(split[name]["steps"], split[name]["orm"])
                       for name in split}
        success = {name: split[name]["traj"]["success"] for name in split}
        value = {name: split[name]["value"] for name in split}

        def bon_of(name, key):
            sc = traj_scores[name][key].reshape(-1, cfg.n_candidates)
            return S.best_of_n(sc, value[name].reshape(-1, cfg.n_candidates), ns, rng)

        for key in traj_scores["test"]:
            scorer, agg = key
            val_bon, test_bon = bon_of("val", key), bon_of("test", key)
            val_auc = S.auroc(traj_scores["val"][key], success["val"])
            test_auc = S.auroc(traj_scores["test"][key], success["test"])
            for n in ns:
                bon.append({"seed": seed, "scorer": scorer, "aggregation": agg, "n": n,
                            "accuracy": test_bon[n], "val_accuracy": val_bon[n]})
            roc.append({"seed": seed, "scorer": scorer, "aggregation": agg, "auroc": test_auc,
                        "val_auroc": val_auc, "success_rate": float(success["test"].mean())})
        a = jax.tree.map(lambda x: x[i], res["attr"])
        failed = ~a["traj"]["success"]
        for j, n in enumerate(ns):
            for r, (scorer, agg) in enumerate(beam.rankers("a_star" in split["test"]["steps"])):
                bs.append({"seed": seed, "scorer": scorer, "aggregation": agg, "n": n,
                           "accuracy": float(res["beam"][i, j, r].mean())})
        for scorer in (s for s in (*S.AGGREGATED, *S.CONFIDENCE, *S.TRIVIAL) if s in a["steps"]):
            attr.append({"seed": seed, "scorer": scorer, "trajectories": int(failed.sum()),
                         "accuracy": S.attribution_accuracy(a["steps"][scorer][failed],
                                                            a["first_error"][failed], rng)})
        steps = split["test"]["steps"]
        corr = {name: float(np.corrcoef(steps[col].ravel(), steps["a_star"].ravel())[0, 1])
                if "a_star" in steps else float("nan")
                for name, col in (("rl_kl", "pa"), ("rl_clip", "pa_clip"))}
        nan = np.full(len(cfg.seeds), np.nan)
        for name in ("ref", "rl_kl", "rl_clip"):
            pol.append({"seed": seed, "policy": name, "success": float(res[f"success_{name}"][i]),
                        "exact_success": float(res.get(f"exact_success_{name}", nan)[i]),
                        "exact_success_pi_star": float(res.get("exact_success_pi_star", nan)[i]),
                        "kl_to_pi_star": float(res.get(f"kl_star_{name}", nan)[i]),
                        "identity_corr_on_test_steps": corr.get(name, float("nan"))})
    bon = _mark_chosen(bon, "val_accuracy", n_max=max(ns))
    chosen = {(r["seed"], r["scorer"], r["aggregation"]) for r in bon if r["chosen"]}
    for r in bs:
        r["chosen"] = int((r["seed"], r["scorer"], r["aggregation"]) in chosen)
    return bon, _mark_chosen(roc, "val_auroc"), attr, pol, bs


def _mark_chosen(rows, val_column, n_max=None):
    """``chosen`` = 1 on the aggregation with the best validation metric per (seed, scorer)
    (at the largest N for best-of-N); scorers with one aggregation are always chosen."""
    best = {}
    for r in rows:
        if n_max is not None and r["n"] != n_max:
            continue
        k = (r["seed"], r["scorer"])
        if k not in best or r[val_column] > best[k][1]:
            best[k] = (r["aggregation"], r[val_column])
    for r in rows:
        r["chosen"] = int(best[(r["seed"], r["scorer"])][0] == r["aggregation"])
    return rows
