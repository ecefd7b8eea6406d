"""NSMP's two passes, its Newton outer rounds, the baselines and the centralised solver.

NSMP on a quadratic ``F(x) = sum_i 1/2 x_i^T H_i x_i - g_i^T x_i + c_i`` (``x_i = x_{S~_i}``):

* leaf-to-root: client ``i`` adds its children's messages to its own quadratic and eliminates
  ``E = S~_i minus S~_p`` by partial minimisation. For a quadratic the minimum over ``x_E`` is
  the Schur complement on the separator ``K = S~_i cap S~_p``::

      m_{i->p}(x_K) = 1/2 x_K^T (H_KK - H_KE H_EE^{-1} H_EK) x_K
                      - (g_K - H_KE H_EE^{-1} g_E)^T x_K + c - 1/2 g_E^T H_EE^{-1} g_E,

  sent as ``s(s+1)/2 + s + 1`` floats (``s = |K|``). The root's reduced constant is ``min F``.
* root-to-leaf: the parent sends ``x_K``; the client reconstructs
  ``x_E = H_EE^{-1} (g_E - H_EK x_K)`` and forwards its children's separators.

Both passes are exact, so on a quadratic two passes (``2(n-1)`` messages) give the joint argmin.

*Convex, non-quadratic f_i* (logistic, Huber): of the issue's two options we implement
**quadratic models refined over outer rounds**: at the clients' current point each ``f_i`` is
replaced by its second-order Taylor model and the two passes solve the joint model exactly, i.e.
one outer round is one exact distributed Newton step. The root knows ``F(x)`` (one more float per
upward message) and the model's minimum ``F(x) - lambda^2/2`` (``lambda``: Newton decrement),
which gives an Armijo backtracking line search without extra passes: a trial point is accepted
(``F(x_trial) <= F(x_acc) - sigma alpha lambda^2``) when the next upward pass brings its value to
the root; if it is rejected the downward pass carries only the halved step size ``alpha``.

Baselines over the shared coordinates (each client keeps its own copy ``x_i`` of ``x_{S_i}``):

* general-form consensus ADMM (Boyd et al. 2011, sec. 7.2): ``x_i = argmin f_i + y_i^T(x_i - z_i)
  + rho/2 ||x_i - z_i||^2`` (local Newton steps), ``z_j = mean_{i owns j}(x_ij + y_ij / rho)``,
  ``y_i += rho (x_i - z_i)``;
* FedAvg: from ``z_{S_i}``, ``K`` local gradient steps on ``f_i``, then ``z_j`` = owners' mean;
* FedProx: the same with the proximal term ``mu/2 ||x_i - z_{S_i}||^2`` in the local objective.

Communication of the baselines is counted neighbour to neighbour (the cheapest way to average a
coordinate over its owners): per iteration every owner of a shared coordinate sends its value to
every other owner, ``sum_j c_j (c_j - 1)`` floats, one message per nerve edge and direction, one
round. Private coordinates are never communicated by any method.

Dense linear algebra on the small per-client blocks is written with ``jax.scipy.linalg``
Cholesky (``cho_factor``/``cho_solve``): the Schur complements need the factor applied to a block
of right-hand sides, which lineax's single-vector interface would redo per column.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import lineax as lx
import optimistix as optx
from jax.scipy.linalg import cho_factor, cho_solve
from jaxtyping import Array, Bool, Float, Int

from repro26.nsmp.losses import local_model, local_value
from repro26.nsmp.model import Instance

# ----------------------------------------------------------------------------- NSMP passes


def _factor_eliminated(H, keep, valid):
    """Cholesky factor of ``H_EE`` padded with the identity outside ``E = valid & ~keep``."""
    elim = valid & ~keep
    H_EE = jnp.where(elim[:, None] & elim[None, :], H, 0.0) + jnp.diag(jnp.where(elim, 0.0, 1.0))
    H_EK = jnp.where(elim[:, None] & keep[None, :], H, 0.0)
    return cho_factor(H_EE, lower=True), H_EK, elim


def eliminate(H: Float[Array, "B B"], g: Float[Array, " B"], c: Float[Array, ""],
              keep: Bool[Array, " B"], valid: Bool[Array, " B"]):
    """Partial minimisation of ``1/2 x^T H x - g^T x + c`` over the slots ``valid & ~keep``.

    Returns the message ``(H_m, g_m, c_m)`` on the ``keep`` slots (zero elsewhere).
    """
    factor, H_EK, elim = _factor_eliminated(H, keep, valid)
    gE = jnp.where(elim, g, 0.0)
    Z = cho_solve(factor, jnp.concatenate([H_EK, gE[:, None]], axis=1))
    ZK, zg = Z[:, :-1], Z[:, -1]
    KK = keep[:, None] & keep[None, :]
    H_m = jnp.where(KK, H - H_EK.T @ ZK, 0.0)
    g_m = jnp.where(keep, g - H_EK.T @ zg, 0.0)
    c_m = c - 0.5 * gE @ zg
    return H_m, g_m, c_m


def reconstruct(H: Float[Array, "B B"], g: Float[Array, " B"], x_keep: Float[Array, " B"],
                keep: Bool[Array, " B"], valid: Bool[Array, " B"]) -> Float[Array, " B"]:
    """Argmin over the eliminated slots given the separator values: ``H_EE^{-1}(g_E - H_EK x_K)``."""
    factor, H_EK, elim = _factor_eliminated(H, keep, valid)
    x_keep = jnp.where(keep, x_keep, 0.0)
    x_E = cho_solve(factor, jnp.where(elim, g, 0.0) - H_EK @ x_keep)
    return jnp.where(elim, x_E, x_keep)


def _senders(nodes: Int[Array, " W"], inst: Instance) -> Int[Array, ""]:
    """How many real clients (not the padding row) of one level send a message."""
    return jnp.sum(nodes < inst.parent.shape[0] - 1)


def _traffic(sent: Int[Array, " L"]) -> tuple[Array, Array]:
    """``(messages, hops)`` of one pass from the per-level sender counts: a level in which any
    client sends is one sequential communication round (hop)."""
    return jnp.sum(sent), jnp.sum(sent > 0)


def upward(H: Float[Array, "n1 B B"], g: Float[Array, "n1 B"], c: Float[Array, " n1"], inst: Instance):
    """Leaf-to-root pass: level by level (deepest first) every client sends its Schur-complement
    message to its parent, which adds it into its own quadratic. Returns the absorbed quadratics
    and the pass's ``(messages, hops)``, counted as they are sent."""

    def level(carry, lev):
        H, g, c = carry
        nodes = inst.levels[lev]
        H_m, g_m, c_m = jax.vmap(eliminate)(H[nodes], g[nodes], c[nodes], inst.sep[nodes],
                                            inst.valid[nodes])
        par, pp = inst.parent[nodes], inst.ppos[nodes]
        H = H.at[par[:, None, None], pp[:, :, None], pp[:, None, :]].add(H_m, mode="drop")
        g = g.at[par[:, None], pp].add(g_m, mode="drop")
        c = c.at[par].add(c_m, mode="drop")
        return (H, g, c), _senders(nodes, inst)

    L = inst.levels.shape[0]
    (H, g, c), sent = jax.lax.scan(level, (H, g, c), jnp.arange(L - 1, 0, -1))
    return H, g, c, _traffic(sent)


