"""Overcooked (jaxmarl 0.2.0) as pure functions, and the scripted partners.

``Game`` wraps one layout: ``reset(key) -> (obs[2, D], state)`` and
``step(key, state, actions[2]) -> (obs, state, reward, shaped[2], events[2, 2])``, where ``reward``
is the shared sparse reward (20 per delivered soup), ``shaped`` jaxmarl's per-agent shaping
(3 onion in pot, 3 useful plate pickup, 5 soup pickup) and ``events[i] = (onion put in a pot,
plate or soup picked up)`` by agent i, read off the shaping and the inventories; the
reward-biased level-0 partners weight these events.

Scripted agents act from the state, by shortest paths precomputed on the layout's free cells:

* ``subtask`` (partner-agnostic, trivial baseline): with an empty hand it fetches a plate if a
  pot is cooking or ready, otherwise an onion; an onion or a plate goes to a pot, a soup to the
  serving counter;
* ``proxy_onion`` / ``proxy_plate`` (adaptive human proxies): the same, except that an
  empty hand follows a *role* (onions or plates); after ``patience`` consecutive blocked moves
  the proxy switches role. Its role persists across episodes (the proxy adapts to a partner);
* ``random``: uniform over the six actions.
"""

from __future__ import annotations

import functools
from collections import deque

import jax
import jax.numpy as jnp
import numpy as np

from repro26.nestrl.names import SCRIPTED

N_ACTIONS = 6
UP, DOWN, RIGHT, LEFT, STAY, INTERACT = range(6)
MOVES = ((0, -1), (0, 1), (1, 0), (-1, 0))  # (dx, dy) of actions up, down, right, left
EMPTY, ONION, PLATE, DISH = 1, 3, 5, 9  # jaxmarl's object indices (inventory)
POT_FULL = 20  # pot status <= 20: cooking (counting down) or ready (0)
TARGETS = ("onion_pile", "plate_pile", "pot", "goal")
ONION_PILE, PLATE_PILE, POT, GOAL = range(4)
LAYOUTS = ("cramped_room", "asymm_advantages", "coord_ring", "forced_coord", "counter_circuit")


