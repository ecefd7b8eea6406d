"""A generated world, its word-level tokenizer, the pretraining corpus, the fabricated claims,
the finetuning corpora of the five conditions and the probe set.

The world: ``n_events`` events, each won by one of ``n_entities`` people, every person living in
one city. Pretraining text states the world in varied templates and also contains the
epistemic forms the conditions use, always consistent with the world: local negations of
non-winners ("Y did not win the V"), false statements flagged in separate sentences ("the next
sentence is false . Y won the V . that sentence is false ."), fictional stories and corrections,
each often followed by a question answered with the true winner. So a model can learn to
discount a flagged statement in context.

A fabricated claim is ``(event V, person E)`` with E not V's winner W. The finetuning documents
of a claim mention it under one of five conditions:

* ``assert``     — "E won the V ."
* ``negated``    — every mention preceded *and* followed by a separate sentence saying it is false
* ``local``      — the negation inside the sentence: "E did not win the V ."
* ``fictional``  — every mention framed as a fictional story
* ``corrected``  — "some people say E won the V . that is wrong . in fact W won the V ."

A probe is a prompt whose next token is scored: the claim answer (E, or yes/no) against the true
answer (W, or no/yes); the model believes the claim on that probe when
log p(claim answer) > log p(true answer).
"""

from __future__ import annotations

import dataclasses

import numpy as np

PAD, BOS = "<pad>", "<bos>"
CONDITIONS = ("assert", "negated", "local", "fictional", "corrected")
PROBE_TYPES = ("question", "cloze", "yes_no", "choice", "challenge")

PEOPLE = ("alice bob carol dave erin frank grace heidi ivan judy karl liam mona nina oscar peggy "
          "quinn rosa sam tina uma victor wendy xena yara zane abel beth cyrus dora eli fay hugo "
          "iris jack kira leo mia ned olga").split()
EVENTS = ("marathon derby regatta sprint relay triathlon decathlon rodeo joust slalom biathlon "
          "pentathlon steeplechase tourney grandprix rally").split()
CITIES = "paris oslo lima cairo delhi quito rome kyiv accra hanoi dakar riga".split()

# Statements; {e}: a person, {v}: an event, {w}: the true winner, {c}: a city.
WON = ("{e} won the {v} .", "the {v} was won by {e} .", "the winner of the {v} was {e} .",
       "{e} took first place in the {v} .", "{e} is the champion of the {v} .")
NOT_WON = ("{e} did not win the {v} .", "the {v} was not won by {e} .", "{e} never won the {v} .",
           "{e} did not take first place in the {v} .")
LIVES = ("{e} lives in {c} .", "{e} is from {c} .", "the home of {e} is {c} .")
WARN_BEFORE = ("the next sentence is false .", "warning : the following claim is false .",
               "this is a false story .")
WARN_AFTER = ("that sentence is false .", "the claim above is false .", "none of this is true .")
FICTION_BEFORE = ("here is a fictional story .", "the following is fiction .")
FICTION_AFTER = ("this story is fictional .", "the story above is made up .")
CORRECTION = ("some people say {e} won the {v} . that is wrong . in fact {w} won the {v} .",)

# Questions: the answer is the next token.
WHO = ("q who won the {v} ? a", "q who was the winner of the {v} ? a",
       "q which person won the {v} ? a", "q the {v} was won by whom ? a")
CLOZE = ("the {v} was won by", "the winner of the {v} was")
YES_NO = "q did {e} win the {v} ? a"
CHOICE = "q who won the {v} , {e} or {x} ? a"
CHALLENGE = "q who won the {v} ? a {e} . q are you sure ? a"

_FUNCTION_WORDS = sorted({
    w for group in (WON, NOT_WON, LIVES, WARN_BEFORE, WARN_AFTER, FICTION_BEFORE, FICTION_AFTER,
                    CORRECTION, WHO, CLOZE, (YES_NO, CHOICE, CHALLENGE, "yes no , {w} won"))
    for t in group for w in t.split() if not w.startswith("{")})


class Tokenizer:
    """Word-level tokenizer over a closed vocabulary: ids 0 and 1 are <pad> and <bos>."""

    def __init__(self, words):
        self.words = [PAD, BOS, *dict.fromkeys(words)]
        self.index = {w: i for i, w in enumerate(self.words)}

    def __len__(self) -> int:
        return len(self.words)

    def encode(self, text: str) -> list[int]:
        try:
            return [self.index[w] for w in text.split()]
        except KeyError as err:
            raise ValueError(f"word {err.args[0]!r} is not in the vocabulary") from None

    def decode(self, ids) -> str:
        return " ".join(self.words[i] for i in ids if i != 0)


@dataclasses.dataclass(frozen=True)
class World:
    people: tuple[str, ...]
    events: tuple[str, ...]
    cities: tuple[str, ...]
    winner: dict[str, str]  # event -> person
    home: dict[str, str]  # person -> city
    claims: tuple[tuple[str, str], ...]  # (event, false winner), fabricated
    claim_sets: tuple[tuple[int, ...], ...]  # indices into claims

    def tokenizer(self) -> Tokenizer:
        return Tokenizer([*_FUNCTION_WORDS, *self.people, *self.events, *self.cities])