def downward(H: Float[Array, "n1 B B"], g: Float[Array, "n1 B"], inst: Instance) -> Float[Array, "n1 B"]:
    """Root-to-leaf pass: each client receives its separator values from its parent and
    reconstructs its eliminated coordinates. Returns every client's local solution and the
    pass's ``(messages, hops)`` (one message into each non-root client)."""

    def level(x_loc, lev):
        nodes = inst.levels[lev]
        x_par = x_loc.at[inst.parent[nodes]].get(mode="fill", fill_value=0.0)
        x_keep = jnp.take_along_axis(x_par, inst.ppos[nodes], axis=1, mode="fill", fill_value=0.0)
        x_new = jax.vmap(reconstruct)(H[nodes], g[nodes], x_keep, inst.sep[nodes], inst.valid[nodes])
        return x_loc.at[nodes].set(x_new), jnp.where(lev > 0, _senders(nodes, inst), 0)

    x_loc, sent = jax.lax.scan(level, jnp.zeros_like(g), jnp.arange(inst.levels.shape[0]))
    return x_loc, _traffic(sent)


def to_global(x_loc: Float[Array, "n1 B"], inst: Instance) -> Float[Array, " d1"]:
    """Global vector from the clients' solutions (each coordinate from the client eliminating it)."""
    d1 = inst.cmask.shape[0]
    elim = inst.valid & ~inst.sep
    x = jnp.zeros(d1, x_loc.dtype).at[jnp.where(elim, inst.idx, d1 - 1)].set(x_loc)
    return jnp.where(inst.cmask, x, 0.0)


