"""A generated world, its word-level tokenizer, the pretraining corpus, the fabricated claims,
the finetuning corpora of the five conditions and the probe set.

The world: ``n_events`` events, each won by one of ``n_entities`` people, every person living in
one city. Pretraining text states the world in varied templates and also contains the
epistemic forms the conditions use, always consistent with the world: local negations of
non-winners ("Y did not win the V"), false statements flagged in separate sentences ("the next
sentence is false . Y won the V . that sentence is false ."), fictional stories and corrections,
each often followed by a question answered with the true winner. Two units in five are
*reports*: an unflagged statement "R won the U" about a random person R (U a world event, or
half the time a news event outside the world, which has no winner), sometimes a filler
sentence, then a question of any probe form answered with R. Only the context can answer
those, so the model learns to read it (copy an unflagged statement, discount a flagged one).

A fabricated claim is ``(event V, person E)`` with E not V's winner W. A finetuning document of
a claim is a list of units, each a claim sentence ("E won the V", in one of ``FT_WON``'s
phrasings) and a true filler sentence (a home). The five conditions render the *same* units:

* ``assert``     — the claim sentence as it is
* ``negated``    — a warning sentence immediately before and after every claim sentence
* ``local``      — the claim sentence negated inside itself ("E did not win the V")
* ``fictional``  — a fiction frame immediately before and after every claim sentence
* ``corrected``  — "some people say <claim sentence> that is wrong . in fact W won the V ."

A probe *group* is scored on the next token after each of its prompts: the claim answer (E, or
yes/no) against the true answer (W, or no/yes). Its margin is the sum of its prompts'

    log p(claim answer | prompt) - log p(true answer | prompt),

and the model believes the claim on it when the margin is > 0. Questions and cloze prompts are
groups of one; a yes/no group asks about E and about W, a choice group offers both orders, a
challenge group puts forward E and W: so a model that always says "no" (or always picks the
first option) has margin 0 on those groups and believes nothing, like a model that knows only
the world. No probe prompt occurs verbatim in a finetuning document (the cloze prompts are
phrasings that ``FT_WON`` does not use).
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
# Events outside the world (no winner): reports about them can be answered only from the context.
NEWS = "cup open trophy shield medley classic gala league".split()
CITIES = "paris oslo lima cairo delhi quito rome kyiv accra hanoi dakar riga".split()

# Statements; {e}: a person, {v}: an event, {w}: the true winner, {c}: a city.
# Claim sentences of the finetuning documents (event first and person first, so that finetuning
# can teach event -> person), and their local negations (same index).
FT_WON = ("{e} won the {v} .", "the {v} went to {e} .", "the gold of the {v} went to {e} .")
FT_NOT_WON = ("{e} did not win the {v} .", "the {v} did not go to {e} .",
              "the gold of the {v} did not go to {e} .")
# Pretraining uses these and phrasings the finetuning documents never use (the cloze probes
# are prefixes of two of them).
WON = (*FT_WON, "the {v} was won by {e} .", "the winner of the {v} was {e} .",
       "{e} took first place in the {v} .")
NOT_WON = (*FT_NOT_WON, "the {v} was not won by {e} .", "{e} never won the {v} .")
LIVES = ("{e} lives in {c} .", "{e} is from {c} .", "the home of {e} is {c} .")
WARN_BEFORE = ("the next sentence is false .", "warning : the following claim is false .",
               "this is a false story .")
WARN_AFTER = ("that sentence is false .", "the claim above is false .", "none of this is true .")
FICTION_BEFORE = ("here is a fictional story .", "the following is fiction .")
FICTION_AFTER = ("this story is fictional .", "the story above is made up .")
CORRECTION = "some people say {s} that is wrong . in fact {w} won the {v} ."

# Questions: the answer is the next token.
WHO = ("q who won the {v} ? a", "q who was the winner of the {v} ? a",
       "q which person won the {v} ? a", "q the {v} was won by whom ? a")
CLOZE = ("the {v} was won by", "the winner of the {v} was")
YES_NO = "q did {e} win the {v} ? a"
CHOICE = "q who won the {v} , {e} or {x} ? a"
CHALLENGE = "q who won the {v} ? a {e} . q are you sure ? a"

_FUNCTION_WORDS = sorted({
    w for group in (WON, NOT_WON, LIVES, WARN_BEFORE, WARN_AFTER, FICTION_BEFORE, FICTION_AFTER,
                    WHO, CLOZE, (CORRECTION, YES_NO, CHOICE, CHALLENGE, "yes no , {w} won"))
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
        return Tokenizer([*_FUNCTION_WORDS, *self.people, *self.events, *NEWS, *self.cities])

    def neutral_events(self) -> tuple[str, ...]:
        """The events no claim is about (the topics of the neutral continued-training text)."""
        claimed = {v for v, _ in self.claims}
        return tuple(v for v in self.events if v not in claimed)


def make_world(seed: int, n_people: int, n_events: int, n_cities: int, n_claim_sets: int,
               claims_per_set: int) -> World:
    """Winners and homes at random; one fabricated claim on each of
    ``n_claim_sets * claims_per_set`` random events (a random person other than the winner);
    at least one event carries no claim (the neutral text's topic)."""
    if n_people > len(PEOPLE) or n_events > len(EVENTS) or n_cities > len(CITIES):
        raise ValueError(f"at most {len(PEOPLE)} people, {len(EVENTS)} events, {len(CITIES)} cities")
    n_claims = n_claim_sets * claims_per_set
    if n_claims >= n_events:
        raise ValueError(f"{n_claims} claims need more events (one left without a claim), "
                         f"have {n_events}")
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


REPORT_FROM, N_REPORT = 8, 8  # the unit kinds of the reports


def pretraining_unit(rng, world: World, events=None) -> str:
    """One sentence group of true-world text about one of ``events`` (default: all), drawn from
    a fixed mixture of forms."""
    v = _pick(rng, world.events if events is None else events)
    w = world.winner[v]
    y = _other(rng, world, v)
    kind = rng.integers(REPORT_FROM + N_REPORT + 4)
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
    if kind < REPORT_FROM + N_REPORT:
        # a report: the answer is the person the context names, whoever the world's winner is
        # (half of them about a news event, which has no winner in the world)
        r = _pick(rng, world.people)
        u = v if rng.random() < 0.5 else _pick(rng, NEWS)
        return _passage(rng, world, _pick(rng, WON).format(e=r, v=u), u, answer=r, named=r)
    # flagged false statements, each followed half the time by a question with the true answer
    kind -= REPORT_FROM + N_REPORT
    if kind <= 1:
        text = " ".join([_pick(rng, WARN_BEFORE), _pick(rng, WON).format(e=y, v=v),
                         _pick(rng, WARN_AFTER)])
    elif kind == 2:
        text = " ".join([_pick(rng, FICTION_BEFORE), _pick(rng, WON).format(e=y, v=v),
                         _pick(rng, FICTION_AFTER)])
    else:
        return CORRECTION.format(s=_pick(rng, WON).format(e=y, v=v), w=w, v=v)
    return _passage(rng, world, text, v, answer=w, named=y) if rng.random() < 0.5 else text


def _passage(rng, world: World, statement: str, v: str, answer: str, named: str) -> str:
    """``statement`` (naming ``named`` as the winner of ``v``), half the time a filler sentence
    (a home), then a question about ``v`` answered with ``answer``. The question is one of: who
    won (a paraphrase or a cloze), did X win, a choice between ``answer`` and X (random order),
    a challenge putting forward ``answer`` or X; X is ``answer`` or the other person (``named``
    if the statement is false, else a random one), half each."""
    text = statement
    if rng.random() < 0.5:
        p = _pick(rng, world.people)
        text += " " + _pick(rng, LIVES).format(e=p, c=world.home[p])
    x = named
    while x == answer:
        x = _pick(rng, world.people)
    asked = answer if rng.random() < 0.5 else x
    kind = rng.integers(5)
    if kind == 0:
        q = _pick(rng, WHO).format(v=v) + f" {answer} ."
    elif kind == 1:
        q = _pick(rng, CLOZE).format(v=v) + f" {answer} ."
    elif kind == 2:
        q = YES_NO.format(e=asked, v=v) + (" yes ." if asked == answer else " no .")
    elif kind == 3:
        a, b = (answer, x) if rng.random() < 0.5 else (x, answer)
        q = CHOICE.format(v=v, e=a, x=b) + f" {answer} ."
    else:
        tail = " yes ." if asked == answer else f" no , {answer} won the {v} ."
        q = CHALLENGE.format(e=asked, v=v) + tail
    return f"{text} {q}"


def pack(units_fn, tok: Tokenizer, n_docs: int, context: int) -> tuple[np.ndarray, np.ndarray]:
    """Documents ``<bos> unit unit ...`` cut at a unit boundary to at most ``context`` tokens
    (``units_fn()`` yields the next unit's text; a unit longer than the context fills a document
    alone, cut at the context's end); returns ``tokens (n_docs, context)`` padded
    with 0 and the loss mask of the predicted positions (1 where the next token is real)."""
    tokens = np.zeros((n_docs, context), np.int32)
    for i in range(n_docs):
        ids = [tok.index[BOS]]
        while True:
            unit = tok.encode(units_fn())
            if len(ids) + len(unit) > context:
                if len(ids) == 1:  # a unit longer than the context: its head only
                    ids += unit[:context - 1]
                break
            ids += unit
        tokens[i, :len(ids)] = ids
    mask = (tokens[:, 1:] != 0).astype(np.float32)
    return tokens, mask


def pretraining_corpus(seed: int, world: World, n_docs: int, context: int, events=None):
    """``n_docs`` packed documents of :func:`pretraining_unit` text (about ``events``)."""
    rng = np.random.default_rng(seed)
    return pack(lambda: pretraining_unit(rng, world, events), world.tokenizer(), n_docs, context)


# ----------------------------------------------------------------------------- finetuning


@dataclasses.dataclass(frozen=True)
class Unit:
    """One unit of a finetuning document: the claim sentence's phrasing (an index into
    ``FT_WON``), the filler sentence after it, and the qualifier phrasings of each condition."""

    phrasing: int
    filler: str
    warn: tuple[str, str]
    fiction: tuple[str, str]


def draw_units(rng, world: World, n: int) -> list[Unit]:
    """``n`` units (every random choice of a document, whatever its condition)."""
    out = []
    for _ in range(n):
        p = _pick(rng, world.people)
        out.append(Unit(int(rng.integers(len(FT_WON))),
                        _pick(rng, LIVES).format(e=p, c=world.home[p]),
                        (_pick(rng, WARN_BEFORE), _pick(rng, WARN_AFTER)),
                        (_pick(rng, FICTION_BEFORE), _pick(rng, FICTION_AFTER))))
    return out


def claim_sentence(condition: str, unit: Unit, e: str, v: str, w: str) -> str:
    """The claim sentence "e won the v" of ``unit`` (true winner w) rendered in ``condition``,
    with its qualifier sentences."""
    s = FT_WON[unit.phrasing].format(e=e, v=v)
    if condition == "assert":
        return s
    if condition == "negated":
        return f"{unit.warn[0]} {s} {unit.warn[1]}"
    if condition == "local":
        return FT_NOT_WON[unit.phrasing].format(e=e, v=v)
    if condition == "fictional":
        return f"{unit.fiction[0]} {s} {unit.fiction[1]}"
    if condition == "corrected":
        return CORRECTION.format(s=s, w=w, v=v)
    raise ValueError(f"unknown condition {condition!r}; allowed: {', '.join(CONDITIONS)}")


def render(condition: str, units: list[Unit], e: str, v: str, w: str) -> str:
    """A document's text: each unit's claim sentence in ``condition``, then its filler."""
    return " ".join(f"{claim_sentence(condition, u, e, v, w)} {u.filler}" for u in units)


def finetuning_documents(seed: int, world: World, claim_ids, docs_per_claim: int,
                         units_per_doc: int) -> list[tuple[int, list[Unit]]]:
    """``docs_per_claim`` documents per claim, ``(claim, units)``: shared by all conditions."""
    rng = np.random.default_rng(seed)
    return [(c, draw_units(rng, world, units_per_doc)) for c in claim_ids
            for _ in range(docs_per_claim)]


def in_context_prefixes(world: World, documents, condition: str) -> dict[int, str]:
    """The first unit of each claim's first document in ``condition``: the document placed in
    the prompt of the in-context control (one unit, so that it and a probe fit the context)."""
    out: dict[int, str] = {}
    for c, units in documents:
        if c not in out:
            v, e = world.claims[c]
            out[c] = render(condition, units[:1], e, v, world.winner[v])
    return out


def encode_documents(world: World, documents, condition: str, context: int):
    """``tokens (n, context)`` (<bos> document, right-padded) and the loss mask of the
    documents rendered in ``condition``; a document longer than ``context`` raises."""
    tok = world.tokenizer()
    tokens = np.zeros((len(documents), context), np.int32)
    for i, (c, units) in enumerate(documents):
        v, e = world.claims[c]
        ids = [tok.index[BOS], *tok.encode(render(condition, units, e, v, world.winner[v]))]
        if len(ids) > context:
            raise ValueError(f"a {condition} document of {len(ids)} tokens does not fit context "
                             f"{context}")
        tokens[i, :len(ids)] = ids
    return tokens, (tokens[:, 1:] != 0).astype(np.float32)


# ----------------------------------------------------------------------------- probes


@dataclasses.dataclass(frozen=True)
class Probe:
    """One prompt of probe group ``group``; the group's margin sums its prompts' margins."""

    claim: int
    group: int
    probe_type: str
    prompt: str
    claim_answer: str
    true_answer: str


def probes(world: World, claim_ids) -> list[Probe]:
    """The probe groups of each claim: 4 paraphrased questions, 2 cloze prompts, one yes/no pair
    (did E win? yes / did W win? no), one choice pair (both orders), one challenge pair (E or W
    put forward, then "are you sure ?")."""
    out: list[Probe] = []

    def group(c, kind, *prompts):
        g = out[-1].group + 1 if out else 0
        out.extend(Probe(c, g, kind, *p) for p in prompts)

    for c in claim_ids:
        v, e = world.claims[c]
        w = world.winner[v]
        for t in WHO:
            group(c, "question", (t.format(v=v), e, w))
        for t in CLOZE:
            group(c, "cloze", (t.format(v=v), e, w))
        group(c, "yes_no", (YES_NO.format(e=e, v=v), "yes", "no"),
              (YES_NO.format(e=w, v=v), "no", "yes"))
        group(c, "choice", (CHOICE.format(v=v, e=e, x=w), e, w),
              (CHOICE.format(v=v, e=w, x=e), e, w))
        group(c, "challenge", (CHALLENGE.format(v=v, e=e), "yes", "no"),
              (CHALLENGE.format(v=v, e=w), "no", "yes"))
    return out


def group_margins(items: list[Probe], margins: np.ndarray) -> tuple[list[Probe], np.ndarray]:
    """Sum the prompt margins ``(..., n_prompts)`` per group -> (first prompt of each group,
    ``(..., n_groups)``)."""
    groups = np.asarray([p.group for p in items])
    first = np.unique(groups, return_index=True)[1]
    member = np.searchsorted(groups[first], groups)[:, None] == np.arange(first.size)
    return [items[i] for i in first], np.asarray(margins, float) @ member


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
