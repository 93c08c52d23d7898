"""Paths as ragnb finds and shows them: the project root, a relative path taken from it, and a
local path as a report or manifest may show it (never an absolute local path, home folder or user
name).
"""

from __future__ import annotations

import os
import site
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "display_path",
    "from_working_dir",
    "installed_roots",
    "local_path_prefixes",
    "notebooks_folder",
    "project_root",
    "public_paths",
    "resolve_path",
]


#: Where an installed ragnb keeps its notebooks and sample data, below an installation prefix
#: (``[tool.setuptools.data-files]`` in ``pyproject.toml``).
SHARE = Path("share") / "ragnb"


def installed_roots() -> list[Path]:
    """The folders where an installed (non-editable) ragnb may keep ``notebooks/`` and
    ``data/pydocs``, most likely first: ``share/ragnb`` under the environment's prefix, beside the
    package (``pip install --target``) and under the user base (``pip install --user``)."""
    package_parent = Path(__file__).resolve().parents[2]
    prefixes = [Path(sys.prefix), package_parent, Path(site.getuserbase())]
    return [prefix / SHARE for prefix in dict.fromkeys(prefixes)]


def project_root() -> Path:
    """The folder holding ``notebooks/`` and ``data/pydocs``.

    ``$RAGNB_ROOT`` when set; else the checkout the package is imported from (an editable
    install or a clone), recognised by its ``notebooks/`` folder; else the ``share/ragnb``
    folder an installed ragnb ships them in (:func:`installed_roots`). With none of these, the
    package's parent folder.
    """
    env = os.environ.get("RAGNB_ROOT")
    if env:
        return Path(env)
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "notebooks").is_dir():
        return checkout
    for root in installed_roots():
        if (root / "notebooks").is_dir():
            return root
    return checkout


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


def from_working_dir(path: str | os.PathLike[str]) -> str:
    """A path typed on the command line, made absolute from the working folder.

    The library takes a relative path from the project root (:func:`resolve_path`); a command
    takes it from where it is run, so it passes the absolute path on.

    Examples
    --------
    >>> from_working_dir("/data/scifact")
    '/data/scifact'
    """
    return str(Path(path).resolve())


def notebooks_folder(folder: str | os.PathLike[str] | None = None) -> Path:
    """``folder`` as a Path, or the project's ``notebooks/`` when None or empty."""
    return Path(folder) if folder else project_root() / "notebooks"


def display_path(path: str | os.PathLike[str], root: Path | None = None) -> str:
    """``path`` as a report may show it: never an absolute local path, home folder or user name.

    Relative to the project root when inside it (``"reports/01_retrieval_evaluation"``) or beside
    it (``"../shared/datasets/scifact"``), ``"~/..."`` under the home folder, and the last
    component alone otherwise (``"scifact"``).

    Parameters
    ----------
    path : str or PathLike
    root : Path, optional
        Default :func:`project_root`.

    Examples
    --------
    >>> display_path("/srv/proj/reports/x", root=Path("/srv/proj"))
    'reports/x'
    >>> display_path("/srv/shared/datasets/scifact", root=Path("/srv/proj"))
    '../shared/datasets/scifact'
    """
    p = Path(os.path.abspath(path))
    root = Path(os.path.abspath(root if root is not None else project_root()))
    for base, prefix in ((root, ""), (root.parent, "../")):
        if p == base and not prefix:
            return "."
        if p.is_relative_to(base) and base != Path(base.anchor):
            rel = p.relative_to(base).as_posix()
            if base == root.parent and base == Path.home():
                break  # "../x" would be right, but say "~/x": clearer and just as private
            return prefix + rel
    home = Path.home()
    if p.is_relative_to(home) and home != Path(home.anchor):
        return "~/" + p.relative_to(home).as_posix()
    return p.name


def public_paths(value: Any, root: Path | None = None) -> Any:
    """``value`` (nested dicts, lists and strings) with every absolute path string shown as
    :func:`display_path` shows it: what a manifest or provenance file written beside a report
    holds, so that sharing the folder shares no local path.

    Examples
    --------
    >>> public_paths({"dataset": "/srv/proj/data/x", "k": [10, "/opt/d/y"], "url": "http://h/a"},
    ...              root=Path("/srv/proj"))
    {'dataset': 'data/x', 'k': [10, 'y'], 'url': 'http://h/a'}
    """
    if isinstance(value, str):
        return display_path(value, root) if os.path.isabs(value) else value
    if isinstance(value, Mapping):
        return {k: public_paths(v, root) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [public_paths(v, root) for v in value]
    return value


def local_path_prefixes(root: Path | None = None) -> list[tuple[str, str]]:
    """``(absolute prefix, replacement)`` pairs that turn local paths into displayable ones.

    Longest first: the project root (-> relative), its parent (-> ``../``) and the home folder (->
    ``~``), each as written and resolved. Used by :func:`ragnb.report.render.export_html` as a last
    guard so that no report carries the author's file system.
    """
    root = Path(os.path.abspath(root if root is not None else project_root()))
    pairs: dict[str, str] = {}
    for base, repl in ((root, ""), (Path.home(), "~/"), (root.parent, "../")):
        if base == Path(base.anchor):
            continue
        for form in {str(base), str(base.resolve())}:
            pairs.setdefault(form + "/", repl)
            pairs.setdefault(form, repl.rstrip("/") or ".")
    return sorted(pairs.items(), key=lambda kv: len(kv[0]), reverse=True)
