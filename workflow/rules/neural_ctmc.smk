# Neural CTMC (paper 1) vs MDLM / SEDD / GIDD, two studies.
# synthetic: synthetic_train (per method, seeds vmapped; the trained and the half-way model) ->
#   synthetic_evaluate (exact output laws), synthetic_floors (exact-rate samplers, trivial baselines) -> summarize.
# text: data -> scorer -> train (per method, seeds vmapped) -> evaluate -> summarize.
# Figures, claims and the `neural_ctmc` target come from workflow/rules/protocol.smk.
NC = "neural_ctmc"
NC_CFG = method_config(NC)
NC_CORPORA = ["text"]
NC_METHODS = ["neural_ctmc", "gidd", "mdlm", "sedd"]


wildcard_constraints:
    nc_corpus="|".join(NC_CORPORA),
    nc_method="|".join(NC_METHODS),


rule neural_ctmc_data:
    """The KJV text windows."""
    input:
        cfg=config_path(NC, "data"),
    output:
        npz=out(NC, "data", "{nc_corpus}.npz"),
        ref=out(NC, "data", "{nc_corpus}.json"),
    log:
        log_path(NC, "data_{nc_corpus}"),
    benchmark:
        bench_path(NC, "data_{nc_corpus}")
    threads: THREADS
    conda:
        ENV
    shell:
        stage(NC, "data", "--variant corpus={wildcards.nc_corpus} --out {output.npz}")


rule neural_ctmc_scorer:
    """Autoregressive transformer on the text corpus: the generative-perplexity judge."""
    input:
        cfg=config_path(NC, "scorer"),
        data=out(NC, "data", "text.npz"),
    output:
        model=out(NC, "scorer", "text.eqx"),
        curve=out(NC, "scorer", "text.csv"),
        ref=out(NC, "scorer", "text.json"),
    log:
        log_path(NC, "scorer_text"),
    benchmark:
        bench_path(NC, "scorer_text")
    threads: THREADS
    resources:
        **train_resources(),
    conda:
        ENV
    shell:
        stage(NC, "scorer", "--variant corpus=text --input {input.data} --out {output.model}")


rule neural_ctmc_train:
    """All seeds of one method on a corpus (vmapped; same backbone, optimiser, tokens)."""
    input:
        cfg=config_path(NC, "train"),
        data=out(NC, "data", "{nc_corpus}.npz"),
    output:
        model=out(NC, "runs", "{nc_corpus}", "{nc_method}.eqx"),
        curve=out(NC, "runs", "{nc_corpus}", "{nc_method}.csv"),
    log:
        log_path(NC, "train_{nc_corpus}_{nc_method}"),
    benchmark:
        bench_path(NC, "train_{nc_corpus}_{nc_method}")
    threads: THREADS
    resources:
        **train_resources(),
    conda:
        ENV
    shell:
        stage(
            NC,
            "train",
            "--variant corpus={wildcards.nc_corpus},method={wildcards.nc_method}"
            " --input {input.data} --out {output.model}",
        )


rule neural_ctmc_evaluate:
    """Validation ELBO; samples at every step count; generative PPL and sample entropy (every
    seed of one method)."""
    input:
        cfg=config_path(NC, "evaluate"),
        data=out(NC, "data", "{nc_corpus}.npz"),
        model=out(NC, "runs", "{nc_corpus}", "{nc_method}.eqx"),
        scorer=out(NC, "scorer", "text.eqx"),
    output:
        table=out(NC, "eval", "{nc_corpus}", "{nc_method}.csv"),
        samples=out(NC, "eval", "{nc_corpus}", "{nc_method}.samples.json"),
    log:
        log_path(NC, "evaluate_{nc_corpus}_{nc_method}"),
    benchmark:
        bench_path(NC, "evaluate_{nc_corpus}_{nc_method}")
    threads: THREADS
    resources:
        **train_resources(),
    conda:
        ENV
    shell:
        stage(
            NC,
            "evaluate",
            "--variant corpus={wildcards.nc_corpus},method={wildcards.nc_method}"
            " --input {input.data} {input.model} {input.scorer}"
            " --out {output.table}",
        )


