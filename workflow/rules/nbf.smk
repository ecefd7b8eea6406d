# nbf (issue 19): Neural Bayesian Filtering on grid pursuit-evasion.
# data -> train (one GDE per state dimension, seeds vmapped) -> filter (one job per scenario:
# k evaders, dynamics, N particles; every filter and seed) -> evaluate; figures, claims and the
# `nbf` target come from workflow/rules/protocol.smk.
from repro26.nbf.evaluate import scenarios as _nbf_scenarios

NBF = "nbf"
NBF_TYPED = typed_config(NBF)
NBF_SCENARIOS = _nbf_scenarios(NBF_TYPED)
NBF_RUNS = [out(NBF, "runs", f"k{k}_{dyn}_n{n}.csv") for k, dyn, n in NBF_SCENARIOS]
NBF_STEPS = [out(NBF, "runs", f"k{k}_{dyn}_n{n}_steps.csv") for k, dyn, n in NBF_SCENARIOS]
NBF_CURVES = [out(NBF, "models", f"gde_k{k}.csv") for k in NBF_TYPED.evaders]


rule nbf_data:
    """Exact-belief pool of held-in episodes (GDE training family) and evaluation episodes."""
    input:
        cfg=config_path(NBF, "data"),
    output:
        pool=out(NBF, "data", "pool.npz"),
        episodes=out(NBF, "data", "episodes.npz"),
        manifest=out(NBF, "data", "manifest.json"),
    params:
        dest=lambda w, output: str(Path(output.pool).parent),
    log:
        log_path(NBF, "data"),
    benchmark:
        bench_path(NBF, "data")
    threads: 1
    conda:
        ENV
    shell:
        stage(NBF, "data", "--out {params.dest}")


rule nbf_train:
    """The GDE (set encoder + conditional flow) of dimension 2k, every seed (vmapped)."""
    input:
        cfg=config_path(NBF, "train"),
        pool=out(NBF, "data", "pool.npz"),
    output:
        model=out(NBF, "models", "gde_k{k}.eqx"),
        curve=out(NBF, "models", "gde_k{k}.csv"),
    log:
        log_path(NBF, "train_k{k}"),
    benchmark:
        bench_path(NBF, "train_k{k}")
    wildcard_constraints:
        k=r"\d+",
    threads: THREADS
    resources:
        **train_resources(mem_mb_small=2000),
    conda:
        ENV
    shell:
        stage(NBF, "train", "--variant evaders={wildcards.k} --input {input.pool} --out {output.model}")


rule nbf_filter:
    """Every filter on one scenario (k evaders, dynamics, N particles), all seeds."""
    input:
        cfg=config_path(NBF, "filter"),
        model=out(NBF, "models", "gde_k{k}.eqx"),
        episodes=out(NBF, "data", "episodes.npz"),
        pool=out(NBF, "data", "pool.npz"),
    output:
        summary=out(NBF, "runs", "k{k}_{dyn}_n{n}.csv"),
        steps=out(NBF, "runs", "k{k}_{dyn}_n{n}_steps.csv"),
    log:
        log_path(NBF, "filter_k{k}_{dyn}_n{n}"),
    benchmark:
        bench_path(NBF, "filter_k{k}_{dyn}_n{n}")
    wildcard_constraints:
        k=r"\d+",
        n=r"\d+",
        dyn="|".join(NBF_TYPED.dynamics),
    threads: THREADS
    resources:
        **train_resources(mem_mb_small=3000),
    conda:
        ENV
    shell:
        stage(
            NBF,
            "filter",
            "--variant evaders={wildcards.k},dynamics={wildcards.dyn},particles={wildcards.n} "
            "--input {input.model} {input.episodes} {input.pool} --out {output.summary}",
        )


rule nbf_evaluate:
    """Gather the scenario tables and the GDE training curves."""
    input:
        cfg=config_path(NBF, "evaluate"),
        runs=NBF_RUNS,
        steps=NBF_STEPS,
        curves=NBF_CURVES,
    output:
        filtering=out(NBF, "tables", "filtering.csv"),
        steps=out(NBF, "tables", "steps.csv"),
        training=out(NBF, "tables", "training.csv"),
    params:
        dest=lambda w, output: str(Path(output.filtering).parent),
    log:
        log_path(NBF, "evaluate"),
    benchmark:
        bench_path(NBF, "evaluate")
    threads: 1
    conda:
        ENV
    shell:
        stage(NBF, "evaluate", "--out {params.dest} --input {input.runs} {input.steps} {input.curves}")
