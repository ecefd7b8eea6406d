"""Stages of ``repro26 rat_ncap <stage>`` and the method's typed config.

speed; train (one job per variant and seed) -> evaluate (one job per variant, all seeds);
rodent (transfer to dm_control's full rodent); the figure stages (``figures.FIGURES``) and
claims (``claims.CLAIMS``) come from core.
"""

from __future__ import annotations

import dataclasses

from repro26.core.cli import Run
from repro26.core.config import Count, NonNegative, NonNegativeInt, Positive, UsageError
from repro26.core.method import stage


@dataclasses.dataclass(frozen=True)
class ESConfig:
    lr: Positive
    sigma0: Positive
    sigma_lr: Positive
    sigma_min: Positive
    sigma_max: Positive
    weight_decay: NonNegative
    patience: NonNegativeInt


@dataclasses.dataclass(frozen=True)
class RewardConfig:
    w_track: NonNegative
    w_energy: NonNegative
    track_tol: Positive
    reset_noise: NonNegative


@dataclasses.dataclass(frozen=True)
class Config:
    """Settings of the method; every value is in config/methods/rat_ncap.yaml (common and per
    scale), so no field has a default here."""

    seeds: tuple[int, ...]
    variants: tuple[str, ...]
    main_variant: str
    mlp_variant: str
    rodent_variants: tuple[str, ...]
    rodent_s: Positive
    timestep: Positive
    episode_s: Positive
    train_speeds: tuple[NonNegative, ...]
    eval_speeds: tuple[NonNegative, ...]
    eval_s: Positive
    fictive_s: Positive
    fictive_states: Count
    pop_size: Count
    generations: Count
    chunk: Count
    tau: Positive
    tau_adapt: Positive
    mlp_hidden: tuple[Count, ...]
    success_tolerance: Positive
    bench_batch: Count
    bench_steps: Count
    es: ESConfig
    reward: RewardConfig


def check(cfg: Config) -> None:
    """Semantic checks the types cannot express (one line naming the field)."""
    from repro26.core.config import ConfigError
    from repro26.rat_ncap.train import parse_variant

    for name in cfg.variants:
        parse_variant(name)
    for field in ("main_variant", "mlp_variant"):
        if getattr(cfg, field) not in cfg.variants:
            raise ConfigError(f"{field}: {getattr(cfg, field)!r} must be one of variants")
    for name in cfg.rodent_variants:
        if name not in cfg.variants or not name.startswith("ncap"):
            raise ConfigError(f"rodent_variants: {name!r} must be an NCAP variant listed in variants")
    if cfg.generations % cfg.chunk:
        raise ConfigError(f"generations: must be a multiple of chunk ({cfg.chunk}) so that one "
                          f"compiled chunk serves the whole run, got {cfg.generations}")
    if not cfg.mlp_hidden or len(set(cfg.mlp_hidden)) != 1:
        raise ConfigError(f"mlp_hidden: equal hidden widths (eqx.nn.MLP), got {list(cfg.mlp_hidden)}")
    if cfg.pop_size < 4 or cfg.pop_size % 2:
        raise ConfigError(f"pop_size: must be an even integer >= 4, got {cfg.pop_size}")
    if len(cfg.eval_speeds) < 1 or min(cfg.eval_speeds + cfg.train_speeds) <= 0:
        raise ConfigError("eval_speeds/train_speeds: need positive speeds (m/s)")
    if cfg.eval_s < 2.0:
        raise ConfigError(f"eval_s: must cover the 0.5 s transient plus the 1.5 s gait diagram, got {cfg.eval_s}")
    if cfg.fictive_states < 1:
        raise ConfigError(f"fictive_states: need at least one initial state, got {cfg.fictive_states}")
    if cfg.fictive_s < 3.0:
        raise ConfigError(f"fictive_s: must cover the 1 s transient plus a few bursts (>= 3 s), got {cfg.fictive_s}")


EVAL_KEY = 12345  # evaluation episodes (shared by every variant and baseline)
RANDOM_CIRCUIT_KEY = 1000  # random circuit of seed s: PRNGKey(RANDOM_CIRCUIT_KEY + s)


def _history_path(out):
    return out.with_suffix(".csv")


def contacts_path(out):
    """The paw-contact table written next to an evaluation table."""
    return out.with_name(out.stem + "_contacts.csv")


