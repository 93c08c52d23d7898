"""Build the shipped sample dataset ``pydocs`` from the standard library's docstrings.

The dataset follows the recipe of the ARXIV subset of the Primer retrieval-response data
(Schwartz, Vasilyev and Sawaya, "How important is Recall for Measuring Retrieval Quality?",
Primer Technologies, Appendix A.1.1): there, a query is the name of an arXiv category, its
positives are abstracts of papers in that category and its negatives are abstracts from a related
but different category. Here the category is a standard-library module:

query
    What the module is for: the first sentence of the module's docstring, with the module's
    label for itself removed (``"codecs -- Python Codec Registry"`` becomes
    ``"Python Codec Registry, API and helpers."``).
positives (grade 1)
    The module's documented public functions, classes and methods (one passage each, titled by
    the qualified name, e.g. ``json.dumps``), at most :data:`MAX_POSITIVES` per module.
negatives (grade 0)
    At most :data:`MAX_NEGATIVES` passages of the related module named in :data:`RELATED`.

Relevance follows from where a docstring lives, not from anyone's judgement. The text is the
docstrings of the interpreter that runs the build, so the data is available wherever ragnb is
installed, offline; the same CPython build gives byte-identical files (the recipe records
``sys.version`` and a sha256 of every file).

Only :mod:`ragnb.io.files` writers touch the files; this module decides what goes in them and swaps
the finished folder into place.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import inspect
import os
import re
import shutil
import sys
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

# Only the standard library at module level: _assemble runs in a clean interpreter (see
# _assemble_isolated) and must not import libraries that patch the stdlib it reads.

__all__ = [
    "DATASET_NAME",
    "MAX_NEGATIVES",
    "MAX_POSITIVES",
    "MAX_TEXT_CHARS",
    "MIN_DOC_CHARS",
    "MIN_POSITIVES",
    "RELATED",
    "build_sample",
]

DATASET_NAME = "pydocs"
BUILDER = "ragnb.io.sample_data.build_sample"

MAX_POSITIVES = 40
"""Passages kept per module (all of them are that module's positives)."""
MAX_NEGATIVES = 10
"""Passages of the related module judged 0 for a query."""
MIN_POSITIVES = 2
"""A module with fewer documented passages than this gives no query and no passages."""
MIN_DOC_CHARS = 40
"""A docstring shorter than this (after whitespace is collapsed) is not a passage."""
MAX_TEXT_CHARS = 1500
"""Passages are cut to this length at a paragraph or sentence boundary."""
MAX_QUERY_CHARS = 300

REFERENCE = (
    "Schwartz, Vasilyev and Sawaya, 'How important is Recall for Measuring Retrieval Quality?', "
    "Primer Technologies, Appendix A.1.1 (the ARXIV subset: query = category name, positives = "
    "abstracts of the category, negatives = abstracts of a related category)"
)

# The curated modules, each with its related modules in order of preference; the first one that
# is imported and yields passages provides the negatives. Only modules that import without side
# effects in a headless process and whose public names do not depend on the platform (no os,
# os.path, time, socket, signal, subprocess, locale, selectors, asyncio, platform, sysconfig) or
# on an optional library's version (no hashlib, ssl, sqlite3). Modules without a module docstring
# (enum, dataclasses, pathlib, graphlib, zoneinfo) cannot give a query and are left out.
RELATED: dict[str, tuple[str, ...]] = {
    "abc": ("numbers", "typing"),
    "argparse": ("optparse", "configparser"),
    "array": ("struct", "collections"),
    "ast": ("tokenize", "dis"),
    "base64": ("binascii", "quopri"),
    "bdb": ("trace", "inspect"),
    "binascii": ("base64", "struct"),
    "bisect": ("heapq", "array"),
    "bz2": ("lzma", "gzip"),
    "calendar": ("datetime",),
    "cmath": ("math", "numbers"),
    "cmd": ("code", "shlex"),
    "code": ("codeop", "cmd"),
    "codecs": ("unicodedata", "io"),
    "codeop": ("code", "py_compile"),
    "collections": ("heapq", "array"),
    "compileall": ("py_compile", "pkgutil"),
    "concurrent.futures": ("threading", "queue"),
    "configparser": ("csv", "argparse"),
    "contextlib": ("functools", "abc"),
    "copyreg": ("pickle", "pickletools"),
    "csv": ("configparser", "json"),
    "datetime": ("calendar",),
    "decimal": ("fractions", "math"),
    "difflib": ("filecmp", "textwrap"),
    "dis": ("ast", "inspect"),
    "doctest": ("unittest",),
    "email.message": ("email.parser", "mailbox"),
    "email.parser": ("email.message", "mailbox"),
    "filecmp": ("difflib", "shutil"),
    "fileinput": ("linecache", "io"),
    "fnmatch": ("re", "shlex"),
    "fractions": ("decimal", "numbers"),
    "functools": ("itertools", "operator"),
    "gzip": ("zlib", "bz2"),
    "heapq": ("bisect", "queue"),
    "hmac": ("secrets", "base64"),
    "html.parser": ("xml.dom.minidom", "xml.etree.ElementTree"),
    "http.client": ("http.server", "urllib.parse"),
    "http.cookiejar": ("http.client", "urllib.parse"),
    "http.server": ("http.client", "urllib.parse"),
    "inspect": ("ast", "dis"),
    "io": ("codecs", "tempfile"),
    "ipaddress": ("urllib.parse",),
    "itertools": ("functools", "operator"),
    "json": ("pickle", "csv"),
    "linecache": ("fileinput", "traceback"),
    "logging": ("warnings", "traceback"),
    "lzma": ("bz2", "zlib"),
    "mailbox": ("email.message", "email.parser"),
    "math": ("cmath", "statistics"),
    "mimetypes": ("email.message", "urllib.parse"),
    "numbers": ("abc", "fractions"),
    "operator": ("functools", "itertools"),
    "optparse": ("argparse",),
    "pickle": ("json", "copyreg"),
    "pickletools": ("pickle", "dis"),
    "pkgutil": ("compileall", "inspect"),
    "pprint": ("textwrap",),
    "profile": ("pstats", "timeit"),
    "pstats": ("profile", "timeit"),
    "py_compile": ("compileall", "codeop"),
    "pyclbr": ("inspect", "ast"),
    "queue": ("threading", "heapq"),
    "quopri": ("base64", "binascii"),
    "random": ("secrets", "statistics"),
    "re": ("fnmatch", "shlex"),
    "sched": ("threading",),
    "secrets": ("random", "hmac"),
    "shlex": ("tokenize", "re"),
    "shutil": ("tempfile", "filecmp"),
    "smtplib": ("email.message", "http.client"),
    "stat": ("shutil", "filecmp"),
    "statistics": ("random", "math"),
    "struct": ("array", "binascii"),
    "symtable": ("ast", "dis"),
    "tarfile": ("zipfile", "shutil"),
    "tempfile": ("shutil", "io"),
    "textwrap": ("pprint", "difflib"),
    "threading": ("concurrent.futures", "queue"),
    "timeit": ("profile", "trace"),
    "tokenize": ("ast", "shlex"),
    "trace": ("profile", "bdb"),
    "traceback": ("logging", "inspect"),
    "typing": ("abc", "inspect"),
    "unicodedata": ("codecs",),
    "unittest": ("doctest",),
    "urllib.parse": ("http.client", "mimetypes"),
    "uuid": ("secrets", "random"),
    "warnings": ("logging", "traceback"),
    "weakref": ("collections", "functools"),
    "xml.dom.minidom": ("xml.etree.ElementTree", "html.parser"),
    "xml.etree.ElementTree": ("xml.dom.minidom", "html.parser"),
    "xmlrpc.client": ("http.client", "xml.etree.ElementTree"),
    "zipfile": ("tarfile", "gzip"),
    "zlib": ("gzip", "bz2"),
}

RULES = {
    "query": (
        "First sentence of the first non-empty paragraph of the module docstring "
        "(inspect.cleandoc, white space collapsed, URLs in <...> removed), after removing the "
        "module's label for itself ('name.py --', 'Module name --', 'The name module:', "
        "'The name module ...' -> 'This module ...', a paragraph that is only the name); "
        "first letter upper-cased; cut at a word boundary to 300 characters. Other uses of the "
        "name as a word ('the zlib library', 'the warnings subsystem') are kept: they are the "
        "vocabulary a user would type, while the label is the identifier that also forms every "
        "passage title and would make the match trivial."
    ),
    "passages": (
        "Public (no leading '_') module attributes that are functions or classes, and public "
        "functions/methods defined in such a class's own __dict__, whose own __doc__ (never an "
        "inherited one; a method whose docstring equals a base class's is skipped) has at least "
        "40 characters after white space is collapsed and is not an auto-generated signature "
        "('Name(a, b)' of namedtuples, dataclasses, ast nodes). An object counts for a module "
        "when its __module__ is the module, a submodule of it, or its C accelerator ('_' + "
        "name). Text: paragraphs joined with white space collapsed, cut at a paragraph or "
        "sentence boundary to 1500 characters. ID and title: the qualified name "
        "(module.attribute or module.Class.method)."
    ),
    "dedupe": (
        "One passage per object per module (the object's own __name__ wins over an alias). "
        "Within a module, of passages with identical text the first by (module-level before "
        "method, own name before alias, ID) is kept; a text found in two modules is dropped "
        "from both, as its relevance would be ambiguous."
    ),
    "positives": (
        "All passages of the module kept in the corpus, grade 1: at most 40 per module, "
        "module-level functions and classes first, then methods, each tier ordered by "
        "sha256('<seed>:<doc_id>'). A module with fewer than 2 passages is dropped."
    ),
    "negatives": (
        "The first module of the module's RELATED entry that has passages; at most 10 of its "
        "passages, ordered by sha256('<seed>:<query_id>:<doc_id>'), grade 0."
    ),
}


@dataclass(frozen=True)
class _Passage:
    doc_id: str
    module: str
    tier: int  # 0: module-level function or class, 1: method
    alias: bool  # the attribute name differs from the object's own __name__
    text: str


# --------------------------------------------------------------------------------------------
# text


_URL = re.compile(r"<?https?://\S+>?")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\"'`])")
_AUTO_SIGNATURE = re.compile(r"^[\w.]+\(.*\)$|^\w+\s*=\s*\w+\(")


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _paragraphs(doc: str) -> list[str]:
    paras = (_collapse(p) for p in re.split(r"\n\s*\n", inspect.cleandoc(doc)))
    return [p for p in paras if p]


