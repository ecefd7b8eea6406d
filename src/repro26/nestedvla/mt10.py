"""MetaWorld MT10 (Yu et al. 2020) as an optional evaluation of the same method, in its own
environment (``workflow/envs/metaworld.yaml``: metaworld pins its own mujoco, which never goes
into the main install). ``metaworld`` is imported here only, lazily.

The ten MT10 environments are the skill tasks; an episode samples one of the benchmark's goal
variations of its environment. Observation: MetaWorld's 39-d vector (hand and gripper, two
objects with quaternions, the previous frame, goal zeroed); task instruction: a one-hot task
token (10). Tokens of the transformer base (:data:`LAYOUT`): hand, object 1, object 2, the same
three of the previous frame, the goal slot, and the task token split in two. Demonstrations come
from MetaWorld's scripted policies with Gaussian action noise (labels: the clean scripted
action at the visited state). Base, per-task adapters, joint adapter and nested hypernetwork
are trained by :mod:`repro26.nestedvla.train` exactly as on the planar suites; rollouts step
MuJoCo on the CPU, the policy batched over episodes in one jitted call per step.
"""

from __future__ import annotations

import importlib

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from repro26.core.config import UsageError
from repro26.nestedvla import merging
from repro26.nestedvla.policy import act, token_layout

OBS, ACT, N_TASKS = 39, 4, 10
LAYOUT = token_layout((range(0, 4), range(4, 11), range(11, 18), range(18, 22), range(22, 29),
                       range(29, 36), range(36, 39), range(OBS, OBS + 5),
                       range(OBS + 5, OBS + N_TASKS)))


def require_metaworld():
    """The ``metaworld`` module, or one clear line (exit 2) when it is not installed."""
    try:
        return importlib.import_module("metaworld"), importlib.import_module("metaworld.policies")
    except ImportError as err:
        raise UsageError(
            f"nestedvla mt10 needs the metaworld package ({err}); run it through its own "
            "environment: snakemake --use-conda --cores 1 nestedvla_mt10 "
            "(workflow/envs/metaworld.yaml)") from None


class MT10:
    """The ten environments with their goal variations and scripted policies."""

    def __init__(self, seed: int):
        metaworld, policies = require_metaworld()
        bench = metaworld.MT10(seed=seed)
        self.names = list(bench.train_classes)
        self.classes = bench.train_classes
        self.goals = {n: [t for t in bench.train_tasks if t.env_name == n] for n in self.names}
        self.experts = {n: policies.ENV_POLICY_MAP[n]() for n in self.names}

    def embedding(self) -> np.ndarray:
        return np.eye(N_TASKS, dtype=np.float32)

    def envs(self, name: str, n: int, rng: np.random.Generator):
        """``n`` environments of task ``name``, each on a random goal variation, reset."""
        out, obs = [], []
        for _ in range(n):
            env = self.classes[name]()
            env.set_task(self.goals[name][rng.integers(len(self.goals[name]))])
            o, _ = env.reset(seed=int(rng.integers(2 ** 31)))
            out.append(env)
            obs.append(o)
        return out, np.asarray(obs, np.float32)


def run_episodes(envs, obs, policy, horizon: int, rng, noise: float = 0.0, expert=None):
    """Step every env for ``horizon`` steps under ``policy(obs batch) -> actions`` (plus Gaussian
    noise). Returns visited observations (n, T, OBS), the expert's actions there (if ``expert``)
    and success (n,): the env's ``success`` flag at any step, as MetaWorld reports it."""
    n = len(envs)
    seen, labels, ok = [], [], np.zeros(n, bool)
    for _ in range(horizon):
        seen.append(obs)
        if expert is not None:
            labels.append(np.stack([expert.get_action(o) for o in obs]))
        a = np.clip(np.asarray(policy(obs)) + noise * rng.standard_normal((n, ACT)), -1, 1)
        stepped = [env.step(a[i]) for i, env in enumerate(envs)]
        obs = np.asarray([s[0] for s in stepped], np.float32)
        ok |= np.asarray([bool(s[4].get("success", 0.0)) for s in stepped])
    return (np.stack(seen, 1), np.stack(labels, 1) if labels else None, ok)


