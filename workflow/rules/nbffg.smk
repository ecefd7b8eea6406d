# NBFFG (issue 7): data -> train (NBFFG residual) -> evaluate (NBFFG, BFFG, naive, pCN MCMC)
# per task and seed; cost of a training step vs tree size; one rule per figure; claims.
NB = "nbffg"
NB_CFG = method_config(NB)
NB_TASKS = NB_CFG["tasks"]
NB_SEEDS = NB_CFG["seeds"]
NB_FIGURE_NAMES = ("linear", "elbo_ess", "posterior", "shapes", "cost", "training", "discrete")
NB_FIGURES = [out(NB, "figures", f"{name}.png") for name in NB_FIGURE_NAMES]
METHOD_FIGURES[NB] = NB_FIGURES

NB_EVAL = [out(NB, "eval", t, f"seed{s}.csv") for t in NB_TASKS for s in NB_SEEDS]
NB_NODES = [out(NB, "eval", t, f"seed{s}_nodes.csv") for t in NB_TASKS for s in NB_SEEDS]
NB_HISTORY = [out(NB, "train", t, f"seed{s}_history.csv") for t in NB_TASKS for s in NB_SEEDS]
NB_TABLES = NB_EVAL + NB_NODES + NB_HISTORY


wildcard_constraints:
    nb_task="[a-z]+_[a-z]+_[0-9]+",
    nb_seed="[0-9]+",


rule nbffg_data:
    """Tree, true states and leaf observations for one task and seed."""
    input:
        cfg=out(NB, "config.json"),
    output:
        out(NB, "data", "{nb_task}", "seed{nb_seed}.npz"),
    log:
        log_path(NB, "data_{nb_task}_seed{nb_seed}"),
    threads: THREADS
    conda:
        ENV
    shell:
        stage(NB, "data", "--variant {wildcards.nb_task} --seed {wildcards.nb_seed} --out {output}")
        + " > {log} 2>&1"


rule nbffg_train:
    """Train the neural residual of NBFFG by maximising the ELBO (one job per task and seed)."""
    input:
        cfg=out(NB, "config.json"),
        data=out(NB, "data", "{nb_task}", "seed{nb_seed}.npz"),
    output:
        model=out(NB, "train", "{nb_task}", "seed{nb_seed}.eqx"),
        history=out(NB, "train", "{nb_task}", "seed{nb_seed}_history.csv"),
    log:
        log_path(NB, "train_{nb_task}_seed{nb_seed}"),
    threads: THREADS
    resources:
        **train_resources(),
    conda:
        ENV
    shell:
        stage(NB, "train", "--variant {wildcards.nb_task} --seed {wildcards.nb_seed} "
              "--input {input.data} --out {output.model}")
        + " > {log} 2>&1"


rule nbffg_evaluate:
    """ELBO, ESS, evidence and internal-node posteriors of NBFFG, BFFG, naive and pCN MCMC."""
    input:
        cfg=out(NB, "config.json"),
        data=out(NB, "data", "{nb_task}", "seed{nb_seed}.npz"),
        model=out(NB, "train", "{nb_task}", "seed{nb_seed}.eqx"),
    output:
        metrics=out(NB, "eval", "{nb_task}", "seed{nb_seed}.csv"),
        nodes=out(NB, "eval", "{nb_task}", "seed{nb_seed}_nodes.csv"),
    log:
        log_path(NB, "evaluate_{nb_task}_seed{nb_seed}"),
    threads: THREADS
    resources:
        **train_resources(),
    conda:
        ENV
    shell:
        stage(NB, "evaluate", "--variant {wildcards.nb_task} --seed {wildcards.nb_seed} "
              "--input {input.data} {input.model} --out {output.metrics}")
        + " > {log} 2>&1"


rule nbffg_cost:
    """Seconds per training step vs tree size, whole tree vs pathwise subsampling."""
    input:
        cfg=out(NB, "config.json"),
    output:
        out(NB, "cost.csv"),
    log:
        log_path(NB, "cost"),
    threads: THREADS
    resources:
        **train_resources(),
    conda:
        ENV
    shell:
        stage(NB, "cost", "--out {output}") + " > {log} 2>&1"


for _nb_fig in NB_FIGURE_NAMES:

    rule:
        name:
            f"nbffg_figure_{_nb_fig}"
        input:
            cfg=out(NB, "config.json"),
            tables=NB_TABLES,
            cost=out(NB, "cost.csv"),
        output:
            png=report(
                out(NB, "figures", f"{_nb_fig}.png"),
                caption=f"../report/nbffg/{_nb_fig}.rst",
                category=NB,
            ),
            pdf=out(NB, "figures", f"{_nb_fig}.pdf"),
        params:
            fig=_nb_fig,
        log:
            log_path(NB, f"figure_{_nb_fig}"),
        threads: 1
        conda:
            ENV
        shell:
            stage(NB, "fig_{params.fig}", "--input {input.tables} {input.cost} --out {output.png}")
            + " > {log} 2>&1"


rule nbffg_claims:
    """The issue's three claims, measured at this scale."""
    input:
        cfg=out(NB, "config.json"),
        tables=NB_EVAL,
        cost=out(NB, "cost.csv"),
    output:
        claims_path(NB),
    log:
        log_path(NB, "claims"),
    threads: 1
    conda:
        ENV
    shell:
        stage(NB, "claims", "--input {input.tables} {input.cost} --out {output}") + " > {log} 2>&1"


rule nbffg:
    """Everything of NBFFG: figures and claims."""
    input:
        NB_FIGURES,
        claims_path(NB),
