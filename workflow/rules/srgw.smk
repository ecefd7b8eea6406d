# srgw (issue 4): graphon and SBM estimation by semi-relaxed Gromov-Wasserstein.
# data -> fit (n: every family and seed per job) + pot (seed) + scaling (n x solver) + real -> evaluate;
# figures, claims and the `srgw` target come from workflow/rules/protocol.smk.
SRGW = "srgw"
SRGW_CFG = method_config(SRGW)
SRGW_FITS = [
    out(SRGW, "runs", f"n{n}.csv")
    for n in sorted({*(SRGW_CFG["sbm_ns"] if SRGW_CFG["sbms"] else []),
                     *(SRGW_CFG["graphon_ns"] if SRGW_CFG["graphons"] else [])})
]
SRGW_POT_SEEDS = SRGW_CFG.get("pot_seeds", [0]) if SRGW_CFG.get("pot_ns") else []
SRGW_SCALING = [
    out(SRGW, "scaling", f"{solver}_n{n}.csv")
    for solver, key in (("ours", "scaling_ns"), ("pot", "scaling_pot_ns"))
    for n in SRGW_CFG.get(key, [])
] + ([out(SRGW, "scaling", "cpu.csv")] if SRGW_CFG.get("scaling_ns") else [])


rule srgw_data:
    """Manifest of the synthetic families and the networkx adjacency matrices."""
    input:
        cfg=config_path(SRGW, "data"),
    output:
        manifest=out(SRGW, "data", "manifest.json"),
        real=out(SRGW, "data", "real_networks.npz"),
    params:
        dest=lambda w, output: str(Path(output.manifest).parent),
    log:
        log_path(SRGW, "data"),
    benchmark:
        bench_path(SRGW, "data")
    threads: 1
    conda:
        ENV
    shell:
        stage(SRGW, "data", "--out {params.dest}")


rule srgw_fit:
    """srGW and the baselines on the graphs of one size n: every family with n on its grid, every
    seed (each function compiled once per n and K)."""
    input:
        cfg=config_path(SRGW, "fit"),
        manifest=out(SRGW, "data", "manifest.json"),
    output:
        out(SRGW, "runs", "n{n}.csv"),
    log:
        log_path(SRGW, "fit_n{n}"),
    benchmark:
        bench_path(SRGW, "fit_n{n}")
    wildcard_constraints:
        n=r"\d+",
    threads: THREADS
    resources:
        **train_resources(mem_mb_small=3000),
    conda:
        ENV
    shell:
        stage(SRGW, "fit", "--variant n={wildcards.n} --out {output}")


rule srgw_pot:
    """Ours vs POT's srGW solver (same estimator, same initial couplings), one seed."""
    input:
        cfg=config_path(SRGW, "pot"),
        manifest=out(SRGW, "data", "manifest.json"),
    output:
        out(SRGW, "pot", "seed{seed}.csv"),
    log:
        log_path(SRGW, "pot_seed{seed}"),
    benchmark:
        bench_path(SRGW, "pot_seed{seed}")
    wildcard_constraints:
        seed=r"\d+",
    threads: THREADS
    resources:
        **train_resources(mem_mb_small=3000),
    conda:
        ENV
    shell:
        stage(SRGW, "pot", "--seed {wildcards.seed} --out {output}")


rule srgw_scaling:
    """Sparse scaling study at one n: srGW on a BCOO SBM (ours) or POT on its dense matrix."""
    input:
        cfg=config_path(SRGW, "scaling"),
    output:
        out(SRGW, "scaling", "{solver}_n{n}.csv"),
    log:
        log_path(SRGW, "scaling_{solver}_n{n}"),
    benchmark:
        bench_path(SRGW, "scaling_{solver}_n{n}")
    wildcard_constraints:
        solver="ours|pot",
        n=r"\d+",
    threads: THREADS
    resources:
        **train_resources(mem_mb_small=4000),
    conda:
        ENV
    shell:
        stage(SRGW, "scaling", "--variant n={wildcards.n},solver={wildcards.solver} --out {output}")


rule srgw_scaling_cpu:
    """CPU seconds per srGW iteration at every n of the sparse scaling grid, in one job."""
    input:
        cfg=config_path(SRGW, "scaling_cpu"),
    output:
        out(SRGW, "scaling", "cpu.csv"),
    log:
        log_path(SRGW, "scaling_cpu"),
    benchmark:
        bench_path(SRGW, "scaling_cpu")
    threads: THREADS
    resources:
        **train_resources(mem_mb_small=4000),
    conda:
        ENV
    shell:
        stage(SRGW, "scaling_cpu", "--out {output}")


rule srgw_real:
    """srGW block models of karate, les miserables, florentine families and Davis."""
    input:
        cfg=config_path(SRGW, "real"),
        real=out(SRGW, "data", "real_networks.npz"),
    output:
        csv=out(SRGW, "real", "real.csv"),
        npz=out(SRGW, "real", "real.npz"),
    log:
        log_path(SRGW, "real"),
    benchmark:
        bench_path(SRGW, "real")
    threads: THREADS
    conda:
        ENV
    shell:
        stage(SRGW, "real", "--out {output.csv}")


rule srgw_evaluate:
    """Gather the per-job tables into fits.csv, pot.csv and scaling.csv."""
    input:
        cfg=config_path(SRGW, "evaluate"),
        fits=SRGW_FITS,
        pots=expand(out(SRGW, "pot", "seed{seed}.csv"), seed=SRGW_POT_SEEDS),
        scaling=SRGW_SCALING,
    output:
        fits=out(SRGW, "tables", "fits.csv"),
        pot=out(SRGW, "tables", "pot.csv"),
        scaling=out(SRGW, "tables", "scaling.csv"),
        k=out(SRGW, "tables", "k_chosen.csv"),
    params:
        dest=lambda w, output: str(Path(output.fits).parent),
    log:
        log_path(SRGW, "evaluate"),
    benchmark:
        bench_path(SRGW, "evaluate")
    threads: 1
    conda:
        ENV
    shell:
        stage(SRGW, "evaluate",
              "--out {params.dest} --input {input.fits} {input.pots} {input.scaling}")

