"""Play the bandit game: learners against adversaries, rounds in ``lax.scan``, seeds ``vmap``ped.

One round (per seed): the learner forms p_t, the adversary fixes f_t (the adaptive one looks at
p_t, a function of the history), the learner draws x_t ~ p_t, observes y_t = f_t(x_t) + σξ_t
and updates. The regret tracked is the expected regret against the best fixed arm in hindsight, given the history:
R_t = max_x Σ_{s≤t} f_s(x) − Σ_{s≤t} ⟨p_s, f_s⟩.

The rounds go through :func:`repro26.core.train.run_loop` (chunked scan, NaN check, progress,
checkpoint/resume). The key of round t for seed s is fold_in(fold_in(key, t), s): a seed's
game does not depend on which other seeds share the job.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from repro26.core.train import run_loop
from repro26.kernel_bandits import model, solvers
from repro26.kernel_bandits.data import Problem, make_adversary

#: learners of the scaling study; Nyström variants are named nystrom_<sampler>_m<m>
ALGORITHMS: tuple[str, ...] = ("exp_weights", "exp_weights_tuned", "exp3", "gp_ucb", "gp_ts", "uniform")
SAMPLERS: tuple[str, ...] = ("uniform", "leverage")
# Independent key streams derived from each seed: adversary, Nyström inducing arms, play.
_ADVERSARY, _INDUCING, _PLAY = 1, 2, 3


def nystrom_name(sampler: str, m: int) -> str:
    return f"nystrom_{sampler}_m{m}"


def parse_algorithm(name: str) -> tuple[str, str | None, int | None]:
    """``exp_weights`` -> (exp_weights, None, None); ``nystrom_leverage_m64`` -> (nystrom, leverage, 64)."""
    if name in ALGORITHMS:
        return name, None, None
    parts = name.split("_")
    if len(parts) == 3 and parts[0] == "nystrom" and parts[1] in SAMPLERS and parts[2][:1] == "m" \
            and parts[2][1:].isdigit() and int(parts[2][1:]) > 0:
        return "nystrom", parts[1], int(parts[2][1:])
    raise ValueError(f"algorithm must be one of {', '.join(ALGORITHMS)} or nystrom_<uniform|leverage>_m<m>, "
                     f"got {name!r}")


def _stack(tree: Any, size: int) -> Any:
    """Repeat every array leaf of ``tree`` ``size`` times along a new leading (seed) axis."""
    return jax.tree.map(lambda a: jnp.broadcast_to(a, (size, *jnp.shape(a))) if eqx.is_array(a) else a, tree)


def _exp_weights(features, n_arms: int, horizon: int, fw_iters: int, eta_scale) -> model.ExpWeights:
    lam = jnp.asarray(1.0 / horizon, features.dtype)
    design, g_design, _ = solvers.exploration_design(features, lam, fw_iters)
    eta, gamma = solvers.exp_weights_rates(n_arms, horizon, g_design, eta_scale)
    return model.ExpWeights(features, design, eta, gamma, lam)


def build_learners(algorithm: str, problem: Problem, horizon: int, seeds, cfg, eta_scale=1.0) -> Any:
    """The learner for every seed, stacked along axis 0 (``cfg``: the method's Config).

    exp_weights*: λ = 1/T, Frank–Wolfe design on the exact (or Nyström) features, theory rates
    (times ``eta_scale`` for the tuned variant). Nyström inducing arms depend on the seed.
    """
    base, sampler, m = parse_algorithm(algorithm)
    n = problem.n_arms
    size = len(seeds)
    lcfg = cfg.learner
    if base == "nystrom":
        if m > n:
            raise ValueError(f"{algorithm}: m = {m} exceeds the number of arms {n}")
        lam = 1.0 / horizon

        def one(seed):
            key = jax.random.fold_in(jax.random.key(seed), _INDUCING)
            idx = solvers.inducing_points(key, problem.gram, m, sampler, lam)
            return _exp_weights(model.nystrom_features(problem.gram, idx), n, horizon, lcfg.fw_iters,
                                jnp.asarray(eta_scale, jnp.float32))

        return eqx.filter_jit(eqx.filter_vmap(one))(jnp.asarray(seeds))
    if base in ("exp_weights", "exp_weights_tuned"):
        learner = eqx.filter_jit(_exp_weights)(problem.features, n, horizon, lcfg.fw_iters,
                                               jnp.asarray(eta_scale, jnp.float32))
    elif base == "exp3":
        learner = model.Exp3(n, jnp.asarray(solvers.exp3_rate(n, horizon), jnp.float32))
    elif base == "gp_ucb":
        learner = model.GPUCB(problem.features, jnp.asarray(lcfg.gp_noise, jnp.float32), lcfg.gp_delta)
    elif base == "gp_ts":
        learner = model.GPTS(problem.features, jnp.asarray(lcfg.gp_noise, jnp.float32), lcfg.gp_ts_samples)
    else:
        learner = model.Uniform(n)
    return _stack(learner, size)


def build_adversaries(kind: str, problem: Problem, horizon: int, seeds, cfg) -> tuple[Any, np.ndarray]:
    """The adversary of every seed (stacked) and its RKHS-norm bound per seed."""

    def one(seed):
        key = jax.random.fold_in(jax.random.key(seed), _ADVERSARY)
        return make_adversary(kind, key, problem.arms, problem.kernel, cfg.adversary, horizon)

    adversaries, bounds = eqx.filter_jit(eqx.filter_vmap(one))(jnp.asarray(seeds))
    return adversaries, np.asarray(bounds)


class GameState(eqx.Module):
    learner: Any
    total: jax.Array  # Σ_s f_s on every arm
    gained: jax.Array  # Σ_s ⟨p_s, f_s⟩
    t: jax.Array


def _round(learner, adversary, state: GameState, key) -> tuple[GameState, jax.Array]:
    k_policy, k_arm, k_noise = jax.random.split(key, 3)
    p = learner.policy(state.learner, k_policy)
    f = adversary.rewards(state.t, p)
    x = jax.random.categorical(k_arm, jnp.log(p))
    y = f[x] + adversary.noise * jax.random.normal(k_noise)
    total, gained = state.total + f, state.gained + p @ f
    new = GameState(learner.update(state.learner, p, x, y), total, gained, state.t + 1)
    return new, jnp.max(total) - gained


def init_game(learners, seeds, n_arms: int) -> GameState:
    def one(learner, seed):
        return GameState(learner.init(), jnp.zeros(n_arms), jnp.zeros(()), jnp.zeros((), jnp.int32))

    return eqx.filter_vmap(one)(learners, jnp.asarray(seeds))


def game_step(state: GameState, data, key):
    """One round for every seed (``run_loop`` step): data = (learners, adversaries, seed ids)."""
    learners, adversaries, ids = data
    keys = jax.vmap(lambda i: jax.random.fold_in(key, i))(ids)
    state, regret = eqx.filter_vmap(_round)(learners, adversaries, state, keys)
    return state, {"loss": regret}


def record_rounds(horizon: int, points: int = 16) -> np.ndarray:
    """Log-spaced rounds (1-based) at which the regret curve is kept; always ends at T."""
    grid = np.unique(np.round(np.logspace(0, math.log10(horizon), points)).astype(int))
    return np.union1d(grid, [horizon])


def play(learners, adversaries, seeds, n_arms: int, horizon: int, *, chunk_size: int,
         checkpoint: Path | None = None, checkpoint_every: int | None = None, progress: bool = False,
         desc: str = "play") -> np.ndarray:
    """Play ``horizon`` rounds for every seed; returns the regret curve R_t, shape (T, seeds)."""
    ids = jnp.asarray(seeds)
    state = init_game(learners, seeds, n_arms)
    _, history = run_loop(
        game_step, state, (learners, adversaries, ids), key=jax.random.key(_PLAY),
        num_steps=horizon, chunk_size=min(chunk_size, horizon), checkpoint_path=checkpoint,
        checkpoint_every=checkpoint_every, desc=desc, progress=progress,
    )
    return history["loss"]


def round_program(learners, adversaries, seeds, n_arms: int, rounds: int) -> Callable[[], Any]:
    """A compiled ``rounds``-round scan of the game, all seeds together, as a no-argument
    program for :func:`repro26.core.timing.interleaved_cpu_times`."""
    data = (learners, adversaries, jnp.asarray(seeds))

    @eqx.filter_jit
    def run(state, data):
        def body(s, t):
            s, metrics = game_step(s, data, jax.random.fold_in(jax.random.key(0), t))
            return s, metrics["loss"]

        return jax.lax.scan(body, state, jnp.arange(rounds))[1]

    state = init_game(learners, seeds, n_arms)
    return lambda: run(state, data)


def _concat(trees) -> Any:
    return jax.tree.map(lambda *leaves: jnp.concatenate(leaves), *trees)


def tune_eta_scale(problem: Problem, adversary: str, cfg, progress: bool = False) -> np.ndarray:
    """Final regret of exp_weights with η (and γ = η g*) scaled by each of ``tune_scales``.

    Runs on the held-out ``tune_seeds`` at ``tune_horizon``, all scales and seeds vmapped in one
    game; returns regret of shape (scales, tune_seeds). Used to pick the tuned variant's scale.
    """
    lcfg = cfg.learner
    seeds, horizon = list(lcfg.tune_seeds), lcfg.tune_horizon
    learners = _concat([build_learners("exp_weights", problem, horizon, seeds, cfg, scale)
                        for scale in lcfg.tune_scales])
    adversaries, _ = build_adversaries(adversary, problem, horizon, seeds, cfg)
    adversaries = _concat([adversaries] * len(lcfg.tune_scales))
    curve = play(learners, adversaries, seeds * len(lcfg.tune_scales), problem.n_arms, horizon,
                 chunk_size=cfg.chunk_size, progress=progress, desc=f"tune {adversary}")
    return np.asarray(curve[-1]).reshape(len(lcfg.tune_scales), len(seeds))
