"""Trees, dynamics and leaf observations for the experiments (all generated here).

A *task* is named ``<dynamics>_<tree>_<leaves>``: dynamics ``linear`` (experiment 1),
``doublewell`` / ``statedep`` (experiment 2), ``shapes`` (experiment 3, landmark shapes under a
Kunita flow, root = a butterfly-curve outline), ``ctmc`` (discrete traits: an S-state chain with
time-dependent "seasonal" rates, leaves observed through a symmetric emission matrix); tree ``balanced`` (binary, equal edges) or
``random`` (Yule-type random binary tree, exponential edge lengths, rescaled to the same height).
The true process is simulated on the tree with the unguided forward pass on a grid 4x finer than
the one used for inference; a fraction of leaves is observed with Gaussian noise (for ``ctmc``:
the observed symbol is the true state with probability ``1 - ctmc.error``, else uniform over the
other states). Discrete states are stored one-hot (``truth``, ``obs``: ``(n, S)``).
"""

from __future__ import annotations

import dataclasses
import zlib
from pathlib import Path

import jax
import jax.numpy as jnp
import networkx as nx
import numpy as np

from repro26.core import io
from repro26.core.config import ConfigError, UsageError
from repro26.nbffg import model as M
from repro26.nbffg import solvers as S

DYNAMICS = ("linear", "doublewell", "statedep", "shapes", "ctmc")
TREES = ("balanced", "random")


@dataclasses.dataclass(frozen=True)
class Task:
    dynamics: str
    tree: str
    leaves: int

    @property
    def name(self) -> str:
        return f"{self.dynamics}_{self.tree}_{self.leaves}"


def parse_task(name: str, where: str = "task") -> Task:
    """``doublewell_random_32`` -> Task; a bad name is a one-line ConfigError."""
    parts = name.split("_")
    ok = (len(parts) == 3 and parts[0] in DYNAMICS and parts[1] in TREES and parts[2].isdigit()
          and int(parts[2]) >= 2)
    if ok and parts[1] == "balanced":
        ok = int(parts[2]) & (int(parts[2]) - 1) == 0
    if not ok:
        raise ConfigError(f"{where}: '{name}' is not <dynamics>_<tree>_<leaves> with dynamics in "
                          f"{DYNAMICS}, tree in {TREES}, leaves >= 2 (a power of 2 if balanced)")
    return Task(parts[0], parts[1], int(parts[2]))


def balanced_tree(leaves: int, height: float) -> tuple[np.ndarray, np.ndarray]:
    """Complete binary tree (networkx) with ``leaves`` leaves and equal edges summing to height."""
    depth = int(round(np.log2(leaves)))
    g = nx.balanced_tree(2, depth)
    parent = -np.ones(g.number_of_nodes(), dtype=int)
    for u, v in nx.bfs_edges(g, 0):
        parent[v] = u
    length = np.full(parent.size, height / depth)
    length[0] = 0.0
    return parent, length


def random_tree(rng: np.random.Generator, leaves: int, height: float):
    """Random binary tree: repeatedly split a uniformly chosen leaf; Exp(1) edge lengths,
    rescaled so the deepest leaf is at ``height``."""
    parent, tips = [-1], [0]
    while len(tips) < leaves:
        v = tips.pop(int(rng.integers(len(tips))))
        for _ in range(2):
            parent.append(v)
            tips.append(len(parent) - 1)
    parent = np.asarray(parent)
    length = rng.exponential(1.0, parent.size)
    length[0] = 0.0
    depth = np.zeros(parent.size)
    for v in range(1, parent.size):
        depth[v] = depth[parent[v]] + length[v]
    return parent, length * height / depth.max()


def butterfly_outline(k: int, size: float = 1.0) -> np.ndarray:
    """``k`` landmarks on Fay's butterfly curve ``r = e^{sin t} - 2 cos 4t + sin^5((2t - pi)/24)``
    (the root "wing" shape), centred and scaled to unit radius times ``size``; shape ``(2k,)``."""
    t = np.linspace(0.0, 2 * np.pi, k, endpoint=False) + 0.1
    r = np.exp(np.sin(t)) - 2 * np.cos(4 * t) + np.sin((2 * t - np.pi) / 24) ** 5
    pts = np.stack([r * np.sin(t), r * np.cos(t)], -1)
    pts = pts - pts.mean(0)
    pts = size * pts / np.abs(pts).max()
    return pts.reshape(-1)


def make_dynamics(cfg, task: Task):
    """The true SDE of a task (parameters from ``cfg``), and the root prior ``N(m0, P0)``."""
    d = cfg.dim
    if task.dynamics == "linear":
        rot = jnp.array([[0.0, 1.0], [-1.0, 0.0]]) if d == 2 else jnp.zeros((d, d))
        B = -cfg.theta * jnp.eye(d) + 0.5 * rot
        dyn = M.LinearSDE(B, 0.2 * jnp.ones(d), cfg.sigma * jnp.eye(d))
        return dyn, jnp.zeros(d), jnp.eye(d)
    if task.dynamics == "doublewell":
        dyn = M.DoubleWell(cfg.alpha, cfg.sigma, d)
        return dyn, jnp.zeros(d), cfg.root_std**2 * jnp.eye(d)
    if task.dynamics == "statedep":
        dyn = M.StateDependentOU(cfg.theta, cfg.sigma, cfg.gamma, d)
        return dyn, jnp.zeros(d), cfg.root_std**2 * jnp.eye(d)
    root = jnp.asarray(butterfly_outline(cfg.shapes.landmarks), jnp.float32)
    g = jnp.linspace(-1.2, 1.2, cfg.shapes.grid)
    centres = jnp.stack(jnp.meshgrid(g, g), -1).reshape(-1, 2)
    dyn = M.KunitaFlow(centres, cfg.shapes.kernel_width, cfg.shapes.kernel_scale, root)
    return dyn, root, cfg.shapes.root_std**2 * jnp.eye(root.size)


