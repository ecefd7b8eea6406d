"""Rat NCAP (spinal-circuit controller), the MLP baseline and the three f-e interfaces.

Rat NCAP is a rate network (abstract: "a biologically grounded neural architecture for
locomotion based on mammalian spinal circuits that incorporates cell-type-specific
connectivity and a novel flexor-extensor neuromechanical interface"). Every neuron obeys

    tau dx/dt = -x + sum_j w_ij a_j + b_i + (afferent and brainstem input),   a = clamp(x, 0, 1),

integrated by forward Euler at the physics step inside the rollout's ``lax.scan``. Per limb
(LF, RF, LH, RH) the populations follow Danner et al. (2016, J. Physiol. 594:6947; 2017,
eLife 6:e31050) and the NCAP idea of Bhattasali et al. (2022, NeurIPS):

* rhythm generator (RG): flexor and extensor half-centres, reciprocal inhibition (the
  inhibitory interneurons are taken as instantaneous, so the inhibition is a direct weight of
  sign <= 0) and slow adaptation ``T da/dt = -a + r`` feeding back with gain ``-beta``; with
  constant input this is a Matsuoka (1985) oscillator (period: :func:`matsuoka_period`);
* pattern formation (PF-F, PF-E), mutually inhibiting, driven by the RG half-centres;
* motor neurons MN-F_j, MN-E_j per flexion joint j (proximal, distal) driven by PF;
* posture (hip/shoulder ab/adduction): a tonic abductor and adductor motor neuron per limb,
  MN-Ab and MN-Ad, with learned biases, driven by a vestibular trunk-roll afferent (the
  lateral vestibulospinal reflex: a sideways tilt excites the antigravity motor neurons of
  the side that goes down; Wilson & Peterson 1978, Physiol. Rev. 58:80; Deliagina et al.
  2008, J. Physiol. 586:2297 on postural limb reflexes). The afferent of limb side ``s``
  (+1 left, -1 right) is ``clip(-s (phi + 0.1 dphi/dt) / 0.2 rad, 0, 1)`` for trunk roll
  ``phi`` (positive: left side up); it excites the adductor of the falling side, which
  brings its paw under the girdle and lifts that side, and the abductor of the rising side;
* Ia stretch reflex: the Ia afferent of a muscle excites its own MN and its Ia-inhibitory
  interneuron (IaIN), which inhibits the antagonist MN (reciprocal inhibition);
* hip/shoulder extension afferent (group II) exciting RG-F (stance-to-swing transition);
* paw-load (Ib) afferent exciting RG-E (load prolongs stance; Ekeberg & Pearson 2005,
  J. Neurophysiol. 94:4256; Danner et al. 2016 feed load to the extensor half-centre); the load
  signal is a contact proxy ``clip(1 - h / 3 mm, 0, 1)`` of the paw height ``h`` above contact;
* commissural interneurons: V0d (inhibitory; RG-F -> contralateral RG-F), V2a -> V0v
  (excitatory) -> contralateral Ini (inhibitory) -> RG-F (both V0: left-right alternation),
  V3 (excitatory; RG-F -> contralateral RG-F: synchrony);
* long propriospinal neurons: homolateral LPN (inhibitory) and diagonal LPN (excitatory)
  between fore and hind RG-F;
* brainstem drive ``d = |d0| + |d1| v_cmd`` (v_cmd: commanded speed, m/s) exciting RG-F/RG-E
  and inhibiting V0d/V0v (Danner et al. 2017: drive-dependent gait transitions);
* drive-dependent adaptation: ``T(v) = tau_adapt exp(-|k_adapt| |d1| v_cmd)``. The period of a
  threshold-linear Matsuoka oscillator is set by tau and T (:func:`matsuoka_period`), not by
  its input, so without this the rhythm barely follows the commanded speed; a faster
  adaptation shortens the burst as the drive rises (the role of the drive-dependent
  extensor-phase shortening in Danner et al. 2016).

Silencing "V0" removes V0d, V0v and the diagonal LPN: in Danner et al. 2017 (eLife 6:e31050,
Fig. 1) the descending diagonal LPNs are V0-type cells (V0D and V0V LPNs), and here the
diagonal-excitatory plus homolateral-inhibitory LPN loop alone forces left-right antiphase,
so silencing V0 without it leaves alternation in place.

Sign constraints by parameterisation: every weight is ``w = s * |theta|`` with the
presynaptic cell type's sign ``s`` (+1 excitatory, -1 inhibitory); ``constrained=False`` uses
``w = s * theta`` (the "NCAP without sign constraints" baseline, same initial weights).
Weights are shared between left and right homologous limbs; fore and hind girdles have their
own set. ``mask`` (from :func:`silence_mask`) zeroes populations (V0, V3, V2a, Ia) for the ablations.

Interfaces (``f``, ``e`` in [0, 1] from MN-F and MN-E; theta joint angle, flexion positive;
``g`` the actuator gear, ``theta_0`` the standing posture):

* ``torque``: flexor/extensor motors driven by f and e: tau = g (f - e);
* ``muscle``: agonist-antagonist muscles with length and velocity dependence
  T_f = f clip(1/2 - kappa (theta - theta_0) - beta dtheta, 0, 1), T_e likewise mirrored,
  tau = g (T_f - T_e), so the joint stiffness ``g kappa (f + e)`` grows with co-contraction;
* ``ep``: equilibrium-point targets theta* = theta_0 + Delta (f - e) tracked with fixed
  stiffness, tau = g (kappa_ep (theta* - theta) - beta_ep dtheta), split into the pull of
  the flexor (tau > 0) and of the extensor (tau < 0).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree
from jaxtyping import Array, Float

from repro26.rat_ncap.body import JOINTS_PER_LIMB, N_JOINTS

Interface = Literal["torque", "muscle", "ep"]
INTERFACES: tuple[str, ...] = ("torque", "muscle", "ep")
POPULATIONS: tuple[str, ...] = ("V0", "V3", "V2a", "Ia")

# ---------------------------------------------------------------- neuron indices (per limb)
RGF, RGE, PFF, PFE = 0, 1, 2, 3
MNF = (4, 5)
MNE = (6, 7)
IAF = (8, 9)  # Ia-inhibitory interneurons of the flexor afferents (inhibit extensor MNs)
IAE = (10, 11)
V0D, V2A, V0V, INI, V3, LPNH, LPND = 12, 13, 14, 15, 16, 17, 18
MNAB, MNAD = 19, 20  # ab/adduction (posture) motor neurons
N_NEURONS = 21
RHYTHMIC = 2  # flexion joints per limb driven by the rhythm (proximal, distal); the third is ab/adduction
SIDE = np.array([1.0, -1.0, 1.0, -1.0])  # +1 left, -1 right
ROLL_REF = 0.2  # rad of trunk roll (plus 0.1 s x roll rate) that saturates the roll afferent
CONTRA = np.array([1, 0, 3, 2])  # LF<->RF, LH<->RH
HOMOLAT = np.array([2, 3, 0, 1])  # LF<->LH, RF<->RH
DIAG = np.array([3, 2, 1, 0])  # LF<->RH, RF<->LH
GIRDLE = np.array([0, 0, 1, 1])  # fore, fore, hind, hind

#: name -> (presynaptic sign, group, initial magnitude, shape per girdle)
#: sign 0 marks an unsigned bias. Shapes: () one per girdle, (2,) one per joint of the limb.
SYNAPSES: dict[str, tuple[int, str, float, tuple[int, ...]]] = {
    "b_rgf": (0, "rg", 0.4, ()),
    "b_rge": (0, "rg", 0.6, ()),
    "rgf_rge": (-1, "rg", 2.0, ()),  # RG-F -| RG-E
    "rge_rgf": (-1, "rg", 2.0, ()),  # RG-E -| RG-F
    "adapt": (-1, "rg", 2.5, ()),  # adaptation -| own half-centre
    "hip_rgf": (1, "rg", 0.5, ()),  # hip-extension afferent -> RG-F
    "ib_rge": (1, "rg", 0.3, ()),  # paw-load (Ib) afferent -> RG-E
    "d_rgf": (1, "drive", 0.5, ()),
    "d_rge": (1, "drive", 0.3, ()),
    "d_v0": (-1, "drive", 0.3, ()),  # brainstem drive -| V0d, V0v
    "rgf_pff": (1, "pf", 1.5, ()),
    "rge_pfe": (1, "pf", 1.5, ()),
    "pf_pf": (-1, "pf", 1.0, ()),
    "b_pf": (0, "pf", -0.2, ()),
    "pff_mn": (1, "mn", 1.0, (RHYTHMIC,)),
    "pfe_mn": (1, "mn", 1.0, (RHYTHMIC,)),
    "b_mn": (0, "mn", -0.1, (RHYTHMIC,)),
    "b_ab": (0, "posture", 0.1, ()),  # tonic drive of MN-Ab
    "b_ad": (0, "posture", 0.1, ()),  # tonic drive of MN-Ad
    "roll_ad": (1, "posture", 1.0, ()),  # roll afferent of the falling side -> its MN-Ad
    "roll_ab": (1, "posture", 1.0, ()),  # roll afferent of the other side -> MN-Ab
    # Ia afferent -> homonymous MN; at 0.3 the untrained circuit's fore limbs gave way (elbow
    # flexing, shoulder extending, the trunk pitching forward) in 8 of 24 four-second episodes
    "ia_mn": (1, "ia", 0.8, ()),
    "ia_iain": (1, "ia", 1.0, ()),  # Ia afferent -> its IaIN
    "iain_mn": (-1, "ia", 0.5, ()),  # IaIN -| antagonist MN
    "iain_iain": (-1, "ia", 0.5, ()),  # IaIN -| antagonist IaIN
    "rgf_v0d": (1, "commissural", 1.0, ()),
    "v0d_rgf": (-1, "commissural", 0.8, ()),  # V0d -| contralateral RG-F
    "rgf_v2a": (1, "commissural", 1.0, ()),
    "v2a_v0v": (1, "commissural", 1.0, ()),
    "v0v_ini": (1, "commissural", 1.0, ()),  # V0v -> contralateral Ini
    "ini_rgf": (-1, "commissural", 0.8, ()),
    "rgf_v3": (1, "commissural", 1.0, ()),
    "v3_rgf": (1, "commissural", 0.2, ()),  # V3 -> contralateral RG-F
    "rgf_lpnh": (1, "lpn", 1.0, ()),
    "lpnh_rgf": (-1, "lpn", 0.5, ()),  # homolateral LPN -| RG-F of the other girdle
    "rgf_lpnd": (1, "lpn", 1.0, ()),
    "lpnd_rgf": (1, "lpn", 0.3, ()),  # diagonal LPN -> RG-F of the diagonal limb
}
#: brainstem drive d = |d0| + |d1| v_cmd and the adaptation speed-up k_adapt (shared by all limbs)
DRIVE0 = {"d0": 0.5, "d1": 2.0, "k_adapt": 1.0}


class NCAPState(eqx.Module):
    x: Float[Array, "4 21"]
    adapt: Float[Array, "4 2"]


def silence_mask(silence: tuple[str, ...]) -> np.ndarray:
    """Gain of every per-limb population: 0 for those in ``silence`` (V0 = V0d, V0v and the
    diagonal V0-type LPN; V3; V2a; Ia = Ia afferent pathways and IaINs), 1 otherwise."""
    mask = np.ones(N_NEURONS, np.float32)
    for pop in silence:
        if pop not in POPULATIONS:
            raise ValueError(f"silence: unknown population {pop!r}; allowed {POPULATIONS}")
        idx = {"V0": [V0D, V0V, LPND], "V3": [V3], "V2a": [V2A], "Ia": [*IAF, *IAE]}[pop]
        mask[idx] = 0.0
    return mask


def matsuoka_period(tau: float, tau_adapt: float, beta: float, w: float) -> float:
    """Period (s) of the two-neuron Matsuoka oscillator from its linearisation (Matsuoka
    1985; Williamson 1998): omega = (1/T) sqrt(((tau + T) beta) / (tau w) - 1)."""
    omega = np.sqrt((tau + tau_adapt) * beta / (tau * w) - 1.0) / tau_adapt
    return float(2 * np.pi / omega)


def initial_theta() -> dict[str, Float[Array, "2 ..."]]:
    """NCAP's initial parameters: one array per synapse type (fore and hind girdle), magnitudes
    from :data:`SYNAPSES`, and the brainstem drive :data:`DRIVE0`."""
    theta = {k: jnp.full((2, *shape), abs(v) if s else v, jnp.float32)
             for k, (s, _, v, shape) in SYNAPSES.items()}
    theta.update({k: jnp.asarray(v, jnp.float32) for k, v in DRIVE0.items()})
    return theta


class RatNCAP(eqx.Module):
    """Rat NCAP policy holding its parameters ``theta`` (the ES searches them as one vector,
    :func:`ravel_policy`); the effective weights are :meth:`weights`."""

    theta: dict[str, Float[Array, "2 ..."]]
    interface: str = eqx.field(static=True)
    constrained: bool = eqx.field(static=True)
    tau: float = eqx.field(static=True)
    tau_adapt: float = eqx.field(static=True)

    def __init__(self, interface: str, constrained: bool, tau: float, tau_adapt: float,
                 theta: dict[str, Float[Array, "2 ..."]] | None = None):
        self.theta = initial_theta() if theta is None else theta
        self.interface, self.constrained = interface, constrained
        self.tau, self.tau_adapt = tau, tau_adapt

    def groups(self) -> np.ndarray:
        """Parameter-group id (:data:`SYNAPSES` group) of every entry of the flat vector."""
        names = sorted({g for _, g, _, _ in SYNAPSES.values()})
        group = {k: names.index(g) for k, (_, g, _, _) in SYNAPSES.items()}
        group.update({k: names.index("drive") for k in DRIVE0})
        ids = eqx.tree_at(lambda p: p.theta, self,
                          {k: jnp.full(v.shape, float(group[k])) for k, v in self.theta.items()})
        return np.asarray(ravel_policy(ids)[0]).astype(np.int32)

    def weights(self) -> dict[str, jax.Array]:
        """Effective signed weights ``s |theta|`` (or ``s theta`` unconstrained); biases as is."""
        mag = jnp.abs if self.constrained else (lambda v: v)
        out = {k: (s * mag(self.theta[k]) if s else self.theta[k])
               for k, (s, _, _, _) in SYNAPSES.items()}
        out.update({k: jnp.abs(self.theta[k]) for k in DRIVE0})
        return out

    def init_state(self, key: jax.Array) -> NCAPState:
        """Random initial rates (RG half-centres in [0, 0.6]), so that interlimb coordination
        has to come from the circuit rather than from the initial condition."""
        k_rg, k_rest = jax.random.split(key)
        x = 0.05 * jax.random.uniform(k_rest, (4, N_NEURONS))
        x = x.at[:, :2].set(0.6 * jax.random.uniform(k_rg, (4, 2)))
        return NCAPState(x, jnp.zeros((4, 2)))

    def __call__(self, state: NCAPState, q, qd, q0, v_cmd, dt,
                 mask: Float[Array, " 21"] | None = None, load: Float[Array, " 4"] | None = None,
                 roll: Float[Array, " 2"] | None = None):
        """One Euler step; returns the new state and (f, e), each (N_JOINTS,) in [0, 1]
        (per limb: flexor/extensor of the two flexion joints, abductor/adductor).

        ``mask`` (from :func:`silence_mask`) is the per-population activity gain (1 intact,
        0 silenced); ``None`` leaves every population intact. ``load`` is the paw-load signal
        per limb in [0, 1] (``None``: no load, as in fictive locomotion); ``roll`` the trunk
        roll angle (rad) and rate (rad/s) (``None``: level, as in fictive locomotion)."""
        ws = self.weights()
        w = {k: v[GIRDLE] for k, v in ws.items() if k not in DRIVE0}  # per limb (4, ...)
        mask = jnp.ones(N_NEURONS) if mask is None else mask
        r = jnp.clip(state.x, 0.0, 1.0) * mask
        dq = (q - q0).reshape(4, JOINTS_PER_LIMB)[:, :RHYTHMIC]
        dqd = qd.reshape(4, JOINTS_PER_LIMB)[:, :RHYTHMIC]
        ia_gain = mask[IAF[0]]  # silencing Ia removes the afferents and their interneurons
        ia_f = ia_gain * jnp.clip(-dq - 0.05 * dqd, 0.0, 1.0)  # flexor stretched by extension
        ia_e = ia_gain * jnp.clip(dq + 0.05 * dqd, 0.0, 1.0)
        hip_ext = jnp.clip(-dq[:, 0] / 0.5, 0.0, 1.0)  # proximal joint extended
        drive = ws["d0"] + ws["d1"] * v_cmd
        tau_adapt = self.tau_adapt * jnp.exp(-ws["k_adapt"] * ws["d1"] * v_cmd)
        load = jnp.zeros(4) if load is None else load
        roll = jnp.zeros(2) if roll is None else roll
        falling = jnp.clip(-SIDE * (roll[0] + 0.1 * roll[1]) / ROLL_REF, 0.0, 1.0)  # per limb

        col = lambda i: r[:, i]  # noqa: E731
        rgf = (w["b_rgf"] + w["d_rgf"] * drive + w["rge_rgf"] * col(RGE) + w["adapt"] * state.adapt[:, 0]
               + w["hip_rgf"] * hip_ext + w["v0d_rgf"] * col(V0D)[CONTRA] + w["ini_rgf"] * col(INI)
               + w["v3_rgf"] * col(V3)[CONTRA] + w["lpnh_rgf"] * col(LPNH)[HOMOLAT]
               + w["lpnd_rgf"] * col(LPND)[DIAG])
        rge = (w["b_rge"] + w["d_rge"] * drive + w["rgf_rge"] * col(RGF) + w["adapt"] * state.adapt[:, 1]
               + w["ib_rge"] * load)
        pff = w["b_pf"] + w["rgf_pff"] * col(RGF) + w["pf_pf"] * col(PFE)
        pfe = w["b_pf"] + w["rge_pfe"] * col(RGE) + w["pf_pf"] * col(PFF)
        iaf, iae = r[:, list(IAF)], r[:, list(IAE)]
        mnf = (w["b_mn"] + w["pff_mn"] * col(PFF)[:, None] + w["ia_mn"][:, None] * ia_f
               + w["iain_mn"][:, None] * iae)
        mne = (w["b_mn"] + w["pfe_mn"] * col(PFE)[:, None] + w["ia_mn"][:, None] * ia_e
               + w["iain_mn"][:, None] * iaf)
        iainf = w["ia_iain"][:, None] * ia_f + w["iain_iain"][:, None] * iae
        iaine = w["ia_iain"][:, None] * ia_e + w["iain_iain"][:, None] * iaf
        commissural = jnp.stack([
            w["rgf_v0d"] * col(RGF) + w["d_v0"] * drive,  # V0d
            w["rgf_v2a"] * col(RGF),  # V2a
            w["v2a_v0v"] * col(V2A) + w["d_v0"] * drive,  # V0v
            w["v0v_ini"] * col(V0V)[CONTRA],  # Ini
            w["rgf_v3"] * col(RGF),  # V3
            w["rgf_lpnh"] * col(RGF),  # homolateral LPN
            w["rgf_lpnd"] * col(RGF),  # diagonal LPN
        ], axis=1)
        posture = jnp.stack([w["b_ab"] + w["roll_ab"] * falling[CONTRA],  # MN-Ab
                             w["b_ad"] + w["roll_ad"] * falling], axis=1)  # MN-Ad
        inp = jnp.concatenate([jnp.stack([rgf, rge, pff, pfe], axis=1), mnf, mne, iainf, iaine,
                               commissural, posture], axis=1)  # (4, N_NEURONS) in index order

        x = state.x + dt / self.tau * (-state.x + inp)
        rg = jnp.clip(state.x[:, :2], 0.0, 1.0)
        adapt = state.adapt + dt / tau_adapt * (-state.adapt + rg)
        r_new = jnp.clip(x, 0.0, 1.0) * mask
        f = r_new[:, [*MNF, MNAB]].reshape(N_JOINTS)
        e = r_new[:, [*MNE, MNAD]].reshape(N_JOINTS)
        return NCAPState(x, adapt), (f, e)


N_OBS = 2 * N_JOINTS + 8  # MLP observation size (see repro26.rat_ncap.losses)


class MLPState(eqx.Module):
    """The MLP is feedforward; a dummy state keeps one rollout code path."""

    dummy: Float[Array, ""]


class MLPPolicy(eqx.Module):
    """tanh MLP (``eqx.nn.MLP``, equal hidden widths) from (q - q0, dq of all 12 joints, trunk
    up/vx/height/roll/angular velocity, v_cmd) to (f, e) = sigmoid of its output (all 24
    motors, ab/adduction included).

    Initial weights ``W ~ N(0, 1/fan_in)``, biases 0."""

    mlp: eqx.nn.MLP
    interface: str = eqx.field(static=True)

    def __init__(self, hidden: tuple[int, ...], interface: str, key: jax.Array):
        if not hidden or len(set(hidden)) != 1:
            raise ValueError(f"mlp hidden sizes must be equal (eqx.nn.MLP), got {hidden}")
        mlp = eqx.nn.MLP(N_OBS, 2 * N_JOINTS, hidden[0], len(hidden), activation=jnp.tanh,
                         final_activation=jax.nn.sigmoid, key=key)
        keys = jax.random.split(key, len(mlp.layers))
        layers = tuple(
            eqx.tree_at(lambda lin: (lin.weight, lin.bias), lin,
                        (jax.random.normal(k, lin.weight.shape[::-1]).T / np.sqrt(lin.in_features),
                         jnp.zeros_like(lin.bias)))
            for lin, k in zip(mlp.layers, keys))
        self.mlp = eqx.tree_at(lambda m: m.layers, mlp, layers)
        self.interface = interface

    def groups(self) -> np.ndarray:
        """Layer index of every entry of the flat vector (weights and bias of a layer)."""
        ids = eqx.tree_at(lambda p: p.mlp.layers, self, tuple(
            jax.tree.map(lambda a, i=i: jnp.full(a.shape, float(i)), lin)
            for i, lin in enumerate(self.mlp.layers)))
        return np.asarray(ravel_policy(ids)[0]).astype(np.int32)

    def init_state(self, key: jax.Array) -> MLPState:
        return MLPState(jnp.zeros(()))

    def __call__(self, state, obs):
        out = self.mlp(obs)
        return state, (out[:N_JOINTS], out[N_JOINTS:])



class DoNothing(eqx.Module):
    """The do-nothing controller: every motor command 0 (the passive body under gravity,
    held only by its joint springs); NCAP's call signature, no weights."""

    interface: str = eqx.field(static=True, default="torque")

    def init_state(self, key: jax.Array) -> MLPState:
        return MLPState(jnp.zeros(()))

    def __call__(self, state, q, qd, q0, v_cmd, dt, mask=None, load=None, roll=None):
        return state, (jnp.zeros(N_JOINTS), jnp.zeros(N_JOINTS))


