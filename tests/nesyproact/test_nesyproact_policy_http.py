"""The OpenAI-compatible client against a fake server on 127.0.0.1, and the local policy's
error rates measured against their configured values."""

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import numpy as np
import pytest

from repro26.nesyproact import agents, domains
from repro26.nesyproact.env import FaultRates, Observation, WebEnv
from repro26.nesyproact.policy import (LocalPolicy, OpenAIChatPolicy, PolicyProfile, Reading,
                                       first_action, subgoal_instruction)


@pytest.fixture
def fake_server():
    """A chat-completions endpoint that records each request and replies with a fixed text."""
    seen = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append({"path": self.path, "auth": self.headers.get("Authorization"),
                         "body": body})
            reply = {"choices": [{"message": {"role": "assistant",
                                              "content": "Thought: the link.\nclick [42]\n"}}]}
            data = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", seen
    server.shutdown()
    server.server_close()


def test_http_policy_posts_the_prompt_and_returns_the_action(fake_server):
    url, seen = fake_server
    policy = OpenAIChatPolicy(url, "tiny-model", api_key="k-test", timeout_s=5)
    action = policy.propose('[page] Home\n[42] link "Kitchen"', ["TASK: buy a mug"])
    assert action == "click [42]"
    (req,) = seen
    assert req["path"] == "/v1/chat/completions" and req["auth"] == "Bearer k-test"
    assert req["body"]["model"] == "tiny-model"
    user = req["body"]["messages"][-1]["content"]
    assert "TASK: buy a mug" in user and '[42] link "Kitchen"' in user


def test_http_policy_drives_an_agent_episode(fake_server):
    url, seen = fake_server
    task = domains.task_suite("shop", 1, 0, 0.0, 4)[0]
    env = WebEnv(task, FaultRates(0, 0, 0, 0, 0, 0), np.random.default_rng(0))
    ep = agents.Episode(env, 4)
    agents.run_react(ep, Reading.of(task), OpenAIChatPolicy(url, "m", timeout_s=5))
    # one request for the plan (the reply holds none: an empty plan), one per step
    assert ep.steps == 4 and len(seen) == 5 and all(e["believed"] is None for e in env.log)
    assert "JSON list of subgoals" in seen[0]["body"]["messages"][-1]["content"]


def test_first_action_skips_prose():
    assert first_action("Let me think.\n`type [3] \"2\"`") == 'type [3] "2"'
    assert first_action("no idea") == "no idea"


def test_local_policy_hallucination_rate_matches_its_profile():
    """In subgoal mode, the fraction of proposals naming an id not on the page is the
    configured hallucination rate (binomial 99.9% band)."""
    task = domains.task_suite("wiki", 1, 0, 0.0, 4)[0]
    env = WebEnv(task, FaultRates(0, 0, 0, 0, 0, 0), np.random.default_rng(0))
    obs_text = env.observe()
    obs = Observation.parse(obs_text)
    sg = task.plan[0]
    n, rate = 4000, 0.2
    policy = LocalPolicy(PolicyProfile(0.0, rate, 0.0, 0.0), np.random.default_rng(3))
    prompt = [subgoal_instruction(task.intent, sg, None, "")]
    misses = sum(obs.by_id(int(policy.propose(obs_text, prompt).split("[")[1].split("]")[0]))
                 is None for _ in range(n))
    assert abs(misses / n - rate) < 3.3 * np.sqrt(rate * (1 - rate) / n)
