"""Atomic file output, checkpoints and tidy results tables.

Every write goes to a temporary file in the destination folder and is renamed over the target
(``os.replace`` is atomic on POSIX), so a killed job never leaves a half-written result that
Snakemake or a later stage could mistake for a finished one.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import subprocess
import tempfile
import zipfile
import zlib
from collections.abc import Iterator, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from repro26.core.config import UsageError


_UMASK = os.umask(0)
os.umask(_UMASK)


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it onto ``path`` only on success."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600; results should read like any file
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write_bytes(path, text.encode())


def _to_jsonable(obj: Any) -> Any:
    if isinstance(obj, Mapping):
        return {str(k): _to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_to_jsonable(v) for v in obj]
    if hasattr(obj, "tolist"):  # numpy / jax arrays and scalars
        return _to_jsonable(np.asarray(obj).tolist())
    if isinstance(obj, float) and not np.isfinite(obj):
        return None if np.isnan(obj) else (1e308 if obj > 0 else -1e308)
    return obj


def write_json(path: str | Path, obj: Any) -> None:
    atomic_write_text(path, json.dumps(_to_jsonable(obj), indent=2) + "\n")


def read_json(path: str | Path) -> Any:
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"input file {path} does not exist (run the stage that writes it)")
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError:
        raise UsageError(f"input file {path} is not valid JSON") from None


@cache
def git_commit() -> str:
    """The repository's HEAD commit (with ``+dirty`` when the tree has changes), or unknown."""
    here = Path(__file__).resolve().parent
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"], cwd=here, capture_output=True,
            text=True, check=True, timeout=10,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=here,
            capture_output=True, text=True, timeout=10,
        ).stdout.strip()
        return sha + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


@cache
def code_hash(method: str) -> str:
    """Short hash of the source a method's results depend on: every ``.py`` file of
    ``repro26.<method>`` and ``repro26.core``. A results file records it, and the report marks a
    result whose method code has changed since as stale."""
    import hashlib

    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for folder in (root / "core", root / method):
        for path in sorted(folder.rglob("*.py")):
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def run_metadata(cfg_hash: str, **extra: Any) -> dict[str, Any]:
    """Provenance recorded in every results file: JAX version, git commit, config hash, and
    for a method's job the hash of the code it ran (:func:`code_hash`). The backend is JAX's;
    a figure or the claims, which compute nothing in JAX, record it only where something else
    imported JAX already ("not used" otherwise), so that they do not start JAX for it."""
    import importlib.metadata
    import sys

    if extra.get("stage") in ("figure", "claims"):
        jax = sys.modules.get("jax")
    else:
        import jax
    method = extra.get("method")
    known = isinstance(method, str) and (Path(__file__).resolve().parents[1] / method).is_dir()
    return {
        "jax_version": importlib.metadata.version("jax"),
        "backend": jax.default_backend() if jax is not None else "not used",
        "git_commit": git_commit(),
        "config_hash": cfg_hash,
        **({"code_hash": code_hash(method)} if known else {}),
        **extra,
    }


# ----------------------------------------------------------------------------- tables


def write_table(
    path: str | Path,
    rows: Sequence[Mapping[str, Any]] | Mapping[str, Sequence[Any]],
    meta: Mapping[str, Any],
) -> None:
    """Write a tidy CSV (one observation a row); ``meta`` goes in ``# key: value`` lines.

    ``rows`` is a list of records or a mapping of equal-length columns. Read it back with
    :func:`read_table`, or ``pandas.read_csv(path, comment="#")``.
    """
    if isinstance(rows, Mapping):
        columns = list(rows)
        lengths = {len(np.atleast_1d(np.asarray(v))) for v in rows.values()}
        if len(lengths) > 1:
            raise ValueError(f"table columns have different lengths: {sorted(lengths)}")
        n = lengths.pop() if lengths else 0
        records = [{c: np.asarray(rows[c]).reshape(-1)[i] for c in columns} for i in range(n)]
    else:
        records = list(rows)
        columns = list(dict.fromkeys(k for r in records for k in r))
    buf = io.StringIO()
    for key, value in meta.items():
        buf.write(f"# {key}: {value}\n")
    writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for record in records:
        writer.writerow({k: _to_jsonable(v) for k, v in record.items()})
    atomic_write_text(path, buf.getvalue())


def _parse_cell(text: str) -> Any:
    if text == "":  # write_table stores NaN as an empty cell
        return float("nan")
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return {"True": True, "False": False}.get(text, text)


