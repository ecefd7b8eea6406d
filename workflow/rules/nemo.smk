# nemo (issue 29): MindFlow user simulator + NeMo need-aware multi-objective PPO.
# data -> train (one job per trained method, all seeds vmapped) -> evaluate (one job per method,
# every Sim2Sim setting) -> gather; figures, claims and the `nemo` target come from
# workflow/rules/protocol.smk.
NEMO = "nemo"
NEMO_TRAINED = ["nemo", "nemo_one_step", "nemo_plain", "emotion_only", "fixed_75", "fixed_50",
                "fixed_25", "cognition_only"]
NEMO_METHODS = NEMO_TRAINED + ["random", "rule_based", "planner_emo", "planner_cog", "planner_need"]


rule nemo_data:
    """Evaluation personas of every setting and the arousal curves of the representative personas."""
    input:
        cfg=config_path(NEMO, "data"),
    output:
        personas=out(NEMO, "data", "personas.npz"),
        curves=out(NEMO, "data", "arousal_curves.csv"),
    params:
        dest=lambda w, output: str(Path(output.personas).parent),
    log:
        log_path(NEMO, "data"),
    benchmark:
        bench_path(NEMO, "data")
    threads: 1
    conda:
        ENV
    shell:
        stage(NEMO, "data", "--out {params.dest}")


rule nemo_train:
    """Multi-objective PPO of one method on MindFlow, every seed vmapped in one job."""
    input:
        cfg=config_path(NEMO, "train"),
    output:
        policy=out(NEMO, "runs", "{nemo_trained}", "policy.ckpt"),
        learning=out(NEMO, "runs", "{nemo_trained}", "learning.csv"),
    params:
        dest=lambda w, output: str(Path(output.policy).parent),
    log:
        log_path(NEMO, "train_{nemo_trained}"),
    benchmark:
        bench_path(NEMO, "train_{nemo_trained}")
    wildcard_constraints:
        nemo_trained="|".join(NEMO_TRAINED),
    threads: THREADS
    resources:
        **train_resources(),
    conda:
        ENV
    shell:
        stage(NEMO, "train", "--variant method={wildcards.nemo_trained} --out {params.dest}")


rule nemo_evaluate:
    """One method on the fixed evaluation users of every setting (in distribution, shifted
    personas, other simulator family), every seed."""
    input:
        unpack(
            lambda w: {
                "cfg": config_path(NEMO, "evaluate"),
                "personas": out(NEMO, "data", "personas.npz"),
                **(
                    {"policy": out(NEMO, "runs", w.nemo_method, "policy.ckpt")}
                    if w.nemo_method in NEMO_TRAINED
                    else {}
                ),
            }
        ),
    output:
        out(NEMO, "eval", "{nemo_method}.csv"),
    params:
        inputs=lambda w, input: " ".join(
            str(p) for k, p in input.items() if k in ("personas", "policy")
        ),
    log:
        log_path(NEMO, "evaluate_{nemo_method}"),
    benchmark:
        bench_path(NEMO, "evaluate_{nemo_method}")
    wildcard_constraints:
        nemo_method="|".join(NEMO_METHODS),
    threads: THREADS
    conda:
        ENV
    shell:
        stage(NEMO, "evaluate", "--variant method={wildcards.nemo_method} --input {params.inputs} --out {output}")


rule nemo_gather:
    """Gather the evaluation tables and the learning curves into tables/."""
    input:
        cfg=config_path(NEMO, "gather"),
        evals=expand(out(NEMO, "eval", "{m}.csv"), m=NEMO_METHODS),
        learning=expand(out(NEMO, "runs", "{m}", "learning.csv"), m=NEMO_TRAINED),
    output:
        returns=out(NEMO, "tables", "returns.csv"),
        learning=out(NEMO, "tables", "learning.csv"),
    params:
        dest=lambda w, output: str(Path(output.returns).parent),
    log:
        log_path(NEMO, "gather"),
    benchmark:
        bench_path(NEMO, "gather")
    threads: 1
    conda:
        ENV
    shell:
        stage(NEMO, "gather", "--out {params.dest} --input {input.evals} {input.learning}")
