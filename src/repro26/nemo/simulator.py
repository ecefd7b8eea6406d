"""MindFlow: a psychologically structured user simulator for emotional-support dialogue.

Each user is a :class:`Persona` and a latent state ``x = (distress d, valence v, clarity c,
readiness r, arousal a)`` with ``d, c, r, a ∈ [0, 1]`` and ``v ∈ [-1, 1]``. The supporter picks
one of the eight ESConv strategies per turn; the user answers with a noisy observation of ``x``.

Arousal curve (inverted U, Yerkes–Dodson): receptivity to deliberation
``ρ(a) = exp(-(a - μ)² / (2σ²))``, peak ``μ`` and width ``σ`` per persona ("mindflow"); the
alternative family uses a tent ``ρ(a) = max(0, 1 - |a - μ| / (2σ))``.

Need preference (the state-dependent preference vector over soothing vs guidance):
``u_emo = d (1 - ρ(a)) + ε``, ``u_cog = (1 - c) ρ(a) + ε``, ``p = u / (u_emo + u_cog)``.

Dual process: the fast affective system gets weight ``β(a) = sigmoid((a - μ) / τ)`` (a hard step
``1[a > μ]`` in the alternative family), the slow deliberative system ``1 - β``. Strategy ``k``
carries an empathic load ``e_k`` and an informational load ``g_k`` (priors in the config; ESConv's
annotated dialogues do not ship in an installed package, so the priors are stated, not fitted):

* affective response ``A = κ_aff e_k (0.3 + 0.7 β)``;
* deliberative response ``D = κ_del g_k ρ(a) (0.3 + 0.7 (1 - β))``;
* misfire (guidance the user is not ready for) ``M = κ_react g_k (1 - ρ(a)) β``;
* ``d' = d - A d + ½ M (1 - d) - η c d``  (clarity reappraises distress: a delayed effect);
* ``v' = v + ½ A (1 - v) - ½ M (1 + v)``;
* ``a' = a + 0.3 (d' - a) - 0.4 A a + M (1 - a)``  (arousal tracks distress, soothing calms);
* ``c' = c + D (1 - c)``, ``r' = r + ½ D (1 - r) + 0.3 A ρ(a) (1 - r)``;

plus Gaussian process noise, then clipped to the ranges. The alternative family ("logit") applies
the same increments in logit space (``z' = z + 4 Δ``, squashed back), a different functional form
with the same qualitative story. Emotional score ``E = ((1 - d) + (v + 1)/2) / 2``, cognitive
score ``C = (c + r) / 2``; the per-turn reward vector is ``(ΔE, ΔC)``, so a dialogue's return is
the final user-state improvement on both dimensions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int, PRNGKeyArray

from repro26.nemo.names import PERSONA_FIELDS, STRATEGIES

N_ACTIONS = len(STRATEGIES)
STATE_NAMES = ("distress", "valence", "clarity", "readiness", "arousal")
D, V, C, R, A = range(5)
STATE_LO = jnp.array([0.0, -1.0, 0.0, 0.0, 0.0])
STATE_HI = jnp.array([1.0, 1.0, 1.0, 1.0, 1.0])
NEED_FLOOR = 0.05  # ε in the preference vector
OBS_DIM = 5 + N_ACTIONS + 1  # noisy state, previous strategy (one-hot), turn fraction
Family = Literal["mindflow", "logit"]


class Persona(eqx.Module):
    """One user's psychological parameters (arrays; a leading axis stacks many users)."""

    arousal_peak: Float[Array, "..."]       # μ: arousal of maximal receptivity
    arousal_width: Float[Array, "..."]      # σ: width of the inverted U
    affective_gain: Float[Array, "..."]     # κ_aff
    deliberative_gain: Float[Array, "..."]  # κ_del
    reactivity: Float[Array, "..."]         # κ_react
    baseline_distress: Float[Array, "..."]  # initial distress level


assert tuple(f.name for f in Persona.__dataclass_fields__.values()) == PERSONA_FIELDS


