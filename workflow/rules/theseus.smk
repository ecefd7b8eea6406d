# theseus (issue 20): Network of Theseus, converting a guide network into another architecture
# part by part. data (per task) -> train (per task and model, every seed vmapped in one job;
# distillation and conversions read the guide's checkpoint) -> evaluate; figures, claims and the
# `theseus` target come from workflow/rules/protocol.smk.
THESEUS = "theseus"
THESEUS_CFG = method_config(THESEUS)
THESEUS_MODELS = {"images": THESEUS_CFG["image_models"], "text": THESEUS_CFG["text_models"]}
THESEUS_NEEDS_GUIDE = {"kd", "fmse", "oneshot", "not", "not_mnn"}
THESEUS_RUNS = [
    out(THESEUS, "runs", task, f"{model}.{ext}")
    for task, models in THESEUS_MODELS.items()
    for model in models
    for ext in ("eqx", "csv")
]


rule theseus_data:
    """One task's data: cluttered glyph digits (images) or KJV character windows (text)."""
    input:
        cfg=config_path(THESEUS, "data"),
    output:
        out(THESEUS, "data", "{task}.npz"),
    log:
        log_path(THESEUS, "data_{task}"),
    benchmark:
        bench_path(THESEUS, "data_{task}")
    wildcard_constraints:
        task="images|text",
    threads: 1
    conda:
        ENV
    shell:
        stage(THESEUS, "data", "--variant task={wildcards.task} --out {output}")


rule theseus_train:
    """One model of one task (guide, baselines or conversion), every seed in one vmapped job."""
    input:
        cfg=config_path(THESEUS, "train"),
        data=out(THESEUS, "data", "{task}.npz"),
        guide=lambda w: (
            [out(THESEUS, "runs", w.task, "guide.eqx")] if w.model in THESEUS_NEEDS_GUIDE else []
        ),
    output:
        eqx=out(THESEUS, "runs", "{task}", "{model}.eqx"),
        csv=out(THESEUS, "runs", "{task}", "{model}.csv"),
    log:
        log_path(THESEUS, "train_{task}_{model}"),
    benchmark:
        bench_path(THESEUS, "train_{task}_{model}")
    wildcard_constraints:
        task="images|text",
        model="guide|linear|scratch|kd|fmse|oneshot|not|not_mnn|not_untrained",
    threads: THREADS
    resources:
        **train_resources(mem_mb_small=3000),
    conda:
        ENV
    shell:
        stage(
            THESEUS,
            "train",
            "--variant task={wildcards.task},model={wildcards.model} "
            "--input {input.data} {input.guide} --out {output.eqx}",
        )


rule theseus_evaluate:
    """Final metrics and layer-wise CKA with the guide of every model; the stage rows."""
    input:
        cfg=config_path(THESEUS, "evaluate"),
        data=expand(out(THESEUS, "data", "{task}.npz"), task=list(THESEUS_MODELS)),
        runs=THESEUS_RUNS,
    output:
        final=out(THESEUS, "tables", "final.csv"),
        stages=out(THESEUS, "tables", "stages.csv"),
    params:
        dest=lambda w, output: str(Path(output.final).parent),
    log:
        log_path(THESEUS, "evaluate"),
    benchmark:
        bench_path(THESEUS, "evaluate")
    threads: 1
    conda:
        ENV
    shell:
        stage(THESEUS, "evaluate", "--input {input.data} {input.runs} --out {params.dest}")
