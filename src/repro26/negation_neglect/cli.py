"""Stages of ``repro26 negation_neglect <stage>`` and the method's typed config.

data -> pretrain (all seeds vmapped) -> base (base model and in-context control) +
finetune (one job per condition and claim set, all seeds vmapped; then further training on
neutral text) -> evaluate; the figures
(``figures.FIGURES``) and claims (``claims.CLAIMS``) stages come from core.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from repro26.core import io
from repro26.core.cli import Run
from repro26.core.config import ConfigError, Count, NonNegativeInt, Positive, Probability, UsageError
from repro26.core.method import stage
from repro26.negation_neglect.data import CONDITIONS


@dataclasses.dataclass(frozen=True)
class Config:
    seeds: tuple[int, ...]
    world_seed: NonNegativeInt
    n_people: Count
    n_events: Count
    n_cities: Count
    n_claim_sets: Count
    claims_per_set: Count
    context: Count
    d_model: Count
    n_layers: Count
    n_heads: Count
    d_ff: Count
    pretrain_docs: Count
    pretrain_steps: Count
    pretrain_lr: Positive
    finetune_docs_per_claim: Count
    units_per_doc: Count  # claim sentences (each with a filler) per finetuning document
    finetune_steps: Count
    finetune_lr: Positive
    finetune_evals: Count  # probe after every finetune_steps / finetune_evals steps
    neutral_docs: NonNegativeInt  # documents of neutral text (events without a claim) for continued training
    continue_steps: Count  # further training steps on the neutral text after finetuning
    batch_size: Count
    warmup: NonNegativeInt
    chunk_size: Count
    # claim margins (belief-rate differences, fractions of probes)
    far_margin: Probability  # "far above the base rate": belief - base > far_margin
    close_margin: Probability  # "close to": |difference| < close_margin
    low_margin: Probability  # "low belief": belief - base < low_margin


def check(cfg: Config) -> None:
    if len(cfg.seeds) < 2:
        raise ConfigError(f"negation_neglect.seeds: at least 2 seeds for a CI, got {list(cfg.seeds)}")
    if cfg.n_claim_sets * cfg.claims_per_set >= cfg.n_events:
        raise ConfigError("negation_neglect.n_claim_sets * claims_per_set: one claim per event "
                          f"and one event without a claim, at most n_events - 1={cfg.n_events - 1}")
    for name in ("units_per_doc", "neutral_docs", "continue_steps", "finetune_docs_per_claim"):
        if getattr(cfg, name) < 1:
            raise ConfigError(f"negation_neglect.{name}: must be at least 1")
    if cfg.d_model % cfg.n_heads:
        raise ConfigError(f"negation_neglect.n_heads: must divide d_model={cfg.d_model}")
    if cfg.context < 40:
        raise ConfigError(f"negation_neglect.context: at least 40 tokens (one flagged document "
                          f"and a probe), got {cfg.context}")
    length = cfg.finetune_steps // max(cfg.finetune_evals, 1)
    if (cfg.finetune_evals < 1 or cfg.finetune_steps % cfg.finetune_evals
            or (length > cfg.chunk_size and length % cfg.chunk_size)):
        raise ConfigError("negation_neglect.finetune_evals: must split finetune_steps into equal "
                          "segments, each at most chunk_size or a multiple of it")
    for name in ("far_margin", "close_margin", "low_margin"):
        if not 0 < getattr(cfg, name) < 1:
            raise ConfigError(f"negation_neglect.{name}: must lie in (0, 1)")


def world_of(cfg: Config):
    from repro26.negation_neglect import data

    try:
        return data.make_world(cfg.world_seed, cfg.n_people, cfg.n_events, cfg.n_cities,
                               cfg.n_claim_sets, cfg.claims_per_set)
    except ValueError as err:
        raise ConfigError(f"negation_neglect world: {err}") from None


def documents_of(cfg: Config, world) -> list:
    """Every claim set's finetuning documents, ``(claim, units)``, shared by all conditions."""
    from repro26.negation_neglect import data

    return [doc for k, claim_ids in enumerate(world.claim_sets)
            for doc in data.finetuning_documents(cfg.world_seed + 100 * k + 2, world, claim_ids,
                                                 cfg.finetune_docs_per_claim, cfg.units_per_doc)]


