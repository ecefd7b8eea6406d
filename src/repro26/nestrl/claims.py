"""The abstract's three claims (issues 24, 40) as predicates over ``pairs_<layout>.csv``.

Every number is per training seed (the layouts' mean), compared across seeds with a paired
Student-t 95% interval: a difference is *held* when its interval lies above 0, *not held* when
it lies below 0, and *inconclusive* when it contains 0 or when the baseline it is compared with
does not beat the strongest trivial ego (random or the scripted subtask agent) with the same
partners (DESIGN.md, "Claims that decide"). The minimum detectable effect of a paired
difference is the half-width of its 95% interval.

Held-out partners are every learned agent of the other seeds (self-play, FCP, MEP, every NestRL
level) and the scripted role-switching proxies, the two groups weighted equally. The ideal row is
a partner-aware oracle (:func:`oracle_cell`): with each held-out partner it plays the ego of its
seed (every learned type, the best response ``br``, the scripted egos) that did best with that
very partner, chosen on one half of the evaluation episodes and scored on the other (cross-fitted,
so the choice does not score its own noise). The trivial rows are the scripted egos. Budgets per
learner (its own environment and gradient steps) are read off the training tables and are equal
by design; the steps of training the learner's partners are listed beside them.
"""

from __future__ import annotations

import numpy as np

from repro26.core import tables
from repro26.core.claims import Claim
from repro26.core.method import claim_set
from repro26.core.stats import summary
from repro26.nestrl import names

HELDOUT_GROUPS = ("heldout_learned", "proxy")
PAIR_COLUMNS = ("ego", "seed", "partner_group", "return", "q1", "q4", "adapt")
# the training jobs behind each evaluated agent: its own job first, then its partners' jobs
LINEAGE = {"sp": ("level0",), "fcp": ("fcp", "level0"), "mep": ("mep", "mep_pop")}


def pair_tables(cfg) -> list[str]:
    return [f"tables/pairs_{layout}.csv" for layout in cfg.layouts]


def train_tables(cfg) -> list[str]:
    from repro26.nestrl.train import train_kinds

    return [f"runs/{layout}/{kind}.csv" for layout in cfg.layouts for kind in train_kinds(cfg)]


def read_pairs(run):
    return tables.concat([tables.read(p, PAIR_COLUMNS)
                          for p in run.inputs if p.name.startswith("pairs_")])


def lineage(cfg, agent: str) -> tuple[str, ...]:
    """Training jobs behind ``agent``: its own, then those of the partners it trained with
    (a level-k agent: levels k-1 .. 1 and the level-0 population; br: every job)."""
    if agent in LINEAGE:
        return LINEAGE[agent]
    if agent == names.BEST_RESPONSE:
        from repro26.nestrl.train import train_kinds

        return ("br", *(k for k in train_kinds(cfg) if k != "br"))
    k = int(agent.removeprefix("level"))
    return tuple(f"level{j}" for j in range(k, -1, -1))


def budgets(cfg, curves, agents) -> dict:
    """Per agent: its own environment and gradient steps (``env_steps``, ``optimiser_steps``,
    the last row of its job's training table, per learner) and the environment steps of every
    learner of its lineage (``env_steps_with_partners``)."""
    import equinox as eqx
    import jax

    from repro26.nestrl.env import N_ACTIONS
    from repro26.nestrl.model import ActorCritic

    def last(kind, column):
        rows = tables.select(curves, kind=kind)
        return float(np.max(np.asarray(rows[column], float)))

    def learners(kind):
        rows = tables.select(curves, kind=kind)
        return len(set(zip(rows["seed"].tolist(), rows["member"].tolist()))) / len(cfg.seeds)

    obs_dim = int(np.max(np.asarray(curves["obs_dim"], float)))
    model = ActorCritic(obs_dim, cfg.hidden, N_ACTIONS, key=jax.random.PRNGKey(0))
    n_params = sum(x.size for x in jax.tree.leaves(eqx.filter(model, eqx.is_inexact_array)))
    out = {}
    for agent in agents:
        jobs = lineage(cfg, agent)
        out[agent] = {"env_steps": last(jobs[0], "env_steps"),
                      "optimiser_steps": last(jobs[0], "gradient_steps"),
                      "parameters": float(n_params),
                      "env_steps_with_partners": sum(last(j, "env_steps") * learners(j)
                                                     for j in jobs)}
    return out


