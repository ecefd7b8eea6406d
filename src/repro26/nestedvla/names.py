"""Names shared by the suites, the stages, the figures and the claims: plain tuples, so that a
figure or claims job imports no JAX."""

from __future__ import annotations

SUITES = ("point", "arm2", "arm3")  # the embodiments of repro26.nestedvla.suites
KINDS = ("reach", "place")  # the task families of every suite
MERGERS = ("task_arithmetic", "ties", "dare")  # the operators of repro26.nestedvla.merging
