"""Notebook parameters: the base of the config dataclasses that mirror a ``parameters`` cell.

Every notebook's parameters cell is mirrored by a dataclass (STYLE habit 9); papermill injects
the values, the notebook calls ``Config.from_params(...)``, and an unknown name is an error
rather than a silently ignored keyword. Paths in parameters are relative to the project root.
"""

from __future__ import annotations

import os
from dataclasses import fields
from pathlib import Path
from typing import Any, Self

from ragnb.errors import InputError

__all__ = ["NotebookParams", "project_root", "resolve_path"]


def project_root() -> Path:
    """The folder holding ``notebooks/`` (``$RAGNB_ROOT``, else the package's parent folder)."""
    env = os.environ.get("RAGNB_ROOT")
    return Path(env) if env else Path(__file__).resolve().parents[1]


def resolve_path(path: str | os.PathLike[str], root: Path | None = None) -> Path:
    """``path`` as a Path; a relative one is taken from ``root`` (default the project root).

    Examples
    --------
    >>> resolve_path("/data/scifact")
    PosixPath('/data/scifact')
    """
    p = Path(path)
    if p.is_absolute():
        return p
    if root is None:
        root = project_root()
    return root / p


class NotebookParams:
    """Mixin of the config dataclasses of notebooks 01-06 (each has a ``dataset`` field)."""

    @classmethod
    def from_params(cls, **params: Any) -> Self:
        """Build from notebook parameters.

        Raises
        ------
        InputError
            On a name that is not a field (the known names are listed), or a bad value (the
            dataclass's own checks).
        """
        names = {f.name for f in fields(cls)}  # type: ignore[arg-type]
        unknown = sorted(set(params) - names)
        if unknown:
            raise InputError(f"unknown parameter(s) {unknown}; known: {sorted(names)}")
        return cls(**params)

    def dataset_path(self, root: Path | None = None) -> Path:
        """The dataset folder; a relative path is taken from ``root`` (the project root)."""
        return resolve_path(self.dataset, root)  # type: ignore[attr-defined]
