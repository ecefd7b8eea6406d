# NBFFG (issue 7): data -> train (NBFFG residual) -> evaluate (NBFFG, BFFG, naive, pCN MCMC)
# per task and seed; cost of a training step vs tree size. Figures, claims and the `nbffg` target
# come from workflow/rules/protocol.smk.
NB = "nbffg"


wildcard_constraints:
    nb_task="[a-z]+_[a-z]+_[0-9]+",
    nb_seed="[0-9]+",


rule nbffg_data:
    """Tree, true states and leaf observations for one task and seed."""
    input:
        cfg=config_path(NB, "data"),
    output:
        out(NB, "data", "{nb_task}", "seed{nb_seed}.npz"),
    log:
        log_path(NB, "data_{nb_task}_seed{nb_seed}"),
    benchmark:
        bench_path(NB, "data_{nb_task}_seed{nb_seed}")
    threads: THREADS
    conda:
        ENV
    shell:
        stage(NB, "data", "--variant task={wildcards.nb_task} --seed {wildcards.nb_seed} --out {output}")


rule nbffg_train:
    """Train the neural residual of NBFFG by maximising the ELBO (one job per task and seed)."""
    input:
        cfg=config_path(NB, "train"),
        data=out(NB, "data", "{nb_task}", "seed{nb_seed}.npz"),
    output:
        model=out(NB, "train", "{nb_task}", "seed{nb_seed}.eqx"),
        history=out(NB, "train", "{nb_task}", "seed{nb_seed}_history.csv"),
    log:
        log_path(NB, "train_{nb_task}_seed{nb_seed}"),
    benchmark:
        bench_path(NB, "train_{nb_task}_seed{nb_seed}")
    threads: THREADS
    resources:
        **train_resources(),
    conda:
        ENV
    shell:
        stage(NB, "train", "--variant task={wildcards.nb_task} --seed {wildcards.nb_seed} "
              "--input {input.data} --out {output.model}")


rule nbffg_evaluate:
    """ELBO, ESS, evidence and internal-node posteriors of NBFFG, BFFG, naive and pCN MCMC."""
    input:
        cfg=config_path(NB, "evaluate"),
        data=out(NB, "data", "{nb_task}", "seed{nb_seed}.npz"),
        model=out(NB, "train", "{nb_task}", "seed{nb_seed}.eqx"),
    output:
        metrics=out(NB, "eval", "{nb_task}", "seed{nb_seed}.csv"),
        nodes=out(NB, "eval", "{nb_task}", "seed{nb_seed}_nodes.csv"),
    log:
        log_path(NB, "evaluate_{nb_task}_seed{nb_seed}"),
    benchmark:
        bench_path(NB, "evaluate_{nb_task}_seed{nb_seed}")
    threads: THREADS
    resources:
        **train_resources(),
    conda:
        ENV
    shell:
        stage(NB, "evaluate", "--variant task={wildcards.nb_task} --seed {wildcards.nb_seed} "
              "--input {input.data} {input.model} --out {output.metrics}")


rule nbffg_cost:
    """Seconds per training step vs tree size, whole tree vs pathwise subsampling."""
    input:
        cfg=config_path(NB, "cost"),
    output:
        out(NB, "cost.csv"),
    log:
        log_path(NB, "cost"),
    benchmark:
        bench_path(NB, "cost")
    threads: THREADS
    resources:
        **train_resources(),
    conda:
        ENV
    shell:
        stage(NB, "cost", "--out {output}")
