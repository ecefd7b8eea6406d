# repro26: one DAG from data to every method's figures, claims and the report.
#   snakemake --cores all                         # every built method at `small`, then the report
#   snakemake --cores all kernel_bandits          # one method
#   snakemake --cores all --config scale=smoke    # another scale
#   snakemake --workflow-profile profiles/slurm --config scale=paper
import json
import sys
from pathlib import Path

from snakemake.utils import min_version

from repro26.core.config import UsageError, load_yaml
from repro26.core.scheduling import keep_one_wakeup_timer

min_version("9.0")
# Snakemake's scheduler piles up wake-up timers, one chain per finished job (core/scheduling.py).
keep_one_wakeup_timer()

# A malformed YAML file is one line naming the file and the line (Snakemake's own loader names
# only this Snakefile's line), exit code 2.
for _path in [Path(workflow.basedir, "config/config.yaml"),
              *sorted(Path(workflow.basedir, "config/methods").glob("*.yaml"))]:
    try:
        load_yaml(_path)
    except UsageError as _err:
        print(f"repro26: config error: {_err}", file=sys.stderr)
        sys.exit(2)


configfile: "config/config.yaml"


# Each method's section has its own file, so methods can be edited and reviewed apart.
for _method_config in sorted(Path(workflow.basedir, "config/methods").glob("*.yaml")):

    configfile: _method_config


include: "workflow/rules/common.smk"


for _method in BUILT_METHODS:

    include: f"workflow/rules/{_method}.smk"


include: "workflow/rules/protocol.smk"


rule all:
    default_target: True
    input:
        REPORT_MD,
        REPORT_HTML,


localrules:
    method_config,
    stage_config,


rule method_config:
    """The method's config at this scale, resolved and typed, where its stages read it. It
    reruns (and with it the method's whole DAG) only when this scale's values change."""
    output:
        f"{RESULTS}/{{method}}/config.json",
    params:
        resolved=lambda w: json.dumps(
            {"scale": SCALE, w.method: {SCALE: method_config(w.method)}}, sort_keys=True
        ),
    wildcard_constraints:
        method="|".join(BUILT_METHODS) or "NO_METHOD_BUILT",
    log:
        f"{RESULTS}/{{method}}/logs/config.log",
    benchmark:
        f"{RESULTS}/{{method}}/benchmarks/config.tsv",
    conda:
        "environment.yml"
    shell:
        "printf '%s\\n' {params.resolved:q} > {output} 2> {log}"


rule stage_config:
    """The config one stage's jobs read. Its tracked parameters are the hash of the fields the
    stage reads (``@stage(reads=...)``; all fields when it declares none) and the names of the
    method's fields, so it reruns, and with it the stage's jobs, exactly when one of those fields
    changes or a field is added or removed (the file's text goes in as a ``NotATrigger``
    parameter). Other fields' values in the file may be older; the stage cannot read them
    (repro26.core.config.DeclaredConfig)."""
    output:
        f"{RESULTS}/{{method}}/config/{{stage}}.json",
    params:
        config_slice=lambda w: stage_slice(w.method, w.stage),
        fields=lambda w: config_fields(w.method),
        text=lambda w: stage_config_text(w.method, w.stage),
    wildcard_constraints:
        method="|".join(BUILT_METHODS) or "NO_METHOD_BUILT",
        stage=r"[a-z0-9_]+",
    log:
        f"{RESULTS}/{{method}}/logs/config_{{stage}}.log",
    conda:
        "environment.yml"
    shell:
        # a shell command, not a `run:` block: Snakemake runs each `run:` job in a subprocess that
        # parses the whole workflow again (about 14 s here), and every stage has one of these
        "(printf '%s\\n' {params.text:q} > {output} && echo 'config slice {params.config_slice}') > {log} 2>&1"


rule report:
    input:
        claims=[claims_path(m) for m in BUILT_METHODS],
        figures=[fig for m in BUILT_METHODS for fig in METHOD_FIGURES.get(m, [])],
    output:
        md=REPORT_MD,
        html=REPORT_HTML,
    params:
        scale=SCALE,
    log:
        f"results/{SCALE}/logs/report.log",
    conda:
        "environment.yml"
    shell:
        "repro26 report --scale {params.scale} --input {input.claims} --out {output.md} > {log} 2>&1"




# Last, once every rule exists: SLURM account and partitions, paper-scale requests sized from
# the small run's benchmark files, and a misspelt target gets one line and exit 2.
apply_slurm_settings()
apply_measured_resources()
check_named_targets()