BUDGET_NOTE = {"env_steps_with_partners": "the steps of training the partners a learner met "
               "(the level-0 population for FCP and NestRL, the lower levels for NestRL, the MEP "
               "population for MEP, every job for the best response): nested training costs "
               "more in total by design; every learner's own steps are equal"}


def read_curves(run):
    return tables.concat([tables.read(p, ("kind", "seed", "member", "env_steps", "gradient_steps",
                                          "obs_dim"))
                          for p in run.inputs if p.parent.parent.name == "runs"])


def heldout_mean(pairs, cell, seeds, groups=HELDOUT_GROUPS) -> np.ndarray:
    """Per seed: ``cell(layout, seed, group)`` averaged over the held-out partner groups (learned
    agents of other seeds, scripted role-switching proxies; weighted equally), then layouts."""
    return np.asarray([np.mean([np.mean([cell(layout, seed, g) for g in groups])
                                for layout in tables.unique(pairs, "layout")]) for seed in seeds])


def per_seed_heldout(pairs, ego: str, value: str, seeds, groups=HELDOUT_GROUPS) -> np.ndarray:
    """Per seed: the ego's ``value`` averaged over the held-out partners (:func:`heldout_mean`)."""
    return heldout_mean(pairs, lambda layout, seed, g: np.mean(np.asarray(pairs[value][
        tables.where(pairs, layout=layout, ego=ego, seed=seed, partner_group=g)], float)),
        seeds, groups)


def oracle_cell(pairs, layout, seed, group, episodes) -> float:
    """The partner-aware oracle's mean return over the partners of ``group``: with each partner p
    it plays ``argmax_e R_1(e, p)`` over the egos e of ``seed`` and scores ``R_2`` of that ego,
    and the other way round, the two averaged, where ``R_k`` is the mean return over
    ``episodes`` (1-based repeats) in half k of the evaluation envs (independent draws). The
    oracle knows its partner and responds with the seed's best agent for it, the room left for
    any partner-aware agent built from these learners; cross-fitting keeps the choice from
    scoring its own noise (a max over noisy means is biased up)."""
    rows = tables.where(pairs, layout=layout, seed=seed, partner_group=group)
    halves = np.stack([np.mean([np.asarray(pairs[f"episode{j}_half{k}"], float)[rows]
                                for j in episodes], 0) for k in (1, 2)], 1)  # [rows, 2]
    partner = np.asarray([f"{p}/{s}" for p, s in zip(pairs["partner"][rows],
                                                     pairs["partner_seed"][rows])])
    scores = []
    for key in np.unique(partner):
        r = halves[partner == key]  # [egos, 2]
        scores.append((r[np.argmax(r[:, 0]), 1] + r[np.argmax(r[:, 1]), 0]) / 2)
    return float(np.mean(scores))


def oracle_heldout(pairs, seeds, episodes, groups=HELDOUT_GROUPS) -> np.ndarray:
    """Per seed: the oracle's return (:func:`oracle_cell`) with the held-out partners."""
    return heldout_mean(pairs, lambda layout, seed, g: oracle_cell(pairs, layout, seed, g,
                                                                  episodes), seeds, groups)


def ideal_adaptability(pairs, seeds, repeats: int) -> np.ndarray:
    """Per seed: the adaptability of an agent that adapts without error, FCP when reset and the
    oracle's choice once it has met the partner: the oracle's return minus FCP's over the
    repeated episodes 2..``repeats`` (those in which a memory can help)."""
    later = range(2, repeats + 1)
    return oracle_heldout(pairs, seeds, later) - np.mean(
        [per_seed_heldout(pairs, "fcp", f"episode{j}", seeds) for j in later], 0)


