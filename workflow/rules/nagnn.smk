# nagnn (issue 26): Neighbor-Aware GNN, snapshot-based dynamic link prediction with LSH reservoirs.
# data (dataset) -> train (learned model x dataset, seeds vmapped) -> evaluate (model x dataset,
# heuristics included) + speed (dataset) -> tables; figures, claims and the `nagnn` target come
# from workflow/rules/protocol.smk.
NAGNN = "nagnn"
NAGNN_CFG = method_config(NAGNN)
NAGNN_DATASETS = list(NAGNN_CFG["datasets"])
NAGNN_LEARNED = list(NAGNN_CFG["models"])
NAGNN_MODELS = NAGNN_LEARNED + ["heuristics"]  # one evaluation job for all heuristics


rule nagnn_data:
    """One dataset for every seed: events per snapshot, node features, test negatives."""
    input:
        cfg=config_path(NAGNN, "data"),
    output:
        out(NAGNN, "data", "{dataset}.npz"),
    log:
        log_path(NAGNN, "data_{dataset}"),
    benchmark:
        bench_path(NAGNN, "data_{dataset}")
    wildcard_constraints:
        dataset="|".join(NAGNN_DATASETS),
    threads: 1
    conda:
        ENV
    shell:
        stage(NAGNN, "data", "--variant dataset={wildcards.dataset} --out {output}")


rule nagnn_train:
    """One learned model on one dataset, every seed at once (vmapped)."""
    input:
        cfg=config_path(NAGNN, "train"),
        data=out(NAGNN, "data", "{dataset}.npz"),
    output:
        models=out(NAGNN, "runs", "{dataset}", "{model}.eqx"),
        loss=out(NAGNN, "runs", "{dataset}", "{model}.csv"),
        fit=out(NAGNN, "runs", "{dataset}", "{model}.fit.csv"),
    log:
        log_path(NAGNN, "train_{dataset}_{model}"),
    benchmark:
        bench_path(NAGNN, "train_{dataset}_{model}")
    wildcard_constraints:
        dataset="|".join(NAGNN_DATASETS),
        model="|".join(NAGNN_LEARNED),
    threads: THREADS
    resources:
        **train_resources(mem_mb_small=3000),
    conda:
        ENV
    shell:
        stage(NAGNN, "train", "--variant model={wildcards.model},dataset={wildcards.dataset} "
              "--input {input.data} --out {output.models}")


rule nagnn_evaluate:
    """AP / AUROC (random, historical, inductive negatives) and MRR of one model on one dataset."""
    input:
        cfg=config_path(NAGNN, "evaluate"),
        data=out(NAGNN, "data", "{dataset}.npz"),
        # learned models also read their trained weights; the heuristics job reads only data
        models=lambda w: [out(NAGNN, "runs", w.dataset, f"{w.model}.eqx")]
        if w.model in NAGNN_LEARNED
        else [],
    output:
        out(NAGNN, "eval", "{dataset}", "{model}.csv"),
    log:
        log_path(NAGNN, "evaluate_{dataset}_{model}"),
    benchmark:
        bench_path(NAGNN, "evaluate_{dataset}_{model}")
    wildcard_constraints:
        dataset="|".join(NAGNN_DATASETS),
        model="|".join(NAGNN_MODELS),
    threads: THREADS
    conda:
        ENV
    shell:
        stage(NAGNN, "evaluate", "--variant model={wildcards.model},dataset={wildcards.dataset} "
              "--input {input.data} {input.models} --out {output}")


rule nagnn_speed:
    """Training / inference throughput and peak memory of every learned model, one process."""
    input:
        cfg=config_path(NAGNN, "speed"),
        data=out(NAGNN, "data", "{dataset}.npz"),
    output:
        out(NAGNN, "speed", "{dataset}.csv"),
    log:
        log_path(NAGNN, "speed_{dataset}"),
    benchmark:
        bench_path(NAGNN, "speed_{dataset}")
    wildcard_constraints:
        dataset="|".join(NAGNN_DATASETS),
    threads: THREADS
    resources:
        **train_resources(mem_mb_small=3000),
    conda:
        ENV
    shell:
        stage(NAGNN, "speed", "--variant dataset={wildcards.dataset} --input {input.data} "
              "--out {output}")


rule nagnn_tables:
    """Gather the evaluation, speed, loss-curve and plateau-rule rows into tables/."""
    input:
        cfg=config_path(NAGNN, "tables"),
        metrics=expand(out(NAGNN, "eval", "{dataset}", "{model}.csv"), dataset=NAGNN_DATASETS,
                       model=NAGNN_MODELS),
        speed=expand(out(NAGNN, "speed", "{dataset}.csv"), dataset=NAGNN_DATASETS),
        loss=expand(out(NAGNN, "runs", "{dataset}", "{model}.csv"), dataset=NAGNN_DATASETS,
                    model=NAGNN_LEARNED),
        fit=expand(out(NAGNN, "runs", "{dataset}", "{model}.fit.csv"), dataset=NAGNN_DATASETS,
                   model=NAGNN_LEARNED),
    output:
        metrics=out(NAGNN, "tables", "metrics.csv"),
        speed=out(NAGNN, "tables", "speed.csv"),
        loss=out(NAGNN, "tables", "loss.csv"),
        training=out(NAGNN, "tables", "training.csv"),
    params:
        dest=lambda w, output: str(Path(output.metrics).parent),
    log:
        log_path(NAGNN, "tables"),
    benchmark:
        bench_path(NAGNN, "tables")
    threads: 1
    conda:
        ENV
    shell:
        stage(NAGNN, "tables", "--input {input.metrics} {input.speed} {input.loss} {input.fit} "
              "--out {params.dest}")
