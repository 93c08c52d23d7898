"""Provenance of results and redaction of secrets: one home for both.

A report, a manifest, a cache key or a log line says which code, libraries, models and endpoints
produced a number (:func:`versions`, :func:`safe_url`, :func:`sha256_json`, and
:func:`file_sha256` for files), and never a secret: every string that may hold an API key
passes through :func:`scrub`, with one rule for every caller (a key is redacted wherever it
occurs once it has :data:`MIN_SECRET_LENGTH` characters).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import platform
import sys
import urllib.parse
from collections.abc import Iterable, Mapping
from importlib import metadata
from typing import Any

__all__ = [
    "MIN_SECRET_LENGTH",
    "REDACTED",
    "file_sha256",
    "has_credentials",
    "public_url",
    "safe_url",
    "scrub",
    "secrets_in_env",
    "sha256_json",
    "utc_now",
    "versions",
]

REDACTED = "[REDACTED]"
#: Shorter strings are not treated as keys: redacting "ab" would mangle ordinary text.
MIN_SECRET_LENGTH = 4
#: Environment variables whose values are secrets wherever they occur.
SECRET_ENV = ("OPENAI_API_KEY", "AZURE_OPENAI_API_KEY", "RERANK_API_KEY")

_VERSIONED = (
    "ragnb",
    "numpy",
    "pandas",
    "bm25s",
    "sentence-transformers",
    "torch",
    "transformers",
    "openai",
    "altair",
    "papermill",
)


def versions() -> dict[str, str]:
    """Python, platform and the versions of the libraries that produce the numbers.

    Returns
    -------
    dict of str to str
        ``python``, ``platform`` and one entry per library (``"not installed"`` when absent).
    """
    out = {"python": sys.version.split()[0], "platform": platform.platform()}
    for dist in _VERSIONED:
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


def secrets_in_env(extra: Iterable[str | None] = ()) -> list[str]:
    """The secrets to redact: the API keys in the environment and ``extra`` (explicit keys).

    Values shorter than :data:`MIN_SECRET_LENGTH` characters are left out.
    """
    values = [os.environ.get(name, "") for name in SECRET_ENV] + [e or "" for e in extra]
    return sorted({v for v in values if len(v) >= MIN_SECRET_LENGTH}, key=len, reverse=True)


def scrub(obj: Any, secrets: Iterable[str] | None = None) -> Any:
    """``obj`` with every occurrence of a secret in its strings replaced by ``[REDACTED]``.

    Parameters
    ----------
    obj : str, mapping, list, tuple or any
        Strings are redacted; mappings and sequences recursively (keys too); anything else is
        returned as is.
    secrets : iterable of str, optional
        Default :func:`secrets_in_env`. Values shorter than :data:`MIN_SECRET_LENGTH` are ignored.
    """
    keys = secrets_in_env() if secrets is None else [s for s in secrets if len(s) >= 4]
    return _scrub(obj, sorted(set(keys), key=len, reverse=True))


def _scrub(obj: Any, secrets: list[str]) -> Any:
    if not secrets:
        return obj
    if isinstance(obj, str):
        for s in secrets:
            obj = obj.replace(s, REDACTED)
        return obj
    if isinstance(obj, Mapping):
        return {_scrub(k, secrets): _scrub(v, secrets) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_scrub(v, secrets) for v in obj]
    return obj


def has_credentials(url: str) -> bool:
    """Whether ``url`` carries user info, a query or a fragment (where secrets may hide)."""
    parts = urllib.parse.urlsplit(url)
    return bool(parts.username or parts.password or parts.query or parts.fragment)


def safe_url(url: str | None) -> str | None:
    """``url`` without user info, query or fragment (where secrets may hide)."""
    if url is None:
        return None
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def public_url(url: str | None) -> tuple[str | None, bool]:
    """``(url, withheld)``: the URL when it holds no credentials, else ``(None, True)``."""
    if not url:
        return None, False
    if has_credentials(url):
        return None, True
    return url, False


def file_sha256(path: str | os.PathLike[str]) -> str:
    """SHA-256 of a file's bytes, read in 1 MiB chunks (a large file is never held whole).

    Parameters
    ----------
    path : str or PathLike
        The file (stage frames of a golden-set run folder, an ONNX model to quantise).

    Returns
    -------
    str
        64 lowercase hex digits (FIPS 180-4 SHA-256).

    Raises
    ------
    OSError
        When the file cannot be read.
    """
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def sha256_json(obj: Any) -> str:
    """SHA-256 of ``obj`` as canonical JSON (sorted keys, compact; non-JSON values as str)."""
    blob = json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def utc_now() -> str:
    """The current UTC time, ISO 8601 to the second with a ``Z``."""
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
