"""The ``repro26`` command.

    repro26 list
    repro26 <method> --help                      # the method's stages and options
    repro26 <method> <stage> [--config PATH] [--scale S] [--out PATH] [--seed N]
                             [--variant KEY=VALUE,...] [--input PATH ...] [--threads N]
    repro26 <method> figure <name> --input TABLE ... --out FIG.png
    repro26 <method> claims --input TABLE ... --out claims.json
    repro26 report --scale S --input claims.json ... --out results/S/report.md

Bad input (unknown method or stage, bad config value, missing input file) prints one line
naming the field and what is allowed, and exits with code 2; nothing is written.
"""

from __future__ import annotations

import argparse
import inspect
import dataclasses
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from repro26.core.config import (
    ConfigError,
    SCALES,
    DeclaredConfig,
    UsageError,
    as_dict,
    check_method_config,
    check_scale,
    config_hash,
    config_slice,
    load_yaml,
    method_section,
    parse_method_config,
    resolve_section,
)
from repro26.core import io, jobs
from repro26.core.method import Stage, parse_variant
from repro26.core.registry import (
    METHODS, implemented_methods, is_implemented, load_method, method_claims, method_figures)
from repro26.core.run import Run  # noqa: F401  (methods name it as repro26.core.cli.Run)

DEFAULT_CONFIG = Path("config/config.yaml")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _set_threads(threads: int) -> None:
    """Cap XLA and BLAS to ``threads`` cores; must run before JAX is imported."""
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(threads)
    flags = os.environ.get("XLA_FLAGS", "")
    if "intra_op_parallelism_threads" not in flags:
        multi = "true" if threads > 1 else "false"
        flags += f" --xla_cpu_multi_thread_eigen={multi} intra_op_parallelism_threads={threads}"
    os.environ["XLA_FLAGS"] = flags.strip()


def enable_compile_cache() -> None:
    """Persist compiled XLA programs across stage processes (each job is a new process) and
    with the tests, which run the same stage functions at `smoke` sizes. Set through JAX's
    environment variables, read when JAX is imported, so that a stage that never uses JAX (a
    figure, the claims) does not import it; where JAX is already imported, in its config."""
    settings = {"jax_compilation_cache_dir":
                str(Path(os.environ.get("REPRO26_JAX_CACHE", ".cache/jax")).resolve()),
                "jax_persistent_cache_min_compile_time_secs": 0.5}
    if "jax" in sys.modules:
        for name, value in settings.items():
            sys.modules["jax"].config.update(name, value)
    else:
        for name, value in settings.items():
            os.environ[name.upper()] = str(value)


def resolve_run_config(method_module, method: str, config_path: Path, scale: str | None):
    """Read the config file, pick the scale, merge presets, parse into the method's ``Config``."""
    config = load_yaml(config_path)
    scale = check_scale(scale or config.get("scale", "small"))
    section = method_section(config, method, config_path.parent)
    values = resolve_section(section, scale, method)
    cfg = parse_method_config(method_module, values, f"{method}.{scale}")
    return scale, cfg, config_hash(as_dict(cfg))


def _stages(method: str, module) -> dict[str, Stage]:
    """The method's own stages plus the two every method has: ``figure`` and ``claims``."""
    stages = dict(module.STAGES)
    figures = method_figures(method)
    names = tuple(figures)
    stages["figure"] = Stage(_figure_stage, {"name": names} if names else {})
    stages["claims"] = Stage(_claims_stage)
    return stages


def _require_inputs(run: Run, paths: Sequence[str]) -> None:
    """Every declared input must be among ``--input`` (by its path's tail)."""
    for rel in paths:
        run.input(rel)


def check_origins(method: str, scale: str, variant: Mapping[str, Any],
                  matches: Sequence[str], inputs: Sequence[Path]) -> None:
    """Every input a stage wrote records its origin: one from another method or scale, or
    whose variant disagrees with this job's on a key the stage ``matches``, is one line
    naming the file, before anything is read or written."""
    # only values that name a method or a scale are an origin: a table's own "method: ..." note
    # (an estimator's name, say) is not one
    known = {"method": set(METHODS), "scale": set(SCALES)}
    for path in inputs:
        if path.suffix in (".h5", ".hdf5") and path.is_file():
            io.check_h5(path)
        origin = io.read_origin(path)
        for key, want in (("method", method), ("scale", scale)):
            if origin.get(key) in known[key] and origin[key] != want:
                raise UsageError(f"--input {path}: written for {key} {origin[key]!r}; this job "
                                 f"is {key} {want!r}")
        theirs = dict(part.partition("=")[::2] for part in
                      str(origin.get("variant", "")).split(",") if "=" in part)
        for key in matches:
            if key in theirs and key in variant and theirs[key] != str(variant[key]):
                raise UsageError(f"--input {path}: written for {key}={theirs[key]}; this job "
                                 f"is {key}={variant[key]}")


