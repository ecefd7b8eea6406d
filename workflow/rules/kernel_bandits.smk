# kernel_bandits (issue 3): adversarial kernelized bandits by exponential weights, with Nyström.
# data -> tune (per adversary) -> simulate (one job per algorithm x adversary [x kernel | x arms],
# all seeds vmapped inside the job, every horizon T in it) -> evaluate; figures, claims and the
# `kernel_bandits` target come from workflow/rules/protocol.smk.
KB = "kernel_bandits"
KB_CFG = method_config(KB)


# (kernel, adversary, algo) of experiments 1 (main kernel, every algorithm) and 2 (other kernels).
KB_SCALING_RUNS = [
    (KB_CFG["kernel"], adv, algo) for adv in KB_CFG["adversaries"] for algo in KB_CFG["algorithms"]
] + [
    (kernel, adv, "exp_weights")
    for kernel in KB_CFG["kernels"]
    if kernel != KB_CFG["kernel"]
    for adv in KB_CFG["adversaries"]
    if adv != "bump"
]
# (grid, algo) of experiments 3 (Nystrom vs exact) and 4 (number of arms), without duplicates.
KB_FIXED_RUNS = list(
    dict.fromkeys(
        [(KB_CFG["nystrom"]["grid"], "exp_weights")]
        + [
            (KB_CFG["nystrom"]["grid"], f"nystrom_{s}_m{m}")
            for s in KB_CFG["nystrom"]["samplers"]
            for m in KB_CFG["nystrom"]["m"]
        ]
        + [(g, algo) for g in KB_CFG["arms"]["grids"] for algo in KB_CFG["arms"]["algorithms"]]
    )
)
KB_DATA = out(KB, "data", "{kernel}_n{grid}.npz")
KB_GAMMA = out(KB, "data", "{kernel}_n{grid}.gamma.csv")
# The tuned variant also reads the eta-scale sweep of its adversary.
KB_TUNE = lambda algo, adversary: (
    {"tune": out(KB, "tune", f"{adversary}.csv")} if algo == "exp_weights_tuned" else {}
)


wildcard_constraints:
    kb_kernel="matern12|matern32|matern52|se",
    kb_adversary="drift|switch|adaptive|bump",


rule kernel_bandits_data:
    """Arms, Gram matrix, exact features and greedy information gain for one kernel and grid."""
    input:
        cfg=config_path(KB, "data"),
    output:
        npz=out(KB, "data", "{kb_kernel}_n{grid}.npz"),
        gamma=out(KB, "data", "{kb_kernel}_n{grid}.gamma.csv"),
    log:
        log_path(KB, "data_{kb_kernel}_n{grid}"),
    benchmark:
        bench_path(KB, "data_{kb_kernel}_n{grid}")
    wildcard_constraints:
        grid=r"\d+",
    threads: THREADS
    conda:
        ENV
    shell:
        stage(KB, "data", "--variant kernel={wildcards.kb_kernel},grid={wildcards.grid} --out {output.npz}")


rule kernel_bandits_tune:
    """Sweep the eta scale of exponential weights on held-out seeds (for the tuned variant)."""
    input:
        cfg=config_path(KB, "tune"),
        data=KB_DATA.format(kernel=KB_CFG["kernel"], grid=KB_CFG["grid"]),
    output:
        out(KB, "tune", "{kb_adversary}.csv"),
    log:
        log_path(KB, "tune_{kb_adversary}"),
    benchmark:
        bench_path(KB, "tune_{kb_adversary}")
    threads: THREADS
    resources:
        **train_resources(),
    conda:
        ENV
    shell:
        stage(KB, "tune", "--variant adversary={wildcards.kb_adversary} --input {input.data} --out {output}")