def _cut(text: str, limit: int) -> str:
    """Cut ``text`` to at most ``limit`` characters at a sentence end, else at a space."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    ends = [m.start() for m in _SENTENCE_END.finditer(head)]
    if ends and ends[-1] >= limit // 2:
        return head[: ends[-1]].rstrip()
    space = head.rfind(" ")
    return head[:space].rstrip() if space > 0 else head


def _passage_text(doc: str) -> str:
    """Paragraphs of a docstring, white space collapsed, cut at a boundary."""
    out = ""
    for para in _paragraphs(doc):
        joined = f"{out} {para}" if out else para
        if len(joined) > MAX_TEXT_CHARS:
            return out or _cut(para, MAX_TEXT_CHARS)
        out = joined
    return out


def _strip_self_label(text: str, name: str) -> str:
    """Remove a module docstring's label for its own module."""
    n = re.escape(name)
    text = re.sub(
        rf"^(?:module\s+)?`?{n}`?(?:\.py)?\s*(?:--|-|:|~+)\s*", "", text, flags=re.IGNORECASE
    )
    text = re.sub(
        rf"^the\s+`?{n}`?\s+(?:extension\s+)?module\s*:\s*", "", text, flags=re.IGNORECASE
    )
    text = re.sub(
        rf"^the\s+`?{n}`?\s+(?:extension\s+)?module\b", "This module", text, flags=re.IGNORECASE
    )
    text = re.sub(rf"^`?{n}`?(?:\s+module)?\s*\.?$", "", text, flags=re.IGNORECASE)
    return text.strip()


