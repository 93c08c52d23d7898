"""Notebook parameters: the base of the config dataclasses that mirror a ``parameters`` cell.

Every notebook's parameters cell is mirrored by a dataclass (STYLE habit 9); papermill injects
the values, the notebook calls ``Config.from_params(...)``, and an unknown name is an error
rather than a silently ignored keyword. Paths in parameters are relative to the project root.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import MISSING, Field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from ragnb.core.docstrings import doc_filler
from ragnb.core.paths import from_working_dir, resolve_path
from ragnb.core.validation import check_int_at_least
from ragnb.errors import InputError

if TYPE_CHECKING:
    from ragnb.io.files import BeirDataset

__all__ = [
    "PATH_PARAMETERS",
    "RUNNER_ENTRIES",
    "SAMPLE_DATASET",
    "NotebookParams",
    "fill_runner_doc",
    "parameter_docs",
    "parameters_cell",
    "paths_from_working_dir",
    "unknown_parameter",
]

#: The shipped sample dataset (``ragnb data build-sample``), relative to the project root: every
#: study's default ``dataset``.
SAMPLE_DATASET = "data/pydocs"

#: The parameters of notebooks 01-07 that name a file or folder (a list of them for ``runs`` of
#: notebook 01). The library takes a relative one from the project root; a command takes it from
#: the working folder (:func:`paths_from_working_dir`).
PATH_PARAMETERS = frozenset(
    {
        "dataset",
        "queries",
        "traces",
        "qrels",
        "runs",
        "runs_dir",
        "human_labels",
        "cache_dir",
        "export_dir",
        "nuggets",
        "evidence",
        "prices_file",
        "query_texts_path",
        "ranked_path",
        "graded_path",
    }
)

#: Values of a path parameter that name no path (``evidence="auto"``).
_NOT_PATHS = ("", "auto", "none")


def paths_from_working_dir(params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` with each relative path of :data:`PATH_PARAMETERS` made absolute from the
    working folder, as a command line means it.

    A string value is a path, a list of strings a list of paths (``runs``); other values
    (``runs=15``, the number of runs of notebook 03) and the words ``auto`` and ``none`` are
    kept as they are.

    Examples
    --------
    >>> paths_from_working_dir({"depth": 20, "dataset": "/data/scifact", "evidence": "auto"})
    {'depth': 20, 'dataset': '/data/scifact', 'evidence': 'auto'}
    """

    def absolute(value: Any) -> Any:
        if isinstance(value, str) and value.strip().lower() not in _NOT_PATHS:
            return from_working_dir(value)
        return value

    out = dict(params)
    for name, value in params.items():
        if name not in PATH_PARAMETERS:
            continue
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            out[name] = [absolute(v) for v in value]
        else:
            out[name] = absolute(value)
    return out


def unknown_parameter(name: str, known: Iterable[str], owner: str) -> InputError:
    """The error for a parameter ``owner`` does not take: the closest known name when one is
    close (:func:`difflib.get_close_matches`), else the list of known names.

    Examples
    --------
    >>> str(unknown_parameter("dept", ["depth", "dataset"], "notebook '01'"))
    "notebook '01': unknown parameter 'dept' (did you mean 'depth'?)"
    """
    import difflib

    names = sorted(known)
    close = difflib.get_close_matches(name, names, n=1)
    hint = f"did you mean {close[0]!r}?" if close else f"it takes {', '.join(names)}"
    return InputError(f"{owner}: unknown parameter {name!r} ({hint})")


#: numpydoc entries shared by the studies' runners, which take a :class:`NotebookParams` config (the
#: ``run`` of :mod:`ragnb.studies.retrieval`, :mod:`ragnb.studies.whatif` and
#: :mod:`ragnb.studies.clq`).
RUNNER_ENTRIES: dict[str, str] = {
    "dataset": "dataset : BeirDataset, optional\n"
    "    Already loaded data (default: read ``config.dataset``).",
}
#: Expands the ``{{dataset}}`` lines of a runner's docstring from :data:`RUNNER_ENTRIES`
#: (:func:`ragnb.core.docstrings.doc_filler`); an unknown name raises KeyError at import time.
fill_runner_doc = doc_filler(RUNNER_ENTRIES)


