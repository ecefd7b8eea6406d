"""The recurrent actor-critic every learned agent uses (NestRL levels, self-play, FCP, MEP):
``x = relu(W_in o)``, ``h' = GRU(x, h)``, ``logits = W_pi h'``, ``v = w_v h'``."""

from __future__ import annotations

import equinox as eqx
import jax


class ActorCritic(eqx.Module):
    encoder: eqx.nn.Linear
    cell: eqx.nn.GRUCell
    actor: eqx.nn.Linear
    critic: eqx.nn.Linear

    def __init__(self, obs_dim: int, hidden: int, n_actions: int, *, key):
        k1, k2, k3, k4 = jax.random.split(key, 4)
        self.encoder = eqx.nn.Linear(obs_dim, hidden, key=k1)
        self.cell = eqx.nn.GRUCell(hidden, hidden, key=k2)
        actor = eqx.nn.Linear(hidden, n_actions, key=k3)
        # small initial logits: a near-uniform policy at the start (as in PPO practice)
        self.actor = eqx.tree_at(lambda l: l.weight, actor, actor.weight * 0.01)
        self.critic = eqx.nn.Linear(hidden, 1, key=k4)

    @property
    def hidden(self) -> int:
        return self.cell.hidden_size

    def __call__(self, obs, h):
        """One step: ``(logits[A], value, h')`` from the observation and the previous state."""
        h = self.cell(jax.nn.relu(self.encoder(obs)), h)
        return self.actor(h), self.critic(h)[0], h

    def unroll(self, obs, h0):
        """Logits and values along a sequence ``obs[T, D]`` from ``h0``."""

        def body(h, o):
            logits, value, h = self(o, h)
            return h, (logits, value)

        _, (logits, values) = jax.lax.scan(body, h0, obs)
        return logits, values


def init_agents(obs_dim: int, hidden: int, n_actions: int, keys) -> ActorCritic:
    """Agents stacked along the leading axes of ``keys``."""
    flat = keys.reshape(-1, *keys.shape[-1:])
    agents = eqx.filter_vmap(lambda k: ActorCritic(obs_dim, hidden, n_actions, key=k))(flat)
    return jax.tree.map(lambda x: x.reshape(*keys.shape[:-1], *x.shape[1:]), agents)