def _module_query(module: ModuleType) -> str | None:
    """What a module is for: the first sentence of its docstring, without its self-label."""
    doc = module.__doc__
    if not isinstance(doc, str):
        return None
    for para in _paragraphs(doc):
        text = _collapse(_URL.sub("", _strip_self_label(para, module.__name__)))
        if not re.search(r"[A-Za-z]{2}", text):
            continue
        sentence = _cut(_SENTENCE_END.split(text, maxsplit=1)[0], MAX_QUERY_CHARS)
        return sentence[0].upper() + sentence[1:]
    return None


# --------------------------------------------------------------------------------------------
# passages


def _import(name: str) -> ModuleType | str:
    """The module, or the reason it cannot be used."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return importlib.import_module(name)
    except ImportError as e:
        return f"not importable: {type(e).__name__}: {e}"


def _owner(obj: Any) -> str | None:
    """The module that defined ``obj``; for a C method bound to an instance, its class's."""
    owner = getattr(obj, "__module__", None)
    if owner is None:
        bound_to = getattr(obj, "__self__", None)
        if bound_to is not None and not isinstance(bound_to, ModuleType):
            owner = type(bound_to).__module__
    return owner if isinstance(owner, str) else None


def _belongs(obj: Any, module_name: str) -> bool:
    """Whether ``obj`` is defined by the module (or its package, or its C accelerator)."""
    owner = _owner(obj)
    if owner is None:
        return False
    last = module_name.rsplit(".", 1)[-1]
    return (
        owner == module_name
        or owner.startswith(module_name + ".")
        or (owner.startswith("_") and owner.lstrip("_").lower() == last.lower())
    )