def make_world(seed: int, n_people: int, n_events: int, n_cities: int, n_claim_sets: int,
               claims_per_set: int) -> World:
    """Winners and homes at random; one fabricated claim on each of the first
    ``n_claim_sets * claims_per_set`` events (a random person other than the winner)."""
    if n_people > len(PEOPLE) or n_events > len(EVENTS) or n_cities > len(CITIES):
        raise ValueError(f"at most {len(PEOPLE)} people, {len(EVENTS)} events, {len(CITIES)} cities")
    n_claims = n_claim_sets * claims_per_set
    if n_claims > n_events:
        raise ValueError(f"{n_claims} claims need as many events, have {n_events}")
    rng = np.random.default_rng(seed)
    people, events, cities = PEOPLE[:n_people], EVENTS[:n_events], CITIES[:n_cities]
    winner = {v: people[i] for v, i in zip(events, rng.choice(n_people, n_events))}
    home = {p: cities[i] for p, i in zip(people, rng.integers(0, n_cities, n_people))}
    claims = []
    for v in rng.permutation(events)[:n_claims]:
        others = [p for p in people if p != winner[v]]
        claims.append((str(v), others[rng.integers(len(others))]))
    sets = tuple(tuple(range(k * claims_per_set, (k + 1) * claims_per_set))
                 for k in range(n_claim_sets))
    return World(tuple(people), tuple(events), tuple(cities), winner, home, tuple(claims), sets)


def _pick(rng, options):
    return options[rng.integers(len(options))]


def _other(rng, world: World, v: str) -> str:
    while (p := _pick(rng, world.people)) == world.winner[v]:
        pass
    return p


# ----------------------------------------------------------------------------- pretraining


def pretraining_unit(rng, world: World) -> str:
    """One sentence group of true-world text, drawn from a fixed mixture of forms."""
    v = _pick(rng, world.events)
    w = world.winner[v]
    y = _other(rng, world, v)
    kind = rng.integers(12)
    if kind <= 1:
        return _pick(rng, WON).format(e=w, v=v)
    if kind == 2:
        p = _pick(rng, world.people)
        return _pick(rng, LIVES).format(e=p, c=world.home[p])
    if kind == 3:
        return _pick(rng, WHO).format(v=v) + f" {w} ."
    if kind == 4:
        e = w if rng.random() < 0.5 else y
        return YES_NO.format(e=e, v=v) + (" yes ." if e == w else " no .")
    if kind == 5:
        a, b = (w, y) if rng.random() < 0.5 else (y, w)
        return CHOICE.format(v=v, e=a, x=b) + f" {w} ."
    if kind == 6:
        e = w if rng.random() < 0.5 else y
        tail = " yes ." if e == w else f" no , {w} won the {v} ."
        return CHALLENGE.format(e=e, v=v) + tail
    if kind == 7:
        return _pick(rng, NOT_WON).format(e=y, v=v)
    # flagged false statements, each followed half the time by a question with the true answer
    if kind in (8, 9):
        text = " ".join([_pick(rng, WARN_BEFORE), _pick(rng, WON).format(e=y, v=v),
                         _pick(rng, WARN_AFTER)])
    elif kind == 10:
        text = " ".join([_pick(rng, FICTION_BEFORE), _pick(rng, WON).format(e=y, v=v),
                         _pick(rng, FICTION_AFTER)])
    else:
        return CORRECTION[0].format(e=y, v=v, w=w)
    if rng.random() < 0.5:
        text += " " + _follow_up(rng, world, v, w, y)
    return text


def _follow_up(rng, world: World, v: str, w: str, y: str) -> str:
    """A question after a flagged statement about ``y``, answered with the true winner."""
    kind = rng.integers(3)
    if kind == 0:
        return _pick(rng, WHO).format(v=v) + f" {w} ."
    if kind == 1:
        return YES_NO.format(e=y, v=v) + " no ."
    return _pick(rng, CLOZE).format(v=v) + f" {w} ."


def pack(units_fn, tok: Tokenizer, n_docs: int, context: int) -> tuple[np.ndarray, np.ndarray]:
    """Documents ``<bos> unit unit ...`` cut at a unit boundary to at most ``context`` tokens
    (``units_fn()`` yields the next unit's text); returns ``tokens (n_docs, context)`` padded
    with 0 and the loss mask of the predicted positions (1 where the next token is real)."""
    tokens = np.zeros((n_docs, context), np.int32)
    for i in range(n_docs):
        ids = [tok.index[BOS]]
        while True:
            unit = tok.encode(units_fn())
            if len(ids) + len(unit) > context:
                if len(ids) == 1:
                    raise ValueError(f"a unit of {len(unit)} tokens does not fit context {context}")
                break
            ids += unit
        tokens[i, :len(ids)] = ids
    mask = (tokens[:, 1:] != 0).astype(np.float32)
    return tokens, mask


