"""Three multi-task planar control suites of different embodiment, pure JAX, vmapped rollouts.

* ``point``: a 2-D point mass (double integrator): v' = 0.75 v + 0.5 a, p' = clip(p + 0.1 v').
* ``arm2``: a planar 2-link arm (links 0.6, 0.5) under joint-velocity control q' = q + 0.15 a.
* ``arm3``: a planar 3-link arm (links 0.45, 0.4, 0.3), same control.

Every suite has the same two task families on one object (a point the end effector picks up
when it comes within ``GRASP`` of it, and then carries):

* ``reach``: bring the end effector to the target g; success when |ee_T - g| < ``TOL``;
* ``place``: pick the object up at its start o and put it at g; success when |obj_T - g| < TOL.

A task is (kind, g, o); tasks differ by target and object position. Actions lie in [-1, 1]^3
(padding dimensions are ignored by ``point`` and ``arm2``). The scripted expert steers the end
effector to the object (place, not yet held) or to g: a PD law for the point mass, damped least
squares on the arm's Jacobian for the arms.

Observation (10): joint angles or position (3, zero-padded), velocity (2), end effector (2),
object (2), held flag (1). The task instruction is a fixed task token (no sentence-embedding
model ships its weights here): one-hot suite (3), one-hot kind (2), g (2), o (2).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from repro26.nestedvla.names import KINDS, SUITES

OBS_DIM, ACT_DIM, EMB_DIM = 10, 3, 9
GRASP, TOL = 0.08, 0.1
LINKS = {"arm2": (0.6, 0.5), "arm3": (0.45, 0.4, 0.3)}
ACT_USED = {"point": 2, "arm2": 2, "arm3": 3}


@dataclasses.dataclass(frozen=True)
class Tasks:
    """The tasks of one suite: kind index (n,), target g (n, 2), object start o (n, 2)."""

    suite: str
    kind: np.ndarray
    goal: np.ndarray
    obj: np.ndarray

    def __len__(self) -> int:
        return len(self.kind)

    def embedding(self) -> np.ndarray:
        """Fixed task tokens (n, EMB_DIM): one-hot suite, one-hot kind, g, o."""
        n = len(self)
        suite = np.zeros((n, len(SUITES)))
        suite[:, SUITES.index(self.suite)] = 1
        return np.concatenate([suite, np.eye(len(KINDS))[self.kind], self.goal, self.obj],
                              axis=1).astype(np.float32)

    def take(self, idx) -> "Tasks":
        return Tasks(self.suite, self.kind[idx], self.goal[idx], self.obj[idx])


def concat(*parts: Tasks) -> Tasks:
    """The tasks of several sets of one suite, in order."""
    return Tasks(parts[0].suite, *(np.concatenate([getattr(p, f) for p in parts])
                                   for f in ("kind", "goal", "obj")))


def _workspace_point(rng: np.random.Generator, suite: str, n: int) -> np.ndarray:
    """Points the suite can reach comfortably: a box for the point mass, an annulus in the
    upper half plane for the arms."""
    if suite == "point":
        return rng.uniform(-0.7, 0.7, (n, 2))
    reach = sum(LINKS[suite])
    r = rng.uniform(0.55, 0.85, n) * reach
    phi = rng.uniform(0.15 * np.pi, 0.85 * np.pi, n)
    return np.stack([r * np.cos(phi), r * np.sin(phi)], 1)


def make_tasks(seed: int, suite: str, n_train: int, n_heldout: int) -> tuple[Tasks, Tasks]:
    """Training and held-out tasks of a suite, half reach and half place each (targets and
    object starts drawn from the workspace; place targets at least 0.3 from the object).
    Different ``seed`` values give independent task sets (the base policy's pretraining tasks
    use another seed than the skills)."""
    rng = np.random.default_rng([seed, SUITES.index(suite)])
    n = n_train + n_heldout
    kind = np.asarray([i % 2 for i in range(n)])
    goal, obj = _workspace_point(rng, suite, n), _workspace_point(rng, suite, n)
    for i in range(n):
        while np.linalg.norm(goal[i] - obj[i]) < 0.3:
            goal[i] = _workspace_point(rng, suite, 1)[0]
    tasks = Tasks(suite, kind, goal.astype(np.float32), obj.astype(np.float32))
    return tasks.take(np.arange(n_train)), tasks.take(np.arange(n_train, n))


# ----------------------------------------------------------------------------- dynamics


def forward_kinematics(suite: str, q: jax.Array) -> jax.Array:
    """End effector of the arm (or the point mass's position) from q (3, padded)."""
    if suite == "point":
        return q[:2]
    links = jnp.asarray(LINKS[suite])
    angles = jnp.cumsum(q[:len(links)])
    return jnp.stack([jnp.sum(links * jnp.cos(angles)), jnp.sum(links * jnp.sin(angles))])


def reset(suite: str, obj0: jax.Array, key: jax.Array) -> dict:
    """Random start: point mass anywhere in [-0.8, 0.8]^2 at rest; arms near a bent home pose."""
    if suite == "point":
        q = jnp.concatenate([jax.random.uniform(key, (2,), minval=-0.8, maxval=0.8), jnp.zeros(1)])
    else:
        home = jnp.asarray([0.3, 1.2, 0.0] if suite == "arm2" else [0.2, 0.9, 0.9])
        q = home + jax.random.uniform(key, (3,), minval=-0.3, maxval=0.3)
        q = q * (jnp.arange(3) < len(LINKS[suite]))
    return {"q": q, "vel": jnp.zeros(2), "obj": obj0, "held": jnp.zeros(())}


def observe(suite: str, s: dict) -> jax.Array:
    ee = forward_kinematics(suite, s["q"])
    return jnp.concatenate([s["q"], s["vel"], ee, s["obj"], s["held"][None]])


def step(suite: str, s: dict, action: jax.Array, kind: jax.Array) -> dict:
    """One control step; in a place task the object sticks to the end effector once within
    GRASP of it."""
    a = jnp.clip(action, -1.0, 1.0)
    if suite == "point":
        vel = 0.75 * s["vel"] + 0.5 * a[:2]
        q = jnp.concatenate([jnp.clip(s["q"][:2] + 0.1 * vel, -1.0, 1.0), jnp.zeros(1)])
    else:
        vel = s["vel"]
        q = s["q"] + 0.15 * a * (jnp.arange(3) < len(LINKS[suite]))
    ee = forward_kinematics(suite, q)
    near = jnp.linalg.norm(ee - s["obj"]) < GRASP
    held = jnp.where(kind == 1, jnp.maximum(s["held"], near.astype(jnp.float32)), 0.0)
    obj = jnp.where(held > 0, ee, s["obj"])
    return {"q": q, "vel": vel, "obj": obj, "held": held}


def expert(suite: str, s: dict, kind: jax.Array, goal: jax.Array) -> jax.Array:
    """Scripted expert action (3,): steer the end effector to the object, then to the goal."""
    ee = forward_kinematics(suite, s["q"])
    target = jnp.where((kind == 1) & (s["held"] == 0), s["obj"], goal)
    err = target - ee
    if suite == "point":
        a = jnp.clip(6.0 * err - 1.0 * s["vel"], -1.0, 1.0)
        return jnp.concatenate([a, jnp.zeros(1)])
    # arms: follow an arc about the shoulder (radial + angular error), which keeps the end
    # effector away from the folded singularity that a straight line can cross
    r, phi = jnp.linalg.norm(ee), jnp.arctan2(ee[1], ee[0])
    dr = jnp.linalg.norm(target) - r
    dphi = jnp.angle(jnp.exp(1j * (jnp.arctan2(target[1], target[0]) - phi)))
    radial, tangential = ee / r, jnp.stack([-ee[1], ee[0]]) / r
    err = dr * radial + r * dphi * tangential
    n = len(LINKS[suite])
    jac = jax.jacfwd(lambda q: forward_kinematics(suite, q))(s["q"])[:, :n]
    dq = jac.T @ jnp.linalg.solve(jac @ jac.T + 0.01 * jnp.eye(2), err)
    dq = jnp.clip(dq / 0.15, -1.0, 1.0)
    return jnp.concatenate([dq, jnp.zeros(3 - n)])


def success(suite: str, s: dict, kind: jax.Array, goal: jax.Array) -> jax.Array:
    ee = forward_kinematics(suite, s["q"])
    return jnp.where(kind == 1, jnp.linalg.norm(s["obj"] - goal), jnp.linalg.norm(ee - goal)) < TOL


def potential(suite: str, s: dict, kind: jax.Array, goal: jax.Array) -> jax.Array:
    """-(distance still to cover): reach: |ee - g|; place: |obj - g| plus, while the object is
    not held, |ee - obj|. Zero exactly at a solved task (the shaping term of PPO's reward)."""
    ee = forward_kinematics(suite, s["q"])
    to_goal = jnp.where(kind == 1, jnp.linalg.norm(s["obj"] - goal), jnp.linalg.norm(ee - goal))
    to_object = jnp.where((kind == 1) & (s["held"] == 0), jnp.linalg.norm(ee - s["obj"]), 0.0)
    return -(to_goal + to_object)


def rollout(suite: str, policy, kind, goal, obj0, key, horizon: int, noise: float = 0.0):
    """One episode under ``policy(obs) -> action`` with Gaussian action noise ``noise``.
    Returns observations (T, OBS_DIM), the expert's actions at those states (T, ACT_DIM), and
    success at the end."""
    k_reset, k_noise = jax.random.split(key)
    s0 = reset(suite, obj0, k_reset)

    def body(s, k):
        obs = observe(suite, s)
        a = policy(obs) + noise * jax.random.normal(k, (ACT_DIM,))
        return step(suite, s, a, kind), (obs, expert(suite, s, kind, goal))

    s, (obs, acts) = jax.lax.scan(body, s0, jax.random.split(k_noise, horizon))
    return obs, acts, success(suite, s, kind, goal)


def expert_policy(suite: str, kind, goal):
    """The expert as a function of the observation (reconstructs the state from it)."""
    def policy(obs):
        s = {"q": obs[:3], "vel": obs[3:5], "obj": obs[7:9], "held": obs[9]}
        return expert(suite, s, kind, goal)
    return policy


def demonstrations(suite: str, tasks: Tasks, key, n_episodes: int, horizon: int, noise: float):
    """Expert rollouts with action noise ``noise`` (the labels are the clean expert actions at
    the visited states, DART-style), vmapped over tasks and episodes.
    Returns obs (n_tasks, n_episodes * T, OBS_DIM), actions (..., ACT_DIM), expert success
    (n_tasks, n_episodes) of the noisy rollouts."""
    def one_task(kind, goal, obj, k):
        def episode(k):
            return rollout(suite, expert_policy(suite, kind, goal), kind, goal, obj, k, horizon,
                           noise)
        obs, acts, ok = jax.vmap(episode)(jax.random.split(k, n_episodes))
        return obs.reshape(-1, OBS_DIM), acts.reshape(-1, ACT_DIM), ok

    keys = jax.random.split(key, len(tasks))
    return jax.jit(jax.vmap(one_task))(jnp.asarray(tasks.kind), jnp.asarray(tasks.goal),
                                        jnp.asarray(tasks.obj), keys)
