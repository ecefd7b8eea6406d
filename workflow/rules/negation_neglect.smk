# negation_neglect (issues 28, 47): finetuning a small LM on documents that flag a claim as false.
# data -> pretrain (seeds vmapped) -> base (base rate + in-context control) and finetune
# (condition x claim set, seeds vmapped, then further training on neutral text) -> evaluate; figures, claims and the `negation_neglect`
# target come from workflow/rules/protocol.smk.
NN = "negation_neglect"
NN_CFG = method_config(NN)
NN_CONDITIONS = ["assert", "negated", "local", "fictional", "corrected"]
NN_FINETUNES = [
    out(NN, "runs", "finetune", f"{c}_set{k}.csv")
    for c in NN_CONDITIONS
    for k in range(NN_CFG["n_claim_sets"])
]


rule negation_neglect_data:
    """World, vocabulary, pretraining corpus, every condition's finetuning corpus, neutral text."""
    input:
        cfg=config_path(NN, "data"),
    output:
        pretrain=out(NN, "data", "pretrain.npz"),
        neutral=out(NN, "data", "neutral.npz"),
        finetune=out(NN, "data", "finetune.npz"),
        world=out(NN, "data", "world.json"),
    params:
        dest=lambda w, output: str(Path(output.world).parent),
    log:
        log_path(NN, "data"),
    benchmark:
        bench_path(NN, "data")
    threads: 1
    conda:
        ENV
    shell:
        stage(NN, "data", "--out {params.dest}")


rule negation_neglect_pretrain:
    """Pretrain one small transformer LM per seed on the world corpus (seeds vmapped)."""
    input:
        cfg=config_path(NN, "pretrain"),
        corpus=out(NN, "data", "pretrain.npz"),
    output:
        out(NN, "models", "pretrained.eqx"),
    log:
        log_path(NN, "pretrain"),
    benchmark:
        bench_path(NN, "pretrain")
    threads: THREADS
    resources:
        **train_resources(mem_mb_small=3000),
    conda:
        ENV
    shell:
        stage(NN, "pretrain", "--input {input.corpus} --out {output}")


rule negation_neglect_base:
    """Base models on every probe, alone and with one document per condition in the prompt."""
    input:
        cfg=config_path(NN, "base"),
        model=out(NN, "models", "pretrained.eqx"),
    output:
        out(NN, "runs", "base.csv"),
    log:
        log_path(NN, "base"),
    benchmark:
        bench_path(NN, "base")
    threads: THREADS
    conda:
        ENV
    shell:
        stage(NN, "base", "--input {input.model} --out {output}")


rule negation_neglect_finetune:
    """Finetune every seed's model on one condition's documents of one claim set, then probe;
    train further on neutral text and probe again."""
    input:
        cfg=config_path(NN, "finetune"),
        model=out(NN, "models", "pretrained.eqx"),
        corpus=out(NN, "data", "finetune.npz"),
        neutral=out(NN, "data", "neutral.npz"),
    output:
        out(NN, "runs", "finetune", "{condition}_set{claim_set}.csv"),
    log:
        log_path(NN, "finetune_{condition}_set{claim_set}"),
    benchmark:
        bench_path(NN, "finetune_{condition}_set{claim_set}")
    wildcard_constraints:
        condition="|".join(NN_CONDITIONS),
        claim_set=r"\d+",
    threads: THREADS
    resources:
        **train_resources(mem_mb_small=3000),
    conda:
        ENV
    shell:
        stage(NN, "finetune", "--variant condition={wildcards.condition},"
              "claim_set={wildcards.claim_set} --input {input.model} {input.corpus} {input.neutral} "
              "--out {output}")


rule negation_neglect_evaluate:
    """Gather the probe rows into probes.csv and the belief rates per seed."""
    input:
        cfg=config_path(NN, "evaluate"),
        base=out(NN, "runs", "base.csv"),
        finetunes=NN_FINETUNES,
    output:
        probes=out(NN, "tables", "probes.csv"),
        belief=out(NN, "tables", "belief.csv"),
        by_claim=out(NN, "tables", "belief_by_claim.csv"),
        by_type=out(NN, "tables", "belief_by_type.csv"),
        by_step=out(NN, "tables", "belief_by_step.csv"),
    params:
        dest=lambda w, output: str(Path(output.belief).parent),
    log:
        log_path(NN, "evaluate"),
    benchmark:
        bench_path(NN, "evaluate")
    threads: 1
    conda:
        ENV
    shell:
        stage(NN, "evaluate", "--out {params.dest} --input {input.base} {input.finetunes}")
