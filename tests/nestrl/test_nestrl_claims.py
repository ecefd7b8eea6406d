"""Each nestrl claim predicate on synthetic pairs tables: one that holds, one that does not,
and one that is inconclusive (the baseline does not beat the trivial ego, or the CI contains 0)."""

from types import SimpleNamespace

import numpy as np
import pytest

from repro26.nestrl import claims, evaluate
from repro26.nestrl.env import SCRIPTED

CFG = SimpleNamespace(seeds=(0, 1, 2, 3), levels=2, layouts=("cramped_room",))
JITTER = np.array([0.0, 1.0, -1.0, 0.5])
BASE = {"heldout": 10.0, "q1": 2.0, "q4": 3.0, "self": 10.0, "cross": 10.0}


def pairs_table(spec):
    """pairs.csv rows: ego e of seed s with every partner; ``spec[e]`` gives the held-out return,
    its first and last quarter, the return with itself and with its kind from other seeds."""
    learned = evaluate.ego_types(CFG)
    partners = [(p, ps) for p in learned for ps in CFG.seeds] + [(p, -1) for p in SCRIPTED]
    rows = {k: [] for k in ("layout", "ego", "seed", "partner", "partner_seed", "partner_group",
                            "return", "q1", "q4")}
    for ego in [*learned, *evaluate.TRIVIAL]:
        v = {**BASE, **spec.get(ego, {})}
        for s in CFG.seeds:
            for p, ps in partners:
                group = evaluate.partner_group(ego, s, p, ps)
                if p == ego:
                    ret = v["self"] if ps in (s, -1) else v["cross"]
                else:
                    ret = v["heldout"] if group in claims.HELDOUT_GROUPS else 0.0
                q1, q4 = (v["q1"], v["q4"]) if group in claims.HELDOUT_GROUPS else (0.0, 0.0)
                for k, x in (("layout", "cramped_room"), ("ego", ego), ("seed", s), ("partner", p),
                             ("partner_seed", ps), ("partner_group", group),
                             ("return", ret + JITTER[s]), ("q1", q1), ("q4", q4 + JITTER[s])):
                    rows[k].append(x)
    return {k: np.asarray(v) for k, v in rows.items()}


NEST = "level2"


@pytest.mark.parametrize(("spec", "verdict"), [
    ({NEST: {"heldout": 60}, "fcp": {"heldout": 40}, "sp": {"heldout": 30},
      "subtask": {"heldout": 20}, "random": {"heldout": 0}}, "held"),
    ({NEST: {"heldout": 30}, "fcp": {"heldout": 50}, "sp": {"heldout": 45},
      "subtask": {"heldout": 20}, "random": {"heldout": 0}}, "not held"),
    ({NEST: {"heldout": 60}, "fcp": {"heldout": 15}, "sp": {"heldout": 30},
      "subtask": {"heldout": 20}, "random": {"heldout": 0}}, "inconclusive"),
])
def test_heldout_return(spec, verdict):
    assert claims.heldout_return_claim(pairs_table(spec), CFG).verdict == verdict


@pytest.mark.parametrize(("spec", "verdict"), [
    ({NEST: {"q1": 5, "q4": 20}, "fcp": {"heldout": 40, "q1": 8, "q4": 10},
      "subtask": {"heldout": 20}}, "held"),
    ({NEST: {"q1": 8, "q4": 9}, "fcp": {"heldout": 40, "q1": 5, "q4": 20},
      "subtask": {"heldout": 20}}, "not held"),
    ({NEST: {"q1": 5, "q4": 20}, "fcp": {"heldout": 10, "q1": 8, "q4": 10},
      "subtask": {"heldout": 20}}, "inconclusive"),
])
def test_adaptability(spec, verdict):
    assert claims.adaptability_claim(pairs_table(spec), CFG).verdict == verdict


@pytest.mark.parametrize(("spec", "verdict"), [
    ({"sp": {"self": 80, "cross": 20}, NEST: {"self": 50, "cross": 48},
      "subtask": {"self": 20}}, "held"),
    ({"sp": {"self": 80, "cross": 60}, NEST: {"self": 80, "cross": 10},
      "subtask": {"self": 20}}, "not held"),
    ({"sp": {"self": 15, "cross": 2}, NEST: {"self": 50, "cross": 48},
      "subtask": {"self": 20}}, "inconclusive"),
])
def test_no_partner_specific_conventions(spec, verdict):
    assert claims.convention_claim(pairs_table(spec), CFG).verdict == verdict