def read_table(path: str | Path) -> dict[str, np.ndarray]:
    """Read a table written by :func:`write_table` as a mapping of column arrays. A missing,
    empty, truncated or ragged file is a one-line :class:`UsageError` naming it."""
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"input table {path} does not exist (run the stage that writes it)")
    try:
        lines = [line for line in path.read_text().splitlines() if not line.startswith("#")]
    except UnicodeDecodeError:
        raise UsageError(f"input table {path} is not a text CSV file") from None
    if not lines:
        raise UsageError(f"input table {path} is empty (no header line)")
    reader = csv.reader(lines)
    columns = next(reader)
    records = list(reader)
    for number, record in enumerate(records, start=2):
        if len(record) != len(columns):
            raise UsageError(f"input table {path}: row {number} has {len(record)} fields, the "
                             f"header {len(columns)} (truncated or corrupted file)")
    return Table(path, {c: np.asarray([_parse_cell(r[i]) for r in records])
                        for i, c in enumerate(columns)})


class Table(dict):
    """Columns of a table read from ``path``: asking for a column it lacks (a wrong file was
    given) is a one-line :class:`UsageError` naming the file and its columns."""

    def __init__(self, path: Path, columns: Mapping[str, np.ndarray]):
        super().__init__(columns)
        self.path = path

    def __missing__(self, column: str):
        raise UsageError(f"input table {self.path}: no column '{column}' "
                         f"(has {', '.join(self) or 'none'}; is it the right file?)")


def read_npz(path: str | Path) -> dict[str, np.ndarray]:
    """All arrays of an ``.npz`` file, loaded; a missing, truncated or foreign file is a
    one-line :class:`UsageError` naming it."""
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"input file {path} does not exist (run the stage that writes it)")
    try:
        with np.load(path, allow_pickle=False) as data:
            return {k: data[k] for k in data.files if k != PROVENANCE_KEY}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as err:
        raise UsageError(f"input file {path} is not a readable .npz archive "
                         f"({type(err).__name__}: truncated or corrupted?)") from None


PROVENANCE_KEY = "__provenance__"


def write_npz(path: str | Path, compressed: bool = False, **arrays: Any) -> None:
    """``np.savez`` (or ``savez_compressed``) atomically; arrays from numpy or JAX. Written
    inside a stage, the file also records the stage's provenance (git commit, JAX version,
    config hash, job) as a JSON string under ``__provenance__`` (:func:`read_npz_provenance`)."""
    from repro26.core import jobs

    save = np.savez_compressed if compressed else np.savez
    job = jobs.current()
    extra = {PROVENANCE_KEY: np.array(json.dumps(job.provenance, default=str))} if job else {}
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            save(f, **{k: np.asarray(v) for k, v in arrays.items()}, **extra)


def read_npz_provenance(path: str | Path) -> dict[str, Any]:
    """The provenance an ``.npz`` written by a stage records (empty if it has none)."""
    with np.load(path, allow_pickle=False) as data:
        return json.loads(str(data[PROVENANCE_KEY])) if PROVENANCE_KEY in data.files else {}


def check_h5(path: str | Path) -> None:
    """One line naming an ``--input`` that is not a readable HDF5 file (truncated, foreign)."""
    import h5py

    try:
        with h5py.File(path, "r"):
            pass
    except OSError as err:
        raise UsageError(f"input file {path} is not a readable HDF5 file ({err}: truncated or "
                         "corrupted?)") from None


def read_h5_provenance(path: str | Path) -> dict[str, str]:
    """The job an HDF5 file written by a stage records in its root attributes (``method``,
    ``stage``, ``scale``, ``variant``, ``seed``; empty if it has none)."""
    import h5py

    with h5py.File(path, "r") as f:
        return {k: (v.decode() if isinstance(v, bytes) else str(v)) for k, v in f.attrs.items()
                if k in ("method", "stage", "scale", "variant", "seed")}


def read_table_meta(path: str | Path) -> dict[str, str]:
    meta = {}
    for line in Path(path).read_text().splitlines():
        if not line.startswith("# "):
            break
        key, _, value = line[2:].partition(": ")
        meta[key] = value
    return meta


def read_origin(path: str | Path) -> dict[str, Any]:
    """The provenance a results file written by a stage records (method, stage, scale,
    variant, ...), by its kind: a table's ``#`` lines, an ``.npz``'s provenance entry, a JSON
    file's ``meta``, a checkpoint's header. Empty for a file no stage wrote (user data)."""
    path = Path(path)
    try:
        if path.suffix == ".csv":
            return read_table_meta(path)
        if path.suffix == ".npz":
            return read_npz_provenance(path)
        if path.suffix == ".json":
            data = read_json(path)
            meta = data.get("meta") if isinstance(data, dict) else None
            return dict(meta) if isinstance(meta, dict) else {}
        if path.suffix in (".h5", ".hdf5"):
            return read_h5_provenance(path)
        if path.read_bytes()[:len(CHECKPOINT_MAGIC)] == CHECKPOINT_MAGIC:
            return read_checkpoint_provenance(path)
    except Exception:  # noqa: BLE001  damaged in any way: the stage reading it names the file
        return {}
    return {}


