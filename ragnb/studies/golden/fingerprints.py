"""What identifies a golden-set stage's inputs and outputs: hashes of frames, data, code, pool
systems and judges, and the per-query seeds of the refinement.

A stage's input hash (:meth:`ragnb.studies.golden.GoldenPipeline` run folders) is the SHA-256 of its
parameters, the output hashes of the stages it reads, :func:`data_hash`, :func:`code_sha256` of
the modules it runs and, for judged stages, :func:`judge_fingerprint`: never a key, a URL or a
cache path.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import re
from pathlib import Path
from typing import Any

import pandas as pd

from ragnb.judge.base import Judge
from ragnb.retrievers.retrieve import Retriever

__all__ = [
    "as_objects",
    "code_sha256",
    "data_hash",
    "frame_hash",
    "judge_fingerprint",
    "query_seed",
    "system_fingerprint",
]


def frame_hash(frame: pd.DataFrame) -> str:
    """SHA-256 of a frame's columns and values (``to_json`` split form)."""
    blob = frame.to_json(orient="split", index=False, default_handler=str)
    return hashlib.sha256(f"{list(frame.columns)}|{blob}".encode()).hexdigest()


@functools.cache
def code_sha256(modules: tuple[str, ...]) -> str:
    """SHA-256 of the source files of ``modules``."""
    h = hashlib.sha256()
    for name in modules:
        source = importlib.import_module(name).__file__
        h.update(name.encode())
        h.update(Path(source).read_bytes() if source else b"")
    return h.hexdigest()


def data_hash(corpus: pd.DataFrame, queries: pd.DataFrame) -> str:
    """SHA-256 of the corpus (``doc_id``, ``title``, ``text``) and the queries (``query_id``,
    ``text``)."""
    h = hashlib.sha256()
    for col in ("doc_id", "title", "text"):
        h.update("\x1f".join(corpus[col].fillna("").astype(str)).encode("utf-8"))
        h.update(b"\x1e")
    h.update("\x1f".join(queries["query_id"].astype(str)).encode("utf-8"))
    h.update("\x1f".join(queries["text"].astype(str)).encode("utf-8"))
    return h.hexdigest()


def as_objects(frame: pd.DataFrame) -> pd.DataFrame:
    """Text columns as ``object`` with None for missing values, whether the frame was built in
    memory or read back from Parquet (pandas' string dtype otherwise differs between the two)."""
    out = frame.copy()
    for col in out.columns:
        if isinstance(out[col].dtype, pd.StringDtype):
            values = out[col].astype(object)
            out[col] = values.where(out[col].notna(), None)
    return out


_VOLATILE = re.compile(r"(calls|texts|hits|misses|writes|max_seq_length|dim)$")


def system_fingerprint(system: Retriever | pd.DataFrame) -> dict[str, Any]:
    """A pool system's identity: :meth:`ragnb.retrievers.retrieve.Retriever.fingerprint`
    (configuration without counters), or the SHA-256 of a run frame."""
    if isinstance(system, pd.DataFrame):
        cols = [c for c in ("query_id", "doc_id", "score") if c in system.columns]
        return {"run_sha256": frame_hash(system[cols])}
    return system.fingerprint()


def judge_fingerprint(judge: Judge) -> dict[str, Any]:
    """What identifies a judge's answers, for stage hashes: :meth:`ragnb.judge.Judge.fingerprint`
    (never secrets or local paths; the labels' SHA-256 for judges that read labels)."""
    return judge.fingerprint()


def query_seed(seed: int, query_id: str) -> int:
    """A query's refinement seed: the first 8 bytes of ``sha256("<seed>:<query_id>")``,
    little-endian."""
    digest = hashlib.sha256(f"{seed}:{query_id}".encode()).digest()
    return int.from_bytes(digest[:8], "little")
