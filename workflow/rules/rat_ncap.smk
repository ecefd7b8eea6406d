# rat_ncap: Rat v2 analogue body + Rat NCAP trained by evolution strategies (issue 9).
# speed -> train (one job per variant and seed) -> evaluate (one job per variant) -> figures -> claims
RN = "rat_ncap"
RN_CFG = method_config(RN)
RN_VARIANTS = RN_CFG["variants"]
RN_SEEDS = RN_CFG["seeds"]
RN_FIGURE_NAMES = ("learning_curves", "gait_vs_speed", "interfaces", "ablations", "params_vs_reward")
RN_FIGURES = [out(RN, "figures", f"{name}.png") for name in (*RN_FIGURE_NAMES, "rodent_transfer")]
RN_EVALS = [out(RN, "eval", f"{v}.csv") for v in RN_VARIANTS]
RN_HISTORIES = [out(RN, "runs", v, f"seed{s}.csv") for v in RN_VARIANTS for s in RN_SEEDS]
METHOD_FIGURES[RN] = RN_FIGURES


rule rat_ncap_speed:
    """Env-steps/s of the MJX body (vmapped) and of CPU MuJoCo."""
    input:
        cfg=out(RN, "config.json"),
    output:
        out(RN, "speed.csv"),
    log:
        log_path(RN, "speed"),
    threads: THREADS
    conda:
        ENV
    shell:
        stage(RN, "speed", "--no-progress --out {output}") + " > {log} 2>&1"


rule rat_ncap_train:
    """ES training of one controller variant with one seed."""
    input:
        cfg=out(RN, "config.json"),
    output:
        params=out(RN, "runs", "{variant}", "seed{seed}.json"),
        history=out(RN, "runs", "{variant}", "seed{seed}.csv"),
    log:
        log_path(RN, "train_{variant}_seed{seed}"),
    wildcard_constraints:
        seed=r"\d+",
    threads: THREADS
    resources:
        **train_resources(),
    conda:
        ENV
    shell:
        stage(RN, "train", "--no-progress --variant {wildcards.variant} --seed {wildcards.seed} --out {output.params}")
        + " > {log} 2>&1"


rule rat_ncap_evaluate:
    """Rewards, success and gait statistics of one variant over all seeds (+ ablations)."""
    input:
        cfg=out(RN, "config.json"),
        runs=lambda w: [out(RN, "runs", w.variant, f"seed{s}.json") for s in RN_SEEDS],
    output:
        out(RN, "eval", "{variant}.csv"),
    log:
        log_path(RN, "evaluate_{variant}"),
    threads: THREADS
    resources:
        **train_resources(),
    conda:
        ENV
    shell:
        stage(RN, "evaluate", "--no-progress --variant {wildcards.variant} --input {input.runs} --out {output}")
        + " > {log} 2>&1"


rule rat_ncap_figure:
    """One figure from the training histories and evaluation tables."""
    input:
        cfg=out(RN, "config.json"),
        tables=RN_EVALS + RN_HISTORIES,
    output:
        png=report(out(RN, "figures", "{figure}.png"), caption="../report/rat_ncap/{figure}.rst", category=RN),
        pdf=out(RN, "figures", "{figure}.pdf"),
    log:
        log_path(RN, "figure_{figure}"),
    wildcard_constraints:
        figure="|".join(RN_FIGURE_NAMES),
    threads: 1
    conda:
        ENV
    shell:
        stage(RN, "figure_{wildcards.figure}", "--input {input.tables} --out {output.png}") + " > {log} 2>&1"


rule rat_ncap_rodent:
    """Learned NCAP circuits driving dm_control's full rodent (CPU MuJoCo); a one-row table
    saying so when the optional extra dm-control is not installed."""
    input:
        cfg=out(RN, "config.json"),
        runs=[out(RN, "runs", v, f"seed{s}.json") for v in RN_CFG["rodent_variants"] for s in RN_SEEDS],
    output:
        out(RN, "rodent.csv"),
    log:
        log_path(RN, "rodent"),
    threads: THREADS
    conda:
        ENV
    shell:
        stage(RN, "rodent", "--no-progress --input {input.runs} --out {output}") + " > {log} 2>&1"


rule rat_ncap_figure_rodent:
    """Distance, uprightness and stepping of the full rodent driven by the transferred circuit."""
    input:
        cfg=out(RN, "config.json"),
        table=out(RN, "rodent.csv"),
    output:
        png=report(out(RN, "figures", "rodent_transfer.png"), caption="../report/rat_ncap/rodent_transfer.rst", category=RN),
        pdf=out(RN, "figures", "rodent_transfer.pdf"),
    log:
        log_path(RN, "figure_rodent_transfer"),
    threads: 1
    conda:
        ENV
    shell:
        stage(RN, "figure_rodent_transfer", "--input {input.table} --out {output.png}") + " > {log} 2>&1"


rule rat_ncap_claims:
    """The issue's claims as predicates over the evaluation tables."""
    input:
        cfg=out(RN, "config.json"),
        tables=RN_EVALS,
        speed=out(RN, "speed.csv"),
    output:
        claims_path(RN),
    log:
        log_path(RN, "claims"),
    threads: 1
    conda:
        ENV
    shell:
        stage(RN, "claims", "--input {input.tables} {input.speed} --out {output}") + " > {log} 2>&1"


rule rat_ncap:
    """Everything of rat_ncap: figures and claims."""
    input:
        RN_FIGURES,
        claims_path(RN),
