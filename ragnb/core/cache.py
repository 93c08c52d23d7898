"""One content-addressed on-disk cache for every slow or paid model call.

Values are bytes stored in a SQLite file under a *namespace* (``"embeddings"``, later
``"judge"``). A key is the SHA-256 of a canonical JSON of what determines the answer: the model
id, its parameters and a hash of the input (never secrets such as API keys). Each namespace
records its key schema (the names of the parts that go into a key) so a reader of the cache file
knows what a hit means. The cache counts hits, misses and writes per namespace.

SQLite gives atomic, crash-safe writes (a batch lands whole or not at all) and lets several
processes share one file. Modelled on pyterrier-caching's ``KeyValueCache``.

A value its reader cannot decode (torn by a crash of an older writer, or edited) is a miss: the
reader calls :meth:`Cache.corrupt`, which logs a warning naming the cache file and the key and
counts it (``corrupt`` in :attr:`Cache.stats`); the fresh value then overwrites it.

The default location is ``$RAGNB_CACHE_DIR`` if set, else ``~/.cache/ragnb``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ragnb.core.provenance import file_sha256

__all__ = ["Cache", "default_cache_dir", "derived_file", "make_key", "text_hash"]

log = logging.getLogger("ragnb.core.cache")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    namespace TEXT NOT NULL,
    key TEXT NOT NULL,
    value BLOB NOT NULL,
    PRIMARY KEY (namespace, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS key_schemas (
    namespace TEXT PRIMARY KEY,
    parts TEXT NOT NULL
);
"""


