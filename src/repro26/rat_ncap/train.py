"""ES training of a controller variant through ``repro26.core.train.run_loop``.

A *variant* is ``<controller>-<interface>-<es>``:

* controller: ``ncap`` (Rat NCAP, sign-constrained), ``ncapfree`` (NCAP without sign
  constraints), ``mlp`` (tanh MLP of ``mlp_hidden``), ``mlpeq`` (one-hidden-layer MLP with the
  hidden width that gives NCAP's parameter count);
* interface: ``torque``, ``muscle``, ``ep`` (see :mod:`repro26.rat_ncap.model`);
* es: ``refined`` (the refined ES), ``openai`` (OpenAI-ES), ``cma`` (diagonal CMA-ES).

One generation = ask ``pop_size`` candidates (the same for every controller, so that NCAP and
the MLPs get equal budgets: population, generations, episodes), evaluate each on every training speed (plus the
current mean, for the learning curve, and the refined ES's elite, re-evaluated on the same
episodes), tell. The ES state is the ``run_loop`` state, so a
killed job resumes from its checkpoint.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from repro26.core.config import ConfigError
from repro26.core.train import run_loop
from repro26.rat_ncap import body
from repro26.rat_ncap.es import DiagCMAES, OpenAIES, RefinedES, Strategy
from repro26.rat_ncap.losses import RewardSpec, population_fitness
from repro26.rat_ncap.model import (
    INTERFACES, MLPPolicy, RatNCAP, mlp_hidden_for, num_params, ravel_policy,
)

CONTROLLERS = ("ncap", "ncapfree", "mlp", "mlpeq")
STRATEGIES = ("refined", "openai", "cma")


@dataclasses.dataclass(frozen=True)
class Variant:
    controller: str
    interface: str
    es: str

    @property
    def name(self) -> str:
        return f"{self.controller}-{self.interface}-{self.es}"


def parse_variant(name: str) -> Variant:
    parts = name.split("-")
    if (len(parts) != 3 or parts[0] not in CONTROLLERS or parts[1] not in INTERFACES
            or parts[2] not in STRATEGIES):
        raise ConfigError(f"variant: {name!r} is not allowed; use <controller>-<interface>-<es> with "
                          f"controller in {CONTROLLERS}, interface in {INTERFACES}, es in {STRATEGIES}")
    return Variant(*parts)


def build_policy(variant: Variant, cfg: Any, key: jax.Array):
    """The variant's controller with its initial weights (NCAP's are fixed; the MLPs' drawn
    from ``key``)."""
    if variant.controller in ("ncap", "ncapfree"):
        return RatNCAP(variant.interface, variant.controller == "ncap", cfg.tau, cfg.tau_adapt)
    if variant.controller == "mlp":
        return MLPPolicy(tuple(cfg.mlp_hidden), variant.interface, key)
    n_ncap = num_params(RatNCAP(variant.interface, True, cfg.tau, cfg.tau_adapt))
    return MLPPolicy((mlp_hidden_for(n_ncap),), variant.interface, key)


def build_strategy(variant: Variant, policy, cfg: Any) -> Strategy:
    es = cfg.es
    pop_size = cfg.pop_size
    common = dict(pop_size=pop_size, lr=es.lr, sigma0=es.sigma0, sigma_lr=es.sigma_lr,
                  sigma_min=es.sigma_min, sigma_max=es.sigma_max, weight_decay=es.weight_decay)
    if variant.es == "openai":
        return OpenAIES(**common)
    if variant.es == "refined":
        return RefinedES(**common, groups=tuple(int(g) for g in policy.groups()), patience=es.patience)
    return DiagCMAES(pop_size=pop_size, sigma0=es.sigma0)


def reward_spec(cfg: Any) -> RewardSpec:
    return RewardSpec(**dataclasses.asdict(cfg.reward))


def make_step(policy, strategy: Strategy, env: body.Env, cfg: Any):
    """``step_fn(state, data, key)`` of one ES generation (``data`` unused); the candidates are
    flat weight vectors of ``policy`` (:func:`~repro26.rat_ncap.model.ravel_policy`)."""
    speeds = jnp.asarray(cfg.train_speeds, jnp.float32)
    n_steps = int(round(cfg.episode_s / env.dt))
    spec = reward_spec(cfg)

    def step(state, data, key):
        k_ask, k_eval = jax.random.split(key)
        x = strategy.ask(state, k_ask)
        n = x.shape[0]
        batch = jnp.concatenate([x, strategy.mean(state)[None], strategy.reevaluate(state)])
        fit = population_fitness(policy, env, batch, k_eval, speeds, n_steps, spec)
        new = strategy.tell(state, x, fit[:n], fit[n + 1:])
        return new, {"loss": -fit[n], "center_fitness": fit[n], "pop_mean": jnp.mean(fit[:n]),
                     "pop_max": jnp.max(fit[:n]), "sigma": strategy.sigma(state)}

    return step


def train(cfg: Any, variant_name: str, seed: int, checkpoint: Path | None = None,
          progress: bool = True) -> tuple[np.ndarray, dict[str, np.ndarray], Any]:
    """Train one variant with one seed; returns (final mean params, history, policy)."""
    variant = parse_variant(variant_name)
    env = body.make_env(cfg.timestep)
    key = jax.random.PRNGKey(seed)
    k_init, k_run = jax.random.split(key)
    policy = build_policy(variant, cfg, k_init)
    strategy = build_strategy(variant, policy, cfg)
    state = strategy.init(ravel_policy(policy)[0])
    step = make_step(policy, strategy, env, cfg)
    state, hist = run_loop(step, state, None, key=k_run, num_steps=cfg.generations,
                           chunk_size=cfg.chunk, checkpoint_path=checkpoint,
                           checkpoint_every=cfg.chunk if checkpoint is not None else None,
                           desc=f"{variant_name} seed{seed}", progress=progress)
    return np.asarray(strategy.mean(state)), hist, policy


__all__ = ["CONTROLLERS", "STRATEGIES", "Variant", "build_policy", "build_strategy",
           "make_step", "parse_variant", "train"]