@stage()
def speed_stage(run: Run) -> None:
    """Env steps per CPU second of the MJX body (vmapped; with its compile time), of CPU MuJoCo
    on it and of dm_control's full rodent standing on a floor (CPU MuJoCo)."""
    from repro26.core.io import write_table
    from repro26.rat_ncap import body, evaluate, rodent

    cfg = run.cfg
    env = body.make_env(cfg.timestep)
    rows = [evaluate.env_speed(env, cfg.bench_batch, cfg.bench_steps)]
    rows.append({"body": "rat_v2_analogue (CPU MuJoCo, 1 env)", "batch": 1, "steps": 2000,
                 "env_steps_per_s": evaluate.cpu_speed(body.mj_model(cfg.timestep), 2000)})
    rows.append({"body": "dm_control rodent on a floor (CPU MuJoCo, 1 env)", "batch": 1, "steps": 2000,
                 "env_steps_per_s": evaluate.cpu_speed(rodent.rodent_model(), 2000)})
    write_table(run.out, rows, run.meta(total_mass_kg=body.total_mass(cfg.timestep)))


def _variant(run: Run) -> str:
    """The stage's ``--variant variant=NAME``, one of the configured variants."""
    name = run.variant["variant"]
    if name not in run.cfg.variants:
        raise UsageError(f"--variant variant: {name!r} is not allowed; use one of "
                         f"{', '.join(run.cfg.variants)}")
    return name


@stage({"variant": str}, seed=True,
       reads=("timestep", "tau", "tau_adapt", "mlp_hidden", "pop_size", "es", "reward",
              "train_speeds", "episode_s", "generations", "chunk"))
def train_stage(run: Run) -> None:
    """One (variant, seed): ES training; writes params (JSON) and the learning curve (CSV).

    Any well-formed variant trains (not only the configured ones), so that adding a variant
    to ``variants``, or changing evaluation settings, does not rerun the training jobs."""
    from repro26.core.io import write_json, write_table
    from repro26.rat_ncap.train import parse_variant, train

    name = parse_variant(run.variant["variant"]).name
    ckpt = run.out.with_name(run.out.name + ".ckpt")
    params, hist, policy = train(run.cfg, name, run.seed, ckpt, run.progress)
    meta = run.meta(num_params=int(params.size))
    rows = {"generation": list(range(1, len(hist["loss"]) + 1)), **{k: v for k, v in hist.items() if k != "loss"}}
    write_table(_history_path(run.out), rows, meta)
    write_json(run.out, {"variant": name, "seed": run.seed, "num_params": int(params.size),
                         "params": params, "final_center_fitness": float(hist["center_fitness"][-1]),
                         "meta": meta})
    for path in (ckpt, ckpt.with_name(ckpt.name + ".history.npz")):
        path.unlink(missing_ok=True)


@stage({"variant": str})
def evaluate_stage(run: Run) -> None:
    """One variant, all seeds: rewards, success, gait statistics (and ablations for NCAP)."""
    import jax
    import numpy as np

    from repro26.core.io import read_json, write_table
    from repro26.rat_ncap import body, evaluate
    from repro26.rat_ncap.train import build_policy, parse_variant, reward_spec

    cfg = run.cfg
    name = _variant(run)
    variant = parse_variant(name)
    runs = [read_json(run.input(f"{name}/seed{s}.json")) for s in cfg.seeds]
    params = np.stack([np.asarray(r["params"], np.float32) for r in runs])
    env = body.make_env(cfg.timestep)
    policy = build_policy(variant, cfg, jax.random.PRNGKey(0))  # its weights: each row of params
    rows, contacts = evaluate.evaluate_variant(policy, env, params, cfg.seeds, cfg.eval_speeds, cfg,
                                               reward_spec(cfg), jax.random.PRNGKey(EVAL_KEY))
    for row in rows:
        row.update(variant=name, num_params=int(params.shape[1]))
    write_table(contacts_path(run.out), contacts, run.meta())
    write_table(run.out, rows, run.meta())


