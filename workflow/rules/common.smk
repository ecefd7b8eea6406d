# Shared helpers for every method's rules (scale, paths, config checks, the stage command).
import json
import sys

import yaml
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from repro26.core.config import ConfigError, resolve_section
from repro26.core.registry import METHODS


def _fail(message):
    """Bad config: one line naming the field, exit code 2, nothing run."""
    print(f"repro26: config error: {message}", file=sys.stderr)
    sys.exit(2)


def _validate(section, schema, where):
    """snakemake's validate(); on failure report jsonschema's most relevant error in one line."""
    try:
        validate(section, schema)
    except WorkflowError:
        path = Path(workflow.basedir, "config", Path(schema).relative_to("../../config"))
        error = best_match(Draft202012Validator(yaml.safe_load(path.read_text())).iter_errors(section))
        field = ".".join([where, *(str(p) for p in error.absolute_path)]) if error else where
        _fail(f"{field}: {error.message if error else 'does not match its schema'}")


_validate(config, "../../config/schema.yaml", "config")

ENV = "../../environment.yml"
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
# Each rule file registers its figure PNGs here so the report waits for them.
METHOD_FIGURES = {}


def method_config(method):
    """The method's settings at this scale (common merged with the scale's overrides)."""
    validate_method(method)
    try:
        return resolve_section(config[method], SCALE, method)
    except ConfigError as err:
        _fail(str(err))


def validate_method(method):
    """Validate the method's section against config/schemas/<method>.yaml (one line on error)."""
    if method not in config:
        _fail(f"{method}: no section; add config/methods/{method}.yaml")
    _validate(config[method], f"../../config/schemas/{method}.yaml", method)


def out(method, *parts):
    """Path of a result of ``method`` at this scale: results/<scale>/<method>/<parts...>."""
    return "/".join([RESULTS, method, *parts])


def log_path(method, name):
    return out(method, "logs", f"{name}.log")


def claims_path(method):
    return out(method, "claims.json")


def stage(method, name, extra=""):
    """Shell command running one stage; reads the resolved config the config rule wrote."""
    return (
        f"repro26 {method} {name} --config {out(method, 'config.json')} --scale {SCALE}"
        f" --threads {{threads}} {extra}"
    )


def train_resources(mem_mb_small=2000, mem_mb_paper=32000, runtime_paper=720):
    """Resources of a training job: a GPU and more memory at `paper` scale (SLURM reads them)."""
    if SCALE == "paper":
        return {"mem_mb": mem_mb_paper, "runtime": runtime_paper, "gpu": 1,
                "slurm_partition": config["gpu_partition"]}
    return {"mem_mb": mem_mb_small, "runtime": 60, "gpu": 0}



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