# ----------------------------------------------------------------------------- checkpoints


CHECKPOINT_MAGIC = b"repro26-ckpt-v4\n"


class CheckpointError(ValueError):
    """A checkpoint cannot be used: truncated, corrupted, or written for another job."""


def file_crc(path: str | Path) -> int:
    """CRC32 of a file's bytes (a checkpoint records those of its companion files)."""
    return zlib.crc32(Path(path).read_bytes())


def save_checkpoint(path: str | Path, tree: Any, step: int, tag: str = "",
                    companions: Mapping[str, int] | None = None) -> None:
    """Serialise the pytree ``tree`` (arrays and eqx modules) with its step, the ``tag`` of the
    job that wrote it and the CRC32 of each companion file (``{name: crc}``, e.g. the metric
    history written beside it), atomically. Written inside a stage, the file also records the
    stage's provenance (:func:`read_checkpoint_provenance`).

    Layout: magic | u32 len + header JSON {tag, step, provenance, companions} | u64 len |
    payload (``eqx.tree_serialise_leaves``) | u32 CRC32 of everything between magic and CRC. The
    checksum covers the step, the tag and the companions as well as the parameters, so any
    damage is a :class:`CheckpointError`, never a silent resume."""
    import equinox as eqx

    from repro26.core import jobs

    buffer = io.BytesIO()
    eqx.tree_serialise_leaves(buffer, tree)
    payload = buffer.getvalue()
    job = jobs.current()
    header = json.dumps({"tag": tag, "step": int(step),
                         "provenance": job.provenance if job else {},
                         "companions": dict(companions or {})}, default=str).encode()
    body = (len(header).to_bytes(4, "little") + header
            + len(payload).to_bytes(8, "little") + payload)
    atomic_write_bytes(path, CHECKPOINT_MAGIC + body + zlib.crc32(body).to_bytes(4, "little"))


def _parse_checkpoint(data: bytes) -> tuple[dict[str, Any], bytes]:
    """(header, payload) of a checkpoint file's bytes, after checking magic and checksum."""
    if not data.startswith(CHECKPOINT_MAGIC):
        raise CheckpointError("not a repro26 checkpoint (or written by an older version)")
    body, crc = data[len(CHECKPOINT_MAGIC):-4], data[-4:]
    if len(crc) != 4 or zlib.crc32(body) != int.from_bytes(crc, "little"):
        raise CheckpointError("truncated or corrupted (checksum mismatch)")
    try:
        n_header = int.from_bytes(body[:4], "little")
        header = json.loads(body[4:4 + n_header].decode())
        rest = body[4 + n_header:]
        length = int.from_bytes(rest[:8], "little")
        payload = rest[8:]
        if len(payload) != length or not isinstance(header.get("step"), int):
            raise ValueError
    except (UnicodeDecodeError, IndexError, ValueError, AttributeError):
        raise CheckpointError("damaged header") from None
    return header, payload


def read_checkpoint_provenance(path: str | Path) -> dict[str, Any]:
    """The provenance a checkpoint or ``.eqx`` model written by a stage records (empty if none)."""
    return _parse_checkpoint(Path(path).read_bytes())[0]["provenance"]


def load_checkpoint(path: str | Path, like: Any, tag: str | None = None
                    ) -> tuple[Any, int, dict[str, int]]:
    """Load a checkpoint into the structure of ``like``; returns ``(tree, step, companions)``.
    Raises :class:`CheckpointError` (one line) if the file is damaged anywhere, or if ``tag`` is
    given and the checkpoint was written by another job."""
    import equinox as eqx

    header, payload = _parse_checkpoint(Path(path).read_bytes())
    if tag is not None and header["tag"] != tag:
        raise CheckpointError("written by another job (config, stage, variant or seed differ)")
    try:
        tree = eqx.tree_deserialise_leaves(io.BytesIO(payload), like)
    except Exception as err:  # shape/structure mismatch: equinox raises several kinds
        raise CheckpointError(f"does not fit the model ({type(err).__name__})") from None
    return tree, header["step"], header["companions"]


def load_model(path: str | Path, like: Any) -> Any:
    """A model (or any pytree) that an earlier stage saved with :func:`save_checkpoint`, loaded
    into the structure of ``like``; a missing, damaged or mismatched file is a one-line
    :class:`UsageError` naming it."""
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"input file {path} does not exist (run the stage that writes it)")
    try:
        return load_checkpoint(path, like)[0]
    except CheckpointError as err:
        raise UsageError(f"input file {path}: {err}") from None

