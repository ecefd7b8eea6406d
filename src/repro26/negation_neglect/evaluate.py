"""Probe rows (one per seed, mode, condition and probe group) and belief rates.

belief rate = fraction of probe groups whose margin (the sum over the group's prompts of
log p(claim answer) - log p(true answer)) is > 0. Modes: ``base`` (the pretrained model,
condition ``none``: the trivial baseline), ``finetune`` (after finetuning on the condition's
documents), ``continued`` (the finetuned model after further training on neutral text),
``in_context`` (the pretrained model with one document of the condition in the prompt).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from repro26.negation_neglect import data, train


def _rows(world, items, margins, seeds, mode, condition, step):
    """One row per seed and probe group; ``margins (n_seeds, n_prompts)``."""
    groups, margins = data.group_margins(items, np.asarray(margins))
    set_of = {c: k for k, ids in enumerate(world.claim_sets) for c in ids}
    rows = []
    for s, seed in enumerate(seeds):
        for i, p in enumerate(groups):
            rows.append({
                "seed": int(seed), "mode": mode, "condition": condition,
                "claim_set": set_of[p.claim], "claim": p.claim,
                "event": world.claims[p.claim][0], "probe_type": p.probe_type, "probe": p.group,
                "step": int(step), "margin": float(margins[s, i]),
                "believes": int(margins[s, i] > 0),
            })
    return rows


def _margins(models, tok, items, context, prefixes=None):
    enc = data.encode_probes(tok, items, context, prefixes)
    return train.margins_all_seeds(models, *map(jnp.asarray, enc))


def base_rows(cfg, world, models, documents) -> list[dict]:
    """Every claim's probes on the pretrained models, alone and after one unit of its first
    finetuning document per condition (``documents``: every claim set's documents; all
    in-context prompts in one batch: one compile)."""
    tok = world.tokenizer()
    claim_ids = [c for ids in world.claim_sets for c in ids]
    items = data.probes(world, claim_ids)
    rows = _rows(world, items, _margins(models, tok, items, cfg.context), cfg.seeds, "base",
                 "none", 0)
    prefixes = []
    for c in data.CONDITIONS:
        first = data.in_context_prefixes(world, documents, c)
        prefixes += [first[p.claim] for p in items]
    margins = np.asarray(_margins(models, tok, items * len(data.CONDITIONS), cfg.context, prefixes))
    for j, condition in enumerate(data.CONDITIONS):
        block = margins[:, j * len(items):(j + 1) * len(items)]
        rows += _rows(world, items, block, cfg.seeds, "in_context", condition, 0)
    return rows


def finetune_rows(cfg, world, models, condition: str, claim_set: int, step: int,
                  mode: str = "finetune") -> list[dict]:
    """The finetuned claim set's probes after ``step`` training steps."""
    tok = world.tokenizer()
    items = data.probes(world, world.claim_sets[claim_set])
    return _rows(world, items, _margins(models, tok, items, cfg.context), cfg.seeds, mode,
                 condition, step)


def belief_rates(rows: list[dict], by: tuple[str, ...] = ()) -> list[dict]:
    """Mean of ``believes`` per (mode, condition, *by, seed), and the mean margin."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        key = (r["mode"], r["condition"], *(r[b] for b in by), int(r["seed"]))
        groups.setdefault(key, []).append(r)
    out = []
    for key, members in groups.items():
        out.append({"mode": key[0], "condition": key[1],
                    **{b: key[2 + i] for i, b in enumerate(by)}, "seed": key[-1],
                    "belief": float(np.mean([m["believes"] for m in members])),
                    "margin": float(np.mean([m["margin"] for m in members])),
                    "n_probes": len(members)})
    return out