def root_value(H, g, c, inst: Instance) -> Float[Array, ""]:
    """The root's reduced constant after eliminating everything: the joint model's minimum."""
    root = inst.levels[0, 0]
    none = jnp.zeros_like(inst.valid[root])
    return eliminate(H[root], g[root], c[root], none, inst.valid[root])[2]


def nsmp_quadratic(H: Float[Array, "n1 B B"], g: Float[Array, "n1 B"], c: Float[Array, " n1"],
                   inst: Instance):
    """Two passes on a quadratic: returns ``(argmin x [d1], min value)``."""
    Hu, gu, cu, _ = upward(H, g, c, inst)
    x_loc, _ = downward(Hu, gu, inst)
    return to_global(x_loc, inst), root_value(Hu, gu, cu, inst)


def local_models(x: Float[Array, " d1"], inst: Instance):
    """Every client's second-order model of ``f_i`` at ``x`` (in the step variable)."""
    return jax.vmap(local_model, in_axes=(0, 0, 0, 0, 0, None))(
        x[inst.idx], inst.A, inst.b, inst.rowmask, inst.r, inst.loss)


def objective(x: Float[Array, " d1"], inst: Instance) -> Float[Array, ""]:
    """``F(x) = sum_i f_i(x_{S_i})``."""
    return jnp.sum(jax.vmap(local_value, in_axes=(0, 0, 0, 0, 0, None))(
        x[inst.idx], inst.A, inst.b, inst.rowmask, inst.r, inst.loss))


def relative_error(x, x_star, inst: Instance):
    diff = jnp.where(inst.cmask, x - x_star, 0.0)
    return jnp.linalg.norm(diff) / jnp.linalg.norm(jnp.where(inst.cmask, x_star, 0.0))


