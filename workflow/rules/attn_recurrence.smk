# attn_recurrence (issue 30): lower bounds for replacing an attention head by a value-linear
# recurrence. data -> fit (surrogate x target; seeds and states vmapped in one job) + scaling
# (K x d_v) + lm (model x seed) -> survey (model x seed, and GPT-2-layout checkpoints) ->
# evaluate; figures, claims and the `attn_recurrence` target come from workflow/rules/protocol.smk.
AR = "attn_recurrence"
AR_CFG = method_config(AR)
AR_FITS = [
    out(AR, "runs", "fit", f"{kind}_{target}.csv")
    for kind in AR_CFG["surrogates"]
    for target in AR_CFG["targets"]
]
AR_SCALING = [
    out(AR, "runs", "scaling", f"K{k}_d{d}.csv")
    for k in AR_CFG["scaling_pairs"]
    for d in AR_CFG["scaling_value_dims"]
]
AR_SURVEYS = [
    out(AR, "runs", "survey", f"{m}_seed{s}.csv")
    for m in AR_CFG["survey_models"]
    for s in AR_CFG["lm_seeds"]
] + [out(AR, "runs", "survey", f"checkpoint{i}.csv") for i in range(len(AR_CFG["checkpoints"]))]


rule attn_recurrence_data:
    """Training and test pools of every target and MQAR size K, per seed."""
    input:
        cfg=config_path(AR, "data"),
    output:
        out(AR, "data", "pools.npz"),
    params:
        dest=lambda w, output: str(Path(output[0]).parent),
    log:
        log_path(AR, "data"),
    benchmark:
        bench_path(AR, "data")
    threads: 1
    conda:
        ENV
    shell:
        stage(AR, "data", "--out {params.dest}")


rule attn_recurrence_fit:
    """One surrogate kind distilled into one target head, every seed and state in one program;
    bounds and same-state baselines on the held-out sequences."""
    input:
        cfg=config_path(AR, "fit"),
        pools=out(AR, "data", "pools.npz"),
    output:
        out(AR, "runs", "fit", "{surrogate}_{target}.csv"),
    log:
        log_path(AR, "fit_{surrogate}_{target}"),
    benchmark:
        bench_path(AR, "fit_{surrogate}_{target}")
    wildcard_constraints:
        surrogate="|".join(AR_CFG["surrogates"]),
        target="|".join(AR_CFG["targets"]),
    threads: THREADS
    resources:
        **train_resources(mem_mb_small=2000),
    conda:
        ENV
    shell:
        stage(AR, "fit", "--variant surrogate={wildcards.surrogate},target={wildcards.target} "
              "--input {input.pools} --out {output}")


rule attn_recurrence_scaling:
    """MQAR with K pairs and d_v-dimensional values: a diagonal recurrence trained at every
    shared state of the grid (seeds vmapped) against the bound on P (x) I."""
    input:
        cfg=config_path(AR, "scaling"),
        pools=out(AR, "data", "pools.npz"),
    output:
        out(AR, "runs", "scaling", "K{pairs}_d{value_dim}.csv"),
    log:
        log_path(AR, "scaling_K{pairs}_d{value_dim}"),
    benchmark:
        bench_path(AR, "scaling_K{pairs}_d{value_dim}")
    wildcard_constraints:
        pairs=r"\d+",
        value_dim=r"\d+",
    threads: THREADS
    resources:
        **train_resources(mem_mb_small=2000),
    conda:
        ENV
    shell:
        stage(AR, "scaling", "--variant pairs={wildcards.pairs},value_dim={wildcards.value_dim} "
              "--input {input.pools} --out {output}")


rule attn_recurrence_lm:
    """One GPT-2-shaped transformer (char LM on the KJV text, or MQAR) and one seed; weights
    written in GPT-2 layout."""
    input:
        cfg=config_path(AR, "lm"),
    output:
        trained=out(AR, "runs", "lm", "{model}_seed{seed}", "trained.npz"),
        init=out(AR, "runs", "lm", "{model}_seed{seed}", "init.npz"),
        held=out(AR, "runs", "lm", "{model}_seed{seed}", "held.npz"),
        info=out(AR, "runs", "lm", "{model}_seed{seed}", "info.json"),
    params:
        dest=lambda w, output: str(Path(output.trained).parent),
    log:
        log_path(AR, "lm_{model}_seed{seed}"),
    benchmark:
        bench_path(AR, "lm_{model}_seed{seed}")
    wildcard_constraints:
        model="charlm|mqar",
        seed=r"\d+",
    threads: THREADS
    resources:
        **train_resources(mem_mb_small=3000),
    conda:
        ENV
    shell:
        stage(AR, "lm", "--variant model={wildcards.model} --seed {wildcards.seed} "
              "--out {params.dest}")


rule attn_recurrence_survey:
    """Every head of one trained transformer (and of its initialisation), loaded through the
    GPT-2 loader: semiseparable bounds per state."""
    input:
        cfg=config_path(AR, "survey"),
        trained=out(AR, "runs", "lm", "{model}_seed{seed}", "trained.npz"),
        init=out(AR, "runs", "lm", "{model}_seed{seed}", "init.npz"),
        held=out(AR, "runs", "lm", "{model}_seed{seed}", "held.npz"),
        info=out(AR, "runs", "lm", "{model}_seed{seed}", "info.json"),
    output:
        out(AR, "runs", "survey", "{model}_seed{seed}.csv"),
    log:
        log_path(AR, "survey_{model}_seed{seed}"),
    benchmark:
        bench_path(AR, "survey_{model}_seed{seed}")
    wildcard_constraints:
        model="charlm|mqar",
        seed=r"\d+",
    threads: 1
    conda:
        ENV
    shell:
        stage(AR, "survey", "--variant model={wildcards.model} --seed {wildcards.seed} "
              "--input {input.trained} {input.init} {input.held} {input.info} --out {output}")


rule attn_recurrence_checkpoint:
    """One GPT-2-layout checkpoint of `checkpoints` (paper scale): every head's bounds."""
    input:
        cfg=config_path(AR, "checkpoint"),
    output:
        out(AR, "runs", "survey", "checkpoint{index}.csv"),
    log:
        log_path(AR, "checkpoint{index}"),
    benchmark:
        bench_path(AR, "checkpoint{index}")
    wildcard_constraints:
        index=r"\d+",
    threads: THREADS
    resources:
        **train_resources(mem_mb_small=4000, mem_mb_paper=64000),
    conda:
        ENV
    shell:
        stage(AR, "checkpoint", "--variant index={wildcards.index} --out {output}")


rule attn_recurrence_evaluate:
    """Gather the per-job tables into tightness.csv, scaling.csv and survey.csv."""
    input:
        cfg=config_path(AR, "evaluate"),
        runs=AR_FITS + AR_SCALING + AR_SURVEYS,
    output:
        tightness=out(AR, "tables", "tightness.csv"),
        scaling=out(AR, "tables", "scaling.csv"),
        survey=out(AR, "tables", "survey.csv"),
    params:
        dest=lambda w, output: str(Path(output.tightness).parent),
    log:
        log_path(AR, "evaluate"),
    benchmark:
        bench_path(AR, "evaluate")
    threads: 1
    conda:
        ENV
    shell:
        stage(AR, "evaluate", "--out {params.dest} --input {input.runs}")
