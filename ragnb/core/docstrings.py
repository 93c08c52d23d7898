"""One home for numpydoc entries that several public functions share.

A docstring line ``{{Returns: qrels_frame}}`` or ``{{Parameters: qrels, run, k}}`` is replaced,
at import time, by the entries of that name (with the section heading when one is named); a line
``{{order}}`` writes the entry alone, beside entries written out in the docstring. Each layer
keeps its own table of entries (the measures' is :data:`ragnb.measures.functions.DOC_ENTRIES`,
the file readers' and frame builders' is :data:`FRAME_ENTRIES` here) and builds its decorator
with :func:`doc_filler`, so one entry has one home and cannot drift between the functions that
share it. This is the mechanism of numpy's and scipy's ``doccer`` and pandas' ``@doc``, reduced
to whole entries.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

__all__ = ["FRAME_ENTRIES", "doc_filler", "fill_frame_doc"]

_F = TypeVar("_F", bound=Callable[..., Any])

_SLOT = re.compile(
    r"^(?P<indent>[ \t]*)\{\{(?:(?P<section>[A-Z][a-z]+):)?(?P<names>[\w\s,]+)\}\}[ \t]*$",
    re.MULTILINE,
)

#: Entries shared by the readers and converters that return the standard frames.
FRAME_ENTRIES: dict[str, str] = {
    "qrels_frame": "DataFrame\n"
    "    Columns ``query_id``, ``doc_id`` (str), ``relevance`` (int64), input order.",
    "qrels_file_frame": "DataFrame\n"
    "    Columns ``query_id``, ``doc_id``, ``relevance`` (int64), file order.",
}


def doc_filler(entries: Mapping[str, str]) -> Callable[[_F], _F]:
    """A decorator that expands ``{{...}}`` lines of a docstring from ``entries``.

    Parameters
    ----------
    entries : mapping of str to str
        Entry name -> numpydoc text (first line unindented, continuation lines indented by four
        spaces relative to it).

    Returns
    -------
    callable
        Decorator returning the function itself with ``__doc__`` expanded. An unknown name
        raises KeyError when the decorated function is defined (import time).

    Examples
    --------
    >>> fill = doc_filler({"k": "k : int\\n    Cutoff K >= 1."})
    >>> @fill
    ... def f(k):
    ...     '''Doc.
    ...
    ...     {{Parameters: k}}
    ...     '''
    >>> print(f.__doc__.strip())
    Doc.
    <BLANKLINE>
        Parameters
        ----------
        k : int
            Cutoff K >= 1.
    """

    def expand(match: re.Match[str]) -> str:
        lines = []
        section = match["section"]
        if section:
            lines += [section, "-" * len(section)]
        for name in re.split(r"[\s,]+", match["names"].strip()):
            lines += entries[name].splitlines()
        return "\n".join(match["indent"] + line for line in lines)

    def fill(func: _F) -> _F:
        if func.__doc__:
            func.__doc__ = _SLOT.sub(expand, func.__doc__)
        return func

    return fill


#: Decorator expanding :data:`FRAME_ENTRIES`.
fill_frame_doc = doc_filler(FRAME_ENTRIES)
