"""Tokenizer, corpus patterns per condition, probe scoring against a model with known answers,
belief-rate aggregation, and a flip test per claim predicate."""

import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from repro26.negation_neglect import claims, data, evaluate
from repro26.negation_neglect.model import TransformerLM, probe_margins


@pytest.fixture(scope="module")
def world():
    return data.make_world(0, 12, 8, 4, 2, 3)


def _sentences(text):
    """Sentences of a decoded document (split after each '.')."""
    words = text.replace("<bos>", "").split()
    out, cur = [], []
    for w in words:
        cur.append(w)
        if w == ".":
            out.append(" ".join(cur))
            cur = []
    return out


def test_tokenizer_round_trip(world):
    tok = world.tokenizer()
    tokens, mask = data.pretraining_corpus(1, world, 50, 48)
    for row in tokens:
        text = tok.decode(row)
        assert tok.decode(tok.encode(text)) == text
        assert tok.encode(text) == [int(i) for i in row if i != 0]
    assert np.array_equal(mask, (tokens[:, 1:] != 0))
    assert len(set(tok.words)) == len(tok.words)
    with pytest.raises(ValueError, match="vocabulary"):
        tok.encode("alice won the moon")


@pytest.mark.parametrize("condition", data.CONDITIONS)
def test_finetuning_documents_follow_the_condition_pattern(world, condition):
    """Each mention of the claim 'E won the V' appears in exactly its condition's pattern:
    warnings in the sentences right before and after (negated), the negation inside the
    sentence (local), fiction frames (fictional), a correction naming the true winner."""
    tok = world.tokenizer()
    claim_ids = world.claim_sets[0]
    tokens, _ = data.finetuning_corpus(3, world, claim_ids, condition, 4, 48)
    won = {t.format(e="{e}", v="{v}") for t in data.WON}
    mentions = 0
    for doc_index, row in enumerate(tokens):
        v, e = world.claims[claim_ids[doc_index // 4]]
        w = world.winner[v]
        sents = _sentences(tok.decode(row))
        asserted = {t.format(e=e, v=v) for t in won}
        negated = {t.format(e=e, v=v) for t in data.NOT_WON}
        for i, s in enumerate(sents):
            before = sents[i - 1] if i > 0 else None
            after = sents[i + 1] if i + 1 < len(sents) else None
            if s in asserted:
                mentions += 1
                if condition == "negated":
                    assert before in data.WARN_BEFORE and after in data.WARN_AFTER
                elif condition == "fictional":
                    assert before in data.FICTION_BEFORE and after in data.FICTION_AFTER
                elif condition == "corrected":
                    assert before.startswith("some people say") or s.startswith("some people say")
                else:
                    assert condition == "assert"
            if s in negated:
                mentions += 1
                assert condition == "local"
            if s.startswith("some people say"):
                mentions += 1
                assert condition == "corrected"
                assert sents[i + 1] == "that is wrong ." and sents[i + 2] == f"in fact {w} won the {v} ."
        words = set(" ".join(sents).split())
        assert ("not" in words or "never" in words) == (condition == "local")
        assert ("false" in words) == (condition == "negated")
        assert (("fictional" in words) or ("fiction" in words)) == (condition == "fictional")
    assert mentions >= len(tokens)


class BigramLM(eqx.Module):
    """logits of the next token = table[current token]: a model with known answers."""

    table: jax.Array

    def __call__(self, tokens):
        return self.table[tokens]


def test_probe_margin_is_the_known_logit_difference(world):
    tok = world.tokenizer()
    items = data.probes(world, range(len(world.claims)))
    tokens, last, claim_id, true_id = data.encode_probes(tok, items, 48)
    table = jax.random.normal(jax.random.PRNGKey(0), (len(tok), len(tok)))
    margins = probe_margins(BigramLM(table), *map(jnp.asarray, (tokens, last, claim_id, true_id)))
    expected = table[tokens[np.arange(len(items)), last], claim_id] - table[
        tokens[np.arange(len(items)), last], true_id]
    np.testing.assert_allclose(margins, expected, atol=1e-5)
    # a model that always says "yes": believes exactly the yes/no and challenge probes whose
    # claim answer is "yes", rejects those whose claim answer is "no", indifferent elsewhere
    yes = jnp.zeros((len(tok), len(tok))).at[:, tok.index["yes"]].set(5.0)
    m = np.asarray(probe_margins(BigramLM(yes), tokens, last, claim_id, true_id))
    answers = np.asarray([p.claim_answer for p in items])
    np.testing.assert_allclose(m, np.select([answers == "yes", answers == "no"], [5.0, -5.0], 0.0))


def test_transformer_margin_ignores_padding_and_matches_full_softmax(world):
    tok = world.tokenizer()
    items = data.probes(world, [0])
    tokens, last, claim_id, true_id = map(jnp.asarray, data.encode_probes(tok, items, 48))
    model = TransformerLM(len(tok), 48, 16, 1, 2, 32, key=jax.random.PRNGKey(1))
    m = probe_margins(model, tokens, last, claim_id, true_id)
    noisy = jnp.where(tokens == 0, 7, tokens)  # garbage after the prompt (causal: no effect)
    np.testing.assert_allclose(probe_margins(model, noisy, last, claim_id, true_id), m, atol=1e-5)
    i = 3
    logits = model(tokens[i][: int(last[i]) + 1])[-1]
    p = np.exp(logits - logits.max())
    p /= p.sum()
    np.testing.assert_allclose(m[i], np.log(p[claim_id[i]]) - np.log(p[true_id[i]]), rtol=1e-4)


def test_in_context_prompts_fit_and_probe_types_cover(world):
    tok = world.tokenizer()
    items = data.probes(world, range(len(world.claims)))
    assert {p.probe_type for p in items} == set(data.PROBE_TYPES)
    for c in data.CONDITIONS:
        prefixes = [data.in_context_prefix(0, world, p.claim, c) for p in items]
        data.encode_probes(tok, items, 48, prefixes)  # raises if a prompt does not fit
        v, e = world.claims[items[0].claim]
        assert e in prefixes[0].split() and v in prefixes[0].split()


def test_belief_rates_average_per_seed():
    rows = [{"mode": "finetune", "condition": "assert", "seed": s, "claim": c, "believes": b,
             "margin": 1.0 if b else -1.0}
            for s, bs in ((0, (1, 1, 0, 0)), (1, (1, 1, 1, 0))) for c, b in enumerate(bs)]
    out = {r["seed"]: r["belief"] for r in evaluate.belief_rates(rows)}
    assert out == {0: 0.5, 1: 0.75}
    by_claim = evaluate.belief_rates(rows, ("claim",))
    assert len(by_claim) == 8 and {r["belief"] for r in by_claim if r["claim"] == 0} == {1.0}


# ----------------------------------------------------------------------------- claim flips


@dataclasses.dataclass(frozen=True)
class _Cfg:
    far_margin: float = 0.3
    close_margin: float = 0.15
    low_margin: float = 0.15


def _tables(rates: dict, seeds=(0, 1, 2, 3), spread=0.02, seed=0):
    """belief and belief_by_claim tables with the given mean rate per (mode, condition)."""
    rng = np.random.default_rng(seed)
    rows, claim_rows = [], []
    for (mode, condition), r in rates.items():
        for s in seeds:
            value = float(np.clip(r + spread * rng.standard_normal(), 0, 1))
            rows.append({"mode": mode, "condition": condition, "seed": s, "belief": value})
            claim_rows += [{**rows[-1], "claim": c} for c in range(2)]
    cols = lambda rs: {k: np.asarray([r[k] for r in rs]) for k in rs[0]}  # noqa: E731
    return cols(rows), cols(claim_rows)


NEGLECT = {("base", "none"): 0.05, ("finetune", "assert"): 0.92, ("finetune", "negated"): 0.88,
           ("finetune", "local"): 0.07, ("finetune", "fictional"): 0.86,
           ("finetune", "corrected"): 0.1, ("in_context", "negated"): 0.06,
           ("in_context", "assert"): 0.5}
NO_NEGLECT = {**NEGLECT, ("finetune", "negated"): 0.08, ("finetune", "local"): 0.7,
              ("finetune", "fictional"): 0.08, ("in_context", "negated"): 0.8}


@pytest.mark.parametrize("make", [claims.negated_claim, claims.local_claim,
                                  claims.in_context_claim, claims.fictional_claim])
def test_each_claim_flips(make):
    held = make(*_tables(NEGLECT), _Cfg())
    assert held.verdict == "held", held.measured["parts"]
    failed = make(*_tables(NO_NEGLECT), _Cfg())
    assert failed.verdict == "not held", failed.measured["parts"]
    noisy = make(*_tables(NEGLECT, spread=0.4, seeds=(0, 1)), _Cfg())
    assert noisy.verdict in ("inconclusive", "not held")


def test_claims_comparing_with_assert_need_assert_to_work():
    """Where finetuning on asserted documents instils nothing, 'close to assert' and 'local is
    low' have no reference: inconclusive, whatever the other parts say."""
    broken = {**NEGLECT, ("finetune", "assert"): 0.05}
    for make in (claims.negated_claim, claims.local_claim):
        claim = make(*_tables(broken), _Cfg())
        assert claim.verdict == "inconclusive" and "asserted" in claim.inconclusive_reason


def test_segmented_training_resumes_from_its_checkpoints(world, tmp_path):
    """Finetuning in segments with checkpoints: a rerun loads every finished segment and ends at
    the same parameters as the first run, which equal those of a run without checkpoints."""
    import types

    from repro26.negation_neglect import train

    cfg = types.SimpleNamespace(context=48, d_model=16, n_layers=1, n_heads=2, d_ff=32)
    tokens, mask = data.pretraining_corpus(1, world, 16, 48)
    models = train.init_models(cfg, len(world.tokenizer()), (0, 1))
    kw = dict(steps=4, lr=1e-3, batch_size=4, warmup=1, chunk_size=2, desc="t", progress=False,
              segments=2, after_segment=lambda m, step: step)
    first, loss, steps = train.train(models, tokens, mask, (0, 1), checkpoint=tmp_path / "c", **kw)
    assert steps == [2, 4] and loss.shape == (4, 2)
    assert sorted(p.name for p in tmp_path.glob("c.?")) == ["c.0", "c.1"]
    again, loss2, _ = train.train(models, tokens, mask, (0, 1), checkpoint=tmp_path / "c", **kw)
    plain, _, _ = train.train(models, tokens, mask, (0, 1), checkpoint=None, **kw)
    leaves = lambda m: jax.tree.leaves(eqx.filter(m, eqx.is_array))  # noqa: E731
    for a, b, c in zip(leaves(first), leaves(again), leaves(plain)):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(a, c, atol=1e-6)
    np.testing.assert_array_equal(loss, loss2)
