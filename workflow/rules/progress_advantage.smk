# progress_advantage (issue 27): step scores from β log π_RL/π_ref after KL-regularised RL.
# tabular (one job, all seeds) ; data -> train ref -> train rl_kl, rl_clip -> train prm, orm ->
# evaluate (best-of-N, step-level beam search, AUROC, attribution; all seeds vmapped in every job); figures, claims and the `progress_advantage` target
# come from workflow/rules/protocol.smk.
PA = "progress_advantage"
PA_TRAIN_INPUT = {
    "ref": out(PA, "data", "demos.npz"),
    "rl_kl": out(PA, "runs", "ref.eqx"),
    "rl_clip": out(PA, "runs", "ref.eqx"),
    "prm": out(PA, "runs", "rl_kl.eqx"),
    "orm": out(PA, "runs", "rl_kl.eqx"),
}


rule progress_advantage_tabular:
    """Slippery gridworld: soft value iteration, closed-form and learned β log π/π_ref vs A*."""
    input:
        cfg=config_path(PA, "tabular"),
    output:
        final=out(PA, "tables", "tabular_final.csv"),
        curve=out(PA, "tables", "tabular_curve.csv"),
        scatter=out(PA, "tables", "tabular_scatter.csv"),
    params:
        dest=lambda w, output: str(Path(output.final).parent),
    log:
        log_path(PA, "tabular"),
    benchmark:
        bench_path(PA, "tabular")
    threads: THREADS
    conda:
        ENV
    shell:
        stage(PA, "tabular", "--out {params.dest}")


rule progress_advantage_data:
    """Noisy demonstrations of the calculator task, every seed."""
    input:
        cfg=config_path(PA, "data"),
    output:
        out(PA, "data", "demos.npz"),
    log:
        log_path(PA, "data"),
    benchmark:
        bench_path(PA, "data")
    threads: 1
    conda:
        ENV
    shell:
        stage(PA, "data", "--out {output}")


rule progress_advantage_train:
    """One model (π_ref, π_RL with KL, π_RL clip-only, PRM, ORM), every seed in one vmapped job."""
    input:
        cfg=config_path(PA, "train"),
        parent=lambda w: PA_TRAIN_INPUT[w.model],
    output:
        eqx=out(PA, "runs", "{model}.eqx"),
        csv=out(PA, "runs", "{model}.csv"),
    log:
        log_path(PA, "train_{model}"),
    benchmark:
        bench_path(PA, "train_{model}")
    wildcard_constraints:
        model="|".join(PA_TRAIN_INPUT),
    threads: THREADS
    resources:
        **train_resources(mem_mb_small=3000),
    conda:
        ENV
    shell:
        stage(PA, "train", "--variant model={wildcards.model} --input {input.parent} --out {output.eqx}")


rule progress_advantage_evaluate:
    """Best-of-N, step-level beam search, AUROC, failure attribution and policy success, every seed."""
    input:
        cfg=config_path(PA, "evaluate"),
        models=expand(out(PA, "runs", "{model}.eqx"), model=list(PA_TRAIN_INPUT)),
    output:
        bon=out(PA, "tables", "bon.csv"),
        auroc=out(PA, "tables", "auroc.csv"),
        attribution=out(PA, "tables", "attribution.csv"),
        policies=out(PA, "tables", "policies.csv"),
        beam=out(PA, "tables", "beam.csv"),
    params:
        dest=lambda w, output: str(Path(output.bon).parent),
    log:
        log_path(PA, "evaluate"),
    benchmark:
        bench_path(PA, "evaluate")
    threads: THREADS
    resources:
        **train_resources(mem_mb_small=3000),
    conda:
        ENV
    shell:
        stage(PA, "evaluate", "--input {input.models} --out {params.dest}")