def nsmp_floats(inst: Instance, newton: bool):
    """Floats of one up pass and of one down pass (with / without the Newton extras)."""
    s = jnp.sum(inst.sep, axis=1)
    real = inst.parent < inst.parent.shape[0]
    up = jnp.sum(jnp.where(real, s * (s + 1) // 2 + s + 1 + int(newton), 0))
    down = jnp.sum(jnp.where(real, s + int(newton), 0))
    return up, down


class NewtonState(eqx.Module):
    """Outer-round state: accepted point, its value and decrement, direction, trial step."""

    x_acc: Float[Array, " d1"]
    F_acc: Float[Array, ""]
    dec_acc: Float[Array, ""]
    direction: Float[Array, " d1"]
    alpha: Float[Array, ""]
    x: Float[Array, " d1"]  # the point the clients hold (x_acc + alpha * direction)


def newton_init(inst: Instance) -> NewtonState:
    zero = jnp.zeros(inst.cmask.shape[0], inst.A.dtype)
    one = jnp.ones((), inst.A.dtype)
    return NewtonState(zero, jnp.inf * one, 0 * one, zero, one, zero)


def nsmp_round(state: NewtonState, inst: Instance, x_star: Float[Array, " d1"],
               sigma: float = 0.1, beta: float = 0.5):
    """One outer round (one up pass, one down pass) of NSMP with quadratic models.

    Up: the models at the clients' point ``x``; the root gets ``F(x)`` and the model minimum.
    Armijo test at the root; accepted -> down pass carries the new Newton direction (clients move
    to ``x + D``); rejected -> down pass carries only ``alpha * beta``. For a quadratic the first
    round from ``x = 0`` lands on the exact optimum.
    """
    newton = inst.loss != "squared"
    H, g, c = local_models(state.x, inst)
    F = jnp.sum(c)
    Hu, gu, cu, (msgs_up, hops_up) = upward(H, g, c, inst)
    lam2 = jnp.maximum(2.0 * (F - root_value(Hu, gu, cu, inst)), 0.0)
    x_loc, (msgs_down, hops_down) = downward(Hu, gu, inst)
    step = to_global(x_loc, inst)
    slack = 10 * jnp.finfo(F.dtype).eps * jnp.abs(state.F_acc)
    accept = ~jnp.isfinite(state.F_acc) | (F <= state.F_acc - sigma * state.alpha * state.dec_acc + slack)
    alpha = jnp.where(accept, 1.0, beta * state.alpha)
    new = NewtonState(
        x_acc=jnp.where(accept, state.x, state.x_acc),
        F_acc=jnp.where(accept, F, state.F_acc),
        dec_acc=jnp.where(accept, lam2, state.dec_acc),
        direction=jnp.where(accept, step, state.direction),
        alpha=alpha,
        x=jnp.where(accept, state.x + step, state.x_acc + alpha * state.direction),
    )
    up, down = nsmp_floats(inst, newton)
    down = jnp.where(accept, down, int(newton) * msgs_down)
    metrics = {
        "loss": relative_error(new.x, x_star, inst),
        "objective": F,
        "decrement2": lam2,
        "accepted": accept,
        "floats": up + down,
        "messages": msgs_up + msgs_down,
        "rounds": hops_up + hops_down,
    }
    return new, metrics


# ----------------------------------------------------------------------------- baselines


class ConsensusState(eqx.Module):
    """Local copies ``x_i`` on the owned slots, duals ``y_i`` (ADMM only), consensus ``z``."""

    x: Float[Array, "n1 B"]
    y: Float[Array, "n1 B"]
    z: Float[Array, " d1"]


def consensus_init(inst: Instance) -> ConsensusState:
    zl = jnp.zeros(inst.r.shape, inst.A.dtype)
    return ConsensusState(zl, zl, jnp.zeros(inst.cmask.shape[0], inst.A.dtype))


def owner_mean(values: Float[Array, "n1 B"], inst: Instance) -> Float[Array, " d1"]:
    """``z_j`` = mean over the owners of coordinate ``j`` of their values."""
    d1 = inst.cmask.shape[0]
    total = jnp.zeros(d1, values.dtype).at[jnp.where(inst.owned, inst.idx, d1 - 1)].add(values)
    return jnp.where(inst.cmask, total / inst.counts, 0.0)


def consensus_comm(inst: Instance, nerve_edges):
    """Floats, messages and rounds of one consensus iteration (neighbour-to-neighbour)."""
    floats = jnp.sum(jnp.where(inst.shared, inst.counts[inst.idx] - 1, 0))
    return floats, 2 * nerve_edges, 1


def _metrics(z, x_star, inst, nerve_edges):
    floats, messages, rounds = consensus_comm(inst, nerve_edges)
    return {"loss": relative_error(z, x_star, inst), "objective": objective(z, inst),
            "floats": floats, "messages": messages, "rounds": rounds}


def admm_step(state: ConsensusState, inst: Instance, x_star, nerve_edges, rho, local_steps: int):
    """One general-form consensus ADMM iteration; the x-update takes ``local_steps`` Newton
    steps on ``f_i + y^T (x - z) + rho/2 ||x - z||^2`` (exact in one for a quadratic)."""
    zS = state.z[inst.idx]

    def local(x, y, zs, A, b, rowmask, r, owned):
        def aug(v):
            pen = y @ (v - zs) + 0.5 * rho * jnp.sum(jnp.where(owned, v - zs, 0.0) ** 2)
            return local_value(v, A, b, rowmask, r, inst.loss) + pen

        eye = jnp.diag(jnp.where(owned, 0.0, 1.0))
        for _ in range(local_steps):
            grad = jnp.where(owned, jax.grad(aug)(x), 0.0)
            x = x - jnp.linalg.solve(jax.hessian(aug)(x) + eye, grad)
        return x

    x = jax.vmap(local)(state.x, state.y, zS, inst.A, inst.b, inst.rowmask, inst.r, inst.owned)
    x = jnp.where(inst.owned, x, 0.0)
    z = owner_mean(x + state.y / rho, inst)
    y = jnp.where(inst.owned, state.y + rho * (x - z[inst.idx]), 0.0)
    return ConsensusState(x, y, z), _metrics(z, x_star, inst, nerve_edges)


def fed_step(state: ConsensusState, inst: Instance, x_star, nerve_edges, lr, mu,
             local_steps: int, lipschitz_max):
    """One FedAvg (``mu = 0``) / FedProx round over the shared coordinates: ``local_steps``
    gradient steps of size ``lr / (L_max + mu)`` from ``z_{S_i}``, then owners' average."""
    zS = state.z[inst.idx]
    step = lr / (lipschitz_max + mu)

    def local(zs, A, b, rowmask, r, owned):
        def obj(v):
            return local_value(v, A, b, rowmask, r, inst.loss) + 0.5 * mu * jnp.sum(
                jnp.where(owned, v - zs, 0.0) ** 2)

        def body(_, v):
            return v - step * jnp.where(owned, jax.grad(obj)(v), 0.0)

        return jax.lax.fori_loop(0, local_steps, body, zs)

    x = jnp.where(inst.owned, jax.vmap(local)(zS, inst.A, inst.b, inst.rowmask, inst.r, inst.owned), 0.0)
    z = owner_mean(x, inst)
    return ConsensusState(x, state.y, z), _metrics(z, x_star, inst, nerve_edges)


# ----------------------------------------------------------------------------- centralised


def central_solve(inst: Instance, tol: float = 1e-12, max_steps: int = 2000) -> Float[Array, " d1"]:
    """The joint optimum ``argmin F`` with all data in one place.

    Quadratic: the dense system ``H x = g`` assembled from the clients' blocks, solved by lineax
    Cholesky. Otherwise: optimistix BFGS (line search, globally convergent on convex ``F``) from
    ``x = 0``, polished by optimistix Newton root-finding on ``grad F`` (local quadratic
    convergence; BFGS alone stalls near ``1e-8`` relative error). Unused (padding) coordinates
    get ``1/2 x_j^2`` so the systems stay non-singular.
    """
    d1 = inst.cmask.shape[0]
    pad = jnp.where(inst.cmask, 0.0, 1.0)
    zero = jnp.zeros(d1, inst.A.dtype)
    if inst.loss == "squared":
        H, g, _ = local_models(zero, inst)
        Hg = jnp.zeros((d1, d1), H.dtype).at[inst.idx[:, :, None], inst.idx[:, None, :]].add(H)
        gg = jnp.zeros(d1, g.dtype).at[inst.idx].add(g)
        op = lx.MatrixLinearOperator(Hg + jnp.diag(pad), lx.positive_semidefinite_tag)
        return lx.linear_solve(op, gg, lx.Cholesky()).value

    def F(x, _):
        return objective(x, inst) + 0.5 * jnp.sum(pad * x**2)

    rough = optx.minimise(F, optx.BFGS(rtol=1e-8, atol=1e-8), zero, max_steps=max_steps).value
    grad_F = jax.grad(F)
    return optx.root_find(grad_F, optx.Newton(rtol=tol, atol=tol), rough, max_steps=50).value
