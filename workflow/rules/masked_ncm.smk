# masked_ncm (issue 6): bounds on P(Y=1 | do(X=1)) over a CPDAG with Masked NCMs.
# data (one job per dataset) -> train (one job per dataset: every seed, n, mask, direction and
# restart vmapped in one compiled loop) -> evaluate -> one rule per figure -> claims
MNCM = "masked_ncm"
MNCM_CFG = method_config(MNCM)
MNCM_GRAPHS = [f"nodes{d}" for d in MNCM_CFG["num_nodes"]]
MNCM_DATASETS = MNCM_GRAPHS + ["iv"]
MNCM_FIGURE_NAMES = ["endpoints", "error_vs_n", "coverage", "width_vs_class", "iv_bounds"]
MNCM_FIGURES = [out(MNCM, "figures", f"{name}.png") for name in MNCM_FIGURE_NAMES]
METHOD_FIGURES[MNCM] = MNCM_FIGURES


rule masked_ncm_data:
    """Random SCMs (one per seed), samples per n, PC estimates, exact and plug-in bounds."""
    input:
        cfg=out(MNCM, "config.json"),
    output:
        out(MNCM, "data", "{graph}.json"),
    log:
        log_path(MNCM, "data_{graph}"),
    wildcard_constraints:
        graph="|".join(MNCM_DATASETS),
    threads: 1
    conda:
        ENV
    shell:
        stage(MNCM, "data", "--variant {wildcards.graph} --out {output}") + " > {log} 2>&1"


rule masked_ncm_train:
    """Fit and constrained query ascent/descent for every problem of one dataset."""
    input:
        cfg=out(MNCM, "config.json"),
        data=out(MNCM, "data", "{graph}.json"),
    output:
        out(MNCM, "runs", "{graph}.csv"),
    log:
        log_path(MNCM, "train_{graph}"),
    wildcard_constraints:
        graph="|".join(MNCM_DATASETS),
    threads: THREADS
    resources:
        **train_resources(),
    conda:
        ENV
    shell:
        stage(MNCM, "train", "--variant {wildcards.graph} --input {input.data} --out {output}")
        + " > {log} 2>&1"


rule masked_ncm_evaluate:
    """Bounds, endpoint errors and coverage per (seed, graph size, n); IV vs Balke-Pearl."""
    input:
        cfg=out(MNCM, "config.json"),
        data=expand(out(MNCM, "data", "{graph}.json"), graph=MNCM_DATASETS),
        runs=expand(out(MNCM, "runs", "{graph}.csv"), graph=MNCM_DATASETS),
    output:
        bounds=out(MNCM, "bounds.csv"),
        iv=out(MNCM, "iv_bounds.csv"),
    log:
        log_path(MNCM, "evaluate"),
    threads: 1
    conda:
        ENV
    shell:
        stage(MNCM, "evaluate", "--input {input.data} {input.runs} --out {output.bounds}")
        + " > {log} 2>&1"


rule masked_ncm_figure_endpoints:
    """Estimated vs true bound endpoints at the largest n."""
    input:
        cfg=out(MNCM, "config.json"),
        table=out(MNCM, "bounds.csv"),
    output:
        png=report(
            out(MNCM, "figures", "endpoints.png"),
            caption="../report/masked_ncm/endpoints.rst",
            category=MNCM,
        ),
        pdf=out(MNCM, "figures", "endpoints.pdf"),
    log:
        log_path(MNCM, "figure_endpoints"),
    threads: 1
    conda:
        ENV
    shell:
        stage(MNCM, "figure_endpoints", "--input {input.table} --out {output.png}") + " > {log} 2>&1"


rule masked_ncm_figure_error_vs_n:
    """Mean absolute endpoint error vs n for Masked NCM, single-DAG NCM and plug-in IDA."""
    input:
        cfg=out(MNCM, "config.json"),
        table=out(MNCM, "bounds.csv"),
    output:
        png=report(
            out(MNCM, "figures", "error_vs_n.png"),
            caption="../report/masked_ncm/error_vs_n.rst",
            category=MNCM,
        ),
        pdf=out(MNCM, "figures", "error_vs_n.pdf"),
    log:
        log_path(MNCM, "figure_error_vs_n"),
    threads: 1
    conda:
        ENV
    shell:
        stage(MNCM, "figure_error_vs_n", "--input {input.table} --out {output.png}") + " > {log} 2>&1"


rule masked_ncm_figure_coverage:
    """Coverage of the true effect vs n."""
    input:
        cfg=out(MNCM, "config.json"),
        table=out(MNCM, "bounds.csv"),
    output:
        png=report(
            out(MNCM, "figures", "coverage.png"),
            caption="../report/masked_ncm/coverage.rst",
            category=MNCM,
        ),
        pdf=out(MNCM, "figures", "coverage.pdf"),
    log:
        log_path(MNCM, "figure_coverage"),
    threads: 1
    conda:
        ENV
    shell:
        stage(MNCM, "figure_coverage", "--input {input.table} --out {output.png}") + " > {log} 2>&1"


rule masked_ncm_figure_width_vs_class:
    """Interval width vs size of the equivalence class."""
    input:
        cfg=out(MNCM, "config.json"),
        table=out(MNCM, "bounds.csv"),
    output:
        png=report(
            out(MNCM, "figures", "width_vs_class.png"),
            caption="../report/masked_ncm/width_vs_class.rst",
            category=MNCM,
        ),
        pdf=out(MNCM, "figures", "width_vs_class.pdf"),
    log:
        log_path(MNCM, "figure_width_vs_class"),
    threads: 1
    conda:
        ENV
    shell:
        stage(MNCM, "figure_width_vs_class", "--input {input.table} --out {output.png}") + " > {log} 2>&1"


rule masked_ncm_figure_iv_bounds:
    """IV model: Masked NCM vs Balke-Pearl LP bounds."""
    input:
        cfg=out(MNCM, "config.json"),
        table=out(MNCM, "iv_bounds.csv"),
    output:
        png=report(
            out(MNCM, "figures", "iv_bounds.png"),
            caption="../report/masked_ncm/iv_bounds.rst",
            category=MNCM,
        ),
        pdf=out(MNCM, "figures", "iv_bounds.pdf"),
    log:
        log_path(MNCM, "figure_iv_bounds"),
    threads: 1
    conda:
        ENV
    shell:
        stage(MNCM, "figure_iv_bounds", "--input {input.table} --out {output.png}") + " > {log} 2>&1"


rule masked_ncm_claims:
    """The issue's claims as predicates over the bounds table."""
    input:
        cfg=out(MNCM, "config.json"),
        bounds=out(MNCM, "bounds.csv"),
    output:
        claims_path(MNCM),
    log:
        log_path(MNCM, "claims"),
    threads: 1
    conda:
        ENV
    shell:
        stage(MNCM, "claims", "--input {input.bounds} --out {output}") + " > {log} 2>&1"


rule masked_ncm:
    """Everything of this method: figures and claims."""
    input:
        MNCM_FIGURES,
        claims_path(MNCM),
