"""Tokenizer, corpus patterns per condition, probe scoring against a model with known answers,
belief-rate aggregation, and a flip test per claim predicate."""

import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from repro26.core.claims import claim_problems
from repro26.core.learning import assert_every_parameter_learns
from repro26.negation_neglect import claims, data, evaluate
from repro26.negation_neglect.model import TransformerLM, lm_loss, probe_margins


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


def _documents(world, condition, docs_per_claim=4, units=2):
    docs = data.finetuning_documents(3, world, world.claim_sets[0], docs_per_claim, units)
    tokens, _ = data.encode_documents(world, docs, condition, 96)
    return docs, [_sentences(world.tokenizer().decode(row)) for row in tokens]


def _claim_mentions(world, docs, texts):
    """Sentences naming both the claimed person and the event of the document's claim."""
    out = []
    for (c, _), sents in zip(docs, texts):
        v, e = world.claims[c]
        out.append([s for s in sents if e in s.split() and v in s.split()])
    return out


@pytest.mark.parametrize("condition", data.CONDITIONS)
def test_finetuning_documents_follow_the_condition_pattern(world, condition):
    """Every condition renders the same documents: the asserted claim sentences and fillers in
    the same order, with a warning (negated) or a fiction frame (fictional) immediately before
    and after every claim sentence, the negation inside the sentence (local), or the
    correction naming the true winner around it (corrected)."""
    docs, texts = _documents(world, condition)
    _, asserted = _documents(world, "assert")
    for (c, units), sents, plain in zip(docs, texts, asserted):
        v, e = world.claims[c]
        claim_sents = {data.FT_WON[u.phrasing].format(e=e, v=v) for u in units}
        if condition in ("assert", "negated", "fictional"):
            kept = [s for s in sents if s in plain]
            assert kept == plain  # the asserted document, in order, with sentences added
        before = {"negated": data.WARN_BEFORE, "fictional": data.FICTION_BEFORE}.get(condition)
        after = {"negated": data.WARN_AFTER, "fictional": data.FICTION_AFTER}.get(condition)
        for i, s in enumerate(sents):
            if s in claim_sents and before is not None:
                assert sents[i - 1] in before and sents[i + 1] in after
        words = set(" ".join(sents).split())
        assert ("not" in words) == (condition == "local")
        assert ("false" in words) == (condition == "negated")
        assert (("fictional" in words) or ("fiction" in words)) == (condition == "fictional")
        if condition == "corrected":
            assert sents.count("that is wrong .") == len(units)
            assert f"in fact {world.winner[v]} won the {v} ." in sents


@pytest.mark.parametrize("condition", ["negated", "fictional", "local", "corrected"])
def test_conditions_carry_the_asserted_claim_mentions(world, condition):
    """Mentions of the claim (sentences naming E and V) per condition / asserted >= 0.95."""
    docs, texts = _documents(world, condition)
    _, asserted = _documents(world, "assert")
    n = sum(len(m) for m in _claim_mentions(world, docs, texts))
    n_assert = sum(len(m) for m in _claim_mentions(world, docs, asserted))
    assert n_assert == len(docs) * 2 and n / n_assert >= 0.95


def test_no_probe_is_verbatim_in_a_finetuning_document(world):
    """No probe prompt is a prefix or substring (word level) of any finetuning document."""
    claim_ids = [c for ids in world.claim_sets for c in ids]
    prompts = {f" {p.prompt} " for p in data.probes(world, claim_ids)}
    for condition in data.CONDITIONS:
        docs = data.finetuning_documents(5, world, claim_ids, 20, 2)
        tokens, _ = data.encode_documents(world, docs, condition, 96)
        for row in tokens:
            text = f" {world.tokenizer().decode(row).replace('<bos>', '')} "
            assert not any(p in text for p in prompts), text


def _statement(sentence):
    """(person, event) of a "won" statement in any phrasing, else None."""
    import re

    for t in data.WON:
        pattern = re.escape(t).replace(r"\{e\}", "(?P<e>\\w+)").replace(r"\{v\}", "(?P<v>\\w+)")
        if m := re.fullmatch(pattern, sentence):
            return m["e"], m["v"]
    return None