@stage()
def baselines_stage(run: Run) -> None:
    """The trivial controllers every table is read against, on the same episodes (keys) as
    every variant's evaluation: ``do-nothing`` (all motor commands 0), ``random-circuit``
    (NCAP torque with random magnitudes, :func:`~repro26.rat_ncap.model.random_theta`, one per
    seed) and ``initial-circuit`` (NCAP torque at its initial, untrained parameters)."""
    import jax
    import numpy as np

    from repro26.core.io import write_table
    from repro26.rat_ncap import body, evaluate
    from repro26.rat_ncap.model import DoNothing, RatNCAP, random_theta, ravel_policy
    from repro26.rat_ncap.train import reward_spec

    cfg = run.cfg
    env = body.make_env(cfg.timestep)
    n = len(cfg.seeds)
    seed_keys = jax.random.split(jax.random.PRNGKey(EVAL_KEY), n)
    rows, contacts = evaluate.evaluate_variant(DoNothing(), env, np.zeros((n, 0), np.float32), cfg.seeds,
                                               cfg.eval_speeds, cfg, reward_spec(cfg), None, ("intact",), seed_keys)
    for row in rows:
        row.update(condition="do-nothing", num_params=0)
    ncap = RatNCAP("torque", True, cfg.tau, cfg.tau_adapt)
    random_rows = [ravel_policy(RatNCAP("torque", True, cfg.tau, cfg.tau_adapt,
                                        random_theta(jax.random.PRNGKey(RANDOM_CIRCUIT_KEY + s))))[0]
                   for s in cfg.seeds]
    params = np.concatenate([np.stack(random_rows), np.tile(ravel_policy(ncap)[0], (n, 1))])
    more, _ = evaluate.evaluate_variant(ncap, env, params, list(cfg.seeds) * 2, cfg.eval_speeds, cfg,
                                        reward_spec(cfg), None, ("intact",), np.concatenate([seed_keys] * 2))
    for i, row in enumerate(more):
        row.update(condition="random-circuit" if i < len(more) // 2 else "initial-circuit",
                   num_params=int(params.shape[1]))
    for row in rows + more:
        row["variant"] = "baseline"
    write_table(contacts_path(run.out), contacts, run.meta())
    write_table(run.out, rows + more, run.meta())


@stage({"variant": str})
def fictive_stage(run: Run) -> None:
    """Fictive locomotion (circuit without body) of the main variant, initial and trained, for
    every ablation: lags, phase-locking and population rates per seed, initial state
    (``fictive_states`` of them; state 0 is the evaluation key's) and speed."""
    import jax
    import numpy as np

    from repro26.core.io import read_json, write_table
    from repro26.rat_ncap import evaluate
    from repro26.rat_ncap.model import ravel_policy
    from repro26.rat_ncap.train import build_policy, parse_variant

    cfg = run.cfg
    name = _variant(run)
    if not name.startswith("ncap"):
        raise UsageError(f"--variant variant: fictive locomotion needs an NCAP variant, got {name!r}")
    policy = build_policy(parse_variant(name), cfg, jax.random.PRNGKey(0))
    trained = np.stack([np.asarray(read_json(run.input(f"{name}/seed{s}.json"))["params"], np.float32)
                        for s in cfg.seeds])
    initial = np.tile(np.asarray(ravel_policy(policy)[0]), (len(cfg.seeds), 1))
    key = jax.random.PRNGKey(EVAL_KEY)
    rows = []
    for label, params in (("initial", initial), ("trained", trained)):
        rows += evaluate.fictive_rows(policy, params, cfg.seeds, cfg.eval_speeds, cfg.fictive_s, cfg.timestep,
                                      key, label, n_states=cfg.fictive_states)
    for row in rows:
        row["variant"] = name
    write_table(run.out, rows, run.meta())


@stage()
def rodent_stage(run: Run) -> None:
    """Learned NCAP circuits driving dm_control's full rodent (CPU MuJoCo), no retraining."""
    import jax
    import numpy as np

    from repro26.core.io import read_json, write_table
    from repro26.rat_ncap import rodent
    from repro26.rat_ncap.train import build_policy, parse_variant

    cfg = run.cfg
    m = rodent.rodent_model()
    rows = []
    hold = rodent.run_transfer(None, np.zeros((1, 1)), (), cfg.rodent_s, cfg.timestep, jax.random.PRNGKey(0))
    for r in hold:
        del r["params_row"]
    rows += [{"variant": "hold", "seed": -1, **r} for r in hold]
    for name in cfg.rodent_variants:
        runs = [read_json(run.input(f"{name}/seed{s}.json")) for s in cfg.seeds]
        params = np.stack([np.asarray(r["params"], np.float32) for r in runs])
        policy = build_policy(parse_variant(name), cfg, jax.random.PRNGKey(0))  # weights: params rows
        out = rodent.run_transfer(policy, params, cfg.eval_speeds, cfg.rodent_s, cfg.timestep,
                                  jax.random.PRNGKey(12345))
        rows += [{"variant": name, "seed": cfg.seeds[r.pop("params_row")], **r} for r in out]
    write_table(run.out, rows, run.meta(rodent_nq=int(m.nq), rodent_nu=int(m.nu),
                                        rodent_mass_kg=float(np.sum(m.body_mass))))


STAGES = {
    "speed": speed_stage,
    "train": train_stage,
    "evaluate": evaluate_stage,
    "baselines": baselines_stage,
    "fictive": fictive_stage,
    "rodent": rodent_stage,
}
