# poll (issue 21): pricing in multi-activity network games by polling.
# data (family) -> poll (family: every n and heterogeneity, seeds vmapped) + exact (family)
# + adversary -> evaluate; figures, claims and the `poll` target come from
# workflow/rules/protocol.smk.
from repro26.poll.cli import exact_jobs as _poll_exact_jobs
from repro26.poll.cli import graph_jobs as _poll_graph_jobs
from repro26.poll.cli import poll_jobs as _poll_poll_jobs

POLL = "poll"
POLL_TYPED = typed_config(POLL)
POLL_GRAPHS = _poll_graph_jobs(POLL_TYPED)
POLL_RUNS = [out(POLL, "runs", "poll", f"{f}.csv") for f in dict.fromkeys(f for f, _, _ in _poll_poll_jobs(POLL_TYPED))]
POLL_EXACT = [out(POLL, "runs", "exact", f"{f}.csv") for f in _poll_exact_jobs(POLL_TYPED)]
POLL_FAMILIES = sorted(POLL_GRAPHS)


rule poll_data:
    """The seeds' graphs of one family at each of its sizes (networkx; CSR arrays, ρ(G))."""
    input:
        cfg=config_path(POLL, "data"),
    output:
        out(POLL, "data", "{family}.npz"),
    log:
        log_path(POLL, "data_{family}"),
    benchmark:
        bench_path(POLL, "data_{family}")
    wildcard_constraints:
        family="|".join(POLL_FAMILIES),
    threads: 1
    conda:
        ENV
    shell:
        stage(POLL, "data", "--variant family={wildcards.family} --out {output}")


rule poll_poll:
    """Poll (seeds vmapped in one scan) and the trivial baselines at every n and h of one family."""
    input:
        cfg=config_path(POLL, "poll"),
        graphs=out(POLL, "data", "{family}.npz"),
    output:
        summary=out(POLL, "runs", "poll", "{family}.csv"),
        trajectory=out(POLL, "runs", "poll", "{family}_traj.csv"),
    log:
        log_path(POLL, "poll_{family}"),
    benchmark:
        bench_path(POLL, "poll_{family}")
    wildcard_constraints:
        family="|".join(POLL_FAMILIES),
    threads: THREADS
    resources:
        **train_resources(mem_mb_small=2000),
    conda:
        ENV
    shell:
        stage(POLL, "poll", "--variant family={wildcards.family} --input {input.graphs}"
              " --out {output.summary}")


rule poll_exact:
    """Exact (dense Cholesky) and distributed (CG, best response) pricing, every
    seed and n of one family."""
    input:
        cfg=config_path(POLL, "exact"),
        graphs=out(POLL, "data", "{family}.npz"),
    output:
        out(POLL, "runs", "exact", "{family}.csv"),
    log:
        log_path(POLL, "exact_{family}"),
    benchmark:
        bench_path(POLL, "exact_{family}")
    wildcard_constraints:
        family="|".join(POLL_FAMILIES),
    threads: THREADS
    resources:
        **train_resources(mem_mb_small=3000),
    conda:
        ENV
    shell:
        stage(POLL, "exact", "--variant family={wildcards.family} --input {input.graphs}"
              " --out {output}")


rule poll_adversary:
    """Best misreports (plain vs probe-scored report) and detection of misreporting agents."""
    input:
        cfg=config_path(POLL, "adversary"),
        graphs=out(POLL, "data", f"{POLL_TYPED.adversary_family}.npz"),
    output:
        incentives=out(POLL, "runs", "adversary", "incentives.csv"),
        detection=out(POLL, "runs", "adversary", "detection.csv"),
    params:
        dest=lambda w, output: str(Path(output.incentives).parent),
    log:
        log_path(POLL, "adversary"),
    benchmark:
        bench_path(POLL, "adversary")
    threads: THREADS
    resources:
        **train_resources(mem_mb_small=2000),
    conda:
        ENV
    shell:
        stage(POLL, "adversary", "--input {input.graphs} --out {params.dest}")


rule poll_evaluate:
    """Gather the jobs' tables into summary, trajectories, ops, incentives and detection."""
    input:
        cfg=config_path(POLL, "evaluate"),
        runs=POLL_RUNS,
        exact=POLL_EXACT,
        incentives=out(POLL, "runs", "adversary", "incentives.csv"),
        detection=out(POLL, "runs", "adversary", "detection.csv"),
    output:
        summary=out(POLL, "tables", "summary.csv"),
        trajectories=out(POLL, "tables", "trajectories.csv"),
        ops=out(POLL, "tables", "ops.csv"),
        incentives=out(POLL, "tables", "incentives.csv"),
        detection=out(POLL, "tables", "detection.csv"),
    params:
        dest=lambda w, output: str(Path(output.summary).parent),
        trajectories=lambda w, input: [p.replace(".csv", "_traj.csv") for p in input.runs],
    log:
        log_path(POLL, "evaluate"),
    benchmark:
        bench_path(POLL, "evaluate")
    threads: 1
    conda:
        ENV
    shell:
        stage(POLL, "evaluate", "--out {params.dest} --input {input.runs} {params.trajectories}"
              " {input.exact} {input.incentives} {input.detection}")