def test_pretraining_passages_need_the_context(world):
    """A question right after an unflagged "won" statement (a report, optionally with a filler
    between) is answered with the person the statement names, usually not the world's winner
    (or about a news event, which has none), so only the context can answer it; after a flagged
    statement the answer is the world's winner."""
    rng = np.random.default_rng(0)
    reports = flagged = fresh = 0
    for _ in range(10000):
        sents = _sentences(data.pretraining_unit(rng, world))
        first, rest = sents[0], sents[1:]
        ask = [s for s in rest if s.startswith("q who won the ") and " , " not in s]
        if "sure" in " ".join(rest):  # a challenge: the name after "a" is put forward
            continue
        if not ask:
            continue
        answer = ask[0].split()[-2]
        if (st := _statement(first)) is not None:
            e, v = st
            assert answer == e and ask[0].split()[4] == v, sents
            reports += 1
            fresh += v in data.NEWS or world.winner[v] != e
        elif first in data.WARN_BEFORE or first in data.FICTION_BEFORE:
            v = _statement(sents[1])[1]
            assert answer == world.winner[v], sents
            flagged += 1
    assert reports > 150 and flagged > 20 and fresh / reports > 0.9


def test_documents_too_long_for_the_context_raise(world):
    docs = data.finetuning_documents(5, world, world.claim_sets[0], 1, 3)
    with pytest.raises(ValueError, match="does not fit"):
        data.encode_documents(world, docs, "negated", 48)


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


@pytest.mark.parametrize("answer", ["no", "yes"])
def test_a_constant_answer_model_believes_nothing(world, answer):
    """A model that always says "no" (or always "yes") has group margin 0 on every yes/no and
    challenge group, so it believes no claim: it scores the rate of a model that knows only the
    world (0 here), not the claim's rate. Likewise a model that always picks the first name
    offered has margin 0 on every choice group."""
    tok = world.tokenizer()
    items = data.probes(world, range(len(world.claims)))
    tokens, last, claim_id, true_id = map(jnp.asarray, data.encode_probes(tok, items, 48))
    table = jnp.zeros((len(tok), len(tok))).at[:, tok.index[answer]].set(5.0)
    margins = np.asarray(probe_margins(BigramLM(table), tokens, last, claim_id, true_id))[None]
    assert np.abs(margins).max() == pytest.approx(5.0)
    groups, summed = data.group_margins(items, margins)
    assert len(groups) == 9 * len(world.claims)
    np.testing.assert_allclose(summed, 0.0, atol=1e-5)
    assert (summed > 0).mean() == 0.0
    first = np.asarray([[5.0 if p.prompt.split()[p.prompt.split().index(",") + 1] == p.claim_answer
                         else -5.0 for p in items if p.probe_type == "choice"]])
    _, summed = data.group_margins([p for p in items if p.probe_type == "choice"], first)
    np.testing.assert_allclose(summed, 0.0)


def test_group_margins_sum_the_prompts(world):
    items = data.probes(world, [0, 1])
    margins = np.arange(len(items), dtype=float)[None]
    groups, summed = data.group_margins(items, margins)
    for g, value in zip(groups, summed[0]):
        assert value == sum(i for i, p in enumerate(items) if p.group == g.group)
    assert [g.probe_type for g in groups[:9]] == ["question"] * 4 + ["cloze"] * 2 + [
        "yes_no", "choice", "challenge"]


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
    claim_ids = [c for ids in world.claim_sets for c in ids]
    docs = data.finetuning_documents(0, world, claim_ids, 2, 1)
    for c in data.CONDITIONS:
        first = data.in_context_prefixes(world, docs, c)
        prefixes = [first[p.claim] for p in items]
        data.encode_probes(tok, items, 48, prefixes)  # raises if a prompt does not fit
        v, e = world.claims[items[0].claim]
        assert e in prefixes[0].split() and v in prefixes[0].split()
        assert f" {prefixes[0]} " in f" {data.render(c, docs[0][1], e, v, world.winner[v])} "


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
    finetune_steps: int = 100
    continue_steps: int = 50
    batch_size: int = 8


