# nestedvla (issue 23): consolidating per-task skills by generating adapters (nested
# hypernetwork) vs merging them. data -> base (seeds vmapped) -> adapters (tasks x seeds) ->
# joint and nested -> evaluate (merging baselines and rollouts of every method); figures, claims
# and the `nestedvla` target come from workflow/rules/protocol.smk.
NV = "nestedvla"
NV_DEMOS = out(NV, "data", "demos.npz")


rule nestedvla_data:
    """Tasks of the three suites and noisy-expert demonstrations of every pretraining and skill task."""
    input:
        cfg=config_path(NV, "data"),
    output:
        demos=NV_DEMOS,
        tasks=out(NV, "data", "tasks.csv"),
    params:
        dest=lambda w, output: str(Path(output.demos).parent),
    log:
        log_path(NV, "data"),
    benchmark:
        bench_path(NV, "data")
    threads: 1
    conda:
        ENV
    shell:
        stage(NV, "data", "--out {params.dest}")


rule nestedvla_base:
    """Pretrain the base policy by BC on the pretraining tasks of all suites, every seed."""
    input:
        cfg=config_path(NV, "base"),
        demos=NV_DEMOS,
    output:
        out(NV, "models", "base.eqx"),
    log:
        log_path(NV, "base"),
    benchmark:
        bench_path(NV, "base")
    threads: THREADS
    resources:
        **train_resources(mem_mb_small=3000),
    conda:
        ENV
    shell:
        stage(NV, "base", "--input {input.demos} --out {output}")


rule nestedvla_adapters:
    """One LoRA adapter per skill task on the frozen base (BC), tasks x seeds vmapped."""
    input:
        cfg=config_path(NV, "adapters"),
        demos=NV_DEMOS,
        base=out(NV, "models", "base.eqx"),
    output:
        out(NV, "models", "adapters.eqx"),
    log:
        log_path(NV, "adapters"),
    benchmark:
        bench_path(NV, "adapters")
    threads: THREADS
    resources:
        **train_resources(mem_mb_small=3000),
    conda:
        ENV
    shell:
        stage(NV, "adapters", "--input {input.demos} {input.base} --out {output}")


rule nestedvla_joint:
    """Multi-task joint training: one LoRA adapter on all skill tasks, every seed."""
    input:
        cfg=config_path(NV, "joint"),
        demos=NV_DEMOS,
        base=out(NV, "models", "base.eqx"),
    output:
        out(NV, "models", "joint.eqx"),
    log:
        log_path(NV, "joint"),
    benchmark:
        bench_path(NV, "joint")
    threads: THREADS
    resources:
        **train_resources(mem_mb_small=3000),
    conda:
        ENV
    shell:
        stage(NV, "joint", "--input {input.demos} {input.base} --out {output}")


rule nestedvla_nested:
    """NestedVLA: the nested hypernetwork fitted to the per-task adapters and BC loss, every seed."""
    input:
        cfg=config_path(NV, "nested"),
        demos=NV_DEMOS,
        base=out(NV, "models", "base.eqx"),
        adapters=out(NV, "models", "adapters.eqx"),
    output:
        out(NV, "models", "nested.eqx"),
    log:
        log_path(NV, "nested"),
    benchmark:
        bench_path(NV, "nested")
    threads: THREADS
    resources:
        **train_resources(mem_mb_small=3000),
    conda:
        ENV
    shell:
        stage(NV, "nested", "--input {input.demos} {input.base} {input.adapters} --out {output}")


rule nestedvla_evaluate:
    """Merging baselines and rollouts of every method on every skill and held-out task."""
    input:
        cfg=config_path(NV, "evaluate"),
        models=expand(out(NV, "models", "{model}.eqx"),
                      model=["base", "adapters", "joint", "nested"]),
    output:
        success=out(NV, "tables", "success.csv"),
        by_suite=out(NV, "tables", "success_by_suite.csv"),
        heldout=out(NV, "tables", "heldout_by_suite.csv"),
        generated=out(NV, "tables", "generated_adapters.csv"),
    params:
        dest=lambda w, output: str(Path(output.success).parent),
    log:
        log_path(NV, "evaluate"),
    benchmark:
        bench_path(NV, "evaluate")
    threads: THREADS
    conda:
        ENV
    shell:
        stage(NV, "evaluate", "--input {input.models} --out {params.dest}")


rule nestedvla_mt10:
    """Optional: the whole method on MetaWorld MT10 in its own conda env (metaworld pins its own
    mujoco). Not part of the `nestedvla` target; build it with
    `snakemake --use-conda --cores 1 nestedvla_mt10 --config scale=...`."""
    input:
        cfg=config_path(NV, "mt10"),
    output:
        success=out(NV, "tables", "mt10_success.csv"),
        by_method=out(NV, "tables", "mt10_by_method.csv"),
    log:
        log_path(NV, "mt10"),
    benchmark:
        bench_path(NV, "mt10")
    threads: THREADS
    resources:
        **train_resources(mem_mb_small=4000),
    conda:
        "../envs/metaworld.yaml"
    shell:
        stage(NV, "mt10", "--out {output.success}")
