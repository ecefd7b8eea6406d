# Neural CTMC (paper 1) vs MDLM / SEDD / GIDD: data -> scorer -> train -> evaluate -> tables
# -> figures -> claims. Jobs: one per corpus (data), one scorer, one per corpus x method x seed
# (train, evaluate).
NC = "neural_ctmc"
NC_CFG = method_config(NC)
NC_CORPORA = ["hmm", "text"]
NC_METHODS = ["neural_ctmc", "gidd", "mdlm", "sedd"]
NC_SEEDS = NC_CFG["seeds"]
NC_FIGURES = [
    out(NC, "figures", f"{name}.png")
    for name in ("gen_ppl_vs_steps", "training_curves", "samples", "synthetic_nll_vs_steps")
]
METHOD_FIGURES[NC] = NC_FIGURES


wildcard_constraints:
    nc_corpus="|".join(NC_CORPORA),
    nc_method="|".join(NC_METHODS),
    nc_seed=r"\d+",


rule neural_ctmc_data:
    """The synthetic HMM language (sampled, exact entropy) or the KJV text windows."""
    input:
        cfg=out(NC, "config.json"),
    output:
        npz=out(NC, "data", "{nc_corpus}.npz"),
        ref=out(NC, "data", "{nc_corpus}.json"),
    log:
        log_path(NC, "data_{nc_corpus}"),
    threads: THREADS
    conda:
        ENV
    shell:
        stage(NC, "data", "--variant {wildcards.nc_corpus} --out {output.npz}") + " > {log} 2>&1"


rule neural_ctmc_scorer:
    """Autoregressive transformer on the text corpus: the generative-perplexity judge."""
    input:
        cfg=out(NC, "config.json"),
        data=out(NC, "data", "text.npz"),
    output:
        model=out(NC, "scorer", "text.eqx"),
        curve=out(NC, "scorer", "text.csv"),
        ref=out(NC, "scorer", "text.json"),
    log:
        log_path(NC, "scorer_text"),
    threads: THREADS
    resources:
        **train_resources(),
    conda:
        ENV
    shell:
        stage(NC, "scorer", "--variant text --input {input.data} --out {output.model}")
        + " > {log} 2>&1"


rule neural_ctmc_train:
    """One diffusion model per corpus, method and seed (same backbone, optimiser, tokens)."""
    input:
        cfg=out(NC, "config.json"),
        data=out(NC, "data", "{nc_corpus}.npz"),
    output:
        model=out(NC, "runs", "{nc_corpus}", "{nc_method}", "seed{nc_seed}.eqx"),
        curve=out(NC, "runs", "{nc_corpus}", "{nc_method}", "seed{nc_seed}.csv"),
    log:
        log_path(NC, "train_{nc_corpus}_{nc_method}_seed{nc_seed}"),
    threads: THREADS
    resources:
        **train_resources(),
    conda:
        ENV
    shell:
        stage(
            NC,
            "train",
            "--variant {wildcards.nc_corpus}:{wildcards.nc_method} --seed {wildcards.nc_seed}"
            " --input {input.data} --out {output.model}",
        )
        + " > {log} 2>&1"


rule neural_ctmc_evaluate:
    """Validation ELBO; samples at every step count; generative PPL (text; the scorer is
    read only there), entropy, exact NLL (HMM)."""
    input:
        cfg=out(NC, "config.json"),
        data=out(NC, "data", "{nc_corpus}.npz"),
        model=out(NC, "runs", "{nc_corpus}", "{nc_method}", "seed{nc_seed}.eqx"),
        scorer=out(NC, "scorer", "text.eqx"),
    output:
        table=out(NC, "eval", "{nc_corpus}", "{nc_method}", "seed{nc_seed}.csv"),
        samples=out(NC, "eval", "{nc_corpus}", "{nc_method}", "seed{nc_seed}.samples.json"),
    log:
        log_path(NC, "evaluate_{nc_corpus}_{nc_method}_seed{nc_seed}"),
    threads: THREADS
    resources:
        **train_resources(),
    conda:
        ENV
    shell:
        stage(
            NC,
            "evaluate",
            "--variant {wildcards.nc_corpus}:{wildcards.nc_method} --seed {wildcards.nc_seed}"
            " --input {input.data} {input.model} {input.scorer} --out {output.table}",
        )
        + " > {log} 2>&1"


