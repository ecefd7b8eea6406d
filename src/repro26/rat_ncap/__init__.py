"""Rat v2 analogue body + Rat NCAP spinal-circuit controller trained by evolution strategies.

Second abstract of ``docs/abstracts.txt`` (issue 9). Modules:
``body`` (MJCF + MJX environment), ``model`` (Rat NCAP and MLP policies, neuromechanical
interfaces), ``es/`` (OpenAI-ES, refined ES, diagonal CMA-ES; one per file, one ask/tell API),
``losses`` (locomotion reward), ``train`` (ES step driven by ``repro26.core.train.run_loop``),
``evaluate`` (gait statistics, ablations), ``rodent`` (transfer to dm_control's full rodent),
``figures``, ``claims``, ``cli``.
"""
