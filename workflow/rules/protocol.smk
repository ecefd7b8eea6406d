# Rules every method gets from what it declares (repro26.core.method): one rule per figure in
# figures.FIGURES, the claims rule from claims.CLAIMS, and the named target `<method>`. Included
# after the methods' own rule files, which hold only data, training and evaluation jobs.
# Each rule is made inside its own function call: Snakemake evaluates `shell:` late, so a rule
# written in a loop body would see the loop's last value.
from repro26.core.cli import method_claims, method_figures


def _figure_rule(method, name, tables):
    png = out(method, "figures", f"{name}.png")

    rule:
        name:
            f"{method}_figure_{name}"
        input:
            cfg=out(method, "config.json"),
            tables=tables,
        output:
            png=report(png, caption=f"../../{out(method, 'figures', name + '.rst')}", category=method),
            pdf=out(method, "figures", f"{name}.pdf"),
            rst=out(method, "figures", f"{name}.rst"),
        log:
            log_path(method, f"figure_{name}"),
        benchmark:
            bench_path(method, f"figure_{name}")
        threads: 1
        conda:
            ENV
        shell:
            stage(method, f"figure {name}", "--input {input.tables} --out {output.png}")

    return png


def _claims_rule(method, tables):
    rule:
        name:
            f"{method}_claims"
        input:
            cfg=out(method, "config.json"),
            tables=tables,
        output:
            claims_path(method),
        log:
            log_path(method, "claims"),
        benchmark:
            bench_path(method, "claims")
        threads: 1
        conda:
            ENV
        shell:
            stage(method, "claims", "--input {input.tables} --out {output}")


def _target_rule(method, pngs):
    rule:
        name:
            method
        input:
            pngs,
            claims_path(method),


def _protocol_rules(method):
    cfg = typed_config(method)
    pngs = [
        _figure_rule(method, name, [out(method, p) for p in fig.input_paths(cfg)])
        for name, fig in method_figures(method).items()
    ]
    _claims_rule(method, [out(method, p) for p in method_claims(method).input_paths(cfg)])
    _target_rule(method, pngs)
    METHOD_FIGURES[method] = pngs


for _method in PROTOCOL_METHODS:
    _protocol_rules(_method)