rule neural_ctmc_summarize:
    """Per-job tables -> eval.csv, curves.csv, reference.csv."""
    input:
        cfg=out(NC, "config.json"),
        evals=expand(
            out(NC, "eval", "{c}", "{m}", "seed{s}.csv"), c=NC_CORPORA, m=NC_METHODS, s=NC_SEEDS
        ),
        curves=expand(
            out(NC, "runs", "{c}", "{m}", "seed{s}.csv"), c=NC_CORPORA, m=NC_METHODS, s=NC_SEEDS
        ),
        refs=[out(NC, "data", f"{c}.json") for c in NC_CORPORA] + [out(NC, "scorer", "text.json")],
    output:
        evals=out(NC, "tables", "eval.csv"),
        curves=out(NC, "tables", "curves.csv"),
        ref=out(NC, "tables", "reference.csv"),
    params:
        folder=lambda wildcards, output: output.evals.rsplit("/", 1)[0],
    log:
        log_path(NC, "summarize"),
    threads: 1
    conda:
        ENV
    shell:
        stage(
            NC,
            "summarize",
            "--input {input.evals} {input.curves} {input.refs} --out {params.folder}",
        )
        + " > {log} 2>&1"


rule neural_ctmc_figure_gen_ppl:
    input:
        cfg=out(NC, "config.json"),
        evals=out(NC, "tables", "eval.csv"),
        ref=out(NC, "tables", "reference.csv"),
    output:
        png=report(
            out(NC, "figures", "gen_ppl_vs_steps.png"),
            caption="../report/neural_ctmc/gen_ppl_vs_steps.rst",
            category=NC,
        ),
        pdf=out(NC, "figures", "gen_ppl_vs_steps.pdf"),
    log:
        log_path(NC, "fig_gen_ppl"),
    threads: 1
    conda:
        ENV
    shell:
        stage(NC, "fig_gen_ppl", "--input {input.evals} {input.ref} --out {output.png}")
        + " > {log} 2>&1"


rule neural_ctmc_figure_training_curves:
    input:
        cfg=out(NC, "config.json"),
        curves=out(NC, "tables", "curves.csv"),
        ref=out(NC, "tables", "reference.csv"),
    output:
        png=report(
            out(NC, "figures", "training_curves.png"),
            caption="../report/neural_ctmc/training_curves.rst",
            category=NC,
        ),
        pdf=out(NC, "figures", "training_curves.pdf"),
    log:
        log_path(NC, "fig_training_curves"),
    threads: 1
    conda:
        ENV
    shell:
        stage(NC, "fig_training_curves", "--input {input.curves} {input.ref} --out {output.png}")
        + " > {log} 2>&1"


rule neural_ctmc_figure_samples:
    input:
        cfg=out(NC, "config.json"),
        samples=expand(
            out(NC, "eval", "text", "{m}", "seed{s}.samples.json"), m=NC_METHODS, s=NC_SEEDS[:1]
        ),
    output:
        png=report(
            out(NC, "figures", "samples.png"),
            caption="../report/neural_ctmc/samples.rst",
            category=NC,
        ),
        pdf=out(NC, "figures", "samples.pdf"),
    log:
        log_path(NC, "fig_samples"),
    threads: 1
    conda:
        ENV
    shell:
        stage(NC, "fig_samples", "--input {input.samples} --out {output.png}") + " > {log} 2>&1"


rule neural_ctmc_figure_synthetic_nll:
    input:
        cfg=out(NC, "config.json"),
        evals=out(NC, "tables", "eval.csv"),
        ref=out(NC, "tables", "reference.csv"),
    output:
        png=report(
            out(NC, "figures", "synthetic_nll_vs_steps.png"),
            caption="../report/neural_ctmc/synthetic_nll_vs_steps.rst",
            category=NC,
        ),
        pdf=out(NC, "figures", "synthetic_nll_vs_steps.pdf"),
    log:
        log_path(NC, "fig_synthetic_nll"),
    threads: 1
    conda:
        ENV
    shell:
        stage(NC, "fig_synthetic_nll", "--input {input.evals} {input.ref} --out {output.png}")
        + " > {log} 2>&1"


rule neural_ctmc_claims:
    input:
        cfg=out(NC, "config.json"),
        evals=out(NC, "tables", "eval.csv"),
        ref=out(NC, "tables", "reference.csv"),
    output:
        claims_path(NC),
    log:
        log_path(NC, "claims"),
    threads: 1
    conda:
        ENV
    shell:
        stage(NC, "claims", "--input {input.evals} {input.ref} --out {output}") + " > {log} 2>&1"


rule neural_ctmc:
    """Everything of this method: figures and claims."""
    input:
        NC_FIGURES,
        claims_path(NC),
