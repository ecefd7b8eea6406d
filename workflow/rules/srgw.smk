# srgw (issue 4): graphon and SBM estimation by semi-relaxed Gromov-Wasserstein.
# data -> fit (family x n, all seeds per job) + pot (seed) + real -> evaluate -> figures -> claims
SRGW = "srgw"
SRGW_CFG = method_config(SRGW)
SRGW_FAMILIES = list(SRGW_CFG["sbms"]) + list(SRGW_CFG["graphons"])
SRGW_FITS = [
    out(SRGW, "runs", fam, f"n{n}.csv")
    for fam in SRGW_FAMILIES
    for n in SRGW_CFG["sbm_ns" if fam in SRGW_CFG["sbms"] else "graphon_ns"]
]
SRGW_POT_SEEDS = SRGW_CFG.get("pot_seeds", [0]) if SRGW_CFG.get("pot_ns") else []
SRGW_FIGURES = [
    out(SRGW, "figures", f"{name}.png")
    for name in ("error_vs_n", "gap_vs_n", "time_vs_n", "real_networks")
]
METHOD_FIGURES[SRGW] = SRGW_FIGURES


rule srgw_data:
    """Manifest of the synthetic families and the networkx adjacency matrices."""
    input:
        cfg=out(SRGW, "config.json"),
    output:
        manifest=out(SRGW, "data", "manifest.json"),
        real=out(SRGW, "data", "real_networks.npz"),
    params:
        dest=lambda w, output: str(Path(output.manifest).parent),
    log:
        log_path(SRGW, "data"),
    threads: 1
    conda:
        ENV
    shell:
        stage(SRGW, "data", "--out {params.dest}") + " > {log} 2>&1"


rule srgw_fit:
    """srGW and the baselines on one family's graphs of one size n, every seed (compiled once)."""
    input:
        cfg=out(SRGW, "config.json"),
        manifest=out(SRGW, "data", "manifest.json"),
    output:
        out(SRGW, "runs", "{family}", "n{n}.csv"),
    log:
        log_path(SRGW, "fit_{family}_n{n}"),
    wildcard_constraints:
        family="|".join(SRGW_FAMILIES),
        n=r"\d+",
    threads: THREADS
    resources:
        **train_resources(mem_mb_small=3000),
    conda:
        ENV
    shell:
        stage(SRGW, "fit", "--variant {wildcards.family}:{wildcards.n} --out {output}")
        + " > {log} 2>&1"


rule srgw_pot:
    """Ours vs POT's srGW solver (same estimator, same initial couplings), one seed."""
    input:
        cfg=out(SRGW, "config.json"),
        manifest=out(SRGW, "data", "manifest.json"),
    output:
        out(SRGW, "pot", "seed{seed}.csv"),
    log:
        log_path(SRGW, "pot_seed{seed}"),
    wildcard_constraints:
        seed=r"\d+",
    threads: THREADS
    resources:
        **train_resources(mem_mb_small=3000),
    conda:
        ENV
    shell:
        stage(SRGW, "pot", "--seed {wildcards.seed} --out {output}") + " > {log} 2>&1"


rule srgw_real:
    """srGW block models of karate, les miserables, florentine families and Davis."""
    input:
        cfg=out(SRGW, "config.json"),
        real=out(SRGW, "data", "real_networks.npz"),
    output:
        csv=out(SRGW, "real", "real.csv"),
        npz=out(SRGW, "real", "real.npz"),
    log:
        log_path(SRGW, "real"),
    threads: THREADS
    conda:
        ENV
    shell:
        stage(SRGW, "real", "--out {output.csv}") + " > {log} 2>&1"


rule srgw_evaluate:
    """Gather the per-job tables into fits.csv and pot.csv."""
    input:
        cfg=out(SRGW, "config.json"),
        fits=SRGW_FITS,
        pots=expand(out(SRGW, "pot", "seed{seed}.csv"), seed=SRGW_POT_SEEDS),
    output:
        fits=out(SRGW, "tables", "fits.csv"),
        pot=out(SRGW, "tables", "pot.csv"),
        k=out(SRGW, "tables", "k_chosen.csv"),
    params:
        dest=lambda w, output: str(Path(output.fits).parent),
    log:
        log_path(SRGW, "evaluate"),
    threads: 1
    conda:
        ENV
    shell:
        stage(SRGW, "evaluate", "--out {params.dest} --input {input.fits} {input.pots}")
        + " > {log} 2>&1"


rule srgw_figure_error_vs_n:
    input:
        cfg=out(SRGW, "config.json"),
        fits=out(SRGW, "tables", "fits.csv"),
    output:
        png=report(out(SRGW, "figures", "error_vs_n.png"), caption="../report/srgw/error_vs_n.rst", category=SRGW),
        pdf=out(SRGW, "figures", "error_vs_n.pdf"),
    log:
        log_path(SRGW, "figure_error_vs_n"),
    threads: 1
    conda:
        ENV
    shell:
        stage(SRGW, "figure_error_vs_n", "--input {input.fits} --out {output.png}") + " > {log} 2>&1"


rule srgw_figure_gap_vs_n:
    input:
        cfg=out(SRGW, "config.json"),
        fits=out(SRGW, "tables", "fits.csv"),
    output:
        png=report(out(SRGW, "figures", "gap_vs_n.png"), caption="../report/srgw/gap_vs_n.rst", category=SRGW),
        pdf=out(SRGW, "figures", "gap_vs_n.pdf"),
    log:
        log_path(SRGW, "figure_gap_vs_n"),
    threads: 1
    conda:
        ENV
    shell:
        stage(SRGW, "figure_gap_vs_n", "--input {input.fits} --out {output.png}") + " > {log} 2>&1"


rule srgw_figure_time_vs_n:
    input:
        cfg=out(SRGW, "config.json"),
        fits=out(SRGW, "tables", "fits.csv"),
        pot=out(SRGW, "tables", "pot.csv"),
    output:
        png=report(out(SRGW, "figures", "time_vs_n.png"), caption="../report/srgw/time_vs_n.rst", category=SRGW),
        pdf=out(SRGW, "figures", "time_vs_n.pdf"),
    log:
        log_path(SRGW, "figure_time_vs_n"),
    threads: 1
    conda:
        ENV
    shell:
        stage(SRGW, "figure_time_vs_n", "--input {input.fits} {input.pot} --out {output.png}")
        + " > {log} 2>&1"


rule srgw_figure_real_networks:
    input:
        cfg=out(SRGW, "config.json"),
        csv=out(SRGW, "real", "real.csv"),
        npz=out(SRGW, "real", "real.npz"),
    output:
        png=report(out(SRGW, "figures", "real_networks.png"), caption="../report/srgw/real_networks.rst", category=SRGW),
        pdf=out(SRGW, "figures", "real_networks.pdf"),
    log:
        log_path(SRGW, "figure_real_networks"),
    threads: 1
    conda:
        ENV
    shell:
        stage(SRGW, "figure_real_networks", "--input {input.csv} {input.npz} --out {output.png}")
        + " > {log} 2>&1"


rule srgw_claims:
    input:
        cfg=out(SRGW, "config.json"),
        fits=out(SRGW, "tables", "fits.csv"),
        pot=out(SRGW, "tables", "pot.csv"),
    output:
        claims_path(SRGW),
    log:
        log_path(SRGW, "claims"),
    threads: 1
    conda:
        ENV
    shell:
        stage(SRGW, "claims", "--input {input.fits} {input.pot} --out {output}") + " > {log} 2>&1"


rule srgw:
    """Everything of srgw: figures and claims."""
    input:
        SRGW_FIGURES,
        claims_path(SRGW),