def _own_doc(obj: Any) -> str | None:
    """The object's own docstring as passage text, or None when it is not a passage."""
    doc = getattr(obj, "__doc__", None)
    if not isinstance(doc, str):
        return None
    text = _passage_text(doc)
    if len(text) < MIN_DOC_CHARS or _AUTO_SIGNATURE.match(text):
        return None
    return text


def _inherited(cls: type, attr: str, doc: str | None) -> bool:
    return any(
        getattr(getattr(base, attr, None), "__doc__", None) == doc for base in cls.__mro__[1:]
    )


def _method_candidates(cls: type, prefix: str, module_name: str) -> list[tuple[int, _Passage]]:
    out = []
    for attr in sorted(vars(cls)):
        if attr.startswith("_"):
            continue
        value = vars(cls)[attr]
        if isinstance(value, staticmethod | classmethod):
            value = value.__func__
        if not inspect.isroutine(value) or _inherited(cls, attr, value.__doc__):
            continue
        text = _own_doc(value)
        if text is not None:
            out.append((id(value), _Passage(f"{prefix}.{attr}", module_name, 1, False, text)))
    return out


def _module_candidates(module: ModuleType, name: str) -> list[tuple[int, _Passage]]:
    """Every passage a module documents, with the ``id`` of the object behind it."""
    out: list[tuple[int, _Passage]] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecated attributes warn on access (typing.io)
        # __all__ too: names a module loads lazily (concurrent.futures.ThreadPoolExecutor,
        # unittest.IsolatedAsyncioTestCase) are then there whether or not someone used them.
        names = set(vars(module)) | set(getattr(module, "__all__", ()))
        for attr in sorted(n for n in names if not n.startswith("_")):
            obj = getattr(module, attr, None)
            if not (inspect.isroutine(obj) or inspect.isclass(obj)):
                continue
            if not _belongs(obj, name):
                continue
            alias = getattr(obj, "__name__", attr) != attr
            text = _own_doc(obj)
            if text is not None:
                out.append((id(obj), _Passage(f"{name}.{attr}", name, 0, alias, text)))
            if inspect.isclass(obj) and not alias:
                out.extend(_method_candidates(obj, f"{name}.{attr}", name))
    return out


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _select_passages(
    candidates: dict[str, list[tuple[int, _Passage]]], seed: int
) -> dict[str, list[_Passage]]:
    """Dedupe candidates and keep at most MAX_POSITIVES per module (see RULES)."""
    per_module: dict[str, list[_Passage]] = {}
    for name in sorted(candidates):
        seen_objects: set[int] = set()
        seen_texts: set[str] = set()
        kept = []
        for key, p in sorted(
            candidates[name], key=lambda kp: (kp[1].tier, kp[1].alias, kp[1].doc_id)
        ):
            if key in seen_objects or p.text in seen_texts:
                continue
            seen_objects.add(key)
            seen_texts.add(p.text)
            kept.append(p)
        per_module[name] = kept
    modules_of_text: dict[str, set[str]] = {}
    for name, passages in per_module.items():
        for p in passages:
            modules_of_text.setdefault(p.text, set()).add(name)
    out = {}
    for name, passages in per_module.items():
        unique = [p for p in passages if len(modules_of_text[p.text]) == 1]
        unique.sort(key=lambda p: (p.tier, _sha(f"{seed}:{p.doc_id}")))
        out[name] = unique[:MAX_POSITIVES]
    return out