def self_and_cross(pairs, ego: str, seeds) -> tuple[np.ndarray, np.ndarray]:
    """Per seed: the ego's return with itself and its mean return with the same kind of agent
    from the other seeds (the diagonal and off-diagonal of its cross-play block)."""
    same, cross = [], []
    for seed in seeds:
        rows = tables.select(pairs, ego=ego, seed=seed, partner=ego)
        mask = rows["partner_seed"] == seed
        same.append(float(np.mean(rows["return"][mask])))
        cross.append(float(np.mean(rows["return"][~mask])))
    return np.asarray(same), np.asarray(cross)


def _diff(a, b) -> dict:
    return summary(np.asarray(a, float) - np.asarray(b, float))


def _sign(ci) -> str | None:
    """'above' / 'below' 0, or None when the interval contains 0."""
    return "above" if ci[0] > 0 else "below" if ci[1] < 0 else None


def _half(d: dict) -> float:
    """Half-width of a difference's 95% interval: its minimum detectable effect."""
    return (d["ci95"][1] - d["ci95"][0]) / 2


def _undecided(*names, keys=None):
    """Inconclusive when a compared baseline does not beat the trivial ego, or when the interval
    of a compared difference (``diff_vs_<name>``, or ``keys``) contains 0."""
    def reason(m):
        for base in names:
            if not m[f"{base}_beats_trivial"]:
                return (f"{base} ({m[f'{base}_return']['mean']:.1f}) does not beat the strongest "
                        f"trivial ego {m['trivial_name']} ({m['trivial_return']['mean']:.1f}) with "
                        "these partners")
        for key in keys or [f"diff_vs_{b}" for b in names]:
            ci = m[key]["ci95"]
            if _sign(ci) is None:
                return f"the 95% CI of {key}, [{ci[0]:.2f}, {ci[1]:.2f}], contains 0"
        return None
    return reason


def _trivial(pairs, seeds) -> tuple[str, dict[str, np.ndarray]]:
    """The stronger trivial ego with the held-out partners and every trivial ego's returns."""
    ret = {t: per_seed_heldout(pairs, t, "return", seeds) for t in names.TRIVIAL}
    return max(names.TRIVIAL, key=lambda t: ret[t].mean()), ret


def heldout_return_claim(pairs, cfg, budget=None) -> Claim:
    seeds = list(cfg.seeds)
    nest = names.nestrl_type(cfg)
    trivial, triv_ret = _trivial(pairs, seeds)
    ret = {e: per_seed_heldout(pairs, e, "return", seeds)
           for e in (nest, "fcp", "sp", names.BEST_RESPONSE)}
    ret[names.ORACLE] = oracle_heldout(pairs, seeds, range(1, cfg.eval_repeats + 1))
    ret.update(triv_ret)
    beats = lambda e: bool(_sign(_diff(ret[e], ret[trivial])["ci95"]) == "above")
    row = lambda e: {"nestrl": summary(ret[e]), "diff_vs_fcp": _diff(ret[e], ret["fcp"]),
                     "diff_vs_sp": _diff(ret[e], ret["sp"])}
    m = {**row(nest), "fcp_return": summary(ret["fcp"]), "sp_return": summary(ret["sp"]),
         "trivial_name": trivial, "trivial_return": summary(ret[trivial]),
         "fcp_beats_trivial": beats("fcp"), "sp_beats_trivial": beats("sp"),
         "nestrl_beats_trivial": beats(nest),
         "random": summary(ret["random"]), "subtask": summary(ret["subtask"]),
         "best_response": {**summary(ret[names.BEST_RESPONSE]),
                           "diff_vs_fcp": _diff(ret[names.BEST_RESPONSE], ret["fcp"])}}
    return Claim.check(
        "heldout_return",
        "NestRL achieves higher task performance with unseen adaptive agents than FCP and "
        "self-play.",
        "higher return with unseen adaptive partners and humans (abstract)",
        m,
        lambda m: all(_sign(m[f"diff_vs_{b}"]["ci95"]) == "above" for b in ("fcp", "sp")),
        f"paired over seeds, team return (20 per soup) of the level-{cfg.levels} agent minus FCP's "
        "and minus self-play's, with held-out partners (every learned agent of the other seeds "
        "and the role-switching scripted proxies, the two groups weighted equally): both 95% "
        "CIs above 0",
        compared_with={"trivial": f"{trivial} ego (the better of random and scripted subtask)",
                       "baselines": "FCP, self-play"},
        inconclusive_if=_undecided("fcp", "sp"),
        min_detectable_effect=lambda m: max(_half(m["diff_vs_fcp"]), _half(m["diff_vs_sp"])),
        effect=lambda m: min(m["diff_vs_fcp"]["mean"], m["diff_vs_sp"]["mean"]),
        trivial=row(trivial),
        trivial_note=f"the {trivial} ego in NestRL's place, same partners",
        ideal=row(names.ORACLE),
        ideal_note="a partner-aware oracle in NestRL's place: with each held-out partner it plays "
                   "whichever agent of its seed (every learned type, the best response trained "
                   "against the held-out learned partners, the scripted egos) did best with that "
                   "partner, chosen on half of the evaluation envs and scored on the other half, "
                   "both ways averaged: the room a partner-aware agent has on this task",
        budget=budget,
        budget_note=BUDGET_NOTE,
    )


