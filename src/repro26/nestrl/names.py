"""The agent names the figure and claims jobs share with the compute stages (no JAX here, so
those jobs never start it)."""

#: the scripted partners (``env.scripted_action``): trivial rows and held-out proxies
SCRIPTED = ("random", "subtask", "proxy_onion", "proxy_plate")
LEARNED_KINDS = ("sp", "fcp", "mep")  # plus level1..levelK
BEST_RESPONSE = "br"  # trained against the held-out learned partners of its seed; an ego only
ORACLE = "oracle"  # the ideal row: per held-out partner, the seed's best ego (claims.oracle_cell)
TRIVIAL = ("random", "subtask")
PROXIES = ("proxy_onion", "proxy_plate")


def ego_types(cfg) -> tuple[str, ...]:
    """The learned agents that are also partners (every learned type but the ideal row)."""
    return (*LEARNED_KINDS, *(f"level{k}" for k in range(1, cfg.levels + 1)))


def nestrl_type(cfg) -> str:
    """The NestRL agent: the top level."""
    return f"level{cfg.levels}"
