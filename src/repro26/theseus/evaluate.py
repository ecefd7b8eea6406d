"""Final metrics of every trained model: the training jobs' own last rows, plus what they lack.

For each task and model: test accuracy, NLL (nats per label; per character for text) and
perplexity ``exp(NLL)`` per seed, the parameter count, how many parts are of the target
architecture (``target_parts`` of ``n_parts``), and the linear CKA between each stage
output and the guide's on the first ``cka_samples`` test inputs (the guide the model was aligned
to: the untrained guide for ``not_untrained``, the trained one otherwise). The test metrics, and
a conversion's CKA, are those its training job measured on its final network (the last row of
its ship table, the same network as its checkpoint): they are not recomputed. Only the CKA of
the models trained without a guide (guide, scratch, distillation) is computed here, from their
checkpoints; the parameter and part counts are read off the loaded networks.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import equinox as eqx
import jax

from repro26.core import io
from repro26.core.config import UsageError
from repro26.theseus import train
from repro26.theseus.data import load_npz


def _find(inputs: Sequence[Path], *tail: str) -> Path:
    want = "/".join(tail)
    for p in inputs:
        if str(p).endswith(want):
            return Path(p)
    raise UsageError(f"--input: evaluate needs {want}")


def n_params(net) -> int:
    """Parameters of one seed's network."""
    leaves = jax.tree_util.tree_leaves(eqx.filter(net, eqx.is_inexact_array))
    return int(sum(leaf[0].size for leaf in leaves))


def target_parts(net, target) -> int:
    """How many of ``net``'s parts are of the target architecture's type (counted on the
    network itself: a finished conversion has all of them)."""
    from repro26.theseus import model as M

    if M.n_parts(net) != M.n_parts(target):
        return 0
    return sum(type(M.get_part(net, k)) is type(M.get_part(target, k))
               for k in range(M.n_parts(net)))


def final_row(table: dict, seed) -> dict:
    """The metrics of ``seed``'s final network in a job's ship table: its last stage's row
    (test ``nll``, ``accuracy``, ``perplexity`` and any ``cka_j``)."""
    rows = table["seed"] == seed
    last = rows & (table["stage"] == table["stage"][rows].max())
    keep = [k for k in table if k in ("nll", "accuracy", "perplexity") or k.startswith("cka_")]
    return {k: float(table[k][last][0]) for k in keep}


def gather(cfg, inputs: Sequence[Path]) -> tuple[list[dict], list[dict]]:
    """``(final rows, stage rows)`` over every task and model."""
    from repro26.theseus.cli import models_of

    final, stage_rows = [], []
    for task_name in train.TASKS:
        task = train.make_task(cfg, task_name, load_npz(_find(inputs, f"{task_name}.npz")))
        trained = io.load_model(_find(inputs, task_name, "guide.eqx"),
                                train.skeleton(task, "guide", cfg.seeds))
        target = train.stacked(task.make_target, cfg.seeds, "target")
        for model in models_of(cfg, task_name):
            net = io.load_model(_find(inputs, task_name, f"{model}.eqx"),
                                train.skeleton(task, model, cfg.seeds))
            table = io.read_table(_find(inputs, task_name, f"{model}.csv"))
            cka = None
            if model != "linear" and not any(k.startswith("cka_") for k in table):
                cka = train.layer_cka(net, trained, task, cfg.cka_samples)
            size = n_params(net)
            arch = {"target_parts": target_parts(net, target), "n_parts": train.n_parts(task)}
            for i, seed in enumerate(cfg.seeds):
                row = {"task": task_name, "model": model, "seed": seed, "params": size, **arch,
                       **final_row(table, seed),
                       "aligned_to": "untrained_guide" if model == "not_untrained" else "guide"}
                if cka is not None:
                    row.update({f"cka_{j}": float(cka[i, j]) for j in range(cka.shape[1])})
                final.append(row)
            stage_rows.extend(dict(zip(table, vals)) for vals in zip(*table.values()))
    return final, stage_rows
