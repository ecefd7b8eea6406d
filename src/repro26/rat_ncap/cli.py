"""Stages of ``repro26 rat_ncap``: speed, train, evaluate, figures, claims."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class ESConfig:
    lr: float = 0.03
    sigma0: float = 0.1
    sigma_lr: float = 0.05
    sigma_min: float = 0.01
    sigma_max: float = 0.5
    weight_decay: float = 0.001
    patience: int = 10


@dataclasses.dataclass(frozen=True)
class RewardConfig:
    w_track: float = 1.0
    w_up: float = 0.5
    w_energy: float = 0.1
    sigma_v: float = 0.1
    reset_noise: float = 0.05


@dataclasses.dataclass(frozen=True)
class Config:
    """Settings of the method (sizes per scale in config/methods/rat_ncap.yaml)."""

    seeds: tuple[int, ...] = (0, 1, 2)
    variants: tuple[str, ...] = ("ncap-torque-refined", "ncap-muscle-refined", "ncap-ep-refined",
                                 "ncapfree-torque-refined", "mlp-torque-refined",
                                 "mlpeq-torque-refined", "ncap-torque-openai", "ncap-torque-cma")
    main_variant: str = "ncap-torque-refined"
    mlp_variant: str = "mlp-torque-refined"
    rodent_variants: tuple[str, ...] = ("ncap-torque-refined", "ncap-ep-refined")
    rodent_s: float = 4.0
    timestep: float = 0.004
    episode_s: float = 2.0
    train_speeds: tuple[float, ...] = (0.1, 0.2, 0.3)
    eval_speeds: tuple[float, ...] = (0.1, 0.2, 0.3)
    eval_s: float = 4.0
    pop_size: int = 32
    generations: int = 40
    chunk: int = 5
    tau: float = 0.025
    tau_adapt: float = 0.1
    mlp_hidden: tuple[int, ...] = (128, 128)
    success_tolerance: float = 0.5
    bench_batch: int = 64
    bench_steps: int = 250
    es: ESConfig = ESConfig()
    reward: RewardConfig = RewardConfig()


def _check(cfg: Config) -> None:
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
    if cfg.pop_size < 4 or cfg.pop_size % 2:
        raise ConfigError(f"pop_size: must be an even integer >= 4, got {cfg.pop_size}")
    if len(cfg.eval_speeds) < 1 or min(cfg.eval_speeds + cfg.train_speeds) <= 0:
        raise ConfigError("eval_speeds/train_speeds: need positive speeds (m/s)")
    if cfg.eval_s <= 1.5:
        raise ConfigError(f"eval_s: must exceed the 1 s transient plus a stride, got {cfg.eval_s}")


def _history_path(out):
    return out.with_suffix(".csv")


def stage_speed(run) -> None:
    """Env-steps/s of the MJX body (vmapped; with its compile time), of CPU MuJoCo on it and,
    when the optional extra dm-control is installed, of the full rodent standing on a floor."""
    from repro26.core.io import write_table
    from repro26.rat_ncap import body, evaluate, rodent

    cfg = run.cfg
    env = body.make_env(cfg.timestep)
    rows = [evaluate.env_speed(env, cfg.bench_batch, cfg.bench_steps)]
    rows.append({"body": "rat_v2_analogue (CPU MuJoCo, 1 env)", "batch": 1, "steps": 2000,
                 "env_steps_per_s": evaluate.cpu_speed(body.mj_model(cfg.timestep), 2000)})
    if rodent.dm_control_available():
        rows.append({"body": "dm_control rodent on a floor (CPU MuJoCo, 1 env)", "batch": 1, "steps": 2000,
                     "env_steps_per_s": evaluate.cpu_speed(rodent.rodent_model(), 2000)})
    else:
        print("rat_ncap speed: full rodent skipped (optional extra: pip install dm-control)")
    write_table(run.out, rows, run.meta(total_mass_kg=body.total_mass(cfg.timestep)))


def stage_train(run) -> None:
    """One (variant, seed): ES training; writes params (JSON) and the learning curve (CSV)."""
    from repro26.core.config import UsageError
    from repro26.core.io import write_json, write_table

    _check(run.cfg)
    if run.variant not in run.cfg.variants or run.seed is None:
        raise UsageError(f"--variant must be one of {', '.join(run.cfg.variants)} and --seed given")
    from repro26.rat_ncap.train import train

    ckpt = run.out.with_name(run.out.name + ".ckpt")
    params, hist, policy = train(run.cfg, run.variant, run.seed, ckpt, run.progress)
    meta = run.meta(num_params=int(params.size))
    rows = {"generation": list(range(1, len(hist["loss"]) + 1)), **{k: v for k, v in hist.items() if k != "loss"}}
    write_table(_history_path(run.out), rows, meta)
    write_json(run.out, {"variant": run.variant, "seed": run.seed, "num_params": int(params.size),
                         "params": params, "final_center_fitness": float(hist["center_fitness"][-1]),
                         "meta": meta})
    for path in (ckpt, ckpt.with_name(ckpt.name + ".history.npz")):
        path.unlink(missing_ok=True)


def stage_evaluate(run) -> None:
    """One variant, all seeds: rewards, success, gait statistics (and ablations for NCAP)."""
    import jax
    import numpy as np

    from repro26.core.io import read_json, write_table
    from repro26.rat_ncap import body, evaluate
    from repro26.rat_ncap.train import build_policy, parse_variant, reward_spec

    cfg = run.cfg
    _check(cfg)
    variant = parse_variant(run.variant)
    runs = [read_json(run.input(f"{run.variant}/seed{s}.json")) for s in cfg.seeds]
    params = np.stack([np.asarray(r["params"], np.float32) for r in runs])
    env = body.make_env(cfg.timestep)
    policy = build_policy(variant, cfg)
    rows = evaluate.evaluate_variant(policy, env, params, cfg.seeds, cfg.eval_speeds, cfg,
                                     reward_spec(cfg), jax.random.PRNGKey(12345))
    for row in rows:
        row.update(variant=run.variant, num_params=int(params.shape[1]))
    write_table(run.out, rows, run.meta())


def stage_rodent(run) -> None:
    """Learned NCAP circuits driving dm_control's full rodent (CPU MuJoCo), no retraining.

    Without the optional extra ``dm-control`` the table holds one row saying so (the default
    install does not include it)."""
    import jax
    import numpy as np

    from repro26.core.io import read_json, write_table
    from repro26.rat_ncap import rodent
    from repro26.rat_ncap.train import build_policy, parse_variant

    cfg = run.cfg
    _check(cfg)
    if not rodent.dm_control_available():
        write_table(run.out, [{"variant": "none", "seed": -1, "v_cmd": float("nan"),
                               "status": "dm-control not installed (pip install dm-control)"}], run.meta())
        return
    m = rodent.rodent_model()
    rows = []
    hold = rodent.run_transfer(None, np.zeros((1, 1)), (), cfg.rodent_s, cfg.timestep, jax.random.PRNGKey(0))
    for r in hold:
        del r["params_row"]
    rows += [{"variant": "hold", "seed": -1, "status": "ok", **r} for r in hold]
    for name in cfg.rodent_variants:
        runs = [read_json(run.input(f"{name}/seed{s}.json")) for s in cfg.seeds]
        params = np.stack([np.asarray(r["params"], np.float32) for r in runs])
        policy = build_policy(parse_variant(name), cfg)
        out = rodent.run_transfer(policy, params, cfg.eval_speeds, cfg.rodent_s, cfg.timestep,
                                  jax.random.PRNGKey(12345))
        rows += [{"variant": name, "seed": cfg.seeds[r.pop("params_row")], "status": "ok", **r} for r in out]
    write_table(run.out, rows, run.meta(rodent_nq=int(m.nq), rodent_nu=int(m.nu),
                                        rodent_mass_kg=float(np.sum(m.body_mass))))


def _figure(name):
    def stage(run) -> None:
        from repro26.rat_ncap import figures

        getattr(figures, name)(run)

    return stage


def stage_claims(run) -> None:
    from repro26.rat_ncap.claims import write

    _check(run.cfg)
    write(run)


STAGES = {
    "speed": stage_speed,
    "train": stage_train,
    "evaluate": stage_evaluate,
    "figure_learning_curves": _figure("learning_curves"),
    "figure_gait_vs_speed": _figure("gait_vs_speed"),
    "figure_interfaces": _figure("interfaces"),
    "figure_ablations": _figure("ablations"),
    "figure_params_vs_reward": _figure("params_vs_reward"),
    "rodent": stage_rodent,
    "figure_rodent_transfer": _figure("rodent_transfer"),
    "claims": stage_claims,
}
