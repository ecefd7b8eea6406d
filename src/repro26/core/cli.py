"""The ``repro26`` command.

    repro26 list
    repro26 <method> <stage> [--config PATH] [--scale S] [--out PATH] [--seed N]
                             [--variant NAME] [--input PATH ...] [--threads N]
    repro26 report --scale S --input claims.json ... --out results/S/report.md

Bad input (unknown method or stage, bad config value, missing input file) prints one line
naming the field and what is allowed, and exits with code 2; nothing is written.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from repro26.core.config import (
    ConfigError,
    UsageError,
    as_dict,
    check_scale,
    config_hash,
    load_yaml,
    method_section,
    parse_config,
    resolve_section,
)
from repro26.core.registry import METHODS, implemented_methods, is_implemented, load_method

DEFAULT_CONFIG = Path("config/config.yaml")


@dataclasses.dataclass(frozen=True)
class Run:
    """Everything a stage needs: the typed config for the scale, where to write, which job."""

    method: str
    stage: str
    scale: str
    cfg: Any
    cfg_hash: str
    out: Path
    seed: int | None = None
    variant: str | None = None
    inputs: tuple[Path, ...] = ()
    progress: bool = True

    def meta(self, **extra: Any) -> dict[str, Any]:
        """Provenance for a results file (JAX version, git commit, config hash, job)."""
        from repro26.core.io import run_metadata

        job = {"method": self.method, "stage": self.stage, "scale": self.scale}
        if self.seed is not None:
            job["seed"] = self.seed
        if self.variant is not None:
            job["variant"] = self.variant
        return run_metadata(self.cfg_hash, **job, **extra)

    def input(self, name: str) -> Path:
        """The ``--input`` whose file name is ``name`` (or ends with it)."""
        for path in self.inputs:
            if path.name == name or str(path).endswith(name):
                return path
        raise UsageError(f"--input: stage '{self.stage}' needs a file named {name}")


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
    with the tests, which run the same stage functions at `smoke` sizes."""
    import jax

    cache = Path(os.environ.get("REPRO26_JAX_CACHE", ".cache/jax")).resolve()
    jax.config.update("jax_compilation_cache_dir", str(cache))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)


def resolve_run_config(method_module, method: str, config_path: Path, scale: str | None):
    """Read the config file, pick the scale, merge presets, parse into the method's ``Config``."""
    config = load_yaml(config_path)
    scale = check_scale(scale or config.get("scale", "small"))
    section = method_section(config, method, config_path.parent)
    values = resolve_section(section, scale, method)
    cfg = parse_config(method_module.Config, values, f"{method}.{scale}")
    return scale, cfg, config_hash(as_dict(cfg))


def _method_main(method: str, argv: Sequence[str]) -> None:
    parser = _Parser(prog=f"repro26 {method}")
    parser.add_argument("stage")
    parser.add_argument("--config", type=Path, default=DEFAULT_CONFIG)
    parser.add_argument("--scale", default=None)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--variant", default=None)
    parser.add_argument("--input", type=Path, nargs="*", default=[])
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    if args.threads is not None:
        if args.threads < 1:
            raise UsageError("--threads: must be a positive integer")
        _set_threads(args.threads)

    module = load_method(method)
    if args.stage not in module.STAGES:
        raise UsageError(f"stage '{args.stage}' is unknown for {method}; "
                         f"allowed: {', '.join(module.STAGES)}")
    scale, cfg, cfg_hash = resolve_run_config(module, method, args.config, args.scale)
    missing = [str(p) for p in args.input if not p.exists()]
    if missing:
        raise UsageError(f"--input: {missing[0]} does not exist (run the stage that writes it)")
    out = args.out or Path("results") / scale / method
    enable_compile_cache()
    run = Run(method, args.stage, scale, cfg, cfg_hash, out, args.seed, args.variant,
              tuple(args.input), progress=not args.no_progress)
    module.STAGES[args.stage](run)


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
    if args.out.suffix != ".md":
        raise UsageError(f"--out: must name a .md file, got {args.out}")
    from repro26.core.report import build_report

    build_report(list(args.input), args.scale, args.out, args.out.with_suffix(".html"))


USAGE = ("usage: repro26 list | repro26 report --scale S --input CLAIMS... --out REPORT.md | "
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
        else:
            _method_main(command, rest)
    except (ConfigError, UsageError) as err:
        print(f"repro26: error: {err}", file=sys.stderr)
        return 2
    except FloatingPointError as err:  # NonFiniteLossError: a failed run, not bad input
        print(f"repro26: training stopped: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