# --------------------------------------------------------------------------------------------
# assembly (pure: no files)


def _pair_modules(
    queries: dict[str, str], passages: dict[str, list[_Passage]], skipped: dict[str, str]
) -> dict[str, str]:
    """Each query module's related module; drops (in place) modules left without one.

    A module whose related modules have all dropped out is dropped too, until nothing changes.
    """
    while True:
        related: dict[str, str] = {}
        orphans = []
        for m in sorted(queries):
            partner = next((r for r in RELATED[m] if r in passages and r != m), None)
            if partner is None:
                orphans.append(m)
            else:
                related[m] = partner
        if not orphans:
            return related
        for m in orphans:
            skipped[m] = f"none of the related modules {list(RELATED[m])} is available"
            del passages[m], queries[m]


def _assemble(seed: int) -> dict[str, Any]:
    """Queries, corpus, qrels and the recipe's content for the running interpreter."""
    skipped: dict[str, str] = {}
    queries: dict[str, str] = {}
    candidates: dict[str, list[tuple[int, _Passage]]] = {}
    for name in sorted(RELATED):
        module = _import(name)
        if isinstance(module, str):
            skipped[name] = module
            continue
        query = _module_query(module)
        if query is None:
            skipped[name] = "no module docstring to take a query from"
            continue
        queries[name] = query
        candidates[name] = _module_candidates(module, name)
    passages = _select_passages(candidates, seed)
    for name in sorted(passages):
        if len(passages[name]) < MIN_POSITIVES:
            skipped[name] = f"only {len(passages[name])} documented passages (< {MIN_POSITIVES})"
            del passages[name], queries[name]

    related = _pair_modules(queries, passages, skipped)
    qrels_rows: list[tuple[str, str, int]] = []
    for name in sorted(queries):
        qid = f"q-{name}"
        for p in sorted(passages[name], key=lambda p: p.doc_id):
            qrels_rows.append((qid, p.doc_id, 1))
        pool = sorted(passages[related[name]], key=lambda p: _sha(f"{seed}:{qid}:{p.doc_id}"))
        negatives = pool[:MAX_NEGATIVES]
        for p in sorted(negatives, key=lambda p: p.doc_id):
            qrels_rows.append((qid, p.doc_id, 0))

    corpus = sorted((p for ps in passages.values() for p in ps), key=lambda p: p.doc_id)
    return {
        "queries": [{"_id": f"q-{m}", "text": queries[m]} for m in sorted(queries)],
        "corpus": [{"_id": p.doc_id, "title": p.doc_id, "text": p.text} for p in corpus],
        "qrels": [list(row) for row in qrels_rows],
        "related": related,
        "skipped": dict(sorted(skipped.items())),
        "per_module": {
            m: {
                "positives": len(passages[m]),
                "negatives": sum(1 for q, _, r in qrels_rows if q == f"q-{m}" and r == 0),
                "related": related[m],
            }
            for m in sorted(queries)
        },
    }


