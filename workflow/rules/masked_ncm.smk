# masked_ncm (issue 6): bounds on P(Y=1 | do(X=1)) over a CPDAG with Masked NCMs.
# data (one job per dataset) -> train (one job per dataset: every seed, n, mask, direction and
# restart vmapped in one compiled loop) -> evaluate; figures, claims and the `masked_ncm` target
# come from workflow/rules/protocol.smk.
MNCM = "masked_ncm"
MNCM_DATASETS = [f"nodes{d}" for d in method_config(MNCM)["num_nodes"]] + ["iv"]


rule masked_ncm_data:
    """Random SCMs (one per seed), samples per n, PC estimates, exact and plug-in bounds."""
    input:
        cfg=config_path(MNCM, "data"),
    output:
        out(MNCM, "data", "{graph}.json"),
    log:
        log_path(MNCM, "data_{graph}"),
    benchmark:
        bench_path(MNCM, "data_{graph}")
    wildcard_constraints:
        graph="|".join(MNCM_DATASETS),
    threads: 1
    conda:
        ENV
    shell:
        stage(MNCM, "data", "--variant graph={wildcards.graph} --out {output}")


rule masked_ncm_train:
    """Fit and constrained query ascent/descent for every problem of one dataset."""
    input:
        cfg=config_path(MNCM, "train"),
        data=out(MNCM, "data", "{graph}.json"),
    output:
        out(MNCM, "runs", "{graph}.csv"),
    log:
        log_path(MNCM, "train_{graph}"),
    benchmark:
        bench_path(MNCM, "train_{graph}")
    wildcard_constraints:
        graph="|".join(MNCM_DATASETS),
    threads: THREADS
    resources:
        **train_resources(),
    conda:
        ENV
    shell:
        stage(MNCM, "train", "--variant graph={wildcards.graph} --input {input.data} --out {output}")


rule masked_ncm_evaluate:
    """Bounds, endpoint errors and coverage per (seed, graph size, n); IV vs Balke-Pearl."""
    input:
        cfg=config_path(MNCM, "evaluate"),
        data=expand(out(MNCM, "data", "{graph}.json"), graph=MNCM_DATASETS),
        runs=expand(out(MNCM, "runs", "{graph}.csv"), graph=MNCM_DATASETS),
    output:
        bounds=out(MNCM, "bounds.csv"),
        iv=out(MNCM, "iv_bounds.csv"),
    log:
        log_path(MNCM, "evaluate"),
    benchmark:
        bench_path(MNCM, "evaluate")
    threads: 1
    conda:
        ENV
    shell:
        stage(MNCM, "evaluate", "--input {input.data} {input.runs} --out {output.bounds}")