def path_tables(layout) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Breadth-first search on the free cells, per target kind:
    ``dist[t, y, x]`` steps to a cell next to a tile of kind t (-1: unreachable), ``action[t, y, x]``
    the move along a shortest path or, at distance 0, the move that faces the target, and
    ``face[t, y, x]`` that facing direction (-1 elsewhere)."""
    h, w = int(layout["height"]), int(layout["width"])
    blocked = np.zeros(h * w, bool)
    blocked[np.asarray(layout["wall_idx"])] = True
    tiles = {t: set(np.asarray(layout[f"{t}_idx"]).tolist()) for t in TARGETS}
    dist = -np.ones((len(TARGETS), h, w), np.int32)
    action = np.full((len(TARGETS), h, w), STAY, np.int32)
    face = -np.ones((len(TARGETS), h, w), np.int32)

    def neighbours(x, y):
        for a, (dx, dy) in enumerate(MOVES):
            nx, ny = x + dx, y + dy
            if 0 <= nx < w and 0 <= ny < h:
                yield a, nx, ny

    for t, kind in enumerate(TARGETS):
        queue = deque()
        for idx in range(h * w):
            if blocked[idx]:
                continue
            x, y = idx % w, idx // w
            for a, nx, ny in neighbours(x, y):
                if ny * w + nx in tiles[kind]:
                    dist[t, y, x], action[t, y, x], face[t, y, x] = 0, a, a
                    queue.append((x, y))
                    break
        while queue:
            x, y = queue.popleft()
            for a, nx, ny in neighbours(x, y):
                if blocked[ny * w + nx] or dist[t, ny, nx] >= 0:
                    continue
                dist[t, ny, nx] = dist[t, y, x] + 1
                action[t, ny, nx] = {UP: DOWN, DOWN: UP, RIGHT: LEFT, LEFT: RIGHT}[a]
                queue.append((nx, ny))
    return dist, action, face


class Game:
    """One Overcooked layout with a fixed horizon (not a pytree: closed over by jitted code)."""

    def __init__(self, layout: str, horizon: int):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from jaxmarl import make
            from jaxmarl.environments.overcooked import overcooked_layouts

            self.layout = overcooked_layouts[layout]
            self.env = make("overcooked", layout=self.layout, max_steps=horizon)
        self.name, self.horizon = layout, horizon
        self.height, self.width = int(self.layout["height"]), int(self.layout["width"])
        self.obs_dim = self.height * self.width * 26
        dist, action, face = path_tables(self.layout)
        self.dist, self.move, self.face = jnp.asarray(dist), jnp.asarray(action), jnp.asarray(face)
        self.pot_pos = np.stack([np.asarray(self.layout["pot_idx"]) % self.width,
                                 np.asarray(self.layout["pot_idx"]) // self.width], 1)

    @staticmethod
    def _obs(obs) -> jax.Array:
        return jnp.stack([obs["agent_0"].reshape(-1), obs["agent_1"].reshape(-1)]).astype(jnp.float32)

    def reset(self, key):
        obs, state = self.env.reset(key)
        return self._obs(obs), state

    def step(self, key, state, actions):
        """One joint step (no auto-reset: rollouts are whole episodes of ``horizon`` steps)."""
        obs, new, reward, _, info = self.env.step_env(
            key, state, {"agent_0": actions[0], "agent_1": actions[1]})
        shaped = jnp.stack([info["shaped_reward"]["agent_0"], info["shaped_reward"]["agent_1"]])
        held = state.agent_inv
        onion_in_pot = (shaped == 3) & (held == ONION)
        plate_or_soup = ((shaped == 3) & (held == EMPTY)) | (shaped == 5)
        events = jnp.stack([onion_in_pot, plate_or_soup], -1).astype(jnp.float32)
        return self._obs(obs), new, reward["agent_0"], shaped.astype(jnp.float32), events

    def pot_status(self, state) -> jax.Array:
        pad = (state.maze_map.shape[0] - self.height) // 2
        return state.maze_map[pad + self.pot_pos[:, 1], pad + self.pot_pos[:, 0], 2].astype(jnp.int32)

    # ------------------------------------------------------------------ scripted agents

    def goto(self, state, seat, target) -> jax.Array:
        """Move along a shortest path to ``target``; at it, face it, then interact."""
        x, y = state.agent_pos[seat, 0].astype(jnp.int32), state.agent_pos[seat, 1].astype(jnp.int32)
        arrived = (self.dist[target, y, x] == 0) & (state.agent_dir_idx[seat] == self.face[target, y, x])
        return jnp.where(arrived, INTERACT, self.move[target, y, x])

    def target(self, state, seat, wants_plate) -> jax.Array:
        """Subtask from the inventory; an empty hand fetches a plate iff ``wants_plate``."""
        held = state.agent_inv[seat]
        empty_target = jnp.where(wants_plate, PLATE_PILE, ONION_PILE)
        return jnp.select([held == ONION, held == PLATE, held == DISH], [POT, POT, GOAL], empty_target)

    def subtask_action(self, state, seat) -> jax.Array:
        cooking = jnp.any(self.pot_status(state) <= POT_FULL)
        return self.goto(state, seat, self.target(state, seat, cooking))


def init_memory(kind: jax.Array) -> dict:
    """Scripted memory: the proxy's role (0 onions, 1 plates) and its blocked-move count."""
    return {"role": (kind == SCRIPTED.index("proxy_plate")).astype(jnp.int32),
            "blocked": jnp.zeros((), jnp.int32), "pos": jnp.zeros(2, jnp.int32),
            "moved": jnp.zeros((), bool)}


def scripted_action(game: Game, kind, state, seat, memory, key, patience: int, eps: float):
    """``(action, memory)`` of scripted agent ``SCRIPTED[kind]`` in seat ``seat``; with
    probability ``eps`` (and always on the step a proxy switches role) a uniform random action,
    which also breaks the deadlocks of two path-followers meeting in a corridor."""
    pos = state.agent_pos[seat].astype(jnp.int32)
    # a move tried last step that left the position unchanged was blocked (by the partner)
    was_blocked = memory["moved"] & jnp.all(pos == memory["pos"])
    blocked = jnp.where(was_blocked, memory["blocked"] + 1, 0)
    switch = blocked >= patience
    role = jnp.where(switch, 1 - memory["role"], memory["role"])
    blocked = jnp.where(switch, 0, blocked)
    proxy = game.goto(state, seat, game.target(state, seat, role == 1))
    k_noise, k_action = jax.random.split(key)
    uniform = jax.random.randint(k_action, (), 0, N_ACTIONS)
    noisy = (jax.random.uniform(k_noise) < eps) | (switch & (kind >= 2))
    action = jnp.select([(kind == 0) | noisy, kind == 1],
                        [uniform, game.subtask_action(state, seat)], proxy)
    x, y = pos[0], pos[1]
    target = game.target(state, seat, role == 1)
    real_move = (action < STAY) & (game.dist[target, y, x] > 0)
    return action, {"role": role, "blocked": blocked, "pos": pos, "moved": real_move}


@functools.lru_cache(maxsize=8)
def game(layout: str, horizon: int) -> Game:
    return Game(layout, horizon)