# --------------------------------------------------------------------------------------------
# files


_README = """\
# pydocs: a retrieval sample built from the Python standard library's docstrings

Built by `ragnb.io.sample_data.build_sample` from the docstrings of the interpreter that ran it,

    {version}

following the recipe of the ARXIV subset of the Primer retrieval-response data (Schwartz,
Vasilyev and Sawaya, "How important is Recall for Measuring Retrieval Quality?", Appendix
A.1.1): a category name as the query, the category's texts as positives and a related category's
texts as negatives. Here a category is a standard-library module.

- `queries.jsonl`: {queries} queries, `q-<module>`; the text is the first sentence of the module's
  docstring, without the module's label for itself (so it says what the module is for without
  naming the identifier that every passage title carries).
- `corpus.jsonl`: {passages} passages, one per documented public function, class or method, ID and
  title the qualified name (`json.dumps`), text the docstring (white space collapsed, at most
  {max_chars} characters); at most {max_pos} per module.
- `qrels/test.tsv`: {pairs} judgements: every passage of a query's module is relevant (grade 1,
  {positives} pairs); up to {max_neg} passages of the related module (`recipe.json`, `related`) are
  judged non-relevant (grade 0, {negatives} pairs). Other passages are unjudged and, by
  construction, belong to other modules.
- `recipe.json`: the module list, the rules, the counts, the Python version and the sha256 of each
  file. A different Python version gives different docstrings, hence a different dataset; rebuild
  with `python -c "from ragnb.io.sample_data import build_sample; build_sample('data/pydocs')"`.

Labels follow from where a docstring lives, not from a judgement of its content, so some grade-0
or unjudged passages may well answer a query (a `gzip` function for "Interface to the libbzip2
compression library"), as with the arXiv categories of the original recipe.

## Licence

The queries and passages are CPython's docstrings, Copyright (c) Python Software Foundation, All
Rights Reserved (some carry their original authors' notices as well), distributed with Python
under the PSF License Agreement and the licences it lists
(https://docs.python.org/3/license.html). The selection, the IDs and the labels are ragnb's.
"""


def _check_target(out_dir: Path) -> None:
    """Refuse to replace a folder that a previous build did not write."""
    if not out_dir.exists():
        return
    if not out_dir.is_dir():
        raise FileExistsError(f"{out_dir} exists and is not a folder")
    if not any(out_dir.iterdir()):
        return
    recipe = out_dir / "recipe.json"
    from ragnb.io.files import read_json

    builder = read_json(recipe).get("builder") if recipe.is_file() else None
    if builder != BUILDER:
        raise FileExistsError(
            f"{out_dir} holds files that build_sample did not write (no recipe.json naming "
            f"{BUILDER}); choose an empty or new folder"
        )


def _swap_in(built: Path, out_dir: Path) -> None:
    """Put the finished folder ``built`` at ``out_dir``, keeping the old one until it is there."""
    if not out_dir.exists():
        os.replace(built, out_dir)
        return
    graveyard = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.old-", dir=out_dir.parent))
    try:
        os.replace(out_dir, graveyard / "old")
        try:
            os.replace(built, out_dir)
        except BaseException:
            os.replace(graveyard / "old", out_dir)
            raise
    finally:
        shutil.rmtree(graveyard, ignore_errors=True)


def _make_readable(folder: Path) -> None:
    """Give the temporary folder (0o700) and files (0o600) ordinary permissions."""
    for path in [folder, *sorted(folder.rglob("*"))]:
        path.chmod(0o755 if path.is_dir() else 0o644)


