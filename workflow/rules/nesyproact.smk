# nesyproact (issue 22): proactive neuro-symbolic web agent with online verification.
# data (task suites) -> run (policy profile x seed: every domain, agent and fault scale) ->
# evaluate; figures, claims and the `nesyproact` target come from workflow/rules/protocol.smk.
NESY = "nesyproact"
NESY_CFG = method_config(NESY)
NESY_RUNS = expand(
    out(NESY, "runs", "{policy}", "seed{seed}.csv"),
    policy=list(NESY_CFG["policies"]),
    seed=NESY_CFG["seeds"],
)


rule nesyproact_data:
    """The generated task suites (template, intent, plan length per seed and domain)."""
    input:
        cfg=config_path(NESY, "data"),
    output:
        out(NESY, "data", "tasks.csv"),
    log:
        log_path(NESY, "data"),
    benchmark:
        bench_path(NESY, "data")
    threads: 1
    conda:
        ENV
    shell:
        stage(NESY, "data", "--out {output}")


rule nesyproact_run:
    """Every domain, agent and fault scale with one policy profile and seed."""
    input:
        cfg=config_path(NESY, "run"),
        tasks=out(NESY, "data", "tasks.csv"),
    output:
        out(NESY, "runs", "{policy}", "seed{seed}.csv"),
    log:
        log_path(NESY, "run_{policy}_seed{seed}"),
    benchmark:
        bench_path(NESY, "run_{policy}_seed{seed}")
    wildcard_constraints:
        policy="|".join(NESY_CFG["policies"]),
        seed=r"\d+",
    threads: 1
    conda:
        ENV
    shell:
        stage(NESY, "run", "--variant policy={wildcards.policy} --seed {wildcards.seed} --out {output}")


rule nesyproact_evaluate:
    """Gather the run tables into episodes.csv and summary.csv."""
    input:
        cfg=config_path(NESY, "evaluate"),
        runs=NESY_RUNS,
    output:
        episodes=out(NESY, "tables", "episodes.csv"),
        summary=out(NESY, "tables", "summary.csv"),
    params:
        dest=lambda w, output: str(Path(output.summary).parent),
    log:
        log_path(NESY, "evaluate"),
    benchmark:
        bench_path(NESY, "evaluate")
    threads: 1
    conda:
        ENV
    shell:
        stage(NESY, "evaluate", "--out {params.dest} --input {input.runs}")