def default_cache_dir() -> Path:
    """``$RAGNB_CACHE_DIR``, else ``~/.cache/ragnb``."""
    env = os.environ.get("RAGNB_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "ragnb"


def derived_file(
    source: str | os.PathLike[str],
    kind: str,
    tag: str,
    build: Callable[[Path, Path], object],
    *,
    what: str,
    cache_dir: str | os.PathLike[str] | None = None,
) -> Path:
    """A file made from ``source`` by ``build(source, target)``, kept in the cache directory and
    made on first use (a model's int8 graph, its float32 weights).

    Parameters
    ----------
    source : str or PathLike
        The file it is made from.
    kind : str
        The file type: the cache's subfolder and the suffix (``"onnx"``, ``"gguf"``).
    tag : str
        What else the result depends on (the recipe's version, a library's version).
    build : callable
        ``build(source, target)`` writes ``target`` (atomically: a reader never sees half of it).
    what : str
        ``source`` as an error names it (``"GGUF model"``).
    cache_dir : str or PathLike, optional
        The ragnb cache directory; default :func:`default_cache_dir`.

    Returns
    -------
    Path
        ``<cache_dir>/<kind>/<stem>-<first 16 hex of the source's SHA-256>-<tag>.<kind>``: a new
        source or tag is a new file, an unchanged one is read again.

    Raises
    ------
    FileNotFoundError
        If ``source`` does not exist; and what ``build`` raises.
    """
    source = Path(source)
    if not source.is_file():
        raise FileNotFoundError(f"{source}: no such {what}")
    folder = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    target = folder / kind / f"{source.stem}-{file_sha256(source)[:16]}-{tag}.{kind}"
    if not target.is_file():
        log.info("making %s from %s (once)", target, source)
        build(source, target)
    return target


def text_hash(text: str) -> str:
    """SHA-256 hex digest of the UTF-8 bytes of ``text``."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def make_key(parts: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON of ``parts`` (sorted keys, no white space).

    Examples
    --------
    >>> make_key({"b": 1, "a": "x"}) == make_key({"a": "x", "b": 1})
    True
    """
    blob = json.dumps(parts, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class Cache:
    """A namespaced key -> bytes store in one SQLite file, with hit/miss counters.

    Parameters
    ----------
    directory : str or PathLike, optional
        Folder of the cache file ``cache.sqlite``; None or empty: :func:`default_cache_dir`.

    Attributes
    ----------
    path : Path
        The SQLite file.
    stats : dict
        ``{namespace: Counter(hits=..., misses=..., writes=...)}`` for this process.
    """

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        # an empty path means the default (notebooks' cache_dir=""), never the working folder
        self.directory = Path(directory) if directory else default_cache_dir()
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / "cache.sqlite"
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, timeout=60, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.executescript(_SCHEMA)
        self._conn.commit()
        self.stats: dict[str, Counter[str]] = {}

    def register_schema(self, namespace: str, parts: Iterable[str]) -> None:
        """Record which parts make up the keys of ``namespace``."""
        value = json.dumps(sorted(parts))
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO key_schemas(namespace, parts) VALUES (?, ?)",
                (namespace, value),
            )
            self._conn.commit()

    def key_schema(self, namespace: str) -> list[str] | None:
        """The recorded key parts of ``namespace``, or None."""
        row = self._conn.execute(
            "SELECT parts FROM key_schemas WHERE namespace = ?", (namespace,)
        ).fetchone()
        return None if row is None else json.loads(row[0])

    def _count(self, namespace: str, what: str, n: int) -> None:
        self.stats.setdefault(namespace, Counter())[what] += n

    def get_many(self, namespace: str, keys: Iterable[str]) -> dict[str, bytes]:
        """Look up many keys; returns the found ones. Counts hits and misses."""
        keys = list(dict.fromkeys(keys))
        found: dict[str, bytes] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._conn.execute(
                    f"SELECT key, value FROM entries WHERE namespace = ? AND key IN ({marks})",
                    (namespace, *chunk),
                ).fetchall()
                found.update(rows)
        self._count(namespace, "hits", len(found))
        self._count(namespace, "misses", len(keys) - len(found))
        return found

    def corrupt(self, namespace: str, key: str, error: BaseException) -> None:
        """Report a value of ``key`` its reader cannot decode: a warning naming the cache file,
        namespace and key, counted as ``corrupt`` (and as a miss instead of a hit)."""
        self._count(namespace, "corrupt", 1)
        self._count(namespace, "hits", -1)
        self._count(namespace, "misses", 1)
        log.warning(
            "%s: cached value of %s/%s is corrupt (%s: %s); treated as a miss, it will be "
            "overwritten by the fresh answer",
            self.path,
            namespace,
            key,
            type(error).__name__,
            str(error)[:200],
        )

    def get(self, namespace: str, key: str) -> bytes | None:
        """Look up one key."""
        return self.get_many(namespace, [key]).get(key)

    def put_many(self, namespace: str, items: Mapping[str, bytes]) -> None:
        """Store many values in one transaction (all land, or none)."""
        # the connection as context manager commits, or rolls back if any row fails
        with self._lock, self._conn:
            self._conn.executemany(
                "INSERT OR REPLACE INTO entries(namespace, key, value) VALUES (?, ?, ?)",
                [(namespace, k, sqlite3.Binary(v)) for k, v in items.items()],
            )
        self._count(namespace, "writes", len(items))

    def put(self, namespace: str, key: str, value: bytes) -> None:
        """Store one value."""
        self.put_many(namespace, {key: value})

    def __len__(self) -> int:
        return int(self._conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0])

    def summary(self) -> dict[str, Any]:
        """Counters per namespace and the file's location, for reports and manifests.

        The location is shown as :func:`ragnb.core.paths.display_path` does (``~/.cache/ragnb/...``,
        relative to the project, or the file name): never an absolute local path.
        """
        from ragnb.core.paths import display_path

        return {
            "path": display_path(self.path),
            "namespaces": {
                ns: {
                    "hits": c["hits"],
                    "misses": c["misses"],
                    "writes": c["writes"],
                    **({"corrupt": c["corrupt"]} if c["corrupt"] else {}),
                    "key_schema": self.key_schema(ns),
                }
                for ns, c in sorted(self.stats.items())
            },
        }

    def close(self) -> None:
        """Close the SQLite connection."""
        self._conn.close()

    def __enter__(self) -> Cache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
