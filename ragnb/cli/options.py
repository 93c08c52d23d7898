"""The ``-p NAME=VALUE`` option of ``ragnb report``, ``ragnb run`` and ``ragnb golden``: one
syntax for a notebook's, a study's or a golden set's parameters.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from ragnb.errors import InputError

__all__ = ["PARAM_COMMANDS", "add_param_option", "name_value", "param_syntax_error", "params_of"]

#: The commands that take ``-p NAME=VALUE``.
PARAM_COMMANDS = ("report", "run", "golden")
_FLAGS = ("-p", "--param")


def name_value(text: str) -> tuple[str, str]:
    """``"depth=20"`` as ``("depth", "20")``: one ``-p`` option read.

    Raises
    ------
    InputError
        When ``text`` holds no ``=`` or no name before it.

    Examples
    --------
    >>> name_value("retrievers=[bm25, dense]")
    ('retrievers', '[bm25, dense]')
    """
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise InputError(
            f"-p takes NAME=VALUE, got {text!r}: write -p {text.strip() or 'NAME'}=VALUE"
        )
    return name.strip(), value


def add_param_option(parser: argparse.ArgumentParser, what: str) -> None:
    """Add ``-p/--param NAME=VALUE`` (repeatable) to ``parser``; ``what`` says what it sets."""
    parser.add_argument(
        "-p",
        "--param",
        action="append",
        metavar="NAME=VALUE",
        help=f"{what} (repeatable), e.g. -p depth=20 or -p 'retrievers=[bm25, dense]'; "
        "an unknown name is an error",
    )


def params_of(args: argparse.Namespace) -> dict[str, str]:
    """The ``-p`` options of a parsed command line as a dict (a later one wins).

    Raises
    ------
    InputError
        On an option that is not ``NAME=VALUE`` (:func:`name_value`).
    """
    return dict(name_value(item) for item in args.param or [])


def param_syntax_error(argv: Sequence[str]) -> InputError | None:
    """The error for ``-p NAME VALUE`` (two words) in a command of :data:`PARAM_COMMANDS`, which
    shows the one-word form to write instead; None when every ``-p`` is well formed.

    argparse alone would take ``VALUE`` for a positional argument or report it as unrecognised;
    this names the fix.

    Examples
    --------
    >>> str(param_syntax_error(["report", "01", "-p", "depth", "20"]))
    "-p takes NAME=VALUE: write -p depth=20, not -p depth 20"
    >>> param_syntax_error(["run", "01", "-p", "depth=20"]) is None
    True
    """
    if not argv or argv[0] not in PARAM_COMMANDS:
        return None
    for i, token in enumerate(argv[:-2]):
        name, value = argv[i + 1], argv[i + 2]
        if token in _FLAGS and "=" not in name and not value.startswith("-"):
            return InputError(
                f"-p takes NAME=VALUE: write -p {name}={_quoted(value)}, not -p {name} {value}"
            )
    return None


def _quoted(value: str) -> str:
    """``value`` as a shell word: quoted when it holds spaces or brackets."""
    return f"'{value}'" if any(c in value for c in " []{}*?$") else value
