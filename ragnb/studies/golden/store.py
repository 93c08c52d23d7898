"""The golden set's run folder: stage frames with their markers, and incremental judgements.

With a run folder, each stage writes its frames (``stages/<stem>.parquet``) and then a marker
``stages/s<n>.done.json`` holding the SHA-256 of its inputs (see
:mod:`ragnb.studies.golden.pipeline`) and of each file it wrote. A stage whose marker matches and
whose files are intact is loaded instead of run again. Every file is written atomically
(:mod:`ragnb.io.files`: a temporary file renamed over the target), the marker last, so a crash
mid-stage leaves the previous state and the stage is simply run again. Incremental judgements of a
new system live in ``increments/<system>.parquet`` beside a marker naming the judge and S4 they
extend.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ragnb.core.provenance import file_sha256, utc_now
from ragnb.errors import InputError
from ragnb.io.files import read_json, read_parquet, write_json, write_parquet
from ragnb.studies.golden.config import FILES, STAGES
from ragnb.studies.golden.fingerprints import as_objects

__all__ = [
    "StageRecord",
    "file_sha256",
    "load_stage",
    "read_increments",
    "stage_paths",
    "write_increment",
    "write_stage",
]


@dataclass
class StageRecord:
    """How a stage's output came to be, as the manifest records it.

    Attributes
    ----------
    stage : str
        ``"s1"`` ... ``"s6"``.
    input_hash : str
        SHA-256 of the stage's inputs (parameters, upstream outputs, data, judge identity).
    output_hash : str
        SHA-256 of the stage's frames (what downstream stages hash).
    reused : bool
        Loaded from the run folder in this run (no computation, no judge call).
    seconds : float
        Time to compute (when it was computed) or to load.
    counts : dict
        Rows and stage-specific counts (graded, valid, calls, ...).
    files : list of str
        Its files in the run folder.
    finished : str
        ISO 8601 UTC time the stage was computed.
    """

    stage: str
    input_hash: str
    output_hash: str
    reused: bool
    seconds: float
    counts: dict[str, Any]
    files: list[str]
    finished: str

    def to_dict(self) -> dict[str, Any]:
        return {"title": STAGES[self.stage][0], **asdict(self)}


def stage_paths(run_dir: Path, stage: str) -> tuple[Path, dict[str, Path]]:
    """A stage's marker and its files, ``{frame name: path}``."""
    folder = run_dir / "stages"
    files = {name: folder / f"{stem}.parquet" for name, stem in FILES[stage].items()}
    return folder / f"{stage}.done.json", files


def load_stage(
    run_dir: Path, stage: str, key: str
) -> tuple[dict[str, pd.DataFrame], dict[str, Any]] | None:
    """A finished stage's frames and marker, or None when the marker is missing, unreadable or
    for other inputs (``key``), or a file is missing or altered."""
    marker, files = stage_paths(run_dir, stage)
    if not marker.exists():
        return None
    try:
        info = read_json(marker)
    except InputError:
        return None
    if info.get("input_hash") != key:
        return None
    sums = info.get("files_sha256", {})
    for path in files.values():
        if not path.exists() or sums.get(path.name) != file_sha256(path):
            return None
    frames = {name: as_objects(read_parquet(path)) for name, path in files.items()}
    return frames, info


def write_stage(
    run_dir: Path, stage: str, frames: dict[str, pd.DataFrame], info: dict[str, Any]
) -> None:
    """Write a stage's frames, then its marker (``info`` and the files' SHA-256)."""
    marker, files = stage_paths(run_dir, stage)
    if marker.exists():
        marker.unlink()  # the old marker must not vouch for new files
    sums = {}
    for name, path in files.items():
        write_parquet(frames[name], path)
        sums[path.name] = file_sha256(path)
    write_json({**info, "files_sha256": sums}, marker)


def write_increment(run_dir: Path, system: str, frame: pd.DataFrame, key: str, k: int) -> None:
    """Add a new system's judgements to ``increments/<system>.parquet``.

    The judgements already there are kept when their marker's ``key`` (judge and S4) is
    ``key``; a pair judged again (an invalid answer retried) keeps its latest judgement.
    """
    folder = run_dir / "increments"
    path = folder / f"{system}.parquet"
    marker = folder / f"{system}.done.json"
    if path.exists() and marker.exists() and read_json(marker).get("key") == key:
        frame = pd.concat([read_parquet(path), frame], ignore_index=True)
        frame = frame.drop_duplicates(["query_id", "doc_id"], keep="last")
    write_parquet(frame, path)
    write_json({"system": system, "key": key, "k": k, "updated": utc_now()}, marker)


def read_increments(run_dir: Path, key: str) -> list[pd.DataFrame]:
    """The judgements of earlier increments whose marker's ``key`` is ``key``, by system name."""
    folder = run_dir / "increments"
    if not folder.is_dir():
        return []
    out = []
    for marker in sorted(folder.glob("*.done.json")):
        info = read_json(marker)
        path = folder / f"{info.get('system')}.parquet"
        if info.get("key") != key or not path.exists():
            continue
        out.append(read_parquet(path))
    return out
