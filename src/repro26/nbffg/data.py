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

import equinox as eqx
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


def _draw_tree(cfg, task: Task, seed: int) -> tuple[np.random.Generator, S.Tree]:
    """The seed's generator (task-specific stream) and its tree (random trees draw from it)."""
    rng = np.random.default_rng([seed, zlib.crc32(task.name.encode())])
    if task.tree == "balanced":
        parent, length = balanced_tree(task.leaves, cfg.tree_height)
    else:
        parent, length = random_tree(rng, task.leaves, cfg.tree_height)
    return rng, S.make_tree(parent, length)


@eqx.filter_jit
def _forward(dyn, m: int, guide: S.Guide, trees: S.Tree, z, noise):
    """Unguided forward pass of every seed's tree at once (``jax.vmap`` over the seed axis of
    ``trees``, ``z`` and ``noise``; the zero guide is shared)."""
    return eqx.filter_vmap(lambda tr, z0, e: S.forward_tree(dyn, dyn.proxy(), M.ZeroResidual(m),
                                                            tr, guide, z0, e))(trees, z, noise)


@eqx.filter_jit
def _ctmc_forward(dyn: M.SeasonalCTMC, num_steps: int, trees: S.Tree, z, noise):
    """Unguided chain on every seed's tree at once (root from the prior)."""
    def one(tree, z0, e):
        guide = S.ctmc_naive_guide(tree, dyn, num_steps)
        return S.ctmc_forward_tree(guide, M.ZeroCorrection(dyn.states), tree, z0, e)[0]

    return eqx.filter_vmap(one)(trees, z, noise)


def generate(cfg, task: Task, seeds) -> list[dict[str, np.ndarray]]:
    """Tree, true node states and noisy leaf observations of one task, one dict per seed.

    Each seed draws its tree, its simulation key and its observation noise from its own
    generator (``[seed, crc32(task)]``), so a seed's data do not depend on the other seeds; the
    simulations of all seeds run as one batched program (trees padded to a common shape,
    :func:`solvers.pad_tree`)."""
    rngs, trees = zip(*(_draw_tree(cfg, task, seed) for seed in seeds))
    shape = S.common_shape(trees)
    batch = S.stack([S.pad_tree(t, *shape) for t in trees])
    K = 4 * cfg.steps_per_edge
    n1 = trees[0].n + 1
    d = state_dim(cfg, task)
    m = d if task.dynamics == "ctmc" else noise_dim(cfg, task)
    z, noise = [], []
    for rng in rngs:
        k1, k2 = jax.random.split(jax.random.key(int(rng.integers(2**31))))
        z.append(jax.random.normal(k1, (d,)))
        noise.append(jax.random.normal(k2, (n1, K, m)))
    z, noise = jnp.stack(z), jnp.stack(noise)
    if task.dynamics == "ctmc":
        states = np.asarray(_ctmc_forward(make_ctmc(cfg), K, batch, z, noise))
        return [_observe_ctmc(cfg, tree, rng, x) for tree, rng, x in zip(trees, rngs, states)]
    dyn, m0, P0 = make_dynamics(cfg, task)
    guide = S.zero_guide(trees[0], d, K, m0, P0)
    xs = np.asarray(_forward(dyn, m, guide, batch, z, noise)[0])
    return [_observe(cfg, task, tree, rng, x) for tree, rng, x in zip(trees, rngs, xs)]


def _observed(cfg, tree: S.Tree, rng: np.random.Generator) -> np.ndarray:
    """Which nodes are observed: leaves, each with probability ``observed_fraction`` (the first
    leaf always)."""
    is_leaf = np.asarray(tree.is_leaf) > 0
    observed = is_leaf & (rng.random(tree.n + 1) < cfg.observed_fraction)
    observed[np.asarray(tree.leaves)[0]] = True
    return observed


def _observe(cfg, task: Task, tree: S.Tree, rng: np.random.Generator, xs: np.ndarray):
    observed = _observed(cfg, tree, rng)
    obs = np.where(observed[:, None], xs + np.sqrt(obs_var(cfg, task)) * rng.normal(size=xs.shape), 0)
    return _arrays(tree, xs, obs, observed)


def _arrays(tree: S.Tree, xs, obs, observed) -> dict[str, np.ndarray]:
    rebuilt_parent = np.asarray(tree.parent)[: tree.n].copy()
    rebuilt_parent[0] = -1
    return {"parent": rebuilt_parent, "length": np.asarray(tree.length)[: tree.n],
            "truth": xs[: tree.n], "obs": obs[: tree.n], "observed": observed[: tree.n].astype(float)}


def _observe_ctmc(cfg, tree: S.Tree, rng: np.random.Generator, states: np.ndarray):
    """Noisy symbols at the observed leaves of the simulated chain (states one-hot)."""
    S_ = cfg.ctmc.states
    observed = _observed(cfg, tree, rng)
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