def sample_personas(key: PRNGKeyArray, ranges: dict[str, tuple[float, float]], n: int) -> Persona:
    """``n`` personas, each field uniform on its configured ``[lo, hi]``."""
    keys = jax.random.split(key, len(PERSONA_FIELDS))
    return Persona(**{name: jax.random.uniform(k, (n,), minval=ranges[name][0],
                                               maxval=ranges[name][1])
                      for name, k in zip(PERSONA_FIELDS, keys)})


class MindFlow(eqx.Module):
    """The simulator: strategy priors, noise levels and the transition family."""

    effects: Float[Array, "8 2"]  # (e_k, g_k) per ESConv strategy
    obs_noise: float
    process_noise: float
    reappraisal: float            # η
    balance_temperature: float    # τ
    horizon: int = eqx.field(static=True)
    family: Family = eqx.field(static=True, default="mindflow")

    # ------------------------------------------------------------------ the arousal curve
    def receptivity(self, persona: Persona, arousal: Float[Array, "..."]) -> Float[Array, "..."]:
        """ρ(a): inverted U peaking at μ (Gaussian in "mindflow", a tent in "logit")."""
        mu, sigma = persona.arousal_peak, persona.arousal_width
        if self.family == "mindflow":
            return jnp.exp(-((arousal - mu) ** 2) / (2 * sigma**2))
        return jnp.maximum(0.0, 1 - jnp.abs(arousal - mu) / (2 * sigma))

    def balance(self, persona: Persona, arousal: Float[Array, "..."]) -> Float[Array, "..."]:
        """β(a): weight of the fast affective system (1 - β: the deliberative one)."""
        if self.family == "mindflow":
            return jax.nn.sigmoid((arousal - persona.arousal_peak) / self.balance_temperature)
        return (arousal > persona.arousal_peak).astype(arousal.dtype)

    def preference(self, persona: Persona, x: Float[Array, "5"]) -> Float[Array, "2"]:
        """The need preference vector p = (soothing, guidance), summing to 1."""
        rho = self.receptivity(persona, x[A])
        u = jnp.stack([x[D] * (1 - rho), (1 - x[C]) * rho]) + NEED_FLOOR
        return u / u.sum()

    # ------------------------------------------------------------------ transitions
    def increments(self, persona: Persona, x: Float[Array, "5"],
                   action: Int[Array, ""]) -> Float[Array, "5"]:
        """The deterministic change Δx of one turn (the dual-process update above)."""
        e, g = self.effects[action, 0], self.effects[action, 1]
        rho = self.receptivity(persona, x[A])
        beta = self.balance(persona, x[A])
        aff = persona.affective_gain * e * (0.3 + 0.7 * beta)
        delib = persona.deliberative_gain * g * rho * (0.3 + 0.7 * (1 - beta))
        misfire = persona.reactivity * g * (1 - rho) * beta
        d, v, c, r, a = x
        dd = -aff * d + 0.5 * misfire * (1 - d) - self.reappraisal * c * d
        dv = 0.5 * aff * (1 - v) - 0.5 * misfire * (1 + v)
        da = 0.3 * (d + dd - a) - 0.4 * aff * a + misfire * (1 - a)
        dc = delib * (1 - c)
        dr = 0.5 * delib * (1 - r) + 0.3 * aff * rho * (1 - r)
        return jnp.stack([dd, dv, dc, dr, da])

    def transition(self, persona: Persona, x: Float[Array, "5"], action: Int[Array, ""],
                   key: PRNGKeyArray) -> Float[Array, "5"]:
        """x' = clip(x + Δx + noise) ("mindflow") or squash(logit x + 4Δx + noise) ("logit")."""
        noise = self.process_noise * jax.random.normal(key, (5,))
        delta = self.increments(persona, x, action)
        if self.family == "mindflow":
            return jnp.clip(x + delta + noise, STATE_LO, STATE_HI)
        unit = (x - STATE_LO) / (STATE_HI - STATE_LO)
        scaled = delta / (STATE_HI - STATE_LO)
        eps = 1e-4
        z = jax.scipy.special.logit(jnp.clip(unit, eps, 1 - eps)) + 4 * scaled + 4 * noise
        return STATE_LO + (STATE_HI - STATE_LO) * jax.nn.sigmoid(z)

    def reset(self, persona: Persona, key: PRNGKeyArray) -> Float[Array, "5"]:
        """Opening state: distress near the persona's baseline, arousal tracking it, low clarity."""
        k = jax.random.split(key, 4)
        d = jnp.clip(persona.baseline_distress + 0.05 * jax.random.normal(k[0]), 0, 1)
        v = jnp.clip(-d + 0.1 * jax.random.normal(k[1]), -1, 1)
        c, r = jax.random.uniform(k[2], (2,), minval=0.1, maxval=0.4)
        a = jnp.clip(d + 0.1 * jax.random.normal(k[3]), 0, 1)
        return jnp.stack([d, v, c, r, a])

    def observe(self, x: Float[Array, "5"], prev_action: Int[Array, ""], turn: Int[Array, ""],
                key: PRNGKeyArray) -> Float[Array, "14"]:
        """Utterance features: the state plus noise, the previous strategy, the turn fraction."""
        noisy = x + self.obs_noise * jax.random.normal(key, (5,))
        onehot = jax.nn.one_hot(prev_action, N_ACTIONS)  # prev_action = -1: all zeros
        return jnp.concatenate([noisy, onehot, jnp.array([turn / self.horizon])])


