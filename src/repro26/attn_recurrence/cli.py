"""Stages of ``repro26 attn_recurrence <stage>`` and the method's typed config.

data -> fit (surrogate x target, seeds and states vmapped) + scaling (K x d_v) + lm (model x
seed) -> survey (model x seed; GPT-2-layout checkpoints too) -> evaluate; the figures
(``figures.FIGURES``) and claims (``claims.CLAIMS``) stages come from core.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated

from repro26.core import io, memory
from repro26.core.cli import Run
from repro26.core.config import Bounds, ConfigError, Count, Positive, UsageError
from repro26.core.method import stage

#: a tolerance relative to ||P||_2: 0 is unreachable, and at 1 every bound passes (the bound
#: never exceeds ||P||_2), so both ends are meaningless
RelativeTol = Annotated[float, Bounds(0, 1, low_open=True, high_open=True)]


@dataclasses.dataclass(frozen=True)
class Config:
    seeds: tuple[int, ...]
    # targets of the tightness experiment (data.TARGETS) and their settings
    targets: tuple[str, ...]
    surrogates: tuple[str, ...]
    seq_len: Count
    vocab: Count
    train_sequences: Count
    test_sequences: Count
    states: tuple[Count, ...]
    retrieval_pairs: Count
    retrieval_keys: Count  # key-id space of the `retrieval` target (K: each id stored once)
    retrieval_sharpness: Positive
    smooth_width: Positive
    clusters: Count
    cluster_sharpness: Positive
    surrogate_hidden: Count  # width of the surrogates' hidden ReLU feature layer
    steps: Count
    batch: Count
    lr: Positive
    # state scaling: MQAR with K pairs and d_v-dimensional values
    scaling_pairs: tuple[Count, ...]
    scaling_value_dims: tuple[Count, ...]
    scaling_states: tuple[Count, ...]
    scaling_seq_len: Count
    state_tol: RelativeTol  # required state: smallest with ||P - M||_2 <= state_tol ||P||_2
    # head survey: GPT-2-shaped transformers trained here
    survey_models: tuple[str, ...]
    lm_seeds: tuple[int, ...]
    lm_seq_len: Count
    lm_d_model: Count
    lm_layers: Count
    lm_heads: Count
    lm_steps: Count
    lm_batch: Count
    lm_lr: Positive
    lm_train_windows: Count
    mqar_pairs: Count
    mqar_keys: Count
    survey_sequences: Count
    survey_states: tuple[Count, ...]
    survey_probe_state: Count  # a head's obstruction is small when its bound at this state
    survey_tol: RelativeTol  # is <= survey_tol ||P||_2
    exact_svd_max_len: Count
    split_stride: Count
    # GPT-2-layout weight files (.npz, Hugging Face names) surveyed as well (paper scale)
    checkpoints: tuple[str, ...] = ()
    checkpoint_heads: tuple[Count, ...] = ()  # n_head of each checkpoint
    checkpoint_seq_len: Count = 1024


def check(cfg: Config) -> None:
    from repro26.attn_recurrence import data, model

    for name, values, allowed in (("targets", cfg.targets, data.TARGETS),
                                  ("surrogates", cfg.surrogates, model.SURROGATES),
                                  ("survey_models", cfg.survey_models, ("charlm", "mqar"))):
        bad = [v for v in values if v not in allowed]
        if bad:
            raise ConfigError(f"attn_recurrence.{name}: '{bad[0]}' is unknown; allowed: "
                              f"{', '.join(allowed)}")
    for name in ("states", "scaling_states", "survey_states"):
        grid = getattr(cfg, name)
        if not grid or min(grid) < 0 or list(grid) != sorted(set(grid)):
            raise ConfigError(f"attn_recurrence.{name}: an increasing list of states >= 0, got "
                              f"{list(grid)}")
    if min(cfg.states) < 1 or min(cfg.scaling_states) < 1:
        raise ConfigError("attn_recurrence.states: trained surrogates need state >= 1")
    if 2 * cfg.retrieval_pairs >= cfg.seq_len or cfg.retrieval_pairs > cfg.vocab // 2:
        raise ConfigError("attn_recurrence.retrieval_pairs: need 2 K < seq_len and K <= vocab/2")
    if not cfg.retrieval_pairs <= cfg.retrieval_keys <= cfg.vocab // 2:
        raise ConfigError("attn_recurrence.retrieval_keys: need retrieval_pairs <= "
                          "retrieval_keys <= vocab/2")
    if 2 * max(cfg.scaling_pairs) >= cfg.scaling_seq_len or max(cfg.scaling_pairs) > cfg.vocab // 2:
        raise ConfigError("attn_recurrence.scaling_pairs: need 2 K < scaling_seq_len and "
                          "K <= vocab/2")
    if 2 * cfg.mqar_pairs >= cfg.lm_seq_len or cfg.mqar_pairs > cfg.mqar_keys:
        raise ConfigError("attn_recurrence.mqar_pairs: need 2 K < lm_seq_len and K <= mqar_keys")
    if cfg.lm_d_model % cfg.lm_heads:
        raise ConfigError("attn_recurrence.lm_heads: must divide lm_d_model")
    if cfg.survey_probe_state not in cfg.survey_states:
        raise ConfigError("attn_recurrence.survey_probe_state: must be one of survey_states")
    if "mqar" in cfg.survey_models and cfg.survey_probe_state >= cfg.mqar_pairs:
        raise ConfigError("attn_recurrence.survey_probe_state: must lie below mqar_pairs (an "
                          "exact retrieval head of K pairs passes at state K by construction)")
    if len(cfg.checkpoint_heads) != len(cfg.checkpoints):
        raise ConfigError("attn_recurrence.checkpoint_heads: one n_head per checkpoint")


def _pools(run: Run, name: str):
    pools = io.read_npz(run.input("pools.npz"))
    return tuple(pools[f"{name}_{part}"] for part in ("Xtrain", "Ptrain", "Xtest", "Ptest"))


@stage()
def data_stage(run: Run) -> None:
    """Training and test pools of every target and of every MQAR size K, per seed."""
    import jax
    import numpy as np

    from repro26.attn_recurrence import data

    cfg = run.cfg
    arrays = {}
    n_train, n_test = cfg.train_sequences, cfg.test_sequences
    key = jax.random.PRNGKey(0)
    per_seed = sum(memory.traced_bytes(lambda k: data.target_pool(k, t, n_train + n_test,
                                                                   cfg.seq_len, cfg), key)
                   for t in cfg.targets) + sum(
        memory.traced_bytes(lambda k: data.mqar_pool(k, n_train + n_test, K, cfg.scaling_seq_len,
                                                      cfg), key) for K in cfg.scaling_pairs)
    # every seed's pools, stacked (a second copy) before they are written
    memory.require(2 * len(cfg.seeds) * per_seed,
                   "attn_recurrence.train_sequences + test_sequences (with seq_len, seeds)")

    def pools(make, name, salt):
        per_seed = [make(jax.random.fold_in(jax.random.PRNGKey(seed), salt)) for seed in cfg.seeds]
        X = np.stack([np.asarray(p[0]) for p in per_seed])
        P = np.stack([np.asarray(p[1]) for p in per_seed])
        arrays.update({f"{name}_Xtrain": X[:, :n_train], f"{name}_Ptrain": P[:, :n_train],
                   f"{name}_Xtest": X[:, n_train:], f"{name}_Ptest": P[:, n_train:]})

    for i, target in enumerate(cfg.targets):
        pools(lambda k: data.target_pool(k, target, n_train + n_test, cfg.seq_len, cfg), target, i)
    for K in cfg.scaling_pairs:
        pools(lambda k: data.mqar_pool(k, n_train + n_test, K, cfg.scaling_seq_len, cfg),
              f"mqar{K}", 100 + K)
    io.write_npz(Path(run.out) / "pools.npz", compressed=True, **arrays)


@stage({"surrogate": str, "target": str})
def fit_stage(run: Run) -> None:
    """One surrogate kind on one target: every seed and state trained at once, then the
    bounds and baselines on the same held-out sequences."""
    import jax

    from repro26.attn_recurrence import evaluate, train

    cfg = run.cfg
    kind, target = run.variant["surrogate"], run.variant["target"]
    if kind not in cfg.surrogates or target not in cfg.targets:
        raise UsageError(f"--variant: surrogate in {', '.join(cfg.surrogates)} and target in "
                         f"{', '.join(cfg.targets)}")
    Xtr, Ptr, Xte, Pte = _pools(run, target)
    models = train.fit_surrogates(kind, Xtr, Ptr, cfg.states, jax.random.PRNGKey(7),
                                  steps=cfg.steps, batch=cfg.batch, lr=cfg.lr,
                                  hidden=cfg.surrogate_hidden, progress=run.progress,
                                  desc=f"{kind} {target}")
    rows = evaluate.tightness_rows(cfg, target, kind, models, Xte, Pte, cfg.seeds, cfg.states)
    io.write_table(run.out, rows, run.meta())


@stage({"pairs": int, "value_dim": int})
def scaling_stage(run: Run) -> None:
    """MQAR with K pairs and d_v-dimensional values: a diagonal recurrence with shared state S
    trained for every S of the grid and seed, against the bound on P (x) I_{d_v}."""
    import jax

    from repro26.attn_recurrence import evaluate, train

    cfg = run.cfg
    K, d = run.variant["pairs"], run.variant["value_dim"]
    if K not in cfg.scaling_pairs or d not in cfg.scaling_value_dims:
        raise UsageError(f"--variant: pairs in {list(cfg.scaling_pairs)}, value_dim in "
                         f"{list(cfg.scaling_value_dims)}")
    Xtr, Ptr, Xte, Pte = _pools(run, f"mqar{K}")
    models = train.fit_surrogates("diag", Xtr, Ptr, cfg.scaling_states, jax.random.PRNGKey(11),
                                  steps=cfg.steps, batch=cfg.batch, lr=cfg.lr, value_dim=d,
                                  hidden=cfg.surrogate_hidden,
                                  progress=run.progress, desc=f"K={K} d_v={d}")
    rows = evaluate.scaling_rows(cfg, K, d, models, Xte, Pte, cfg.seeds, cfg.scaling_states)
    io.write_table(run.out, rows, run.meta())


@stage({"model": ("charlm", "mqar")}, seed=True)
def lm_stage(run: Run) -> None:
    """Train one GPT-2-shaped transformer; write its trained and initial weights in GPT-2
    layout (``trained.npz``, ``init.npz``), the held-out token windows and its scores."""
    import numpy as np

    from repro26.attn_recurrence import model, train

    cfg = run.cfg
    trained, init, held, info = train.train_lm(run.variant["model"], cfg, run.seed, run.progress)
    out = Path(run.out)
    model.save_gpt2(out / "trained.npz", trained)
    model.save_gpt2(out / "init.npz", init)
    io.write_npz(out / "held.npz", ids=np.asarray(held[0][:, :-1]))
    io.write_json(out / "info.json", {**info, "meta": run.meta()})


@stage({"model": ("charlm", "mqar")}, seed=True)
def survey_stage(run: Run) -> None:
    """Every head of one trained transformer (loaded through the GPT-2 loader) and of its
    initialisation, and for MQAR the exact retrieval head on the same windows: semiseparable
    bounds relative to ||P|| for each surveyed state."""
    import jax

    from repro26.attn_recurrence import data, evaluate, model

    cfg = run.cfg
    folder = run.input("trained.npz").parent
    ids = io.read_npz(folder / "held.npz")["ids"]
    info = io.read_json(folder / "info.json")
    rows = []
    for weights in ("trained", "init"):
        net = model.load_gpt2(folder / f"{weights}.npz")
        rows += evaluate.survey_rows(net, ids, cfg.survey_states, run.variant["model"], run.seed,
                                     weights, cfg, jax.random.PRNGKey(run.seed))
    if run.variant["model"] == "mqar":
        # the control that must fail: the exact retrieval head on the same held-out windows
        exact = data.mqar_exact_attention(ids, cfg.mqar_pairs, cfg.mqar_keys)[:, None, None]
        rows += evaluate.map_rows(exact, cfg.survey_states, "mqar", run.seed, "exact", cfg,
                                  jax.random.PRNGKey(run.seed))
    for row in rows:
        row |= {"held_loss": info["held_loss"], "held_accuracy": info["held_accuracy"],
                "chance_accuracy": info["chance_accuracy"]}
    io.write_table(run.out, rows, run.meta())


@stage({"index": int})
def checkpoint_stage(run: Run) -> None:
    """Survey one GPT-2-layout checkpoint of ``checkpoints`` on KJV windows (byte ids)."""
    import jax
    import numpy as np

    from repro26.attn_recurrence import data, evaluate, model

    cfg = run.cfg
    i = run.variant["index"]
    if not 0 <= i < len(cfg.checkpoints):
        raise UsageError(f"--variant index: 0..{len(cfg.checkpoints) - 1}")
    net = model.load_gpt2(cfg.checkpoints[i], cfg.checkpoint_heads[i])
    T = cfg.checkpoint_seq_len
    text = data.kjv_text_bytes()
    ids = text[: cfg.survey_sequences * T].reshape(cfg.survey_sequences, T)
    ids = np.minimum(ids, net.params["wte.weight"].shape[0] - 1)
    rows = evaluate.survey_rows(net, ids, cfg.survey_states, f"checkpoint{i}", 0, "trained",
                                cfg, jax.random.PRNGKey(i))
    for row in rows:
        row |= {"held_loss": float("nan"), "held_accuracy": float("nan"),
                "chance_accuracy": float("nan")}
    io.write_table(run.out, rows, run.meta())


@stage()
def evaluate_stage(run: Run) -> None:
    """Concatenate the per-job tables into tightness.csv, scaling.csv and survey.csv."""
    groups = {"fit": [], "scaling": [], "survey": []}
    for path in run.inputs:
        kind = path.parent.name
        if kind not in groups:
            raise UsageError(f"--input: {path} is not under runs/fit, runs/scaling or runs/survey")
        table = io.read_table(path)
        groups[kind] += [dict(zip(table, vals)) for vals in zip(*table.values())]
    for kind, name in (("fit", "tightness"), ("scaling", "scaling"), ("survey", "survey")):
        if not groups[kind]:
            raise UsageError(f"--input: no runs/{kind} tables given")
        io.write_table(Path(run.out) / f"{name}.csv", groups[kind], run.meta())


STAGES = {
    "data": data_stage,
    "fit": fit_stage,
    "scaling": scaling_stage,
    "lm": lm_stage,
    "survey": survey_stage,
    "checkpoint": checkpoint_stage,
    "evaluate": evaluate_stage,
}
