# Shared helpers for every method's rules (scale, paths, config checks, the stage command).
import dataclasses
import json
import sys

import yaml
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

import difflib
import shlex

from snakemake.settings.types import DeploymentMethod

from repro26.core import cluster
from repro26.core.config import (
    ConfigError,
    NotATrigger,
    UsageError,
    as_dict,
    config_hash,
    config_slice,
    parse_method_config,
    resolve_section,
)
from repro26.core.cli import method_claims, method_figures
from repro26.core.plotting import rst_text
from repro26.core.registry import METHODS, load_method


def _fail(message):
    """Bad config: one line naming the field, exit code 2, nothing run."""
    print(f"repro26: config error: {message}", file=sys.stderr)
    sys.exit(2)


_TOP_SCHEMA = yaml.safe_load(Path(workflow.basedir, "config/schema.yaml").read_text())


def _validate_globals():
    """snakemake's validate() of the global keys; on failure jsonschema's most relevant error in
    one line. Method sections are validated by their ``Config`` dataclasses (method_config)."""
    try:
        validate(config, "../../config/schema.yaml")
    except WorkflowError:
        error = best_match(Draft202012Validator(_TOP_SCHEMA).iter_errors(config))
        field = ".".join(["config", *(str(p) for p in error.absolute_path)]) if error else "config"
        _fail(f"{field}: {error.message if error else 'does not match its schema'}")