rule neural_ctmc_synthetic_train:
    """All seeds of one method on the enumerable language (vmapped), exact data law."""
    input:
        cfg=config_path(NC, "synthetic_train"),
    output:
        model=out(NC, "runs", "synthetic", "{nc_method}.eqx"),
        half=out(NC, "runs", "synthetic", "{nc_method}.half.eqx"),
        curve=out(NC, "runs", "synthetic", "{nc_method}.csv"),
    log:
        log_path(NC, "synthetic_train_{nc_method}"),
    benchmark:
        bench_path(NC, "synthetic_train_{nc_method}")
    threads: THREADS
    resources:
        **train_resources(),
    conda:
        ENV
    shell:
        stage(NC, "synthetic_train", "--variant method={wildcards.nc_method} --out {output.model}")


rule neural_ctmc_synthetic_evaluate:
    """Exact output laws of every sampler of one method, its bounds and estimator spread; the
    half-way model's laws (plateau check)."""
    input:
        cfg=config_path(NC, "synthetic_evaluate"),
        model=out(NC, "runs", "synthetic", "{nc_method}.eqx"),
        half=out(NC, "runs", "synthetic", "{nc_method}.half.eqx"),
    output:
        table=out(NC, "eval", "synthetic", "{nc_method}.csv"),
    log:
        log_path(NC, "synthetic_evaluate_{nc_method}"),
    benchmark:
        bench_path(NC, "synthetic_evaluate_{nc_method}")
    threads: THREADS
    resources:
        **train_resources(),
    conda:
        ENV
    shell:
        stage(
            NC,
            "synthetic_evaluate",
            "--variant method={wildcards.nc_method} --input {input.model} {input.half}"
            " --out {output.table}",
        )


rule neural_ctmc_synthetic_floors:
    """Exact-rate floors of every sampler, trivial baselines and the data entropy."""
    input:
        cfg=config_path(NC, "synthetic_floors"),
    output:
        table=out(NC, "eval", "synthetic", "floors.csv"),
    log:
        log_path(NC, "synthetic_floors"),
    benchmark:
        bench_path(NC, "synthetic_floors")
    threads: THREADS
    conda:
        ENV
    shell:
        stage(NC, "synthetic_floors", "--out {output.table}")


rule neural_ctmc_synthetic_summarize:
    """Synthetic per-job tables -> synthetic.csv, variance.csv, synthetic_training.csv."""
    input:
        cfg=config_path(NC, "summarize"),
        evals=expand(out(NC, "eval", "synthetic", "{m}.csv"), m=NC_METHODS),
        floors=out(NC, "eval", "synthetic", "floors.csv"),
        curves=expand(out(NC, "runs", "synthetic", "{m}.csv"), m=NC_METHODS),
    output:
        table=out(NC, "tables", "synthetic.csv"),
        variance=out(NC, "tables", "variance.csv"),
        curves=out(NC, "tables", "synthetic_training.csv"),
    params:
        folder=lambda wildcards, output: output.table.rsplit("/", 1)[0],
    log:
        log_path(NC, "synthetic_summarize"),
    benchmark:
        bench_path(NC, "synthetic_summarize")
    threads: 1
    conda:
        ENV
    shell:
        stage(
            NC,
            "summarize",
            "--variant study=synthetic --input {input.evals} {input.floors} {input.curves}"
            " --out {params.folder}",
        )


rule neural_ctmc_summarize:
    """Text per-job tables -> eval.csv, curves.csv, reference.csv."""
    input:
        cfg=config_path(NC, "summarize"),
        evals=expand(out(NC, "eval", "{c}", "{m}.csv"), c=NC_CORPORA, m=NC_METHODS),
        curves=expand(out(NC, "runs", "{c}", "{m}.csv"), c=NC_CORPORA, m=NC_METHODS),
        refs=[out(NC, "data", f"{c}.json") for c in NC_CORPORA] + [out(NC, "scorer", "text.json")],
    output:
        evals=out(NC, "tables", "eval.csv"),
        curves=out(NC, "tables", "curves.csv"),
        ref=out(NC, "tables", "reference.csv"),
    params:
        folder=lambda wildcards, output: output.evals.rsplit("/", 1)[0],
    log:
        log_path(NC, "summarize"),
    benchmark:
        bench_path(NC, "summarize")
    threads: 1
    conda:
        ENV
    shell:
        stage(
            NC,
            "summarize",
            "--variant study=text --input {input.evals} {input.curves} {input.refs}"
            " --out {params.folder}",
        )
