"""Stages of ``repro26 nestedvla <stage>`` and the method's typed config.

data (expert demonstrations of every training task) -> base (BC pretraining on all tasks,
seeds vmapped) -> adapters (one LoRA per training task, tasks x seeds vmapped) -> joint
(multi-task adapter) and nested (the nested hypernetwork) -> evaluate (merging baselines and
rollouts of every method); figures (``figures.FIGURES``) and claims (``claims.CLAIMS``) come
from core.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

from repro26.core import io
from repro26.core.cli import Run
from repro26.core.config import (
    ConfigError, Count, NonNegative, NonNegativeInt, Positive, Probability,
)
from repro26.core.method import stage


SKILL_TRAINERS = ("bc", "ppo")


@dataclasses.dataclass(frozen=True)
class Config:
    seeds: tuple[int, ...]
    task_seed: NonNegativeInt
    n_tasks: Count  # training tasks per suite (half reach, half place)
    n_heldout: Count  # held-out tasks per suite (task tokens never trained on)
    n_pretrain: Count  # the base policy's pretraining tasks per suite (another draw)
    horizon: Count
    demo_episodes: Count  # expert episodes per task
    demo_noise: NonNegative  # action noise of the demonstrating expert (labels stay clean)
    eval_episodes: Count  # random starts per task and method
    width: Count  # transformer width (model dimension)
    depth: Count  # transformer blocks
    heads: Count  # attention heads
    rank: Count
    code_dim: Count  # layer code of the inner hypernetwork
    inner_width: Count
    outer_width: Count
    base_steps: Count
    base_lr: Positive
    adapter_steps: Count
    adapter_lr: Positive
    skill_trainer: str  # how the per-task adapters are learned: "bc" or "ppo"
    ppo_iterations: Count  # PPO: iterations (collect, then epochs of updates)
    ppo_envs: Count  # PPO: episodes collected per task and iteration
    ppo_epochs: Count  # PPO: full-batch Adam steps per iteration
    ppo_lr: Positive
    ppo_clip: Positive  # PPO: ratio clip epsilon
    ppo_gamma: Probability  # PPO: discount
    ppo_lambda: Probability  # PPO: GAE lambda
    ppo_std: Positive  # PPO: initial action standard deviation
    nested_steps: Count  # also the joint adapter's steps
    reconstruction_weight: NonNegative
    per_task: Count  # samples per task per step
    chunk_size: Count
    sum_lambdas: tuple[Positive, ...]  # task arithmetic and DARE scaling grid
    ties_lambdas: tuple[Positive, ...]
    ties_keep: Probability
    dare_drop: Probability
    mt10_horizon: Count  # MetaWorld MT10 (optional rule nestedvla_mt10): steps per episode
    mt10_demo_episodes: Count  # MT10: scripted episodes per task
    mt10_episodes: Count  # MT10: evaluation (and lambda selection) episodes per task and method
    margin: Probability  # non-inferiority margin to per-task fine-tuning (success fraction)


def check(cfg: Config) -> None:
    if len(cfg.seeds) < 2:
        raise ConfigError(f"nestedvla.seeds: at least 2 seeds for a CI, got {list(cfg.seeds)}")
    if cfg.n_tasks < 2 or cfg.n_heldout < 1:
        raise ConfigError("nestedvla.n_tasks: at least 2 training tasks and 1 held-out task per "
                          "suite")
    if not 0 < cfg.ties_keep <= 1 or not 0 <= cfg.dare_drop < 1:
        raise ConfigError("nestedvla.ties_keep must lie in (0, 1] and dare_drop in [0, 1)")
    if not cfg.sum_lambdas or not cfg.ties_lambdas:
        raise ConfigError("nestedvla.sum_lambdas, ties_lambdas: at least one value each")
    if cfg.skill_trainer not in SKILL_TRAINERS:
        raise ConfigError(f"nestedvla.skill_trainer: one of {list(SKILL_TRAINERS)}, got "
                          f"{cfg.skill_trainer!r}")
    if not 0 < cfg.ppo_clip < 1 or not 0 < cfg.ppo_gamma <= 1 or not 0 <= cfg.ppo_lambda <= 1:
        raise ConfigError("nestedvla.ppo_clip must lie in (0, 1), ppo_gamma in (0, 1], "
                          "ppo_lambda in [0, 1]")
    if not 0 < cfg.margin < 1:
        raise ConfigError(f"nestedvla.margin: must lie in (0, 1), got {cfg.margin}")


def _demos(run: Run, prefix: str = ""):
    data = io.read_npz(run.input("demos.npz"))
    return tuple(data[prefix + k] for k in ("obs", "acts", "emb", "mask"))


def _bases(run: Run):
    from repro26.nestedvla import train

    return io.load_model(run.input("base.eqx"), train.init_bases(run.cfg, run.cfg.seeds))


def _adapters(run: Run, bases, n_tasks: int):
    from repro26.nestedvla import train

    return io.load_model(run.input("adapters.eqx"),
                 train.init_adapters(run.cfg, run.cfg.seeds, train._shapes(bases), n_tasks))


def _save(run: Run, name: str, model, loss) -> None:
    from repro26.nestedvla import train

    out = Path(run.out)
    io.save_checkpoint(out, model, 0, run.job_tag)
    io.write_table(out.with_suffix(".loss.csv"), train.loss_table(name, run.cfg.seeds, loss),
                   run.meta())


def _ckpt(run: Run) -> Path:
    return Path(run.out).with_name(Path(run.out).name + ".ckpt")


@stage()
def data_stage(run: Run) -> None:
    """Tasks of the three suites and noisy-expert demonstrations of every pretraining task and
    every skill (training) task -> demos.npz (``pretrain_*`` and skill arrays), tasks.csv."""
    import jax

    from repro26.nestedvla import evaluate, suites

    cfg = run.cfg
    arrays: dict[str, list] = {}
    rows = []
    skills = evaluate.suite_tasks(cfg)
    pretrain = evaluate.pretrain_tasks(cfg)
    for i, suite in enumerate(suites.SUITES):
        train, held = skills[suite]
        both = suites.concat(pretrain[suite], train)  # one compiled rollout per suite
        o, a, ok = suites.demonstrations(suite, both, jax.random.PRNGKey(100 * cfg.task_seed + i),
                                         cfg.demo_episodes, cfg.horizon, cfg.demo_noise)
        o, a, ok = np.asarray(o), np.asarray(a), np.asarray(ok).mean(1)
        mask = np.arange(suites.ACT_DIM) < suites.ACT_USED[suite]
        parts = (("pretrain", pretrain[suite], "pretrain_", slice(0, cfg.n_pretrain)),
                 ("train", train, "", slice(cfg.n_pretrain, None)))
        for split, tasks, prefix, part in parts:
            for key, value in (("obs", o[part]), ("acts", a[part]), ("emb", tasks.embedding()),
                               ("mask", np.tile(mask, (len(tasks), 1)).astype(np.float32))):
                arrays.setdefault(prefix + key, []).append(value)
            rows += _task_rows(suite, split, tasks, 0, ok[part])
        rows += _task_rows(suite, "heldout", held, len(train), np.full(len(held), np.nan))
    out = Path(run.out)
    io.write_npz(out / "demos.npz", **{k: np.concatenate(v) for k, v in arrays.items()})
    io.write_table(out / "tasks.csv", rows, run.meta())


def _task_rows(suite: str, split: str, tasks, offset: int, demo_success) -> list[dict]:
    from repro26.nestedvla.suites import KINDS

    return [{"suite": suite, "task": offset + t, "split": split, "kind": KINDS[int(tasks.kind[t])],
             "goal_x": float(tasks.goal[t, 0]), "goal_y": float(tasks.goal[t, 1]),
             "obj_x": float(tasks.obj[t, 0]), "obj_y": float(tasks.obj[t, 1]),
             "demo_success": float(demo_success[t])} for t in range(len(tasks))]


@stage()
def base_stage(run: Run) -> None:
    """Pretrain the base policy by BC on the pretraining tasks of all suites (seeds vmapped)."""
    from repro26.nestedvla import train

    model, loss = train.train_base(run.cfg, run.cfg.seeds, *_demos(run, "pretrain_"), _ckpt(run),
                                   run.progress)
    _save(run, "base", model, loss)


@stage()
def adapters_stage(run: Run) -> None:
    """Per-task LoRA adapters on the frozen base, tasks x seeds vmapped: behaviour cloning on
    the task's demonstrations (``skill_trainer: bc``, loss rows) or PPO on the task's reward
    (``skill_trainer: ppo``, rows of the mean success of the collected episodes)."""
    from repro26.nestedvla import evaluate, train

    cfg = run.cfg
    if cfg.skill_trainer == "ppo":
        tasks = [(suite, train_tasks) for suite, (train_tasks, _) in
                 evaluate.suite_tasks(cfg).items()]
        model, curve = train.train_adapters_ppo(cfg, cfg.seeds, _bases(run), tasks, _ckpt(run),
                                                run.progress)
        _save(run, "adapters_ppo_success", model, curve)
        return
    model, loss = train.train_adapters(cfg, cfg.seeds, _bases(run), *_demos(run), _ckpt(run),
                                       run.progress)
    _save(run, "adapters", model, loss)


@stage()
def joint_stage(run: Run) -> None:
    """Multi-task joint training: one LoRA adapter on all training tasks (seeds vmapped)."""
    from repro26.nestedvla import train

    model, loss = train.train_joint(run.cfg, run.cfg.seeds, _bases(run), *_demos(run),
                                    _ckpt(run), run.progress)
    _save(run, "joint", model, loss)


@stage()
def nested_stage(run: Run) -> None:
    """NestedVLA: the nested hypernetwork fitted to the per-task adapters and the per-task BC
    loss (seeds vmapped)."""
    from repro26.nestedvla import train

    demos = _demos(run)
    bases = _bases(run)
    adapters = _adapters(run, bases, demos[0].shape[0])
    model, loss = train.train_nested(run.cfg, run.cfg.seeds, bases, adapters, *demos,
                                     _ckpt(run), run.progress)
    _save(run, "nested", model, loss)


@stage()
def evaluate_stage(run: Run) -> None:
    """Merge the adapters (task arithmetic, TIES, DARE) and roll out every method on every task
    -> success.csv (per task), success_by_suite.csv (training tasks), heldout_by_suite.csv,
    generated_adapters.csv (token distance and generated-adapter norm per task)."""
    import equinox as eqx
    import jax

    from repro26.nestedvla import evaluate, train

    cfg = run.cfg
    tasks = evaluate.suite_tasks(cfg)
    n_total = cfg.n_tasks * len(tasks)
    bases = _bases(run)
    shapes = train._shapes(bases)
    adapters = _adapters(run, bases, n_total)
    joint = io.load_model(run.input("joint.eqx"), train.init_joint(cfg, cfg.seeds, shapes))
    hyper = io.load_model(run.input("nested.eqx"), train.init_nested(cfg, cfg.seeds, shapes))
    adapter_deltas = eqx.filter_vmap(eqx.filter_vmap(lambda a: a.deltas()))(adapters)
    joint_deltas = eqx.filter_vmap(lambda a: a.deltas())(joint)
    rows, diagnostics = [], []
    for i, (suite, (train_tasks, held)) in enumerate(tasks.items()):
        r, d = evaluate.evaluate_suite(cfg, suite, train_tasks, held, i * cfg.n_tasks, bases,
                                       adapter_deltas, joint_deltas, hyper,
                                       jax.random.PRNGKey(10_000 + i))
        rows, diagnostics = rows + r, diagnostics + d
    out = Path(run.out)
    io.write_table(out / "success.csv", rows, run.meta())
    io.write_table(out / "generated_adapters.csv", diagnostics, run.meta())
    for split, name in (("train", "success_by_suite"), ("heldout", "heldout_by_suite")):
        table = evaluate.by_suite(rows, split)
        io.write_table(out / f"{name}.csv", table, run.meta())
        print(split, json.dumps(evaluate.describe(table)))


@stage()
def mt10_stage(run: Run) -> None:
    """MetaWorld MT10 (needs the ``metaworld`` package: its own environment, rule
    ``nestedvla_mt10``): scripted demonstrations, the transformer base by BC on the ten tasks,
    per-task adapters, joint adapter, nested hypernetwork, merging baselines, MuJoCo rollouts
    of every method -> mt10_success.csv (per task) and mt10_by_method.csv (mean over tasks)."""
    import equinox as eqx

    from repro26.nestedvla import evaluate, mt10, train

    cfg = run.cfg
    bench = mt10.MT10(cfg.task_seed)
    obs, acts, expert_rate = mt10.demonstrations(bench, cfg.mt10_demo_episodes, cfg.mt10_horizon,
                                                 cfg.demo_noise, cfg.task_seed)
    emb, mask = bench.embedding(), np.ones((mt10.N_TASKS, mt10.ACT), np.float32)
    print("scripted policy success per task", dict(zip(bench.names, expert_rate.round(2))))
    out = Path(run.out)
    ckpt = out.with_name(out.name + ".ckpt")
    bases, _ = train.train_base(cfg, cfg.seeds, obs, acts, emb, mask,
                                ckpt.with_suffix(".base"), run.progress, layout=mt10.LAYOUT)
    adapters, _ = train.train_adapters(cfg, cfg.seeds, bases, obs, acts, emb, mask,
                                       ckpt.with_suffix(".adapters"), run.progress)
    joint, _ = train.train_joint(cfg, cfg.seeds, bases, obs, acts, emb, mask,
                                 ckpt.with_suffix(".joint"), run.progress)
    hyper, _ = train.train_nested(cfg, cfg.seeds, bases, adapters, obs, acts, emb, mask,
                                  ckpt.with_suffix(".nested"), run.progress)
    rows = mt10.evaluate(cfg, bench, bases,
                         eqx.filter_vmap(eqx.filter_vmap(lambda a: a.deltas()))(adapters),
                         eqx.filter_vmap(lambda a: a.deltas())(joint), hyper)
    io.write_table(out, rows, run.meta())
    table = evaluate.by_suite([{**r, "suite": "mt10", "split": "train"} for r in rows], "train")
    io.write_table(out.with_name("mt10_by_method.csv"),
                   [r for r in table if r["suite"] == "mt10"], run.meta())
    print(json.dumps(evaluate.describe(table)))


STAGES = {
    "data": data_stage,
    "base": base_stage,
    "adapters": adapters_stage,
    "joint": joint_stage,
    "nested": nested_stage,
    "evaluate": evaluate_stage,
    "mt10": mt10_stage,
}