def random_theta(key: jax.Array) -> dict[str, Float[Array, "2 ..."]]:
    """A random circuit: every entry of :func:`initial_theta` times an independent U(0, 2)
    factor (same wiring and signs, magnitudes with the initial mean)."""
    theta = initial_theta()
    keys = jax.random.split(key, len(theta))
    return {k: v * jax.random.uniform(kk, v.shape, minval=0.0, maxval=2.0)
            for (k, v), kk in zip(sorted(theta.items()), keys)}


Policy = RatNCAP | MLPPolicy | DoNothing


def ravel_policy(policy: Policy) -> tuple[Float[Array, " P"], Callable[[jax.Array], Policy]]:
    """The evolution-strategy boundary: the policy's weights (every inexact array it holds) as
    one flat vector, and the inverse map from such a vector back to a policy."""
    params, static = eqx.partition(policy, eqx.is_inexact_array)
    flat, unravel = ravel_pytree(params)
    return flat, lambda vector: eqx.combine(unravel(vector), static)


def num_params(policy: Policy) -> int:
    """Number of weights the ES searches over."""
    return int(ravel_policy(policy)[0].size)


def mlp_hidden_for(n_params: int, n_in: int = N_OBS, n_out: int = 2 * N_JOINTS) -> int:
    """Hidden width of a one-hidden-layer MLP whose parameter count is closest to ``n_params``."""
    return max(1, int(round((n_params - n_out) / (n_in + 1 + n_out))))


# ---------------------------------------------------------------- interfaces
KAPPA, BETA, KAPPA_EP, BETA_EP, DELTA_EP = 1.0, 0.05, 2.0, 0.05, 0.8


def interface_ctrl(kind: str, f, e, q, qd, q0) -> Float[Array, "24"]:
    """Flexor/extensor motor commands (in [0, 1], actuator order j_flex, j_ext per joint)."""
    if kind == "torque":
        tf, te = f, e
    elif kind == "muscle":
        stretch = KAPPA * (q - q0) + BETA * qd  # positive: flexor shortening, extensor stretched
        tf = f * jnp.clip(0.5 - stretch, 0.0, 1.0)
        te = e * jnp.clip(0.5 + stretch, 0.0, 1.0)
    elif kind == "ep":
        target = q0 + DELTA_EP * (f - e)
        tau = KAPPA_EP * (target - q) - BETA_EP * qd
        tf, te = jnp.clip(tau, 0.0, 1.0), jnp.clip(-tau, 0.0, 1.0)
    else:
        raise ValueError(f"interface: {kind!r} is not allowed; use one of {INTERFACES}")
    return jnp.stack([tf, te], axis=-1).reshape(-1)