def _assemble_isolated(seed: int) -> dict[str, Any]:
    """Run :func:`_assemble` in a fresh interpreter (``python -I``) and return its result.

    Libraries imported by the calling process may patch the standard library (transformers adds
    ``logging.Logger.info_once``, others wrap ``inspect`` functions), which would change the
    docstrings read. A fresh interpreter that imports nothing but this module sees the stdlib as
    shipped, so the dataset depends on the CPython build alone.
    """
    import json
    import subprocess

    code = (
        "import json, sys\n"
        "from ragnb.io.sample_data import _assemble\n"
        "json.dump(_assemble(int(sys.argv[1])), sys.stdout)\n"
    )
    package_parent = str(Path(__file__).resolve().parents[2])
    proc = subprocess.run(
        [
            sys.executable,
            "-I",
            "-c",
            f"import sys; sys.path.insert(0, {package_parent!r})\n" + code,
            str(seed),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"collecting docstrings failed in a fresh interpreter:\n{proc.stderr}")
    return json.loads(proc.stdout)


def build_sample(
    out_dir: str | os.PathLike[str],
    *,
    min_queries: int = 30,
    min_passages: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """Build the ``pydocs`` dataset (BEIR layout) from the running interpreter's docstrings.

    Queries say what a standard-library module is for; a query's positives are its module's
    documented functions, classes and methods, its judged negatives come from a related module
    (see :data:`RELATED` and the module docstring). Deterministic: modules, attributes and
    passages are visited in sorted order and sampled with sha256 of ``seed`` and the IDs, so the
    same CPython build gives byte-identical files whatever the hash seed, environment or clock.

    The folder is written under a temporary name beside ``out_dir`` and renamed into place when
    complete; each file is itself written atomically. An interrupted build leaves the previous
    ``out_dir`` as it was.

    Parameters
    ----------
    out_dir : str or PathLike
        Target folder. Created if missing; if it exists it must be empty or hold an earlier
        build (a ``recipe.json`` naming this builder), which is replaced.
    min_queries : int, default 30
        Fewest queries accepted.
    min_passages : int, default 1000
        Fewest corpus passages accepted.
    seed : int, default 0
        Chooses which passages a module keeps when it has more than :data:`MAX_POSITIVES` and
        which related passages are the negatives.

    Returns
    -------
    dict
        The recipe, as written to ``recipe.json``: ``modules`` (``requested``, ``used``,
        ``skipped`` with reasons), ``related``, ``rules``, ``python`` (``sys.version``),
        ``counts`` (``queries``, ``passages``, ``qrels_pairs``, ``positives``, ``negatives``,
        ``per_module``) and ``files`` (sha256 hex digest of each other file).

    Files
    -----
    ``corpus.jsonl`` (``_id``, ``title``, ``text``), ``queries.jsonl`` (``_id``, ``text``),
    ``qrels/test.tsv`` (``query-id  corpus-id  score``, 1 relevant, 0 judged non-relevant),
    ``README.md``, ``recipe.json``.

    Raises
    ------
    ValueError
        If ``min_queries``, ``min_passages`` or ``seed`` is not a non-negative integer.
    RuntimeError
        If docstrings are stripped (``python -OO``) or the interpreter yields fewer than
        ``min_queries`` queries or ``min_passages`` passages.
    FileExistsError
        If ``out_dir`` is a file, or a non-empty folder that this function did not write.

    References
    ----------
    Schwartz, Vasilyev and Sawaya, "How important is Recall for Measuring Retrieval Quality?",
    Primer Technologies, Appendix A.1.1 (the ARXIV query-texts samples).

    Examples
    --------
    >>> recipe = build_sample("data/pydocs")  # doctest: +SKIP
    >>> recipe["counts"]["queries"] >= 30  # doctest: +SKIP
    True
    """
    for label, value in (
        ("min_queries", min_queries),
        ("min_passages", min_passages),
        ("seed", seed),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{label} must be a non-negative integer, got {value!r}")
    if sys.flags.optimize >= 2:
        raise RuntimeError("docstrings are stripped (python -OO); build_sample needs them")
    out_dir = Path(out_dir)
    _check_target(out_dir)

    import pandas as pd

    from ragnb.io.files import write_json

    data = _assemble_isolated(seed)
    qrels = pd.DataFrame(data["qrels"], columns=["query_id", "doc_id", "relevance"]).astype(
        {"query_id": object, "doc_id": object, "relevance": "int64"}
    )
    counts = {
        "queries": len(data["queries"]),
        "passages": len(data["corpus"]),
        "qrels_pairs": len(qrels),
        "positives": int((qrels["relevance"] == 1).sum()),
        "negatives": int((qrels["relevance"] == 0).sum()),
        "per_module": data["per_module"],
    }
    if counts["queries"] < min_queries or counts["passages"] < min_passages:
        raise RuntimeError(
            f"this interpreter gives {counts['queries']} queries and {counts['passages']} "
            f"passages, fewer than min_queries={min_queries} or min_passages={min_passages}; "
            f"skipped modules: {data['skipped']}"
        )

    out_dir.parent.mkdir(parents=True, exist_ok=True)
    built = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.build-", dir=out_dir.parent))
    try:
        files = _write_dataset(built, data, qrels, counts)
        recipe = _recipe(data, counts, seed, files)
        write_json(recipe, built / "recipe.json")
        _make_readable(built)
        _swap_in(built, out_dir)
    except BaseException:
        with contextlib.suppress(OSError):
            shutil.rmtree(built)
        raise
    return recipe


def _write_dataset(
    built: Path, data: dict[str, Any], qrels: Any, counts: dict[str, Any]
) -> dict[str, str]:
    """Write the corpus, queries, qrels and README into ``built``; their sha256 by name."""
    from ragnb.core.provenance import file_sha256
    from ragnb.io.files import atomic_write, write_jsonl, write_qrels

    write_jsonl(data["corpus"], built / "corpus.jsonl")
    write_jsonl(data["queries"], built / "queries.jsonl")
    write_qrels(qrels, built / "qrels" / "test.tsv", form="beir")
    with atomic_write(built / "README.md") as f:
        f.write(
            _README.format(
                version=sys.version.replace("\n", " "),
                queries=counts["queries"],
                passages=counts["passages"],
                pairs=counts["qrels_pairs"],
                positives=counts["positives"],
                negatives=counts["negatives"],
                max_pos=MAX_POSITIVES,
                max_neg=MAX_NEGATIVES,
                max_chars=MAX_TEXT_CHARS,
            )
        )
    files = ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv", "README.md")
    return {name: file_sha256(built / name) for name in files}


def _recipe(
    data: dict[str, Any], counts: dict[str, Any], seed: int, files: dict[str, str]
) -> dict[str, Any]:
    """The content of ``recipe.json``: source, parameters, rules, modules, counts, file hashes."""
    return {
        "name": DATASET_NAME,
        "builder": BUILDER,
        "reference": REFERENCE,
        "source": "docstrings of the Python standard library of the interpreter that ran "
        "the build (inspect.cleandoc of each object's own __doc__)",
        "licence": "PSF License Agreement (https://docs.python.org/3/license.html)",
        "python": {
            "version": sys.version,
            "implementation": sys.implementation.name,
        },
        "seed": seed,
        "parameters": {
            "max_positives": MAX_POSITIVES,
            "max_negatives": MAX_NEGATIVES,
            "min_positives": MIN_POSITIVES,
            "min_doc_chars": MIN_DOC_CHARS,
            "max_text_chars": MAX_TEXT_CHARS,
            "max_query_chars": MAX_QUERY_CHARS,
        },
        "rules": RULES,
        "modules": {
            "requested": {m: list(RELATED[m]) for m in sorted(RELATED)},
            "used": sorted(data["related"]),
            "skipped": data["skipped"],
        },
        "related": data["related"],
        "counts": counts,
        "files": files,
    }