def adaptability_claim(pairs, cfg, budget=None) -> Claim:
    seeds = list(cfg.seeds)
    nest = names.nestrl_type(cfg)
    trivial, triv_ret = _trivial(pairs, seeds)
    egos = (nest, "fcp", "sp", names.BEST_RESPONSE, *names.TRIVIAL)
    adapt = {e: per_seed_heldout(pairs, e, "adapt", seeds) for e in egos}
    within = {e: per_seed_heldout(pairs, e, "q4", seeds) - per_seed_heldout(pairs, e, "q1", seeds)
              for e in egos}
    fcp_ret = per_seed_heldout(pairs, "fcp", "return", seeds)
    adapt[names.ORACLE] = ideal_adaptability(pairs, seeds, cfg.eval_repeats)
    row = lambda e: {"nestrl": summary(adapt[e]), "diff_vs_fcp": _diff(adapt[e], adapt["fcp"])}
    m = {**row(nest), "fcp": summary(adapt["fcp"]),
         "trivial_name": trivial, "trivial_return": summary(triv_ret[trivial]),
         "fcp_return": summary(fcp_ret),
         "fcp_beats_trivial": bool(_sign(_diff(fcp_ret, triv_ret[trivial])["ci95"]) == "above"),
         "adaptability": {e: summary(adapt[e]) for e in (*egos, names.ORACLE)},
         "finding_within_episode_q4_minus_q1": {e: summary(within[e]) for e in egos}}
    return Claim.check(
        "adaptability",
        "NestRL agents exhibit significantly greater adaptability over the course of "
        "interaction than FCP.",
        "significantly greater adaptability (abstract)",
        m,
        lambda m: _sign(m["diff_vs_fcp"]["ci95"]) == "above",
        f"adaptability = mean over repeated episodes 2..{cfg.eval_repeats} with the same held-out "
        "partner of the return with the ego's recurrent state carried across episodes minus the "
        "return with it reset (same keys, same partner treatment: the first-soup wait cancels); "
        "paired over seeds, NestRL minus FCP: 95% CI above 0",
        "FCP must first beat the trivial ego's return (a baseline that cannot play has nothing "
        "to adapt). The within-episode last-minus-first quarter is a finding. Agents are trained "
        "on episodes that start from a zero recurrent state.",
        compared_with={"trivial": "scripted subtask ego (no memory of the partner)",
                       "baseline": "FCP"},
        inconclusive_if=_undecided("fcp"),
        min_detectable_effect=lambda m: _half(m["diff_vs_fcp"]),
        effect=lambda m: m["diff_vs_fcp"]["mean"],
        trivial=row("subtask"),
        trivial_note="the scripted subtask ego: it keeps no memory, so its adaptability is 0",
        ideal=row(names.ORACLE),
        ideal_note="an agent that adapts without error: reset, it plays like FCP; once it has met "
                   "the partner (episodes 2 and later) it plays the partner-aware oracle's choice "
                   "for that partner (cross-fitted as in the return claim); its adaptability is "
                   "the oracle's return minus FCP's over those episodes",
        budget=budget,
        budget_note=BUDGET_NOTE,
    )


