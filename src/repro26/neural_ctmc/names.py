"""The names the figure and claims jobs share with the compute stages (no JAX here, so those
jobs never start it): the four parameterisations and the samplers read for each."""

#: the method names, in the order they appear in tables and figures
METHODS: tuple[str, ...] = ("neural_ctmc", "gidd", "mdlm", "sedd")

#: every sampler that applies to each method (its own first); all are read exactly in the
#: synthetic study
ALL_SAMPLERS: dict[str, tuple[str, ...]] = {
    "neural_ctmc": ("tau", "euler", "jump"),
    "gidd": ("ancestral", "tau", "euler", "jump"),
    "mdlm": ("ancestral",),
    "sedd": ("tau", "euler", "jump"),
}
#: samplers evaluated per method on text (sampled, scored); the first is the method's own
SAMPLERS: dict[str, tuple[str, ...]] = {
    "neural_ctmc": ("tau", "euler"),
    "gidd": ("ancestral", "tau"),
    "mdlm": ("ancestral",),
    "sedd": ("tau",),
}