def _figure_stage(run: Run) -> None:
    """Draw one declared figure from its tables; write PNG, PDF and the caption (.rst)."""
    from repro26.core import plotting

    fig_decl = method_figures(run.method)[run.variant["name"]]
    _require_inputs(run, fig_decl.input_paths(run.cfg))
    if run.out.suffix != ".png":
        raise UsageError(f"--out: a figure is written as NAME.png (and .pdf), got {run.out}")
    plotting.save(fig_decl.draw(run), run.out, caption=fig_decl.caption)


def _claims_stage(run: Run) -> None:
    """Evaluate the method's headline claims on its tables; write claims.json."""
    from repro26.core.claims import write_claims

    claim_set = method_claims(run.method)
    _require_inputs(run, claim_set.input_paths(run.cfg))
    claims = claim_set.build(run)
    write_claims(run.out, run.method, run.scale, list(getattr(run.cfg, "seeds", ())), claims,
                 run.meta())


def _method_help(method: str, stages: dict[str, Stage]) -> str:
    lines = [f"usage: repro26 {method} STAGE [--variant KEY=VALUE,...] [--seed N] "
             "[--input PATH ...] [--out PATH] [--config PATH] [--scale S] [--threads N]", "",
             "stages:"]
    width = max(map(len, stages))
    for name, st in stages.items():
        keys = ",".join(f"{k}=" + ("|".join(map(str, v)) if isinstance(v, tuple) else
                                   getattr(v, "__name__", "VALUE").upper())
                        for k, v in st.variant.items())
        extra = (f"  --variant {keys}" if keys else "") + ("  --seed N" if st.seed else "")
        lines.append(f"  {name:<{width}}  {st.summary}{extra}")
    lines += ["", "options:",
              "  --config PATH   config file: config/config.yaml or a method's config.json",
              "  --scale S       smoke | small | paper (default: the config's scale)",
              "  --variant KV    key=value pairs the stage declares (above)",
              "  --seed N        seed of a per-seed stage",
              "  --input PATH    the files the stage reads (several allowed)",
              "  --out PATH      where the stage writes (default results/<scale>/<method>)",
              "  --threads N     cap XLA and BLAS to N cores",
              "  --config-slice H  fail unless the fields the stage reads hash to H (Snakemake",
              "                  passes it; a changed H is what reruns the stage's jobs)",
              "  --no-progress   no progress bars"]
    return "\n".join(lines)


def _stage_help(method: str, stage_name: str) -> str:
    """``repro26 <method> <stage> --help``: what the stage does and what it takes."""
    stages = _stages(method, load_method(method))
    if stage_name not in stages:
        raise UsageError(f"stage '{stage_name}' is unknown for {method}; "
                         f"allowed: {', '.join(stages)}")
    st = stages[stage_name]
    doc = inspect.getdoc(st.fn) or st.summary or ""
    figure = stage_name == "figure"
    lines = [f"repro26 {method} {stage_name}" + (" NAME" if figure else "")
             + " [--config PATH] [--scale S] [--out PATH]" + (" --seed N" if st.seed else "")
             + (" --variant " + ",".join(f"{k}=..." for k in st.variant)
                if st.variant and not figure else "")
             + " [--input PATH ...] [--threads N]", "", doc]
    if figure:
        lines.append("  NAME   " + ", ".join(method_figures(method)))
    for key, tp in ({} if figure else st.variant).items():
        allowed = getattr(tp, "__args__", None) or (tp if isinstance(tp, tuple) else None)
        kind = ", ".join(map(str, allowed)) if allowed else getattr(tp, "__name__", str(tp))
        lines.append(f"  --variant {key}=...   {kind}")
    if st.seed:
        lines.append("  --seed N   the seed this job runs (one job per seed)")
    return "\n".join(lines).rstrip()


def _method_main(method: str, argv: Sequence[str]) -> None:
    if not argv or argv[0] in ("-h", "--help"):
        print(_method_help(method, _stages(method, load_method(method))))
        return
    if any(a in ("-h", "--help") for a in argv[1:]):
        print(_stage_help(method, argv[0]))
        return
    parser = _Parser(prog=f"repro26 {method}", add_help=False)
    parser.add_argument("stage")
    parser.add_argument("name", nargs="?", default=None)
    parser.add_argument("--config", type=Path, default=DEFAULT_CONFIG)
    parser.add_argument("--scale", default=None)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--variant", default=None)
    parser.add_argument("--input", type=Path, nargs="*", default=[])
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--no-progress", action="store_true")
    parser.add_argument("--config-slice", default=None)
    args = parser.parse_args(argv)
    if args.threads is not None:
        if args.threads < 1:
            raise UsageError("--threads: must be a positive integer")
        _set_threads(args.threads)

    run_stage(method, args.stage, name=args.name, config=args.config, scale=args.scale,
              out=args.out, seed=args.seed, variant=args.variant, inputs=args.input,
              progress=not args.no_progress, planned_slice=args.config_slice)
    from repro26.core.jobs import job_cpu_line

    print(job_cpu_line(), file=sys.stderr)