def scores(x: Float[Array, "... 5"]) -> Float[Array, "... 2"]:
    """(E, C): emotional score ((1 - d) + (v + 1)/2)/2 and cognitive score (c + r)/2, in [0, 1]."""
    emo = ((1 - x[..., D]) + (x[..., V] + 1) / 2) / 2
    cog = (x[..., C] + x[..., R]) / 2
    return jnp.stack([emo, cog], axis=-1)


def step(env: MindFlow, persona: Persona, x: Float[Array, "5"], action: Int[Array, ""],
         key: PRNGKeyArray) -> tuple[Float[Array, "5"], Float[Array, "2"]]:
    """One turn: the next state and the reward vector (ΔE, ΔC)."""
    nxt = env.transition(persona, x, action, key)
    return nxt, scores(nxt) - scores(x)


# A policy: (observation, turn, key) -> (action, log-probability, action probabilities).
PolicyFn = Callable[[Float[Array, "14"], Int[Array, ""], PRNGKeyArray],
                    tuple[Int[Array, ""], Float[Array, ""], Float[Array, "8"]]]


def rollout(env: MindFlow, persona: Persona, policy: PolicyFn, key: PRNGKeyArray) -> dict:
    """One dialogue of ``env.horizon`` turns (``lax.scan``); returns per-turn arrays: states
    (T+1, 5), obs, actions, logp, probs, rewards (T, 2), preference vectors (T, 2)."""
    k_reset, k_turns = jax.random.split(key)
    x0 = env.reset(persona, k_reset)

    def turn(carry, inputs):
        x, prev = carry
        t, k = inputs
        k_obs, k_act, k_step = jax.random.split(k, 3)
        obs = env.observe(x, prev, t, k_obs)
        action, logp, probs = policy(obs, t, k_act)
        nxt, reward = step(env, persona, x, action, k_step)
        out = {"state": x, "obs": obs, "action": action, "logp": logp, "probs": probs,
               "reward": reward, "preference": env.preference(persona, x)}
        return (nxt, action), out

    turns = jnp.arange(env.horizon)
    (x_last, _), traj = jax.lax.scan(turn, (x0, jnp.array(-1)),
                                     (turns, jax.random.split(k_turns, env.horizon)))
    traj["states"] = jnp.concatenate([traj.pop("state"), x_last[None]], axis=0)
    return traj
