# Rules every method gets from what it declares (repro26.core.method): its figures
# (figures.FIGURES), its claims (claims.CLAIMS) and the target named after it. Included after the
# methods' own rule files, which hold only data, training and evaluation jobs.


rule figure:
    """One declared figure of one method, drawn from the tables it declares; its docstring is
    the caption (also in Snakemake's report)."""
    input:
        cfg=f"{RESULTS}/{{method}}/config.json",
        tables=lambda w: declared_figure(w.method, w.figure)[0],
    output:
        png=report(
            f"{RESULTS}/{{method}}/figures/{{figure}}.png",
            caption="../report/figure.rst",
            category="{method}",
        ),
        pdf=f"{RESULTS}/{{method}}/figures/{{figure}}.pdf",
        caption=f"{RESULTS}/{{method}}/figures/{{figure}}.rst",
    params:
        caption=lambda w: declared_figure(w.method, w.figure)[1],
        config=lambda w: out(w.method, "config.json"),
    log:
        f"{RESULTS}/{{method}}/logs/figure_{{figure}}.log",
    benchmark:
        f"{RESULTS}/{{method}}/benchmarks/figure_{{figure}}.tsv"
    wildcard_constraints:
        method="|".join(BUILT_METHODS) or "NO_METHOD_BUILT",
        figure="|".join(sorted({f for m in BUILT_METHODS for f in declared_figures(m)}))
        or "NO_FIGURE",
    threads: 1
    conda:
        ENV
    shell:
        f"{REPRO26} {{wildcards.method}} figure {{wildcards.figure}} --config {{params.config}}"
        f" --scale {SCALE} --threads {{threads}} --input {{input.tables}} --out {{output.png}}"
        " > {log} 2>&1"


rule claims:
    """The method's headline claims, evaluated on the tables it declares -> claims.json."""
    input:
        cfg=f"{RESULTS}/{{method}}/config.json",
        tables=lambda w: declared_claims_inputs(w.method),
    output:
        f"{RESULTS}/{{method}}/claims.json",
    log:
        f"{RESULTS}/{{method}}/logs/claims.log",
    benchmark:
        f"{RESULTS}/{{method}}/benchmarks/claims.tsv"
    wildcard_constraints:
        method="|".join(BUILT_METHODS) or "NO_METHOD_BUILT",
    threads: 1
    conda:
        ENV
    shell:
        f"{REPRO26} {{wildcards.method}} claims --config {{input.cfg}} --scale {SCALE}"
        " --threads {threads} --input {input.tables} --out {output} > {log} 2>&1"


# `snakemake <method>`: everything of one method (its figures and claims).
for _method in BUILT_METHODS:
    METHOD_FIGURES[_method] = [
        out(_method, "figures", f"{name}.png") for name in declared_figures(_method)
    ]

    rule:
        name:
            _method
        input:
            METHOD_FIGURES[_method],
            claims_path(_method),