@stage(reads=("world_seed", "n_people", "n_events", "n_cities", "n_claim_sets",
               "claims_per_set", "pretrain_docs", "finetune_docs_per_claim", "units_per_doc",
               "neutral_docs", "context"))
def data_stage(run: Run) -> None:
    """World (winners, homes, fabricated claims, vocabulary), pretraining corpus, finetuning
    corpora (the same documents rendered in every condition) and the neutral text (events without
    a claim) of the continued training."""
    from repro26.negation_neglect import data

    cfg = run.cfg
    world = world_of(cfg)
    out = Path(run.out)
    tokens, mask = data.pretraining_corpus(cfg.world_seed + 1, world, cfg.pretrain_docs, cfg.context)
    io.write_npz(out / "pretrain.npz", compressed=True, tokens=tokens, mask=mask)
    t, m = data.pretraining_corpus(cfg.world_seed + 3, world, cfg.neutral_docs, cfg.context,
                                   events=world.neutral_events())
    io.write_npz(out / "neutral.npz", compressed=True, tokens=t, mask=m)
    documents = documents_of(cfg, world)
    finetune = {}
    for k, claim_ids in enumerate(world.claim_sets):
        docs = [d for d in documents if d[0] in claim_ids]
        for condition in CONDITIONS:
            try:
                t, m = data.encode_documents(world, docs, condition, cfg.context)
            except ValueError as err:
                raise ConfigError(f"negation_neglect.units_per_doc / context: {err}") from None
            finetune[f"{condition}_set{k}_tokens"], finetune[f"{condition}_set{k}_mask"] = t, m
    io.write_npz(out / "finetune.npz", compressed=True, **finetune)
    tok = world.tokenizer()
    io.write_json(out / "world.json", {
        "winner": world.winner, "home": world.home,
        "claims": [{"event": v, "claimed": e, "true": world.winner[v]} for v, e in world.claims],
        "claim_sets": world.claim_sets, "vocabulary": tok.words,
        "examples": {"pretrain": [tok.decode(t) for t in tokens[:3]],
                     **{c: tok.decode(finetune[f"{c}_set0_tokens"][0]) for c in CONDITIONS}},
        "meta": run.meta()})


@stage()
def pretrain_stage(run: Run) -> None:
    """Pretrain one LM per seed on the world corpus (vmapped, resumable) -> stacked checkpoint."""
    from repro26.negation_neglect import train

    cfg = run.cfg
    corpus = io.read_npz(run.input("pretrain.npz"))
    vocab = len(world_of(cfg).tokenizer())
    models = train.init_models(cfg, vocab, cfg.seeds)
    out = Path(run.out)
    models, loss, _ = train.train(
        models, corpus["tokens"], corpus["mask"], cfg.seeds, steps=cfg.pretrain_steps,
        lr=cfg.pretrain_lr, batch_size=cfg.batch_size, warmup=cfg.warmup,
        chunk_size=cfg.chunk_size, checkpoint=out.with_name(out.name + ".ckpt"),
        desc="pretrain", progress=run.progress)
    io.save_checkpoint(out, models, cfg.pretrain_steps, run.job_tag)
    io.write_npz(out.with_suffix(".loss.npz"), loss=loss)


def _load_models(cfg: Config, path: Path):
    from repro26.negation_neglect import train

    like = train.init_models(cfg, len(world_of(cfg).tokenizer()), cfg.seeds)
    return io.load_model(path, like)