class NotebookParams:
    """Mixin of the config dataclasses of notebooks 01-07.

    The fields every notebook shares mean the same everywhere and are documented here once;
    each config documents its own fields.

    Attributes
    ----------
    dataset : str
        BEIR folder; relative paths are taken from the project root (:meth:`dataset_path`).
    split : str
        Qrels split to evaluate.
    cache_dir : str
        Cache folder of embeddings (and LLM answers); empty for ``$RAGNB_CACHE_DIR`` or
        ``~/.cache/ragnb``.
    """

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
            raise unknown_parameter(unknown[0], names, cls.__name__)
        return cls(**params)

    @classmethod
    def from_namespace(cls, namespace: Mapping[str, Any]) -> Self:
        """Build from a notebook's namespace: ``Config.from_namespace(globals())``.

        Takes exactly the dataclass's fields from ``namespace`` (the variables of the notebook's
        ``parameters`` cell, after papermill's injected overrides), so each parameter is written
        twice, in the cell and in the dataclass, and a test compares the two with
        ``papermill.inspect_notebook``.

        Parameters
        ----------
        namespace : mapping of str to Any
            Usually ``globals()`` of the notebook.

        Raises
        ------
        InputError
            When a field has no variable in ``namespace`` (the parameters cell and the config
            have drifted apart), or on a bad value (the dataclass's own checks).
        """
        names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
        missing = [n for n in names if n not in namespace]
        if missing:
            raise InputError(
                f"the notebook's namespace lacks parameter(s) {missing} of {cls.__name__}; "
                "its parameters cell and the config have drifted apart"
            )
        return cls(**{n: namespace[n] for n in names})

    def _check_ints_at_least(self, low: int, *names: str) -> None:
        """Check that each field of ``names`` is an integer >= ``low``, e.g.
        ``self._check_ints_at_least(0, "max_queries")``; the error names the field."""
        for name in names:
            check_int_at_least(getattr(self, name), name, low, column=name)

    def dataset_path(self, root: Path | None = None) -> Path:
        """The dataset folder; a relative path is taken from ``root`` (the project root)."""
        return resolve_path(self.dataset, root)  # type: ignore[attr-defined]

    def read_dataset(self, root: Path | None = None) -> BeirDataset:
        """The BEIR dataset at :meth:`dataset_path` with the qrels of ``split``
        (:func:`ragnb.io.files.read_beir`)."""
        from ragnb.io.files import read_beir

        return read_beir(self.dataset_path(root), split=self.split)  # type: ignore[attr-defined]


# ------------------------------------------------------------------------ one home per parameter

_ROLE = re.compile(r":(?:[a-z]+:)?[a-z]+:`~?([^`<]*?)(?:\s*<[^>]*>)?`")
_ENTRY = re.compile(r"^(?P<name>\w+)\s*:\s*(?P<type>.*)$")


def _attributes(doc: str | None) -> dict[str, str]:
    """The ``Attributes`` entries of a numpydoc docstring: ``{name: description}``."""
    lines = inspect.cleandoc(doc or "").splitlines()
    entries: dict[str, list[str]] = {}
    inside = False
    current: str | None = None
    for i, line in enumerate(lines):
        underline = i + 1 < len(lines) and set(lines[i + 1].strip()) == {"-"}
        if underline and line.strip():
            inside = line.strip() == "Attributes"
            current = None
            continue
        if not inside or set(line.strip()) == {"-"}:
            continue
        match = _ENTRY.match(line)
        if match and not line.startswith(" "):
            current = match["name"]
            entries[current] = []
        elif current is not None and line.strip():
            entries[current].append(line.strip())
    return {name: " ".join(text) for name, text in entries.items()}


def parameter_docs(cls: type) -> dict[str, str]:
    """The description of each field of config dataclass ``cls``, from its docstring.

    A config's numpydoc ``Attributes`` section is where a parameter is documented; the fields
    every notebook shares are documented once on :class:`NotebookParams`. Sphinx roles are
    reduced to their target (``:func:`ragnb.embed.make_embedder``` -> ``ragnb.embed.make_embedder``)
    and double backquotes dropped, so the text reads as a comment in the notebook.

    Parameters
    ----------
    cls : type
        A dataclass.

    Returns
    -------
    dict of str to str
        ``{field name: one-line description}`` in field order.

    Raises
    ------
    TypeError
        When a field has no ``Attributes`` entry in ``cls`` or one of its bases, or its
        description holds ``=`` (papermill's parameter reader drops such a line).
    """
    found: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        found.update(_attributes(klass.__doc__))
    docs = {}
    for f in fields(cls):  # type: ignore[arg-type]
        if not found.get(f.name):
            raise TypeError(f"{cls.__name__}.{f.name} has no entry in its Attributes section")
        text = _ROLE.sub(r"\1", found[f.name]).replace("``", "")
        if "=" in text:
            raise TypeError(
                f"{cls.__name__}.{f.name}: its description holds '=', which papermill cannot "
                "read in a parameters line (it drops the parameter); reword it"
            )
        docs[f.name] = text
    return docs


def _default(f: Field[Any]) -> Any:
    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:
        return f.default_factory()
    raise TypeError(f"parameter {f.name!r} has no default")


def _type_name(f: Field[Any]) -> str:
    """The type as the parameters cell writes it, the builtin papermill reads (``list``)."""
    name = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
    return name.split("[", 1)[0].split("|", 1)[0].strip() or "str"


def _literal(value: Any) -> str:
    """Python source of a parameter value in the style ``ruff format`` writes (double quotes)."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_literal(k)}: {_literal(v)}" for k, v in value.items()) + "}"
    return repr(value)


def parameters_cell(cls: type) -> str:
    """The source of a notebook's ``parameters`` cell, generated from its config dataclass.

    One line per field, in field order: ``name: type = default  # description``, the
    description from :func:`parameter_docs`. papermill reads name, type, default and comment
    back (``papermill.inspect_notebook``), so a parameter is written once, in the config.

    Parameters
    ----------
    cls : type
        A config dataclass (a :class:`NotebookParams`).

    Returns
    -------
    str
        The cell source, without a final newline.

    Raises
    ------
    TypeError
        When a field lacks a default or a description.
    """
    docs = parameter_docs(cls)
    lines = [
        "# Parameters: papermill injects overrides after this cell. Generated from",
        f"# {cls.__module__}.{cls.__qualname__} by `ragnb params --write`: edit the config.",
    ]
    for f in fields(cls):  # type: ignore[arg-type]
        lines.append(f"{f.name}: {_type_name(f)} = {_literal(_default(f))}  # {docs[f.name]}")
    return "\n".join(lines)
