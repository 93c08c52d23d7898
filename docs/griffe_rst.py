"""A griffe extension: ragnb's numpydoc docstrings, written for Sphinx, read as Markdown.

mkdocstrings renders docstrings as Markdown. ragnb's are numpydoc with a few reStructuredText
constructs, which this extension rewrites on the loaded ``ragnb`` package before rendering:

- cross-reference roles (``:func:`ragnb.evaluation.evaluate.evaluate```,
  ``:class:`~ragnb.measures.Measure```, ``:mod:`.precision```) become links to the API reference
  where the object is rendered, and code elsewhere. A role whose target names no object of ``ragnb``
  (a renamed or removed function) is logged as a warning, so ``mkdocs build --strict`` fails on a
  broken reference;
- ``.. [1] Author, title`` citations become a list, and ``[1]_`` in the text ``[1]``;
- simple tables (``=====  =====`` rules) become preformatted blocks;
- ``{{Parameters: qrels, run}}`` lines, filled at import time by
  ``ragnb.core.docstrings.doc_filler``, are replaced by the docstring of the imported object.

Configured in ``mkdocs.yml`` (``extensions: [docs/griffe_rst.py]`` of the python handler).
"""

from __future__ import annotations

import builtins
import html
import importlib
import inspect
import logging
import re
from typing import Any

import griffe

_log = logging.getLogger("mkdocs.plugins.ragnb_docs")

_ROLE = re.compile(r":(?P<role>func|meth|class|mod|data|attr|obj|exc):`(?P<target>[^`]+)`")
_CITATION = re.compile(r"^\.\. \[(?P<label>[^\]]+)\]\s*(?P<text>.*)$")
_FOOTNOTE_REF = re.compile(r"\[(\w+)\]_")  # a citation in the text: ``[1]_``
_TABLE_RULE = re.compile(r"^=+( +=+)+\s*$")
_SLOT = re.compile(r"^[ \t]*\{\{(?:[A-Z][a-z]+:)?[\w\s,]+\}\}[ \t]*$", re.MULTILINE)
_CALLABLE_ROLES = {"func", "meth"}
_LOOKUP_ERRORS = (KeyError, ValueError, griffe.AliasResolutionError, griffe.CyclicAliasError)


class RstToMarkdown(griffe.Extension):
    """Rewrite the reStructuredText parts of every docstring in the ``ragnb`` package."""

    def __init__(self, package: str = "ragnb") -> None:
        super().__init__()
        self.package = package

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        if pkg.path != self.package:
            return
        self._collection = loader.modules_collection
        self._walk(pkg)

    # ------------------------------------------------------------------ walking the tree

    def _walk(self, obj: griffe.Object) -> None:
        if obj.docstring is not None:
            text = obj.docstring.value
            if _SLOT.search(text):
                text = _runtime_docstring(obj) or text
            obj.docstring.value = self._convert(text, obj)
        for member in list(obj.members.values()):
            if member.is_alias:
                continue
            self._walk(member)  # type: ignore[arg-type]

    # ------------------------------------------------------------------ conversion

    def _convert(self, text: str, obj: griffe.Object) -> str:
        text = _tables_to_blocks(text)
        text = _citations_to_list(text)
        text = _FOOTNOTE_REF.sub(r"\\[\1\\]", text)
        return _ROLE.sub(lambda m: self._role(m["role"], m["target"], obj), text)

    def _role(self, role: str, target: str, obj: griffe.Object) -> str:
        short = target.startswith("~")
        name = target.lstrip("~").removesuffix("()")
        title = name.rsplit(".", 1)[-1] if short else name.lstrip(".")
        found, kind, external = self._resolve(name, obj)
        if role in _CALLABLE_ROLES and kind in (None, griffe.Kind.FUNCTION):
            title += "()"
        code = f"<code>{html.escape(title)}</code>"
        if found is None:
            if not external:
                _log.warning(
                    "%s: broken reference :%s:`%s` (no such object in %s)",
                    obj.path,
                    role,
                    target,
                    self.package,
                )
            return code
        return f'<autoref identifier="{html.escape(found)}" optional>{code}</autoref>'

    def _resolve(
        self, name: str, obj: griffe.Object
    ) -> tuple[str | None, griffe.Kind | None, bool]:
        """The path and kind of the object ``name`` refers to from ``obj``, and whether it may
        be outside the package (then not finding it is no error)."""
        if name.startswith("."):
            module = obj.module
            bases = [module.path] + ([module.parent.path] if module.parent else [])
            candidates = [base + name for base in bases]
            external = False
        elif name.split(".")[0] == self.package:
            candidates, external = [name], False
        else:
            scopes = []
            scope: griffe.Object | None = obj
            while scope is not None:
                if scope.is_class or scope.is_module:
                    scopes.append(scope.path)
                scope = scope.parent
            candidates = [f"{s}.{name}" for s in scopes]
            # a bare name must be found in scope (or be a builtin); a dotted one may name another
            # library
            external = "." in name or hasattr(builtins, name)
        for path in candidates:
            kind = self._kind(path)
            if kind is not None:
                return path, kind, external
        return None, None, external

    def _kind(self, path: str) -> griffe.Kind | None:
        """The kind of the object at ``path`` (aliases resolved, inherited members of a class
        included), None if there is none."""
        parent_path, _, name = path.rpartition(".")
        try:
            if not parent_path:
                found = self._collection.get_member(path)
            else:
                parent = self._collection.get_member(parent_path)
                if parent.is_alias:
                    parent = parent.final_target
                members = parent.all_members if parent.is_class else parent.members
                found = members[name]
            return found.final_target.kind if found.is_alias else found.kind
        except _LOOKUP_ERRORS:
            return None


def _runtime_docstring(obj: griffe.Object) -> str | None:
    """The docstring of the imported object (its ``{{...}}`` lines filled), or None."""
    module_path = obj.module.path
    try:
        value: Any = importlib.import_module(module_path)
        for part in obj.path[len(module_path) + 1 :].split(".") if obj.path != module_path else []:
            value = getattr(value, part)
    except (ImportError, AttributeError):
        return None
    doc = inspect.getdoc(value)
    return doc if doc and not _SLOT.search(doc) else None


def _tables_to_blocks(text: str) -> str:
    """Wrap each reStructuredText simple table (a ``=====  =====`` rule and the lines after it
    up to the next blank line) in a fenced block, so Markdown keeps its columns."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        if not _TABLE_RULE.match(lines[i]):
            out.append(lines[i])
            i += 1
            continue
        j = i
        while j < len(lines) and lines[j].strip():
            j += 1
        table = [_ROLE.sub(lambda m: m["target"].lstrip("~"), line) for line in lines[i:j]]
        out.extend(["", "```text", *table, "```", ""])
        i = j
    return "\n".join(out)


def _citations_to_list(text: str) -> str:
    """``.. [1] text`` (continued on indented lines) -> ``- [1] text``."""
    lines = text.split("\n")
    out = []
    for line in lines:
        m = _CITATION.match(line)
        if m:
            out.append(f"- \\[{m['label']}\\] {m['text']}")
        else:
            out.append(line)
    return "\n".join(out)
