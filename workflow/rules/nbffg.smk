# NBFFG (issue 7): data -> train (NBFFG residual) -> evaluate (NBFFG, BFFG, naive, pCN MCMC)
# per task, every seed in one job (nbffg.seed_batch seeds per vmapped program); cost of a training
# step vs tree size. Figures, claims
# and the `nbffg` target come from workflow/rules/protocol.smk.
NB = "nbffg"


NB_SEEDS = list(typed_config(NB).seeds) if NB in config else []


wildcard_constraints:
    nb_task="[a-z]+_[a-z]+_[0-9]+",


rule nbffg_data:
    """Tree, true states and leaf observations of one task, every seed (one job, one batched
    simulation)."""
    input:
        cfg=config_path(NB, "data"),
    output:
        seed_outputs(NB, "data", "{nb_task}", NB_SEEDS, ".npz"),
    log:
        log_path(NB, "data_{nb_task}"),
    benchmark:
        bench_path(NB, "data_{nb_task}")
    threads: THREADS
    conda:
        ENV
    params:
        folder=out(NB, "data", "{nb_task}"),
    shell:
        stage(NB, "data", "--variant task={wildcards.nb_task} --out {params.folder}")


rule nbffg_train:
    """Train the neural residual of NBFFG by maximising the ELBO: one job per task, its seeds
    vmapped, nbffg.seed_batch at a time (one compiled program for the task)."""
    input:
        cfg=config_path(NB, "train"),
        data=seed_outputs(NB, "data", "{nb_task}", NB_SEEDS, ".npz"),
    output:
        models=seed_outputs(NB, "train", "{nb_task}", NB_SEEDS, ".eqx"),
        history=seed_outputs(NB, "train", "{nb_task}", NB_SEEDS, "_history.csv"),
    log:
        log_path(NB, "train_{nb_task}"),
    benchmark:
        bench_path(NB, "train_{nb_task}")
    threads: THREADS
    resources:
        **train_resources(),
    conda:
        ENV
    params:
        folder=out(NB, "train", "{nb_task}"),
    shell:
        stage(NB, "train", "--variant task={wildcards.nb_task} --input {input.data} "
              "--out {params.folder}")


rule nbffg_evaluate:
    """ELBO, ESS, evidence and internal-node posteriors of NBFFG, BFFG, naive and pCN MCMC:
    one job per task, every seed (vmapped, nbffg.seed_batch at a time)."""
    input:
        cfg=config_path(NB, "evaluate"),
        data=seed_outputs(NB, "data", "{nb_task}", NB_SEEDS, ".npz"),
        models=seed_outputs(NB, "train", "{nb_task}", NB_SEEDS, ".eqx"),
    output:
        metrics=seed_outputs(NB, "eval", "{nb_task}", NB_SEEDS, ".csv"),
        nodes=seed_outputs(NB, "eval", "{nb_task}", NB_SEEDS, "_nodes.csv"),
    log:
        log_path(NB, "evaluate_{nb_task}"),
    benchmark:
        bench_path(NB, "evaluate_{nb_task}")
    threads: THREADS
    resources:
        **train_resources(),
    conda:
        ENV
    params:
        folder=out(NB, "eval", "{nb_task}"),
    shell:
        stage(NB, "evaluate", "--variant task={wildcards.nb_task} --input {input.data} "
              "{input.models} --out {params.folder}")


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
