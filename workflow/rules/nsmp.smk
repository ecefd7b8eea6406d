# NSMP (paper 12): nerve-skeleton message passing vs consensus ADMM / FedAvg / FedProx.
# Jobs: one per case (problems, nerve skeleton, spanning tree, schedule, centralised optimum, then
# every solver on all seeds with its grid vmapped: one process pays start-up and compilation
# once), then evaluate; figures, claims and the `nsmp` target come from
# workflow/rules/protocol.smk.
NS = "nsmp"
NS_CFG = method_config(NS)
NS_CASES = list(NS_CFG["cases"]) + [
    f"ridge-{topo}-n{n}" for topo in NS_CFG["scaling_topologies"] for n in NS_CFG["scaling_n"]
]
NS_CLI = load_method(NS)
NS_CONVERGENCE_METHODS = NS_CLI.CONVERGENCE_SOLVERS
NS_SCALING_METHODS = NS_CLI.SCALING_SOLVERS


rule nsmp_case:
    """One convergence case (a scaling case, ``-n<clients>``, runs NSMP and ADMM only: the rule
    below): problems of every seed, nerve skeleton, max-weight spanning tree, RIP
    repair, schedule and centralised optimum x*; then all four solvers on every seed and grid."""
    input:
        cfg=config_path(NS, "case"),
    output:
        case=out(NS, "runs", "{ns_case}", "case.npz"),
        curves=[out(NS, "runs", "{ns_case}", f"{m}{x}.csv") for m in NS_CONVERGENCE_METHODS
                for x in ("", "_summary")],
    log:
        log_path(NS, "case_{ns_case}"),
    benchmark:
        bench_path(NS, "case_{ns_case}")
    wildcard_constraints:
        ns_case=r"[a-z]+-[a-z]+",
    threads: THREADS
    resources:
        **train_resources(),
    conda:
        ENV
    shell:
        stage(NS, "case", "--variant case={wildcards.ns_case} --out {output.case} --no-progress")


use rule nsmp_case as nsmp_scaling_case with:
    output:
        case=out(NS, "runs", "{ns_case}", "case.npz"),
        curves=[out(NS, "runs", "{ns_case}", f"{m}{x}.csv") for m in NS_SCALING_METHODS
                for x in ("", "_summary")],
    wildcard_constraints:
        ns_case=r"[a-z]+-[a-z]+-n\d+",


rule nsmp_evaluate:
    """Best grid point per case and method, cost to tolerance, schedule structure."""
    input:
        cfg=config_path(NS, "evaluate"),
        summaries=[out(NS, "runs", c, f"{m}_summary.csv") for c in NS_CASES for m in NS_CLI.methods_of(c)],
        cases=[out(NS, "runs", c, "case.npz") for c in NS_CASES],
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
        stage(NS, "evaluate", "--input {input.summaries} {input.cases} --out {output.evaluation}")
