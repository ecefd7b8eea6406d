# NSMP (paper 12): nerve-skeleton message passing vs consensus ADMM / FedAvg / FedProx.
# Jobs: one per case (data: problems, nerve skeleton, spanning tree, schedule), one per case
# (centralised optimum), one per case x method (all seeds and the method's grid vmapped), then
# evaluate; figures, claims and the `nsmp` target come from workflow/rules/protocol.smk.
NS = "nsmp"
NS_CFG = method_config(NS)
NS_CONVERGENCE = list(NS_CFG["cases"])
NS_SCALING = [
    f"ridge-{topo}-n{n}" for topo in NS_CFG["scaling_topologies"] for n in NS_CFG["scaling_n"]
]
NS_ITERATIVE = ["nsmp", "admm", "fedavg", "fedprox"]
NS_RUNS = [(case, m) for case in NS_CONVERGENCE for m in NS_ITERATIVE] + [
    (case, m) for case in NS_SCALING for m in ("nsmp", "admm")
]


wildcard_constraints:
    ns_case=r"[a-z]+-[a-z]+(-n\d+)?",
    ns_method="|".join(NS_ITERATIVE),


rule nsmp_data:
    """Problems of every seed, nerve skeleton, max-weight spanning tree, RIP repair, schedule."""
    input:
        cfg=config_path(NS, "data"),
    output:
        out(NS, "data", "{ns_case}.npz"),
    log:
        log_path(NS, "data_{ns_case}"),
    benchmark:
        bench_path(NS, "data_{ns_case}")
    threads: THREADS
    conda:
        ENV
    shell:
        stage(NS, "data", "--variant case={wildcards.ns_case} --out {output}")


rule nsmp_central:
    """Centralised solver: the optimum x* every method is measured against."""
    input:
        cfg=config_path(NS, "central"),
        data=out(NS, "data", "{ns_case}.npz"),
    output:
        out(NS, "runs", "{ns_case}", "central.npz"),
    log:
        log_path(NS, "central_{ns_case}"),
    benchmark:
        bench_path(NS, "central_{ns_case}")
    threads: THREADS
    resources:
        **train_resources(),
    conda:
        ENV
    shell:
        stage(NS, "central", "--variant case={wildcards.ns_case} --input {input.data} --out {output}")


rule nsmp_solve:
    """One method on one case: every seed and the method's hyper-parameter grid at once."""
    input:
        cfg=config_path(NS, "solve"),
        data=out(NS, "data", "{ns_case}.npz"),
        central=out(NS, "runs", "{ns_case}", "central.npz"),
    output:
        curve=out(NS, "runs", "{ns_case}", "{ns_method}.csv"),
        summary=out(NS, "runs", "{ns_case}", "{ns_method}_summary.csv"),
    log:
        log_path(NS, "{ns_method}_{ns_case}"),
    benchmark:
        bench_path(NS, "{ns_method}_{ns_case}")
    threads: THREADS
    resources:
        **train_resources(),
    conda:
        ENV
    shell:
        stage(
            NS,
            "solve",
            "--variant method={wildcards.ns_method},case={wildcards.ns_case}"
            " --input {input.data} {input.central} --out {output.curve} --no-progress",
        )


rule nsmp_evaluate:
    """Best grid point per case and method, cost to tolerance, schedule structure."""
    input:
        cfg=config_path(NS, "evaluate"),
        summaries=[out(NS, "runs", c, f"{m}_summary.csv") for c, m in NS_RUNS],
        data=[out(NS, "data", f"{c}.npz") for c in NS_CONVERGENCE + NS_SCALING],
    output:
        evaluation=out(NS, "evaluation.csv"),
        structure=out(NS, "structure.csv"),
    log:
        log_path(NS, "evaluate"),
    benchmark:
        bench_path(NS, "evaluate")
    threads: THREADS
    conda:
        ENV
    shell:
        stage(NS, "evaluate", "--input {input.summaries} {input.data} --out {output.evaluation}")
