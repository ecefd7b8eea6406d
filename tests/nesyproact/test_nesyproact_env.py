"""The simulated web: every task's check accepts a scripted optimal trajectory and rejects wrong
ones; which faults NesyProAct's schema-compiled checks see and which they cannot (a submit
that shows 'Saved' but stored nothing, a cached answer, a lagging activity index); a wrong
search query does not reach the result; agent loops stop within budget."""

import dataclasses

import numpy as np
import pytest

from repro26.nesyproact import agents, domains, schemas
from repro26.nesyproact.env import (ACTIVITY_TITLE, RECORD_LAG, Action, FaultRates, Observation,
                                    Subgoal, WebEnv)
from repro26.nesyproact.policy import LocalPolicy, PolicyProfile, Reading

NO_FAULTS = FaultRates(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
PERFECT = PolicyProfile(0.0, 0.0, 0.0, 0.0, 0.0)


def suite(domain, n=12, seed=0, ambiguous=0.0):
    return domains.task_suite(domain, n, seed, ambiguous, n_distractors=4)


def true_id(env, key):
    """The id the environment currently resolves to element ``key`` (the script's oracle)."""
    return next(i for i, k in env.ids.items() if k == key)


def scripted(env, task, skip=None, repeat=None, answer=None):
    """Carry out the plan on the true elements; optionally skip or repeat one step, or give
    another answer."""
    for i, sg in enumerate(task.plan):
        if i == skip:
            continue
        for _ in range(2 if i == repeat else 1):
            if sg.kind == "answer":
                env.step(f'stop "{answer if answer is not None else sg.value}"', i)
                return
            target = true_id(env, sg.key)
            env.step(f'type [{target}] "{sg.value}"' if sg.kind == "fill" else
                     f"click [{target}]", i)
    env.step("stop", len(task.plan))


@pytest.mark.parametrize("domain", domains.DOMAINS)
def test_every_check_accepts_the_optimal_trajectory_and_rejects_wrong_ones(domain):
    tasks = suite(domain, ambiguous=0.5)
    assert {t.template for t in tasks} == {f.__name__ for f in domains.TEMPLATES[domain]}
    for task in tasks:
        env = WebEnv(task, NO_FAULTS, np.random.default_rng(task.index))
        scripted(env, task)
        assert env.success() and env.progress == len(task.plan)
        assert all(e["premise_valid"] for e in env.log if e["acting"])
        last = len(task.plan) - 1
        if task.expected_answer is not None:
            wrong = WebEnv(task, NO_FAULTS, np.random.default_rng(0))
            scripted(wrong, task, answer=task.expected_answer + "0")
            assert not wrong.success()
        else:  # the final commit repeated (a duplicate record) or left out
            for kwargs in ({"repeat": last}, {"skip": last}):
                wrong = WebEnv(task, NO_FAULTS, np.random.default_rng(0))
                scripted(wrong, task, **kwargs)
                assert not wrong.success(), (task.intent, kwargs)


def test_a_wrong_typed_value_fails_the_check():
    task = next(t for t in suite("shop_admin", 30) if t.template == "admin_stock")
    env = WebEnv(task, NO_FAULTS, np.random.default_rng(0))
    for i, sg in enumerate(task.plan):
        value = "999" if sg.kind == "fill" else None
        target = true_id(env, sg.key)
        env.step(f'type [{target}] "{value}"' if value else f"click [{target}]", i)
    assert not env.success()


def _task(template, ambiguous=0.0, domain=None):
    domain = domain or next(d for d, ts in domains.TEMPLATES.items()
                            if template in [t.__name__ for t in ts])
    return next(t for t in suite(domain, 30, ambiguous=ambiguous) if t.template == template)


def _env(task, **rates):
    return WebEnv(task, dataclasses.replace(NO_FAULTS, **rates), np.random.default_rng(1))


def _act_on(env, sg):
    """The action a correct reader of the current observation takes for ``sg``."""
    obs = Observation.parse(env.observe())
    el = obs.find(sg.role, sg.label, sg.region)[0]
    if sg.kind == "answer":
        return f'stop "{el.text}"'
    return f'type [{el.id}] "{sg.value}"' if sg.kind == "fill" else f"click [{el.id}]"


def _post(sg, after_text, action_text, where="here"):
    _, post = schemas.compile_checks(sg)
    return schemas.failed(post, Observation.parse(after_text), Action.parse(action_text), where)


def _pre(sg, state_text, action_text):
    pre, _ = schemas.compile_checks(sg)
    return schemas.failed(pre, Observation.parse(state_text), Action.parse(action_text))


def _run_to(env, task, n):
    for i in range(n):
        env.step(_act_on(env, task.plan[i]), i)


def _look_at_activity(env):
    obs = Observation.parse(env.observe())
    return env.step(f"click [{obs.find('link', 'My activity', 'header')[0].id}]")


def test_silent_navigation_is_seen_by_the_postcondition():
    task = _task("shop_add_to_cart")
    env = _env(task, silent=1.0)
    action = _act_on(env, task.plan[0])
    after = env.step(action, 0)
    assert "silent" in env.log[-1]["faults"]
    assert _post(task.plan[0], after, action) == [f"at({task.plan[0].expect!r},)"]


def test_silent_submit_shows_saved_and_only_my_activity_tells():
    """Partial evidence: the notice says 'Saved', nothing is stored; the 'here' checks pass,
    the record check fails on My activity (a navigation away)."""
    task = _task("code_star")
    env = _env(task)
    _run_to(env, task, 1)
    env.faults = dataclasses.replace(NO_FAULTS, silent=1.0)
    sg = task.plan[1]
    action = _act_on(env, sg)
    after = env.step(action, 1)
    assert "silent" in env.log[-1]["faults"] and env.records == []
    assert Observation.parse(after).notice == "Saved" and _post(sg, after, action) == []
    env.faults = NO_FAULTS
    seen = _look_at_activity(env)
    assert Observation.parse(seen).title == ACTIVITY_TITLE
    assert _post(sg, seen, action, "activity") == [f"recorded({sg.expect!r}, {sg.record!r})"]


def test_a_stored_record_is_listed_and_a_delayed_one_only_after_the_lag():
    task = _task("code_star")
    for delay, listed_at in ((0.0, 0), (1.0, RECORD_LAG - 1)):
        env = _env(task, delay=delay)
        _run_to(env, task, 1)
        sg = task.plan[1]
        action = _act_on(env, sg)
        env.step(action, 1)
        assert env.records  # stored in both cases
        seen = [_post(sg, _look_at_activity(env), action, "activity") == []]
        for _ in range(RECORD_LAG):
            seen.append(_post(sg, env.step("wait"), action, "activity") == [])
        assert seen.index(True) == listed_at  # waits needed before the record shows


def test_stale_ids_are_caught_after_navigation():
    task = _task("shop_add_to_cart")
    env = _env(task, stale=1.0)
    env.step(_act_on(env, task.plan[0]), 0)  # navigates; the page re-renders afterwards
    assert env.stale and "stale" in env.log[-1]["faults"]
    action = _act_on(env, task.plan[1])  # an id from the stale observation
    after = env.step(action, 1)
    assert env.log[-1]["premise_valid"] is False
    assert _post(task.plan[1], after, action) == [f"at({task.plan[1].expect!r},)"]


def test_a_cached_answer_passes_every_check_and_is_wrong():
    """No evidence: the cached page shows an old value that the answer pre-conditions accept;
    a reload shows the true one."""
    task = _task("shop_price")
    env = _env(task, cached=1.0)
    _run_to(env, task, 2)
    assert "cached" in env.log[-1]["faults"]
    sg = task.plan[2]
    action = _act_on(env, sg)
    assert _pre(sg, env.observe(), action) == [] and action != f'stop "{sg.value}"'
    env.step("wait")
    assert _act_on(env, sg) == f'stop "{sg.value}"'


def test_popup_is_caught_by_a_precondition():
    task = _task("shop_add_to_cart")
    env = _env(task, popup=1.0)
    env.step(_act_on(env, task.plan[0]), 0)
    state = env.observe()
    action = _act_on(env, task.plan[1])
    assert Observation.parse(state).dialog
    assert "no_dialog" in _pre(task.plan[1], state, action)
    env.step(action, 1)  # the dialog intercepts the click
    assert env.log[-1]["faults"] == ["popup_intercept"] and env.progress == 1


def test_delayed_field_fails_the_postcondition_until_reobserved():
    task = _task("shop_add_to_cart")
    env = _env(task, delay=1.0)
    _run_to(env, task, 2)
    sg = task.plan[2]  # fill the quantity
    action = _act_on(env, sg)
    after = env.step(action, 2)
    assert "delay" in env.log[-1]["faults"] and env.progress == 3  # it did take effect
    assert _post(sg, after, action) == [f"field_is({sg.label!r}, {sg.value!r})"]
    assert _post(sg, env.step("wait"), action) == []


def test_ambiguous_label_decoy_is_caught_by_the_target_precondition():
    task = _task("shop_add_to_cart", ambiguous=1.0)
    env = WebEnv(task, NO_FAULTS, np.random.default_rng(0))
    state = Observation.parse(env.observe())
    sg = task.plan[0]
    decoy = next(e for e in state.find(sg.role, sg.label) if e.region == "sidebar")
    assert _pre(sg, env.observe(), f"click [{decoy.id}]") == [
        f"target({sg.role!r}, {sg.label!r}, {sg.region!r})"]
    env.step(f"click [{decoy.id}]", 0)
    assert "sponsored" in Observation.parse(env.observe()).title
    assert not env.premise_valid(1, Action("click", 1))


@pytest.mark.parametrize("query", [None, "", "wrong"])
def test_a_wrong_or_empty_search_query_does_not_reach_the_result(query):
    for template in ("map_address", "map_save", "wiki_fact", "wiki_edit"):
        task = _task(template)
        env = WebEnv(task, NO_FAULTS, np.random.default_rng(0))
        fill, search, result = task.plan[:3]
        if query is not None:
            target = true_id(env, fill.key)
            env.step(f'type [{target}] "{query}"', 0)
        env.step(f"click [{true_id(env, search.key)}]", 1)
        obs = Observation.parse(env.observe())
        assert obs.title == "Search results" and not obs.find(result.role, result.label)
    env = WebEnv(task, NO_FAULTS, np.random.default_rng(0))
    _run_to(env, task, 2)  # the right query
    assert Observation.parse(env.observe()).find(result.role, result.label)


def test_a_new_action_schema_gets_its_checks_without_new_verifier_code():
    """A 'clear a field' schema (verb type, existing atom kinds) compiles to working checks;
    nothing in schemas.py or agents.py is written for it."""
    typed, field_is = schemas.Atom("typed", ("value",)), schemas.Atom("field_is", ("label", "value"))
    clear = schemas.ActionSchema("clear", "type", (schemas.AT, schemas.NO_DIALOG, schemas.TARGET,
                                                   typed), (field_is,))
    table = {**schemas.SCHEMAS, "clear": clear}
    task = _task("shop_add_to_cart")
    env = WebEnv(task, NO_FAULTS, np.random.default_rng(0))
    _run_to(env, task, 3)  # the quantity is filled
    box = task.plan[2]
    sg = Subgoal("clear", "", "textbox", box.label, value="", page_title=box.page_title)
    pre, post = schemas.compile_checks(sg, table)
    assert [c.kind for c in pre] == ["verb", "at", "no_dialog", "target", "typed"]
    el = Observation.parse(env.observe()).find("textbox", box.label)[0]
    good, bad = Action.parse(f'type [{el.id}] ""'), Action.parse(f"click [{el.id}]")
    state = Observation.parse(env.observe())
    assert schemas.failed(pre, state, good) == [] and schemas.failed(pre, state, bad) == [
        "verb('type',)", "typed('',)"]
    assert schemas.failed(post, state, good) == [f"field_is({box.label!r}, '')"]
    after = Observation.parse(env.step(good.render(), None))
    assert schemas.failed(post, after, good) == []


def test_nesyproact_fails_correctly_read_tasks_at_the_nominal_faults():
    """With an error-free policy (nothing misread or misplanned) at the nominal fault rates,
    NesyProAct still fails some tasks before its step budget is spent: the faults its
    checks cannot see (cached answers, lagging index, silent submits it did not look for)."""
    nominal = FaultRates(0.05, 0.1, 0.1, 0.1, 0.1, 0.15)
    fails = 0
    for domain in domains.DOMAINS:
        for task in suite(domain, 20, ambiguous=nominal.ambiguous):
            env = WebEnv(task, nominal, np.random.default_rng(task.index))
            ep = agents.Episode(env, agents.step_budget(task, 2.0, 3))
            policy = LocalPolicy(PERFECT, np.random.default_rng(0))
            agents.run_nesyproact(ep, Reading.of(task), policy, 2, 2, 1)
            fails += (not env.success()) and ep.steps < ep.budget
    assert fails >= 3


def test_premise_of_a_belief_ahead_of_the_truth_is_invalid():
    task = _task("shop_add_to_cart")
    env = WebEnv(task, NO_FAULTS, np.random.default_rng(0))
    assert env.premise_valid(0, Action("click", 1))
    assert not env.premise_valid(1, Action("click", 1))  # believes step 0 is done; it is not


def test_premise_metrics_runs():
    log = [{"acting": True, "believed": 0, "premise_valid": v}
           for v in (True, False, False, True, False)]
    frac, depth = agents.premise_metrics(log)
    assert frac == pytest.approx(3 / 5) and depth == pytest.approx((2 + 1) / 2)
    assert np.isnan(agents.premise_metrics([{"acting": True, "believed": None,
                                             "premise_valid": False}])[0])


class Garbage:
    def compose(self, reading, feedback=""):
        return ()

    def propose(self, observation, history):
        return "I am not sure what to do"


@pytest.mark.parametrize("agent", agents.AGENTS)
def test_agent_loops_stop_within_the_budget(agent):
    heavy = FaultRates(0.5, 0.5, 0.5, 0.5, 0.5, 0.5)
    weak = PolicyProfile(0.9, 0.5, 0.5, 0.0, 0.5)
    for task in suite("forum", 6, ambiguous=0.5):
        for policy in (LocalPolicy(weak, np.random.default_rng(0)), Garbage()):
            env = WebEnv(task, heavy, np.random.default_rng(0))
            ep = agents.Episode(env, agents.step_budget(task, 2.0, 3))
            rng, reading = np.random.default_rng(0), Reading.of(task)
            {"random": lambda: agents.run_random(ep, reading, rng),
             "react": lambda: agents.run_react(ep, reading, policy),
             "asi": lambda: agents.run_asi(ep, reading, policy, {}),
             "nesyproact": lambda: agents.run_nesyproact(ep, reading, policy, 2, 2, 1)}[agent]()
            assert ep.steps <= ep.budget and len(env.log) == ep.steps


def test_perfect_policy_without_faults_solves_every_task_in_plan_length_steps():
    """ReAct and NesyProAct with an error-free policy compose the environment's plan and take
    the scripted trajectory: one action per plan step plus the final stop (answer tasks stop
    with the answer); NesyProAct adds one look at My activity per submit."""
    for domain in domains.DOMAINS:
        for task in suite(domain, 6):
            reading = Reading.of(task)
            composed = LocalPolicy(PERFECT, np.random.default_rng(0)).compose(reading)
            assert list(composed) == [dataclasses.replace(
                sg, key="", page="", value=sg.value * (sg.kind != "answer")) for sg in task.plan]
            n_script = len(task.plan) + (task.expected_answer is None)
            for run, extra in ((lambda ep, p: agents.run_react(ep, reading, p), 0),
                               (lambda ep, p: agents.run_nesyproact(ep, reading, p, 2, 2, 1),
                                sum(sg.kind == "commit" for sg in task.plan))):
                env = WebEnv(task, NO_FAULTS, np.random.default_rng(0))
                ep = agents.Episode(env, 100)
                run(ep, LocalPolicy(PERFECT, np.random.default_rng(0)))
                assert env.success() and ep.steps == n_script + extra
                assert agents.premise_metrics(env.log) == (0.0, 0.0)


def test_nesyproact_replans_after_a_forgotten_search_query():
    """A plan without the query step reaches a results page without the result; NesyProAct
    asks for a new plan, backs up and succeeds; ReAct does not."""
    task = _task("wiki_fact")

    class Forgets(LocalPolicy):
        def __init__(self):
            super().__init__(PERFECT, np.random.default_rng(0))
            self.n = 0

        def compose(self, reading, feedback=""):
            self.n += 1
            plan = super().compose(reading, feedback)
            return plan[1:] if self.n == 1 else plan

    results = {}
    for name, run in (("react", lambda ep, p: agents.run_react(ep, Reading.of(task), p)),
                      ("nesyproact", lambda ep, p: agents.run_nesyproact(
                          ep, Reading.of(task), p, 2, 2, 1))):
        env = WebEnv(task, NO_FAULTS, np.random.default_rng(0))
        ep = agents.Episode(env, agents.step_budget(task, 2.0, 3))
        policy = Forgets()
        run(ep, policy)
        results[name] = (env.success(), policy.n, ep.interventions["replan"])
    assert results["react"] == (False, 1, 0)
    assert results["nesyproact"][:2] == (True, 2) and results["nesyproact"][2] >= 1


def test_asi_induces_a_skill_and_replays_it_without_model_calls():
    tasks = [t for t in suite("code", 30) if t.template == "code_issue"][:3]
    skills = {}
    calls = []
    for task in tasks:
        env = WebEnv(task, NO_FAULTS, np.random.default_rng(0))
        ep = agents.Episode(env, 100)
        agents.run_asi(ep, Reading.of(task), LocalPolicy(PERFECT, np.random.default_rng(0)),
                       skills)
        assert env.success()
        calls.append(ep.policy_calls)
    assert len(skills["code_issue"]) == len(tasks[0].plan)
    assert any("{title}" in (s.value or "") for s in skills["code_issue"])
    assert calls[0] == len(tasks[0].plan) + 1 and calls[1:] == [1, 1]  # only the final stop


def test_a_misread_task_fails_for_every_agent_and_passes_every_step_check():
    """A misread parameter is an error in the plan: NesyProAct's checks all pass on the plan
    composed from the misread intent, and the task's own check rejects it."""
    from repro26.nesyproact.policy import misread_task

    task = next(t for t in suite("forum", 30) if t.template == "forum_post")
    seen = misread_task(task, np.random.default_rng(0), 1.0)
    assert seen.params != task.params
    assert misread_task(task, np.random.default_rng(0), 0.0) == Reading.of(task)
    env = WebEnv(task, NO_FAULTS, np.random.default_rng(0))
    ep = agents.Episode(env, 100)
    agents.run_nesyproact(ep, seen, LocalPolicy(PERFECT, np.random.default_rng(0)), 2, 2, 1)
    assert not env.success()
