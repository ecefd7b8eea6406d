"""NeMo (issue 29): need-aware multi-objective RL for emotional support, on the MindFlow user
simulator."""
