# rat_ncap: Rat v2 analogue body + Rat NCAP trained by evolution strategies (issue 9).
# speed; train (one job per variant and seed) -> evaluate (one job per variant); baselines
# (do-nothing, random and initial circuit); fictive locomotion of the main variant; rodent transfer.
# Figures, claims and the `rat_ncap` target come from workflow/rules/protocol.smk.
RN = "rat_ncap"
RN_CFG = method_config(RN)
RN_SEEDS = RN_CFG["seeds"]


rule rat_ncap_speed:
    """Env-steps/s of the MJX body (vmapped) and of CPU MuJoCo."""
    input:
        cfg=config_path(RN, "speed"),
    output:
        out(RN, "speed.csv"),
    log:
        log_path(RN, "speed"),
    benchmark:
        bench_path(RN, "speed")
    threads: THREADS
    conda:
        ENV
    shell:
        stage(RN, "speed", "--no-progress --out {output}")


rule rat_ncap_train:
    """ES training of one controller variant with one seed."""
    input:
        cfg=config_path(RN, "train"),
    output:
        params=out(RN, "runs", "{variant}", "seed{seed}.json"),
        history=out(RN, "runs", "{variant}", "seed{seed}.csv"),
    log:
        log_path(RN, "train_{variant}_seed{seed}"),
    benchmark:
        bench_path(RN, "train_{variant}_seed{seed}")
    wildcard_constraints:
        seed=r"\d+",
    threads: THREADS
    resources:
        **train_resources(),
    conda:
        ENV
    shell:
        stage(
            RN,
            "train",
            "--no-progress --variant variant={wildcards.variant} --seed {wildcards.seed}"
            " --out {output.params}",
        )


rule rat_ncap_evaluate:
    """Rewards, success and gait statistics of one variant over all seeds (+ ablations)."""
    input:
        cfg=config_path(RN, "evaluate"),
        runs=lambda w: [out(RN, "runs", w.variant, f"seed{s}.json") for s in RN_SEEDS],
    output:
        table=out(RN, "eval", "{variant}.csv"),
        contacts=out(RN, "eval", "{variant}_contacts.csv"),
    log:
        log_path(RN, "evaluate_{variant}"),
    benchmark:
        bench_path(RN, "evaluate_{variant}")
    wildcard_constraints:
        variant="|".join(RN_CFG["variants"]),
    threads: THREADS
    resources:
        **train_resources(),
    conda:
        ENV
    shell:
        stage(
            RN,
            "evaluate",
            "--no-progress --variant variant={wildcards.variant} --input {input.runs} --out {output.table}",
        )


rule rat_ncap_baselines:
    """Do-nothing, random-circuit and initial-circuit rows on the evaluation episodes."""
    input:
        cfg=config_path(RN, "baselines"),
    output:
        table=out(RN, "eval", "baselines.csv"),
        contacts=out(RN, "eval", "baselines_contacts.csv"),
    log:
        log_path(RN, "baselines"),
    benchmark:
        bench_path(RN, "baselines")
    threads: THREADS
    conda:
        ENV
    shell:
        stage(RN, "baselines", "--no-progress --out {output.table}")


rule rat_ncap_fictive:
    """Fictive locomotion (no body) of the main variant, initial and trained, with ablations."""
    input:
        cfg=config_path(RN, "fictive"),
        runs=[out(RN, "runs", RN_CFG["main_variant"], f"seed{s}.json") for s in RN_SEEDS],
    output:
        out(RN, "fictive.csv"),
    log:
        log_path(RN, "fictive"),
    benchmark:
        bench_path(RN, "fictive")
    threads: THREADS
    conda:
        ENV
    shell:
        stage(
            RN,
            "fictive",
            f"--no-progress --variant variant={RN_CFG['main_variant']} --input {{input.runs}} --out {{output}}",
        )


rule rat_ncap_rodent:
    """Learned NCAP circuits driving dm_control's full rodent (CPU MuJoCo), no retraining."""
    input:
        cfg=config_path(RN, "rodent"),
        runs=[out(RN, "runs", v, f"seed{s}.json") for v in RN_CFG["rodent_variants"] for s in RN_SEEDS],
    output:
        out(RN, "rodent.csv"),
    log:
        log_path(RN, "rodent"),
    benchmark:
        bench_path(RN, "rodent")
    threads: THREADS
    conda:
        ENV
    shell:
        stage(RN, "rodent", "--no-progress --input {input.runs} --out {output}")