def run_stage(method: str, stage_name: str, *, name: str | None = None,
              config: Path = DEFAULT_CONFIG, scale: str | None = None, out: Path | None = None,
              seed: int | None = None, variant: str | None = None, inputs: Sequence[Path] = (),
              progress: bool = True, cfg: Any = None, planned_slice: str | None = None) -> None:
    """Run one stage as ``repro26 <method> <stage_name> [name] ...`` does (tests call this);
    bad input raises :class:`UsageError` / :class:`ConfigError`. ``cfg``, when given, is the
    method's typed ``Config`` to use instead of reading ``config`` (``scale`` then required).
    ``planned_slice``, when given, must equal the hash of the fields the stage reads."""
    module = load_method(method)
    stages = _stages(method, module)
    if stage_name not in stages:
        raise UsageError(f"stage '{stage_name}' is unknown for {method}; "
                         f"allowed: {', '.join(stages)}")
    st = stages[stage_name]
    if stage_name == "figure":
        if name is None:
            raise UsageError(f"figure: name one of {', '.join(method_figures(method)) or 'none'}")
        variant = f"name={name}"
    elif name is not None:
        raise UsageError(f"stage '{stage_name}' takes no positional argument, got {name!r}")
    variant = parse_variant(variant, st.variant, stage_name)
    if st.seed and seed is None:
        raise UsageError(f"--seed: stage '{stage_name}' needs a seed")
    if not st.seed and seed is not None:
        raise UsageError(f"--seed: stage '{stage_name}' runs every configured seed itself and "
                         "takes no --seed (choose seeds with the config's seeds field)")
    if seed is not None and seed < 0:
        raise UsageError(f"--seed: must be a non-negative integer, got {seed}")
    if cfg is None:
        scale, cfg, cfg_hash = resolve_run_config(module, method, Path(config), scale)
    else:
        scale, cfg_hash = check_scale(scale), config_hash(as_dict(cfg))
        check_method_config(module, cfg)
    if st.reads is not None:
        cfg_hash = config_hash(config_slice(cfg, st.reads))
        cfg = DeclaredConfig(cfg, st.reads, f"{method} stage '{stage_name}'")
    if planned_slice is not None and planned_slice != cfg_hash:
        raise UsageError(f"--config-slice: {planned_slice} was planned, but {config} gives "
                         f"{cfg_hash} for stage '{stage_name}'; rerun snakemake")
    inputs = tuple(Path(p) for p in inputs)
    missing = [str(p) for p in inputs if not p.exists()]
    if missing:
        raise UsageError(f"--input: {missing[0]} does not exist (run the stage that writes it)")
    check_origins(method, scale, variant, st.matches, inputs)
    out = Path(out) if out is not None else Path("results") / scale / method
    enable_compile_cache()
    run = Run(method, stage_name, scale, cfg, cfg_hash, out, seed, variant, inputs, progress)
    with jobs.job(run.job_tag, run.meta()):
        st(run)


def _list() -> None:
    width = max(map(len, METHODS))
    for name, (number, title) in METHODS.items():
        status = "implemented" if is_implemented(name) else "not yet"
        print(f"{name:<{width}}  #{number:<2}  {status:<11}  {title}")


def _report(argv: Sequence[str]) -> None:
    parser = _Parser(prog="repro26 report")
    parser.add_argument("--scale", required=True)
    parser.add_argument("--input", type=Path, nargs="*", default=[])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    check_scale(args.scale)
    if args.out.is_dir():
        raise UsageError(f"--out: {args.out} is a folder; name the report file (e.g. report.md)")
    from repro26.core.report import build_report

    html = args.out.with_suffix(".html") if args.out.suffix == ".md" else \
        args.out.with_name(args.out.name + ".html")
    build_report(list(args.input), args.scale, args.out, html)


USAGE = ("usage: repro26 list | repro26 report --scale S --input CLAIMS... --out REPORT.md | "
         "repro26 probe [METHOD...] [--cores N] [--time-limit S] | "
         "repro26 <method> <stage> [--config PATH] [--scale S] [--out PATH] [--seed N]")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if not argv or argv[0] in ("-h", "--help"):
            print(USAGE)
            print("methods: " + (", ".join(implemented_methods()) or "none implemented yet"))
            return 0
        command, rest = argv[0], argv[1:]
        if command == "list":
            _list()
        elif command == "report":
            _report(rest)
        elif command == "probe":
            from repro26.core import probe

            return probe.main(rest)
        else:
            _method_main(command, rest)
    except (ConfigError, UsageError) as err:
        print(f"repro26: error: {err}", file=sys.stderr)
        return 2
    except FloatingPointError as err:  # NonFiniteLossError: a failed run, not bad input
        print(f"repro26: training stopped: {err}", file=sys.stderr)
        return 1
    except OSError as err:  # an output folder that is a file, no permission, a full disk
        where = f"{err.filename}: " if err.filename else ""
        print(f"repro26: error: {where}{err.strerror or err}", file=sys.stderr)
        return 2
    except Exception as err:  # noqa: BLE001  only out-of-memory is turned into one line
        from repro26.core import memory

        line = memory.exhausted_line(err)
        if line is None:
            raise
        print(f"repro26: error: {line}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