def make_ctmc(cfg) -> M.SeasonalCTMC:
    c = cfg.ctmc
    return M.SeasonalCTMC(c.states, c.rate, c.kappa, c.period)


def emission_matrix(cfg) -> np.ndarray:
    """``E(x, o)``: the true state with probability ``1 - error``, else uniform over the rest."""
    k, err = cfg.ctmc.states, cfg.ctmc.error
    E = np.full((k, k), err / (k - 1))
    np.fill_diagonal(E, 1.0 - err)
    return E


def state_dim(cfg, task: Task) -> int:
    if task.dynamics == "ctmc":
        return cfg.ctmc.states
    return 2 * cfg.shapes.landmarks if task.dynamics == "shapes" else cfg.dim


def noise_dim(cfg, task: Task) -> int:
    return 2 * cfg.shapes.grid**2 if task.dynamics == "shapes" else cfg.dim


def obs_var(cfg, task: Task) -> float:
    return (cfg.shapes.obs_std if task.dynamics == "shapes" else cfg.obs_std) ** 2


def generate(cfg, task: Task, seed: int) -> dict[str, np.ndarray]:
    """Tree, true node states and noisy leaf observations for one task and seed."""
    rng = np.random.default_rng([seed, zlib.crc32(task.name.encode())])
    if task.tree == "balanced":
        parent, length = balanced_tree(task.leaves, cfg.tree_height)
    else:
        parent, length = random_tree(rng, task.leaves, cfg.tree_height)
    tree = S.make_tree(parent, length)
    if task.dynamics == "ctmc":
        return _generate_ctmc(cfg, tree, rng)
    dyn, m0, P0 = make_dynamics(cfg, task)
    d, m = state_dim(cfg, task), noise_dim(cfg, task)
    K = 4 * cfg.steps_per_edge
    key = jax.random.key(int(rng.integers(2**31)))
    k1, k2 = jax.random.split(key)
    guide = S.zero_guide(tree, d, K, m0, P0)
    xs, _ = jax.jit(lambda z, e: S.forward_tree(dyn, dyn.proxy(), M.ZeroResidual(m), tree, guide,
                                                   z, e))(
        jax.random.normal(k1, (d,)), jax.random.normal(k2, (tree.n + 1, K, m)))
    xs = np.asarray(xs)
    is_leaf = np.asarray(tree.is_leaf) > 0
    observed = is_leaf & (rng.random(tree.n + 1) < cfg.observed_fraction)
    observed[np.asarray(tree.leaves)[0]] = True
    obs = np.where(observed[:, None], xs + np.sqrt(obs_var(cfg, task)) * rng.normal(size=xs.shape), 0)
    return _arrays(tree, xs, obs, observed)


def _arrays(tree: S.Tree, xs, obs, observed) -> dict[str, np.ndarray]:
    rebuilt_parent = np.asarray(tree.parent)[: tree.n].copy()
    rebuilt_parent[0] = -1
    return {"parent": rebuilt_parent, "length": np.asarray(tree.length)[: tree.n],
            "truth": xs[: tree.n], "obs": obs[: tree.n], "observed": observed[: tree.n].astype(float)}


def _generate_ctmc(cfg, tree: S.Tree, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Unguided chain (root ~ uniform) on a 4x finer grid; noisy symbols at observed leaves."""
    dyn = make_ctmc(cfg)
    S_, K = cfg.ctmc.states, 4 * cfg.steps_per_edge
    k1, k2 = jax.random.split(jax.random.key(int(rng.integers(2**31))))
    guide = S.ctmc_naive_guide(tree, dyn, K)
    states, _ = jax.jit(lambda z, e: S.ctmc_forward_tree(guide, M.ZeroCorrection(S_), tree, z, e))(
        jax.random.normal(k1, (S_,)), jax.random.normal(k2, (tree.n + 1, K, S_)))
    states = np.asarray(states)
    is_leaf = np.asarray(tree.is_leaf) > 0
    observed = is_leaf & (rng.random(tree.n + 1) < cfg.observed_fraction)
    observed[np.asarray(tree.leaves)[0]] = True
    E = emission_matrix(cfg)
    symbols = np.array([rng.choice(S_, p=E[x]) for x in states])
    eye = np.eye(S_)
    return _arrays(tree, eye[states], np.where(observed[:, None], eye[symbols], 0.0), observed)


def save(path: Path, arrays: dict[str, np.ndarray]) -> None:
    io.write_npz(path, **arrays)


KEYS = ("parent", "length", "truth", "obs", "observed")


def load(path: Path, cfg=None, task: Task | None = None) -> dict[str, np.ndarray]:
    """A task's data; one line naming the file if it lacks an array, its arrays disagree on
    the number of nodes, or (given ``cfg`` and ``task``) its states have another dimension
    than the task's."""
    arrays = io.read_npz(path)
    missing = [k for k in KEYS if k not in arrays]
    if missing:
        raise UsageError(f"input file {path}: not an nbffg task's data (no {', '.join(missing)})")
    n = arrays["parent"].shape[0]
    if any(arrays[k].shape[:1] != (n,) for k in KEYS) or arrays["obs"].ndim != 2:
        raise UsageError(f"input file {path}: its arrays {', '.join(KEYS)} do not all hold one "
                         f"row per node ({n})")
    if task is not None and arrays["obs"].shape[1] != state_dim(cfg, task):
        raise UsageError(f"input file {path}: states of dimension {arrays['obs'].shape[1]}; "
                         f"task {task.name} has {state_dim(cfg, task)} (data from another config)")
    return arrays