rule kernel_bandits_simulate_scaling:
    """One algorithm against one adversary for one kernel; all seeds vmapped, every horizon."""
    input:
        unpack(
            lambda w: {
                "cfg": config_path(KB, "simulate"),
                "data": KB_DATA.format(kernel=w.kernel, grid=KB_CFG["grid"]),
                **KB_TUNE(w.algo, w.adversary),
            }
        ),
    output:
        out(KB, "runs", "scaling", "{kernel}", "{adversary}", "{algo}.csv"),
    log:
        log_path(KB, "simulate_{kernel}_{adversary}_{algo}"),
    benchmark:
        bench_path(KB, "simulate_{kernel}_{adversary}_{algo}")
    params:
        grid=KB_CFG["grid"],
        study="scaling",
    wildcard_constraints:
        kernel="matern12|matern32|matern52|se",
        adversary="drift|switch|adaptive|bump",
        algo=r"[a-z0-9_]+",
    threads: THREADS
    resources:
        **train_resources(),
    conda:
        ENV
    shell:
        stage(
            KB,
            "simulate",
            "--variant algo={wildcards.algo},adversary={wildcards.adversary},kernel={wildcards.kernel},"
            "grid={params.grid},study={params.study} --input {input} --out {output}",
        )


rule kernel_bandits_simulate_fixed:
    """Experiments 3-4: one learner at the fixed horizon on n{grid} arms; all seeds vmapped."""
    input:
        unpack(
            lambda w: {
                "cfg": config_path(KB, "simulate"),
                "data": KB_DATA.format(kernel=KB_CFG["kernel"], grid=w.grid),
                **KB_TUNE(w.algo, KB_CFG["fixed_adversary"]),
            }
        ),
    output:
        out(KB, "runs", "fixed", "n{grid}", "{algo}.csv"),
    log:
        log_path(KB, "simulate_fixed_n{grid}_{algo}"),
    benchmark:
        bench_path(KB, "simulate_fixed_n{grid}_{algo}")
    params:
        kernel=KB_CFG["kernel"],
        adversary=KB_CFG["fixed_adversary"],
        study="fixed",
    wildcard_constraints:
        algo=r"[a-z0-9_]+",
        grid=r"\d+",
    threads: THREADS
    resources:
        **train_resources(),
    conda:
        ENV
    shell:
        stage(
            KB,
            "simulate",
            "--variant algo={wildcards.algo},adversary={params.adversary},kernel={params.kernel},"
            "grid={wildcards.grid},study={params.study} --input {input} --out {output}",
        )


rule kernel_bandits_timing:
    """Seconds per round of exact vs every Nystrom learner, back to back in one process."""
    input:
        cfg=config_path(KB, "timing"),
        data=KB_DATA.format(kernel=KB_CFG["kernel"], grid=KB_CFG["nystrom"]["grid"]),
    output:
        out(KB, "timing.csv"),
    log:
        log_path(KB, "timing"),
    benchmark:
        bench_path(KB, "timing")
    threads: THREADS
    resources:
        **train_resources(),
    conda:
        ENV
    shell:
        stage(KB, "timing", "--input {input.data} --out {output}")


rule kernel_bandits_evaluate_scaling:
    """Per-seed regret R_T, gamma_T and R_T / sqrt(T gamma_T) of experiments 1-2."""
    input:
        cfg=config_path(KB, "evaluate_scaling"),
        runs=[out(KB, "runs", "scaling", k, a, f"{algo}.csv") for k, a, algo in KB_SCALING_RUNS],
        gamma=[KB_GAMMA.format(kernel=k, grid=KB_CFG["grid"]) for k in KB_CFG["kernels"]],
    output:
        out(KB, "scaling.csv"),
    log:
        log_path(KB, "evaluate_scaling"),
    benchmark:
        bench_path(KB, "evaluate_scaling")
    threads: 1
    conda:
        ENV
    shell:
        stage(KB, "evaluate_scaling", "--input {input.runs} {input.gamma} --out {output}")


rule kernel_bandits_evaluate_fixed:
    """Per-seed regret at the fixed horizon of experiments 3-4."""
    input:
        cfg=config_path(KB, "evaluate_fixed"),
        runs=[out(KB, "runs", "fixed", f"n{g}", f"{algo}.csv") for g, algo in KB_FIXED_RUNS],
    output:
        out(KB, "fixed.csv"),
    log:
        log_path(KB, "evaluate_fixed"),
    benchmark:
        bench_path(KB, "evaluate_fixed")
    threads: 1
    conda:
        ENV
    shell:
        stage(KB, "evaluate_fixed", "--input {input.runs} --out {output}")