def _check_sections():
    """Every top-level key is a global setting or a known method (suggest the close match)."""
    known = set(_TOP_SCHEMA["properties"])
    for key in config:
        if key in known or key in METHODS:
            continue
        close = difflib.get_close_matches(key, [*METHODS, *known], n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        _fail(f"{key}: unknown section (not a method or a global setting){hint}")


_check_sections()
_validate_globals()

ENV = "../../environment.yml"
SLURM = cluster.settings(config.get("slurm", {}))
SCALE = config["scale"]
THREADS = config["threads"]
RESULTS = f"results/{SCALE}"
REPORT_MD = f"{RESULTS}/report.md"
REPORT_HTML = f"{RESULTS}/report.html"

# A method joins the DAG once its package has a CLI and its rule file exists.
BUILT_METHODS = [
    m
    for m in METHODS
    if Path(workflow.basedir, "src/repro26", m, "cli.py").is_file()
    and Path(workflow.basedir, "workflow/rules", f"{m}.smk").is_file()
]
# Every method's figure PNGs, registered by protocol.smk so the report waits for them.
METHOD_FIGURES = {}


def declared_figures(method):
    """Names of the method's figures, in the paper's order (figures.FIGURES)."""
    return list(method_figures(method))


def declared_figure(method, name):
    """``(input paths, caption as reStructuredText)`` of one declared figure."""
    fig = method_figures(method)[name]
    return [out(method, p) for p in fig.input_paths(typed_config(method))], rst_text(fig.caption)


def declared_claims_inputs(method):
    return [out(method, p) for p in method_claims(method).input_paths(typed_config(method))]


def method_config(method):
    """The method's settings at this scale (common merged with the scale's overrides), parsed
    through its ``Config`` dataclass (the one source of truth; an unknown key, a wrong type or
    a missing value is one line and exit 2) and returned as a plain dict with defaults filled."""
    return as_dict(typed_config(method))


def typed_config(method):
    if method not in config:
        _fail(f"{method}: no section; add config/methods/{method}.yaml")
    try:
        values = resolve_section(config[method], SCALE, method)
        return parse_method_config(load_method(method), values, f"{method}.{SCALE}")
    except (ConfigError, UsageError) as err:
        _fail(str(err))



def stage_slice(method, name):
    """Hash of the config fields stage ``name`` of ``method`` reads at this scale (every field
    when the stage declares no ``reads``)."""
    return config_hash(config_slice(typed_config(method), load_method(method).STAGES[name].reads))


def config_fields(method):
    """The names of the method's config fields. A stage's config file holds all of them, so a
    field added to the method's ``Config`` rewrites every stage's file (an older file lacks it
    and would not parse) and reruns the method's jobs once."""
    return ",".join(f.name for f in dataclasses.fields(load_method(method).Config))


def config_path(method, name):
    """The config file of the jobs of stage ``name`` of ``method`` (rule stage_config). It is
    rewritten only when a field the stage reads changes, so only then do the jobs rerun."""
    return out(method, "config", f"{name}.json")


def stage_config_text(method, name):
    """The method's resolved config at this scale, for stage ``name``, as JSON; the slice hash of
    the fields the stage reads goes with it (checked by the stage)."""
    return NotATrigger(json.dumps({"scale": SCALE, method: {SCALE: method_config(method)},
                                   "stage": name, "config_slice": stage_slice(method, name)},
                                  sort_keys=True))


def out(method, *parts):
    """Path of a result of ``method`` at this scale: results/<scale>/<method>/<parts...>."""
    return "/".join([RESULTS, method, *parts])


def seed_outputs(method, stage_dir, group, seeds, *suffixes):
    """One file per seed, for each suffix, of a job that loops over ``seeds`` in one process:
    results/<scale>/<method>/<stage_dir>/<group>/seed<s><suffix>."""
    return [out(method, stage_dir, group, f"seed{s}{x}") for x in suffixes for s in seeds]


def log_path(method, name):
    return out(method, "logs", f"{name}.log")


def bench_path(method, name):
    """Wall time and peak memory of one job (Snakemake's ``benchmark:`` TSV); the report sums
    them per method, and the SLURM resources of the next scale are sized from them."""
    return out(method, "benchmarks", f"{name}.tsv")


def claims_path(method):
    return out(method, "claims.json")


def _repro26_command():
    """The ``repro26`` of the interpreter running Snakemake, so that jobs do not depend on the
    caller's PATH (cluster jobs inherit the submitting shell's, where the venv may not be
    active); with ``--use-conda``, the one inside the job's environment."""
    if DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method:
        return "repro26"
    script = Path(sys.executable).with_name("repro26")
    return shlex.quote(str(script)) if script.is_file() else "repro26"


REPRO26 = _repro26_command()


def stage(method, name, extra=""):
    """Shell command running one stage, its output to the rule's log; reads the config rule
    stage_config wrote for it, and checks it against the slice hash planned here."""
    return (
        f"{REPRO26} {method} {name} --config {config_path(method, name)} --scale {SCALE}"
        f" --config-slice {stage_slice(method, name)} --threads {{threads}} {extra} > {{log}} 2>&1"
    )


def apply_measured_resources():
    """At `paper` scale, size each rule's SLURM request from its `small` benchmarks
    (repro26.core.cluster.size_from_small; factors from ``slurm:`` in config/config.yaml)."""
    if SCALE == "paper":
        cluster.size_from_small(workflow.rules, Path(workflow.basedir), RESULTS, SLURM)


def apply_slurm_settings():
    """Partitions and account of every rule (ignored by local runs)."""
    cluster.assign_partitions(workflow.rules, SLURM)


def train_resources(**sizes):
    """Resources of a training job: a GPU and more memory at `paper` scale (SLURM reads them)."""
    return cluster.train_resources(SCALE, SLURM, **sizes)


def check_named_targets():
    """A misspelt target (not a known name, not a path) gets one line and exit 2 where Snakemake
    would fail with MissingRuleException. Snakemake parses the Snakefile before it exposes its targets,
    so they are read with its own argument parser; paths are left to Snakemake."""
    program = Path(sys.argv[0])
    if program.name != "snakemake" and "snakemake" not in program.parts:
        return
    from snakemake.cli import get_argument_parser

    try:
        args, _ = get_argument_parser().parse_known_args(sys.argv[1:])
    except SystemExit:
        return
    rules = {r.name for r in workflow.rules}
    for target in sorted(args.targets or ()):
        if Path(target).name != target or Path(target).suffix or target in rules:
            continue
        if target in METHODS:
            reason = f"method '{target}' is not built yet"
        else:
            reason = f"unknown target '{target}'"
        print(f"repro26: {reason}; targets are all, report, a built method "
              f"({', '.join(sorted(BUILT_METHODS))}), one of its rules, or a file under {RESULTS}/",
              file=sys.stderr)
        sys.exit(2)
