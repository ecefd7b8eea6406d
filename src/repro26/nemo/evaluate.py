"""Evaluation: final user-state improvement, need alignment and hypervolume, in distribution and
under the two Sim2Sim shifts.

Settings (each with a fixed set of evaluation users shared by every method and seed, so that
method differences are paired):

* ``in_distribution`` — MindFlow, personas from the training ranges;
* ``shifted_personas`` — MindFlow, personas from the shifted ranges;
* ``alt_family`` — the differently structured simulator ("logit" family: tent arousal curve,
  hard dual-process switch, increments in logit space), training-range personas.

Metrics per (method, seed, setting), averaged over the evaluation users:
``emo_improvement = E_T - E_0``, ``cog_improvement = C_T - C_0`` (the return vector),
``need_weighted = Σ_t p(x_t) · r_t``, the need-weighted satisfaction: each turn's (ΔE, ΔC)
weighted by what the user needs at that turn (the simulator's preference vector ``p``);
``need_alignment = mean_t p(x_t) · type(a_t)`` with ``type(a) = (e_a, g_a) / (e_a + g_a)`` the
strategy's soothing/guidance profile; ``need_shift``, the fraction of dialogues in which the
user's dominant need (``argmax p``: soothing or guidance) changes at least once (the premise
that needs shift within a conversation, counted on the dialogues played); and ``hypervolume``
of the mean return point with respect to the no-change reference (0, 0).

Methods: the trained policies, the trivial rows (uniform random strategies, ESConv's rule-based
stage schedule) and the ideal rows ``planner_emo``, ``planner_cog``, ``planner_need``
(:mod:`repro26.nemo.solvers`: the best open-loop plan for one objective on the noise-free
simulator of the setting, knowing the user; played on the same users with the same random
numbers as every other method).
"""

from __future__ import annotations

import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from repro26.nemo import solvers
from repro26.nemo.model import rule_policy
from repro26.nemo.names import SETTINGS
from repro26.nemo.simulator import MindFlow, Persona, rollout, sample_personas

PLANNERS = {f"planner_{o}": o for o in solvers.OBJECTIVES}


def hypervolume_2d(points, reference) -> float:
    """Area dominated by ``points`` (maximisation) and bounded below by ``reference``:
    sort the points that dominate the reference by the first objective, descending, and add the
    strips ``(x_i - r_x) · (y_i - y_best_so_far)`` of each new best second objective."""
    pts = np.asarray(points, float).reshape(-1, 2)
    ref = np.asarray(reference, float)
    pts = pts[np.all(pts > ref, axis=1)]
    area, best_y = 0.0, ref[1]
    for x, y in pts[np.argsort(-pts[:, 0], kind="stable")]:
        if y > best_y:
            area += (x - ref[0]) * (y - best_y)
            best_y = y
    return float(area)


def make_env(cfg, family: str) -> MindFlow:
    effects = jnp.array([cfg.strategy_effects[s] for s in cfg.strategy_order], jnp.float32)
    return MindFlow(effects, cfg.obs_noise, cfg.process_noise, cfg.reappraisal,
                    cfg.balance_temperature, cfg.horizon, family)


def setting_env(cfg, setting: str) -> MindFlow:
    return make_env(cfg, cfg.alt_family if setting == "alt_family" else "mindflow")


def eval_personas(cfg) -> dict[str, Persona]:
    """The evaluation users of each setting (fixed keys: the same for every method and seed)."""
    out = {}
    for i, setting in enumerate(SETTINGS):
        ranges = cfg.personas["shifted" if setting == "shifted_personas" else "train"]
        out[setting] = sample_personas(jax.random.PRNGKey(10_000 + i), ranges, cfg.eval_users)
    return out


def dialogue_metrics(env: MindFlow, traj: dict) -> dict[str, jax.Array]:
    """The metrics above, averaged over a batch of played dialogues (leading axis: users)."""
    ret = traj["reward"].sum(1).mean(0)
    profile = env.effects / env.effects.sum(1, keepdims=True)
    align = (traj["preference"] * profile[traj["action"]]).sum(-1).mean()
    need = (traj["preference"] * traj["reward"]).sum(-1).sum(-1).mean()
    dominant = traj["preference"][..., 0] > traj["preference"][..., 1]
    shift = jnp.any(dominant[:, 1:] != dominant[:, :-1], axis=1).mean()
    return {"emo_improvement": ret[0], "cog_improvement": ret[1], "need_weighted": need,
            "need_alignment": align, "need_shift": shift}


