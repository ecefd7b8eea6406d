"""Names shared by the simulator, the stages, the figures and the claims: plain tuples, so that
the config check, a figure or the claims import no JAX."""

from __future__ import annotations

#: the eight ESConv strategies, in action-index order
STRATEGIES = ("question", "restatement", "reflection", "self_disclosure", "affirmation",
              "suggestions", "information", "others")
#: the fields of :class:`repro26.nemo.simulator.Persona`, in its order
PERSONA_FIELDS = ("arousal_peak", "arousal_width", "affective_gain", "deliberative_gain",
                  "reactivity", "baseline_distress")
#: the evaluation settings (:mod:`repro26.nemo.evaluate`)
SETTINGS = ("in_distribution", "shifted_personas", "alt_family")
