"""Evolution strategies behind one ``init``/``ask``/``tell`` interface (one ES per file, as in
evosax): OpenAI-ES, the refined ES (elitist restarts, per-group sigma) and diagonal CMA-ES.
All *maximise* fitness."""

from repro26.rat_ncap.es.base import Strategy, centered_ranks
from repro26.rat_ncap.es.diag_cma import DiagCMAES
from repro26.rat_ncap.es.openai_es import OpenAIES, antithetic_gradient
from repro26.rat_ncap.es.refined_es import RefinedES

__all__ = ["DiagCMAES", "OpenAIES", "RefinedES", "Strategy", "antithetic_gradient", "centered_ranks"]