def demonstrations(mt: MT10, episodes: int, horizon: int, noise: float, seed: int):
    """Noisy scripted rollouts per task: obs (10, episodes * T, OBS), actions (..., ACT), and
    the scripted policy's success rate per task."""
    rng = np.random.default_rng(seed)
    obs, acts, rates = [], [], []
    for name in mt.names:
        envs, o = mt.envs(name, episodes, rng)
        expert = mt.experts[name]
        seen, labels, ok = run_episodes(
            envs, o, lambda b: np.stack([expert.get_action(x) for x in b]), horizon, rng, noise,
            expert)
        obs.append(seen.reshape(-1, OBS))
        acts.append(np.clip(labels, -1, 1).reshape(-1, ACT).astype(np.float32))
        rates.append(ok.mean())
    return np.stack(obs), np.stack(acts), np.asarray(rates)


@eqx.filter_jit
def _actions(base, deltas, emb, obs):
    return jax.vmap(lambda o: act(base, deltas, o, emb))(obs)


def success(mt: MT10, base, deltas, task: int, episodes: int, horizon: int, seed: int) -> float:
    """Success rate of the base policy with ``deltas`` on MT10 task ``task`` (the same goal
    variations and starts for every method with the same ``seed``)."""
    emb = jnp.asarray(mt.embedding()[task])
    rng = np.random.default_rng([seed, task])
    envs, obs = mt.envs(mt.names[task], episodes, rng)
    return float(run_episodes(envs, obs, lambda b: _actions(base, deltas, emb, jnp.asarray(b)),
                              horizon, rng)[2].mean())


def _seed(tree, s: int):
    """Seed ``s`` of a model stacked on a leading seed axis."""
    return jax.tree.map(lambda x: x[s] if eqx.is_array(x) else x, tree)


def evaluate(cfg, mt: MT10, bases, adapter_deltas, joint_deltas, hyper) -> list[dict]:
    """Rows (method, task, seed, success, lam) for every method of
    :data:`repro26.nestedvla.evaluate.METHODS` on the ten tasks; merging lambdas picked per seed
    on separate selection episodes, as on the planar suites."""
    from repro26.nestedvla.evaluate import METHODS, nearest_index

    emb = mt.embedding()
    near = nearest_index(emb, emb, True)
    rows = []
    for s, seed in enumerate(cfg.seeds):
        base, own, hyper_s = _seed(bases, s), _seed(adapter_deltas, s), _seed(hyper, s)
        per_task = {
            "base": lambda t: None,
            "nearest": lambda t: jax.tree.map(lambda d: d[near[t]], own),
            "joint": lambda t: _seed(joint_deltas, s),
            "nestedvla": lambda t: hyper_s.deltas(jnp.asarray(emb[t])),
            "finetune": lambda t: jax.tree.map(lambda d: d[t], own),
        }
        for method in merging.METHODS:
            grid = cfg.ties_lambdas if method == "ties" else cfg.sum_lambdas
            merged = [merging.merge(method, own, lam, keep=cfg.ties_keep, drop=cfg.dare_drop,
                                    key=jax.random.PRNGKey(seed)) for lam in grid]
            select = [np.mean([success(mt, base, m, t, cfg.mt10_episodes, cfg.mt10_horizon,
                                       10_000 + seed) for t in range(N_TASKS)]) for m in merged]
            best = int(np.argmax(select))
            per_task[method] = lambda t, m=merged[best]: m
            lam = {method: float(grid[best])}
            rows += [{"method": method, "task": mt.names[t], "seed": int(seed),
                      "success": success(mt, base, merged[best], t, cfg.mt10_episodes,
                                         cfg.mt10_horizon, seed), "lam": lam[method]}
                     for t in range(N_TASKS)]
        for method in METHODS:
            if method in merging.METHODS:
                continue
            rows += [{"method": method, "task": mt.names[t], "seed": int(seed),
                      "success": success(mt, base, per_task[method](t), t, cfg.mt10_episodes,
                                         cfg.mt10_horizon, seed), "lam": float("nan")}
                     for t in range(N_TASKS)]
    return rows