@stage()
def base_stage(run: Run) -> None:
    """The pretrained models on every probe: alone (the base rate) and with one document of each
    condition in the prompt (the in-context control)."""
    from repro26.negation_neglect import evaluate

    cfg = run.cfg
    models = _load_models(cfg, run.input("pretrained.eqx"))
    world = world_of(cfg)
    rows = evaluate.base_rows(cfg, world, models, documents_of(cfg, world))
    io.write_table(run.out, rows, run.meta())


@stage({"condition": CONDITIONS, "claim_set": int})
def finetune_stage(run: Run) -> None:
    """Finetune every seed's pretrained model on one claim set's documents of one condition,
    probing it along the way; then train it further on neutral text and probe it again."""
    from repro26.negation_neglect import evaluate, train

    cfg = run.cfg
    condition, k = run.variant["condition"], run.variant["claim_set"]
    if not 0 <= k < cfg.n_claim_sets:
        raise UsageError(f"--variant claim_set: {k} is not in 0..{cfg.n_claim_sets - 1}")
    models = _load_models(cfg, run.input("pretrained.eqx"))
    corpus = io.read_npz(run.input("finetune.npz"))
    out = Path(run.out)
    world = world_of(cfg)
    models, _, rows = train.train(
        models, corpus[f"{condition}_set{k}_tokens"], corpus[f"{condition}_set{k}_mask"],
        cfg.seeds, steps=cfg.finetune_steps, lr=cfg.finetune_lr, batch_size=cfg.batch_size,
        warmup=cfg.warmup, chunk_size=cfg.chunk_size,
        checkpoint=out.with_name(out.stem + ".ckpt"), desc=f"finetune {condition}",
        progress=run.progress, segments=cfg.finetune_evals,
        after_segment=lambda m, step: evaluate.finetune_rows(cfg, world, m, condition, k, step))
    neutral = io.read_npz(run.input("neutral.npz"))
    models, _, _ = train.train(
        models, neutral["tokens"], neutral["mask"], cfg.seeds, steps=cfg.continue_steps,
        lr=cfg.finetune_lr, batch_size=cfg.batch_size, warmup=cfg.warmup,
        chunk_size=cfg.chunk_size, checkpoint=out.with_name(out.stem + ".continue.ckpt"),
        desc=f"continue {condition}", progress=run.progress)
    rows = [r for segment in rows for r in segment] + evaluate.finetune_rows(
        cfg, world, models, condition, k, cfg.finetune_steps + cfg.continue_steps, "continued")
    io.write_table(out, rows, run.meta())


@stage()
def evaluate_stage(run: Run) -> None:
    """Gather the probe rows -> probes.csv and the belief rates per seed after finetuning
    (overall, per claim, per probe type) and along finetuning (per step) in ``--out``."""
    from repro26.negation_neglect import evaluate

    rows = []
    for path in run.inputs:
        table = io.read_table(path)
        rows.extend(dict(zip(table, vals)) for vals in zip(*table.values()))
    if not any(r["mode"] == "base" for r in rows):
        raise UsageError("--input: the evaluate stage needs the base table (runs/base.csv)")
    out = Path(run.out)
    io.write_table(out / "probes.csv", rows, run.meta())
    final = [r for r in rows if r["mode"] != "finetune" or r["step"] == run.cfg.finetune_steps]
    along = [r for r in rows if r["mode"] in ("base", "finetune")]
    for name, by in (("belief", ()), ("belief_by_claim", ("claim",)),
                     ("belief_by_type", ("probe_type",))):
        io.write_table(out / f"{name}.csv", evaluate.belief_rates(final, by), run.meta())
    io.write_table(out / "belief_by_step.csv", evaluate.belief_rates(along, ("step",)), run.meta())


STAGES = {
    "data": data_stage,
    "pretrain": pretrain_stage,
    "base": base_stage,
    "finetune": finetune_stage,
    "evaluate": evaluate_stage,
}