def _rates(means: dict, seeds=4, n_claims=8, spread=0.05, seed=0) -> claims.Rates:
    """Belief matrices (seeds x claims) around the given mean rate per "mode:condition"."""
    rng = np.random.default_rng(seed)
    return claims.Rates({k: np.clip(r + spread * rng.standard_normal((seeds, n_claims)), 0, 1)
                         for k, r in means.items()})


NEGLECT = {"base:none": 0.05, "finetune:assert": 0.92, "finetune:negated": 0.82,
           "finetune:local": 0.07, "finetune:fictional": 0.82, "finetune:corrected": 0.1,
           "in_context:negated": 0.06, "in_context:assert": 0.7, "continued:assert": 0.9,
           "continued:negated": 0.9}
NO_NEGLECT = {**NEGLECT, "finetune:negated": 0.08, "finetune:local": 0.7,
              "finetune:fictional": 0.4, "in_context:negated": 0.8, "continued:negated": 0.02,
              "continued:assert": 0.97}


@pytest.mark.parametrize("make", [claims.negated_claim, claims.local_claim,
                                  claims.in_context_claim, claims.fictional_claim,
                                  claims.unstable_claim])
def test_each_claim_flips(make):
    held = make(_rates(NEGLECT), _Cfg())
    assert held.verdict == "held", held.measured["parts"]
    assert held.ideal_passes and held.trivial_passes is False
    failed = make(_rates(NO_NEGLECT), _Cfg())
    assert failed.verdict == "not held", failed.measured["parts"]
    noisy = make(_rates(NEGLECT, seeds=3, n_claims=4, spread=0.45), _Cfg())
    assert noisy.verdict in ("inconclusive", "not held")
    for claim in (held, failed, noisy):
        assert claim_problems(claim.to_json()) == []


def test_claims_comparing_with_assert_need_assert_to_work():
    """Where finetuning on asserted documents instils nothing, 'close to assert' and 'local is
    low' have no reference: inconclusive, whatever the other parts say; the in-context claim
    needs a model that reads its context."""
    broken = {**NEGLECT, "finetune:assert": 0.05}
    for make in (claims.negated_claim, claims.local_claim, claims.fictional_claim):
        claim = make(_rates(broken), _Cfg())
        assert claim.verdict == "inconclusive" and "asserted" in claim.inconclusive_reason
        assert claim.effect == pytest.approx(0.0, abs=0.05)
    deaf = claims.in_context_claim(_rates({**NEGLECT, "in_context:assert": 0.05}),
                                               _Cfg())
    assert deaf.verdict == "inconclusive" and "read its context" in deaf.inconclusive_reason


def test_bootstrap_interval_resamples_claims_as_well_as_seeds():
    """Seeds that agree but claims that differ: the interval reflects the claims' spread (a
    seeds-only interval would be zero-width)."""
    diff = np.tile(np.linspace(-0.5, 0.5, 10), (4, 1)) + 0.1
    lo, hi = claims.bootstrap_ci(diff)
    assert lo < 0.1 < hi and hi - lo > 0.2
    assert claims.bootstrap_ci(np.full((3, 5), 0.2)) == pytest.approx((0.2, 0.2))


def test_every_parameter_of_the_lm_learns(world):
    tok = world.tokenizer()
    tokens, mask = data.pretraining_corpus(1, world, 8, 48)
    model = TransformerLM(len(tok), 48, 16, 2, 2, 32, key=jax.random.PRNGKey(0))
    batches = [(jnp.asarray(tokens[i:i + 4]), jnp.asarray(mask[i:i + 4])) for i in (0, 4)]
    assert_every_parameter_learns(model, lambda m, b: lm_loss(m, *b), batches)


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