def _play(env: MindFlow, persona: Persona, key, policy, planner: str | None, beam: int):
    """One dialogue: the policy (a Policy, or None for the rule-based schedule), or the plan of
    ``planner`` made from the opening state that :func:`rollout` will reset to with ``key``."""
    if planner is None:
        return rollout(env, persona, rule_policy if policy is None else policy.act, key)
    x0 = env.reset(persona, jax.random.split(key)[0])
    plan, _ = solvers.beam_plan(env, persona, x0, planner, beam)
    return rollout(env, persona, solvers.plan_policy(plan), key)


@eqx.filter_jit
def _metrics_per_seed(env: MindFlow, personas: Persona, policies, seeds, key,
                      planner: str | None = None, beam: int = 1):
    """Metrics of every seed (vmapped): ``policies`` stacked per seed, or None for the rule-based
    schedule and the planners. One compile per simulator family and policy kind."""
    def per_seed(policy, seed):
        k = jax.random.fold_in(key, seed)
        keys = jax.random.split(k, personas.arousal_peak.shape[0])
        traj = jax.vmap(lambda p, kk: _play(env, p, kk, policy, planner, beam))(personas, keys)
        return dialogue_metrics(env, traj)

    if policies is None:
        return jax.vmap(lambda s: per_seed(None, s))(seeds)
    return eqx.filter_vmap(per_seed)(policies, seeds)


def evaluate_method(cfg, method: str, personas: dict[str, Persona], policies=None) -> list[dict]:
    """Rows (method, seed, setting, metrics) for a policy method (``policies``: the stacked
    per-seed Policy; the random baseline is :func:`repro26.nemo.model.uniform` of one), the
    rule-based schedule (``policies`` None) or a planner (``method`` in :data:`PLANNERS`)."""
    rows = []
    seeds = jnp.asarray(cfg.seeds)
    for i, setting in enumerate(SETTINGS):
        metrics = _metrics_per_seed(setting_env(cfg, setting), personas[setting], policies,
                                    seeds, jax.random.PRNGKey(20_000 + i),
                                    PLANNERS.get(method), cfg.planner_beam)
        metrics = {k: np.asarray(v) for k, v in metrics.items()}
        for j, seed in enumerate(cfg.seeds):
            point = (metrics["emo_improvement"][j], metrics["cog_improvement"][j])
            rows.append({"method": method, "seed": int(seed), "setting": setting,
                         **{k: float(v[j]) for k, v in metrics.items()},
                         "hypervolume": hypervolume_2d([point], (0.0, 0.0))})
    return rows


def arousal_curve_rows(cfg, n_grid: int = 101) -> list[dict]:
    """Receptivity ρ(a) and soothing need p_emo(a) on an arousal grid for the representative
    personas (config ``curve_personas``), at distress = arousal and clarity 0.25."""
    env = make_env(cfg, "mindflow")
    alt = make_env(cfg, cfg.alt_family)
    grid = jnp.linspace(0.0, 1.0, n_grid)
    rows = []
    for name, values in cfg.curve_personas.items():
        persona = Persona(**{f.name: jnp.asarray(getattr(values, f.name), jnp.float32)
                             for f in dataclasses.fields(values)})
        for family, e in (("mindflow", env), (cfg.alt_family, alt)):
            rho = e.receptivity(persona, grid)
            states = jnp.stack([grid, -grid, jnp.full_like(grid, 0.25), jnp.full_like(grid, 0.25),
                                grid], axis=1)
            pref = jax.vmap(lambda x: e.preference(persona, x))(states)
            for a, r, p in zip(np.asarray(grid), np.asarray(rho), np.asarray(pref[:, 0])):
                rows.append({"persona": name, "family": family, "arousal": float(a),
                             "receptivity": float(r), "soothing_need": float(p),
                             "arousal_peak": float(values.arousal_peak)})
    return rows