def convention_claim(pairs, cfg, budget=None) -> Claim:
    seeds = list(cfg.seeds)
    nest = names.nestrl_type(cfg)
    sp_same, sp_cross = self_and_cross(pairs, "sp", seeds)
    n_same, n_cross = self_and_cross(pairs, nest, seeds)
    trivial = {t: np.asarray([np.mean(np.asarray(pairs["return"][tables.where(
        pairs, ego=t, seed=s, partner=t)], float)) for s in seeds]) for t in names.TRIVIAL}
    best = max(names.TRIVIAL, key=lambda t: trivial[t].mean())
    sp_gap = sp_same - sp_cross

    def row(same, cross):
        return {"nestrl_self": summary(same), "nestrl_cross": summary(cross),
                "nestrl_gap": summary(same - cross), "gap_difference": _diff(sp_gap, same - cross),
                "nestrl_cross_minus_trivial": _diff(cross, trivial[best])}

    m = {"sp_self": summary(sp_same), "sp_cross": summary(sp_cross), "sp_gap": summary(sp_gap),
         **row(n_same, n_cross),
         "trivial_name": best, "trivial_self": summary(trivial[best]),
         "sp_beats_trivial": bool(_sign(_diff(sp_same, trivial[best])["ci95"]) == "above")}
    keys = ("sp_gap", "gap_difference", "nestrl_cross_minus_trivial")

    def undecided(m):
        if not m["sp_beats_trivial"]:
            return (f"self-play with itself ({m['sp_self']['mean']:.1f}) does not beat the trivial "
                    f"pair {best}+{best} ({m['trivial_self']['mean']:.1f}): no convention to collapse to")
        for key in keys:
            if _sign(m[key]["ci95"]) is None:
                lo, hi = m[key]["ci95"]
                return f"the 95% CI of {key}, [{lo:.2f}, {hi:.2f}], contains 0"
        return None

    return Claim.check(
        "no_partner_specific_conventions",
        "Self-play agents converge to partner-specific conventions (low cross-play); NestRL "
        "agents do not.",
        "NestRL avoids convergence to partner-specific strategies (abstract)",
        m,
        lambda m: all(_sign(m[k]["ci95"]) == "above" for k in keys),
        "gap = return with itself minus mean return with the same kind of agent from the other "
        "seeds; held when self-play's gap is above 0, exceeds NestRL's, and NestRL's cross-play "
        "return beats the trivial scripted pair (a convention-free agent that cannot play "
        "avoids conventions by construction); paired 95% CIs",
        compared_with={"trivial": f"{best} pair (a convention-free scripted team)",
                       "baseline": "self-play"},
        inconclusive_if=undecided,
        min_detectable_effect=lambda m: max(_half(m[k]) for k in keys),
        effect=lambda m: min(m["gap_difference"]["mean"], m["nestrl_cross_minus_trivial"]["mean"]),
        trivial=row(trivial[best], trivial[best]),
        trivial_note=f"the {best} pair in NestRL's place (gap 0, cross-play = its own return)",
        ideal=row(sp_same, sp_same),
        ideal_note="a convention-free agent that plays with every partner as well as self-play "
                   "does with itself (gap 0, cross-play = self-play's self-play return)",
        budget=budget,
        budget_note=BUDGET_NOTE,
    )


@claim_set(inputs_from=lambda cfg: [*pair_tables(cfg), *train_tables(cfg)])
def CLAIMS(run):
    pairs, cfg = read_pairs(run), run.cfg
    nest = names.nestrl_type(cfg)
    budget = budgets(cfg, read_curves(run), (nest, "fcp", "sp", names.BEST_RESPONSE))
    pick = lambda *names: {("nestrl" if n == nest else n): budget[n] for n in names}
    return [heldout_return_claim(pairs, cfg, pick(nest, "fcp", "sp", names.BEST_RESPONSE)),
            adaptability_claim(pairs, cfg, pick(nest, "fcp")),
            convention_claim(pairs, cfg, pick(nest, "sp"))]
