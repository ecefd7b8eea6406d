"""The simulated web: every task's check accepts a scripted optimal trajectory and rejects wrong
ones; NesyProAct's predicates catch each injected fault type; agent loops stop within budget."""

import dataclasses

import numpy as np
import pytest

from repro26.nesyproact import agents, domains
from repro26.nesyproact.env import Action, FaultRates, Observation, WebEnv
from repro26.nesyproact.policy import LocalPolicy, PolicyProfile

NO_FAULTS = FaultRates(0.0, 0.0, 0.0, 0.0, 0.0)
PERFECT = PolicyProfile(0.0, 0.0, 0.0, 0.0)


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


def _task_with():
    return next(t for t in suite("shop", 30) if t.template == "shop_add_to_cart")


def _env(task, **rates):
    return WebEnv(task, dataclasses.replace(NO_FAULTS, **rates), np.random.default_rng(1))


def _act_on(env, sg):
    """The action a correct reader of the current observation takes for ``sg``."""
    obs = Observation.parse(env.observe())
    el = obs.find(sg.role, sg.label, sg.region)[0]
    return f'type [{el.id}] "{sg.value}"' if sg.kind == "fill" else f"click [{el.id}]"


def _failed_post(sg, before_text, after_text):
    return agents._failed(agents.postconditions(sg, Observation.parse(before_text)),
                          Observation.parse(after_text))


def test_silent_failure_is_caught_by_the_postcondition():
    task = _task_with()
    env = _env(task, silent=1.0)
    before = env.observe()
    after = env.step(_act_on(env, task.plan[0]), 0)
    assert "silent" in env.log[-1]["faults"]
    assert _failed_post(task.plan[0], before, after) == ["reached_page"]


def test_stale_ids_are_caught_after_navigation():
    task = _task_with()
    env = _env(task, stale=1.0)
    env.step(_act_on(env, task.plan[0]), 0)  # navigates; the page re-renders afterwards
    assert env.stale and "stale" in env.log[-1]["faults"]
    before = env.observe()
    after = env.step(_act_on(env, task.plan[1]), 1)  # an id from the stale observation
    assert env.log[-1]["premise_valid"] is False
    assert _failed_post(task.plan[1], before, after) == ["reached_page"]


def test_popup_is_caught_by_a_precondition():
    task = _task_with()
    env = _env(task, popup=1.0)
    env.step(_act_on(env, task.plan[0]), 0)
    state = Observation.parse(env.observe())
    action = Action.parse(_act_on(env, task.plan[1]))
    assert state.dialog
    assert "no_dialog" in agents._failed(agents.preconditions(task.plan[1], action), state)
    env.step(action.render(), 1)  # the dialog intercepts the click
    assert env.log[-1]["faults"] == ["popup_intercept"] and env.progress == 1


def test_delayed_update_fails_the_postcondition_until_reobserved():
    task = _task_with()
    env = _env(task, delay=1.0)
    for i in range(2):
        env.step(_act_on(env, task.plan[i]), i)
    sg = task.plan[2]  # fill the quantity
    before = env.observe()
    after = env.step(_act_on(env, sg), 2)
    assert "delay" in env.log[-1]["faults"] and env.progress == 3  # it did take effect
    assert _failed_post(sg, before, after) == ["field_value"]
    assert _failed_post(sg, before, env.step("wait")) == []


def test_ambiguous_label_decoy_is_caught_by_the_region_precondition():
    task = next(t for t in suite("shop", 30, ambiguous=1.0) if t.template == "shop_add_to_cart")
    env = WebEnv(task, NO_FAULTS, np.random.default_rng(0))
    state = Observation.parse(env.observe())
    sg = task.plan[0]
    decoy = next(e for e in state.find(sg.role, sg.label) if e.region == "sidebar")
    failed = agents._failed(agents.preconditions(sg, Action("click", decoy.id)), state)
    assert failed == ["target_region"]
    env.step(f"click [{decoy.id}]", 0)
    assert "sponsored" in Observation.parse(env.observe()).title
    assert not env.premise_valid(1, Action("click", 1))


def test_premise_of_a_belief_ahead_of_the_truth_is_invalid():
    task = _task_with()
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
    def propose(self, observation, history):
        return "I am not sure what to do"


@pytest.mark.parametrize("agent", agents.AGENTS)
def test_agent_loops_stop_within_the_budget(agent):
    heavy = FaultRates(0.5, 0.5, 0.5, 0.5, 0.5)
    weak = PolicyProfile(0.9, 0.5, 0.5, 0.0)
    for task in suite("forum", 6, ambiguous=0.5):
        for policy in (LocalPolicy(weak, np.random.default_rng(0)), Garbage()):
            env = WebEnv(task, heavy, np.random.default_rng(0))
            ep = agents.Episode(env, agents.step_budget(task, 2.0, 3))
            rng = np.random.default_rng(0)
            {"random": lambda: agents.run_random(ep, task, rng),
             "react": lambda: agents.run_react(ep, task, policy),
             "asi": lambda: agents.run_asi(ep, task, policy, {}),
             "nesyproact": lambda: agents.run_nesyproact(ep, task, policy, 2)}[agent]()
            assert ep.steps <= ep.budget and len(env.log) == ep.steps


def test_perfect_policy_without_faults_solves_every_task_in_plan_length_steps():
    """ReAct and NesyProAct with an error-free policy take exactly the scripted trajectory:
    one action per plan step plus the final stop (answer tasks stop with the answer)."""
    for domain in domains.DOMAINS:
        for task in suite(domain, 6):
            n_script = len(task.plan) + (task.expected_answer is None)
            for run in (lambda ep, p: agents.run_react(ep, task, p),
                        lambda ep, p: agents.run_nesyproact(ep, task, p, 2)):
                env = WebEnv(task, NO_FAULTS, np.random.default_rng(0))
                ep = agents.Episode(env, 100)
                run(ep, LocalPolicy(PERFECT, np.random.default_rng(0)))
                assert env.success() and ep.steps == n_script
                assert agents.premise_metrics(env.log) == (0.0, 0.0)


def test_asi_induces_a_skill_and_replays_it_without_model_calls():
    tasks = [t for t in suite("code", 30) if t.template == "code_issue"][:3]
    skills = {}
    calls = []
    for task in tasks:
        env = WebEnv(task, NO_FAULTS, np.random.default_rng(0))
        ep = agents.Episode(env, 100)
        agents.run_asi(ep, task, LocalPolicy(PERFECT, np.random.default_rng(0)), skills)
        assert env.success()
        calls.append(ep.policy_calls)
    assert len(skills["code_issue"]) == len(tasks[0].plan)
    assert any("{title}" in (s.value or "") for s in skills["code_issue"])
    assert calls[0] == len(tasks[0].plan) + 1 and calls[1:] == [1, 1]  # only the final stop


def test_a_misread_task_fails_for_every_agent_and_passes_every_step_check():
    """A misread parameter is an error in the plan: NesyProAct's checks all pass on the
    misread plan (it even reaches the misread page), and the task's own check rejects it."""
    from repro26.nesyproact.policy import misread_task

    task = next(t for t in suite("forum", 30) if t.template == "forum_post")
    seen = misread_task(task, np.random.default_rng(0), 1.0)
    assert seen.plan != task.plan and seen.params != task.params
    assert misread_task(task, np.random.default_rng(0), 0.0) is task
    env = WebEnv(task, NO_FAULTS, np.random.default_rng(0))
    ep = agents.Episode(env, 100)
    agents.run_nesyproact(ep, seen, LocalPolicy(PERFECT, np.random.default_rng(0)), 2)
    assert not env.success()