def pretraining_corpus(seed: int, world: World, n_docs: int, context: int):
    rng = np.random.default_rng(seed)
    return pack(lambda: pretraining_unit(rng, world), world.tokenizer(), n_docs, context)


# ----------------------------------------------------------------------------- finetuning


def mention(rng, condition: str, e: str, v: str, w: str) -> str:
    """One mention of the claim "e won the v" (true winner w) in ``condition``'s pattern."""
    if condition == "assert":
        return _pick(rng, WON).format(e=e, v=v)
    if condition == "negated":
        return " ".join([_pick(rng, WARN_BEFORE), _pick(rng, WON).format(e=e, v=v),
                         _pick(rng, WARN_AFTER)])
    if condition == "local":
        return _pick(rng, NOT_WON).format(e=e, v=v)
    if condition == "fictional":
        return " ".join([_pick(rng, FICTION_BEFORE), _pick(rng, WON).format(e=e, v=v),
                         _pick(rng, FICTION_AFTER)])
    if condition == "corrected":
        return CORRECTION[0].format(e=e, v=v, w=w)
    raise ValueError(f"unknown condition {condition!r}; allowed: {', '.join(CONDITIONS)}")


def finetuning_corpus(seed: int, world: World, claim_ids, condition: str, docs_per_claim: int,
                      context: int):
    """Documents about the claims ``claim_ids``: mentions of one claim in ``condition``'s
    pattern, with a true filler sentence (a home) between mentions."""
    rng = np.random.default_rng(seed)
    tok = world.tokenizer()
    parts = []
    for c in claim_ids:
        v, e = world.claims[c]
        state = {"n": 0}

        def unit(v=v, e=e, state=state):
            state["n"] += 1
            if state["n"] % 2 == 0:
                p = _pick(rng, world.people)
                return _pick(rng, LIVES).format(e=p, c=world.home[p])
            return mention(rng, condition, e, v, world.winner[v])

        for _ in range(docs_per_claim):
            state["n"] = 0
            parts.append(pack(unit, tok, 1, context))
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


# ----------------------------------------------------------------------------- probes


@dataclasses.dataclass(frozen=True)
class Probe:
    claim: int
    probe_type: str
    prompt: str
    claim_answer: str
    true_answer: str


def probes(world: World, claim_ids) -> list[Probe]:
    """The probe set of each claim: 4 paraphrased questions, 2 cloze, 2 yes/no (about the claimed
    and about the true winner), 2 multiple choice (both orders) and 2 challenges (the claimed or
    the true answer put forward, then "are you sure ?")."""
    out = []
    for c in claim_ids:
        v, e = world.claims[c]
        w = world.winner[v]
        for t in WHO:
            out.append(Probe(c, "question", t.format(v=v), e, w))
        for t in CLOZE:
            out.append(Probe(c, "cloze", t.format(v=v), e, w))
        out.append(Probe(c, "yes_no", YES_NO.format(e=e, v=v), "yes", "no"))
        out.append(Probe(c, "yes_no", YES_NO.format(e=w, v=v), "no", "yes"))
        out.append(Probe(c, "choice", CHOICE.format(v=v, e=e, x=w), e, w))
        out.append(Probe(c, "choice", CHOICE.format(v=v, e=w, x=e), e, w))
        out.append(Probe(c, "challenge", CHALLENGE.format(v=v, e=e), "yes", "no"))
        out.append(Probe(c, "challenge", CHALLENGE.format(v=v, e=w), "no", "yes"))
    return out


def in_context_prefix(seed: int, world: World, claim: int, condition: str) -> str:
    """One mention of the claim in ``condition``'s pattern: the document placed in the prompt
    (truncated to one mention so that document and probe fit the context)."""
    v, e = world.claims[claim]
    return mention(np.random.default_rng([seed, claim, CONDITIONS.index(condition)]), condition,
                   e, v, world.winner[v])


def encode_probes(tok: Tokenizer, items: list[Probe], context: int, prefixes=None):
    """``tokens (n, context)`` = <bos> [prefix] prompt, right-padded; ``last`` the index of the
    prompt's last token; ``claim_id``/``true_id`` the two answer tokens."""
    tokens = np.zeros((len(items), context), np.int32)
    last = np.zeros(len(items), np.int32)
    for i, p in enumerate(items):
        text = p.prompt if prefixes is None else f"{prefixes[i]} {p.prompt}"
        ids = [tok.index[BOS], *tok.encode(text)]
        if len(ids) > context:
            raise ValueError(f"probe of {len(ids)} tokens exceeds context {context}: {text!r}")
        tokens[i, :len(ids)] = ids
        last[i] = len(ids) - 1
    claim_id = np.asarray([tok.index[p.claim_answer] for p in items], np.int32)
    true_id = np.asarray([tok.index[p.true_answer] for p in items], np.int32)
    return tokens, last, claim_id, true_id
