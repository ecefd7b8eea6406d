"""rat_ncap benchmarks: env-steps/s of the vmapped MJX rollout; ES generations/s vs evosax.

    python -m benchmarks.rat_ncap [--batch 64] [--steps 250] [--pop 32]

1. env-steps/s of the Rat v2 analogue body: MJX, ``vmap`` over a batch inside ``lax.scan``
   (ours) vs CPU MuJoCo stepping the same number of env-steps one environment at a time
   (reference); plus the full dm_control rodent on CPU MuJoCo when ``dm-control`` is installed.
2. ES generations/s of our OpenAI-ES vs evosax's ``Open_ES`` (antithetic, centred ranks, Adam)
   on the same fitness: a 72-D and a 21,648-D quadratic (the NCAP and MLP parameter counts)
   and the NCAP locomotion fitness (short episodes). Skipped with a message when evosax is
   missing (``pip install evosax==0.3.2 flax==0.12.0 "jax==0.7.2" "jaxlib==0.7.2"``).
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp
import mujoco

from benchmarks.runner import compare, median_time
from repro26.rat_ncap import body
from repro26.rat_ncap import rodent as rodent_mod
from repro26.rat_ncap.es import OpenAIES
from repro26.rat_ncap.losses import RewardSpec, population_fitness
from repro26.rat_ncap.model import RatNCAP, num_params, ravel_policy


def env_steps(batch: int, steps: int) -> None:
    env = body.make_env()
    keys = jax.random.split(jax.random.PRNGKey(0), batch)

    @jax.jit
    def ours():
        data = jax.vmap(lambda k: env.reset(k, 0.05))(keys)

        def f(d, t):
            u = 0.3 + 0.3 * jnp.sin(20.0 * t * env.dt + jnp.arange(body.N_ACTUATORS))
            return jax.vmap(env.step)(d, jnp.broadcast_to(u, (batch, body.N_ACTUATORS))), None

        return jax.lax.scan(f, data, jnp.arange(steps))[0].qpos

    m = body.mj_model()
    d = mujoco.MjData(m)

    def reference():
        for _ in range(batch * steps):
            mujoco.mj_step(m, d)

    row = compare(f"env-steps: MJX vmap {batch} x {steps} vs CPU MuJoCo", ours, reference, repeats=3)
    n = batch * steps
    print(f"  MJX {n / row['ours_s']:,.0f} env-steps/s   CPU MuJoCo {n / row['reference_s']:,.0f} env-steps/s")
    if not rodent_mod.dm_control_available():
        print("  full rodent skipped: optional extra (pip install dm-control)")
        return
    rodent = rodent_mod.rodent_model()
    rd = mujoco.MjData(rodent)
    t = median_time(lambda: [mujoco.mj_step(rodent, rd) for _ in range(2000)], repeats=3)
    print(f"  dm_control rodent on a floor, CPU MuJoCo: {2000 / t:,.0f} env-steps/s")


def es_generations(pop: int) -> None:
    try:
        import optax
        from evosax.algorithms import Open_ES
    except ImportError:
        print("ES vs evosax skipped: evosax is not installed "
              '(pip install evosax==0.3.2 flax==0.12.0 "jax==0.7.2" "jaxlib==0.7.2")')
        return
    ncap = RatNCAP("torque", True, 0.025, 0.1)
    env = body.make_env()
    speeds = jnp.array([0.1, 0.2, 0.3])
    loco = lambda x, k: population_fitness(ncap, env, x, k, speeds, 50, RewardSpec())  # noqa: E731
    quad = lambda x, k: -jnp.sum((x - 1.0) ** 2, axis=-1)  # noqa: E731
    cases = [("quadratic 72-D", 72, quad, 200), ("quadratic 21648-D", 21648, quad, 200),
             ("NCAP locomotion (0.2 s episodes)", num_params(ncap), loco, 3)]
    for name, n, fitness, gens in cases:
        mean0 = ravel_policy(ncap)[0] if fitness is loco else jnp.zeros(n)
        es = OpenAIES(pop_size=pop, lr=0.03, sigma0=0.1, sigma_lr=0.0, weight_decay=0.0)
        ref = Open_ES(population_size=pop, solution=jnp.zeros(n), optimizer=optax.adam(0.03),
                      std_schedule=optax.constant_schedule(0.1))
        params = ref.default_params

        @jax.jit
        def ours(state):
            def gen(s, k):
                x = es.ask(s, k)
                return es.tell(s, x, fitness(x, k)), None
            return jax.lax.scan(gen, state, jax.random.split(jax.random.PRNGKey(0), gens))[0].mean

        @jax.jit
        def reference(state):
            def gen(s, k):
                x, s = ref.ask(k, s, params)
                return ref.tell(k, x, -fitness(x, k), s, params)[0], None  # evosax minimises
            return jax.lax.scan(gen, state, jax.random.split(jax.random.PRNGKey(0), gens))[0].mean

        s_ours = es.init(mean0)
        s_ref = ref.init(jax.random.PRNGKey(0), mean0, params)
        row = compare(f"ES {name}, pop {pop}, {gens} gens", lambda: ours(s_ours),
                      lambda: reference(s_ref), repeats=3)
        print(f"  ours {gens / row['ours_s']:,.1f} gen/s   evosax {gens / row['reference_s']:,.1f} gen/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=250)
    parser.add_argument("--pop", type=int, default=32)
    args = parser.parse_args()
    env_steps(args.batch, args.steps)
    es_generations(args.pop)


if __name__ == "__main__":
    main()
