# neptuna (issue 25): validate (solver vs exact Riemann) ; data (dataset, 2-D or 3-D) -> train
# (one job per dataset: every model x loss run, all seeds) and pretrain (foundation, every dataset) -> finetune
# (dataset) -> evaluate ; timing. Figures, claims and the `neptuna` target come from
# workflow/rules/protocol.smk (the 3-D datasets enter through the snapshots figure, at `paper`).
NEPTUNA = "neptuna"
NEPTUNA_CFG = typed_config(NEPTUNA)
NEPTUNA_RUNS = [
    out(NEPTUNA, "runs", ds, f"{m}_{loss}.csv")
    for ds, m, loss in load_method(NEPTUNA).runs(NEPTUNA_CFG)
] + [out(NEPTUNA, "runs", ds, "foundation_mse.csv") for ds in NEPTUNA_CFG.datasets]


rule neptuna_validate:
    """Sod and two-material shock tubes vs the exact Riemann solutions; the moving contact."""
    input:
        cfg=config_path(NEPTUNA, "validate"),
    output:
        rows=out(NEPTUNA, "tables", "validation.csv"),
        profile=out(NEPTUNA, "tables", "sod_profile.csv"),
    params:
        dest=lambda w, output: str(Path(output.rows).parent),
    log:
        log_path(NEPTUNA, "validate"),
    benchmark:
        bench_path(NEPTUNA, "validate")
    threads: 1
    conda:
        ENV
    shell:
        stage(NEPTUNA, "validate", "--out {params.dest}")


rule neptuna_data:
    """One dataset's trajectories from the two-phase solver (chunked, compressed HDF5); 2-D, or
    3-D for the datasets_3d (run at `paper`)."""
    input:
        cfg=config_path(NEPTUNA, "data"),
    output:
        h5=out(NEPTUNA, "data", "{dataset}.h5"),
        snapshots=out(NEPTUNA, "data", "{dataset}_snapshots.npz"),
    log:
        log_path(NEPTUNA, "data_{dataset}"),
    benchmark:
        bench_path(NEPTUNA, "data_{dataset}")
    wildcard_constraints:
        dataset="|".join((*NEPTUNA_CFG.datasets, *NEPTUNA_CFG.datasets_3d)),
    threads: THREADS
    resources:
        **train_resources(mem_mb_small=3000),
    conda:
        ENV
    shell:
        stage(NEPTUNA, "data", "--variant dataset={wildcards.dataset} --out {output.h5}")


# the (model, loss) runs of one dataset: the same for every dataset
NEPTUNA_PAIRS = [(m, loss) for ds, m, loss in load_method(NEPTUNA).runs(NEPTUNA_CFG)
                 if ds == NEPTUNA_CFG.datasets[0]]


rule neptuna_train:
    """Every surrogate x loss run on one dataset, one after another in one process, every seed;
    rollout metrics on the test set."""
    input:
        cfg=config_path(NEPTUNA, "train"),
        h5=out(NEPTUNA, "data", "{dataset}.h5"),
    output:
        csv=[out(NEPTUNA, "runs", "{dataset}", f"{m}_{loss}.csv") for m, loss in NEPTUNA_PAIRS],
        npz=[out(NEPTUNA, "runs", "{dataset}", f"{m}_{loss}.npz") for m, loss in NEPTUNA_PAIRS],
    params:
        dest=lambda w, output: str(Path(output.csv[0]).parent),
    log:
        log_path(NEPTUNA, "train_{dataset}"),
    benchmark:
        bench_path(NEPTUNA, "train_{dataset}")
    wildcard_constraints:
        dataset="|".join(NEPTUNA_CFG.datasets),
    threads: THREADS
    resources:
        **train_resources(mem_mb_small=3000),
    conda:
        ENV
    shell:
        stage(NEPTUNA, "train", "--variant dataset={wildcards.dataset} --input {input.h5} "
              "--out {params.dest}")


rule neptuna_pretrain:
    """The foundation surrogate pretrained on every dataset jointly (our own weights)."""
    input:
        cfg=config_path(NEPTUNA, "pretrain"),
        h5=expand(out(NEPTUNA, "data", "{dataset}.h5"), dataset=NEPTUNA_CFG.datasets),
    output:
        eqx=out(NEPTUNA, "runs", "foundation_pretrained.eqx"),
        curve=out(NEPTUNA, "runs", "foundation_pretrained.csv"),
    log:
        log_path(NEPTUNA, "pretrain"),
    benchmark:
        bench_path(NEPTUNA, "pretrain")
    threads: THREADS
    resources:
        **train_resources(mem_mb_small=3000),
    conda:
        ENV
    shell:
        stage(NEPTUNA, "pretrain", "--input {input.h5} --out {output.eqx}")


rule neptuna_finetune:
    """The pretrained foundation surrogate fine-tuned on one dataset, every seed; rollout metrics."""
    input:
        cfg=config_path(NEPTUNA, "finetune"),
        h5=out(NEPTUNA, "data", "{dataset}.h5"),
        eqx=out(NEPTUNA, "runs", "foundation_pretrained.eqx"),
    output:
        csv=out(NEPTUNA, "runs", "{dataset}", "foundation_mse.csv"),
        npz=out(NEPTUNA, "runs", "{dataset}", "foundation_mse.npz"),
    log:
        log_path(NEPTUNA, "finetune_{dataset}"),
    benchmark:
        bench_path(NEPTUNA, "finetune_{dataset}")
    wildcard_constraints:
        dataset="|".join(NEPTUNA_CFG.datasets),
    threads: THREADS
    resources:
        **train_resources(mem_mb_small=3000),
    conda:
        ENV
    shell:
        stage(NEPTUNA, "finetune", "--variant dataset={wildcards.dataset} --input {input.h5} "
              "{input.eqx} --out {output.csv}")


rule neptuna_timing:
    """Seconds per training step of MSE-only, SoftAdapt and GradNorm, in one job."""
    input:
        cfg=config_path(NEPTUNA, "timing"),
        h5=out(NEPTUNA, "data", f"{NEPTUNA_CFG.timing_dataset}.h5"),
    output:
        out(NEPTUNA, "tables", "timing.csv"),
    log:
        log_path(NEPTUNA, "timing"),
    benchmark:
        bench_path(NEPTUNA, "timing")
    threads: THREADS
    resources:
        **train_resources(mem_mb_small=3000),
    conda:
        ENV
    shell:
        stage(NEPTUNA, "timing", "--input {input.h5} --out {output}")


rule neptuna_evaluate:
    """Gather the runs into metrics, rollout and weight tables, with the trivial baselines."""
    input:
        cfg=config_path(NEPTUNA, "evaluate"),
        h5=expand(out(NEPTUNA, "data", "{dataset}.h5"), dataset=NEPTUNA_CFG.datasets),
        runs=NEPTUNA_RUNS,
    output:
        metrics=out(NEPTUNA, "tables", "metrics.csv"),
        rollout=out(NEPTUNA, "tables", "rollout.csv"),
        weights=out(NEPTUNA, "tables", "weights.csv"),
    params:
        dest=lambda w, output: str(Path(output.metrics).parent),
    log:
        log_path(NEPTUNA, "evaluate"),
    benchmark:
        bench_path(NEPTUNA, "evaluate")
    threads: THREADS
    conda:
        ENV
    shell:
        stage(NEPTUNA, "evaluate", "--out {params.dest} --input {input.h5} {input.runs}")
