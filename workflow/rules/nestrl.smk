# nestrl (issue 24): nested level-k training for human-AI teaming in Overcooked.
# train (per layout and kind, every seed vmapped in one job): level0 -> level1 -> ... -> level<K>,
# level0 -> fcp, mep_pop -> mep, all of them -> br (the best response to the held-out learned partners); evaluate (per layout: every ego with every partner); figures,
# claims and the `nestrl` target come from workflow/rules/protocol.smk.
NESTRL = "nestrl"
NESTRL_CFG = method_config(NESTRL)
NESTRL_KINDS = (
    ["level0"]
    + [f"level{k}" for k in range(1, NESTRL_CFG["levels"] + 1)]
    + ["fcp", "mep_pop", "mep", "br"]
)

# the training jobs whose agents are a kind's partners: level k-1, level0 (FCP), mep_pop (MEP),
# every evaluated learned type (br)
from repro26.nestrl.cli import partner_inputs as nestrl_partner_inputs


rule nestrl_train:
    """One kind of agent on one layout (level-0 population, a NestRL level, FCP, MEP), all seeds."""
    input:
        cfg=config_path(NESTRL, "train"),
        partners=lambda w: [
            out(NESTRL, "runs", w.layout, f"{stem}.npz") for stem in nestrl_partner_inputs(w.kind, NESTRL_CFG["levels"])
        ],
    output:
        npz=out(NESTRL, "runs", "{layout}", "{kind}.npz"),
        csv=out(NESTRL, "runs", "{layout}", "{kind}.csv"),
    log:
        log_path(NESTRL, "train_{layout}_{kind}"),
    benchmark:
        bench_path(NESTRL, "train_{layout}_{kind}")
    wildcard_constraints:
        layout="|".join(NESTRL_CFG["layouts"]),
        kind="|".join(NESTRL_KINDS),
    threads: THREADS
    resources:
        **train_resources(mem_mb_small=3000),
    conda:
        ENV
    shell:
        stage(
            NESTRL,
            "train",
            "--variant layout={wildcards.layout},kind={wildcards.kind} "
            "--input {input.partners} --out {output.npz}",
        )


rule nestrl_evaluate:
    """Every ego (learned and trivial) with every partner (learned and scripted) on one layout."""
    input:
        cfg=config_path(NESTRL, "evaluate"),
        runs=expand(out(NESTRL, "runs", "{{layout}}", "{kind}.npz"), kind=NESTRL_KINDS),
    output:
        out(NESTRL, "tables", "pairs_{layout}.csv"),
    log:
        log_path(NESTRL, "evaluate_{layout}"),
    benchmark:
        bench_path(NESTRL, "evaluate_{layout}")
    wildcard_constraints:
        layout="|".join(NESTRL_CFG["layouts"]),
    threads: THREADS
    resources:
        **train_resources(mem_mb_small=3000),
    conda:
        ENV
    shell:
        stage(NESTRL, "evaluate", "--variant layout={wildcards.layout} --input {input.runs} --out {output}")
