"""Chunk-level qrels from sentence evidence, and SciFact's rationales that provide it.

Where a dataset marks the sentences that support a judgement (SciFact's rationales, read by
:func:`scifact_evidence`), :func:`chunk_qrels` maps the document qrels onto the chunks of
:func:`ragnb.studies.clq.chunking.chunk_corpus`: the chunk that holds the evidence is relevant, the
other chunks of the same document are not. This is the dataset-given analogue of SPEAR's "minimal
retrieval facts".

References
----------
SPEAR: subset-sampled retriever evaluation (rednote), section 2.3 (minimal retrieval facts).
Wadden et al., "Fact or Fiction: Verifying Scientific Claims", EMNLP 2020 (SciFact rationales).
"""

from __future__ import annotations

import ast
import csv
import io
import re
import zipfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import pandas as pd

from ragnb.core.validation import require_columns
from ragnb.errors import InputError
from ragnb.io.readers import iter_json_lines
from ragnb.studies.clq.chunking import chunk_index

__all__ = ["chunk_qrels", "scifact_evidence"]


# --------------------------------------------------------------------------------------------
# qrels over chunks


def chunk_qrels(
    qrels: pd.DataFrame,
    chunks: pd.DataFrame,
    evidence: Mapping[tuple[str, str], Iterable[int]] | None = None,
) -> pd.DataFrame:
    """Document qrels mapped onto chunks, using sentence evidence where the dataset marks it.

    For each judged (query, document) pair and each chunk of the document:

    * the pair has evidence (``evidence[(query_id, doc_id)]`` non-empty) and a positive grade:
      a chunk that holds an evidence sentence (its ``[first_sentence, last_sentence]`` range holds
      one; for token windows, overlaps one) gets the pair's grade, the other chunks of the
      document get 0 (judged: the annotators marked where the evidence is);
    * otherwise (no evidence marked, or a grade <= 0): document-level fallback, every chunk of the
      document gets the pair's grade.

    Parameters
    ----------
    qrels : DataFrame
        ``query_id``, ``doc_id``, ``relevance`` (document-level).
    chunks : DataFrame
        The chunk frame (:func:`ragnb.studies.clq.chunking.chunk_corpus`). Judged documents without
        chunks (not in the chunked corpus) are left out and counted in
        ``attrs["n_pairs_without_chunks"]``.
    evidence : mapping of (query_id, doc_id) to set of int, optional
        0-based sentence indexes of each pair's evidence, as :func:`scifact_evidence` returns.

    Returns
    -------
    DataFrame
        A qrels frame over chunk ids: ``query_id``, ``doc_id`` (the chunk id), ``relevance``
        (int64). ``attrs`` holds ``n_pairs_evidence``, ``n_pairs_fallback``,
        ``n_pairs_without_chunks``.

    Raises
    ------
    InputError
        Missing columns, or an evidence sentence index beyond the document's sentences (naming
        the query).

    References
    ----------
    SPEAR, section 2.3 (minimal retrieval facts: the relevant unit is the text that holds the
    answer, not the chunk around it); Wadden et al. 2020 (SciFact rationales).

    Examples
    --------
    >>> import pandas as pd
    >>> chunks = pd.DataFrame({"chunk_id": ["a#0", "a#1", "b#0"], "doc_id": ["a", "a", "b"],
    ...                        "first_sentence": [0, 2, 0], "last_sentence": [2, 4, 3]})
    >>> qrels = pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "b"], "relevance": [1, 1]})
    >>> chunk_qrels(qrels, chunks, {("q", "a"): {4}}).values.tolist()
    [['q', 'a#0', 0], ['q', 'a#1', 1], ['q', 'b#0', 1]]
    """
    require_columns(qrels, ("query_id", "doc_id", "relevance"), "qrels frame")
    chunk_index(chunks)
    evidence = evidence or {}
    by_doc: dict[str, list[tuple[str, int, int]]] = {}
    for cid, did, first, last in zip(
        chunks["chunk_id"].astype(str),
        chunks["doc_id"].astype(str),
        chunks["first_sentence"].astype(int),
        chunks["last_sentence"].astype(int),
        strict=True,
    ):
        by_doc.setdefault(did, []).append((cid, first, last))
    rows = []
    n_evidence = n_fallback = n_missing = 0
    for qid, did, grade in zip(
        qrels["query_id"].astype(str),
        qrels["doc_id"].astype(str),
        qrels["relevance"].astype(int),
        strict=True,
    ):
        doc_chunks = by_doc.get(did)
        if doc_chunks is None:
            n_missing += 1
            continue
        marked = {int(i) for i in evidence.get((qid, did), ())}
        if marked and grade > 0:
            n_sent = max(last for _, _, last in doc_chunks) + 1
            bad = [i for i in marked if i < 0 or i >= n_sent]
            if bad:
                raise InputError(
                    f"evidence sentence {bad[0]} of document {did!r} is outside its "
                    f"{n_sent} sentences",
                    query_id=qid,
                )
            n_evidence += 1
            for cid, first, last in doc_chunks:
                hit = any(first <= i <= last for i in marked)
                rows.append((qid, cid, grade if hit else 0))
        else:
            n_fallback += 1
            rows.extend((qid, cid, grade) for cid, _, _ in doc_chunks)
    out = pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"])
    out["relevance"] = out["relevance"].astype("int64")
    out.attrs.update(
        n_pairs_evidence=n_evidence, n_pairs_fallback=n_fallback, n_pairs_without_chunks=n_missing
    )
    return out


# --------------------------------------------------------------------------------------------
# SciFact rationales

_STRING_LITERAL = re.compile(r"'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"", re.DOTALL)
_INT_LIST = re.compile(r"^\[\s*((?:\d+[\s,]*)*)\]$")


def _beir_escape(s: str) -> str:
    """The escaping BEIR's scifact corpus.jsonl applied: backslashes doubled, non-printable
    characters as Python escapes (``\\n``, ``\\u200b``)."""
    if s.isprintable() and "\\" not in s:
        return s
    return "".join(
        "\\\\" if ch == "\\" else ch if ch.isprintable() or ch == " " else repr(ch)[1:-1]
        for ch in s
    )


def _parse_sentence_list(value: str, where: str, line: int) -> list[str]:
    """Parse numpy's repr of a string array: ``['a' 'b'\\n 'c']``."""
    value = value.strip()
    if not (value.startswith("[") and value.endswith("]")):
        raise InputError("abstract is not a bracketed list of sentences", path=where, line=line)
    inner = value[1:-1]
    out, pos = [], 0
    for m in _STRING_LITERAL.finditer(inner):
        if inner[pos : m.start()].strip():
            raise InputError(
                f"unexpected text {inner[pos : m.start()].strip()[:40]!r} between sentences",
                path=where,
                line=line,
            )
        literal = m.group(0)
        if "\\" not in literal:  # no escapes: the text between the quotes is the string
            out.append(literal[1:-1])
            pos = m.end()
            continue
        try:
            out.append(ast.literal_eval(literal))
        except (SyntaxError, ValueError) as e:
            raise InputError(f"bad sentence literal: {e}", path=where, line=line) from None
        pos = m.end()
    if inner[pos:].strip():
        raise InputError(
            f"unexpected text {inner[pos:].strip()[:40]!r} after the sentences",
            path=where,
            line=line,
        )
    return out


def _csv_records(
    f: io.TextIOBase, where: str, required: tuple[str, ...]
) -> Iterator[tuple[int, dict[str, str]]]:
    """(start line, record) of a CSV file with a header; InputError on missing columns."""
    reader = csv.reader(f)
    try:
        header = next(reader)
    except StopIteration:
        raise InputError("empty file, expected a CSV header", path=where, line=1) from None
    missing = [c for c in required if c not in header]
    if missing:
        raise InputError(f"CSV header lacks {missing} (has {header})", path=where, line=1)
    prev = reader.line_num
    while True:
        start = prev + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            raise InputError(f"malformed CSV: {e}", path=where, line=start) from None
        prev = reader.line_num
        if len(row) != len(header):
            raise InputError(
                f"expected {len(header)} fields, got {len(row)}", path=where, line=start
            )
        yield start, dict(zip(header, row, strict=True))


class _Source:
    """The SciFact release files, in a zip, a folder of CSVs, or a folder of the original jsonl."""

    def __init__(self, raw: Path) -> None:
        self.raw = raw
        self.zip: zipfile.ZipFile | None = None
        if raw.is_file() and raw.suffix == ".zip":
            self.zip = zipfile.ZipFile(raw)
        elif raw.is_dir() and (raw / "scifact.zip").exists():
            self.zip = zipfile.ZipFile(raw / "scifact.zip")
        elif not raw.is_dir():
            raise FileNotFoundError(f"no SciFact raw folder or zip at {raw}")
        self.names = (
            sorted(n for n in self.zip.namelist() if not n.endswith("/"))
            if self.zip
            else sorted(str(p.relative_to(raw)) for p in raw.rglob("*") if p.is_file())
        )

    def where(self, name: str) -> str:
        return f"{self.zip.filename}:{name}" if self.zip else str(self.raw / name)

    def find(self, pattern: str) -> list[str]:
        rx = re.compile(pattern)
        return [n for n in self.names if rx.search(n)]

    def open(self, name: str) -> io.TextIOBase:
        if self.zip:
            return io.TextIOWrapper(self.zip.open(name), encoding="utf-8", newline="")
        return (self.raw / name).open(encoding="utf-8", newline="")


def _int_list(value: str, where: str, line: int, column: str) -> list[int]:
    m = _INT_LIST.match(value.strip())
    if m is None:
        raise InputError(
            f"expected a list of integers, got {value[:40]!r}", path=where, line=line, column=column
        )
    return [int(t) for t in re.findall(r"\d+", m.group(1))]


def scifact_evidence(
    raw_dir: str | Path, *, escape: bool = True
) -> tuple[dict[tuple[str, str], set[int]], dict[str, list[str]]]:
    """Read SciFact's rationale sentences and abstract sentence lists.

    Parameters
    ----------
    raw_dir : str or Path
        The SciFact release: a ``scifact.zip`` (or a folder holding it) of CSV files
        (``claims_{train,validation,test}.csv`` with ``id``, ``evidence_doc_id``,
        ``evidence_sentences`` as ``"[2 5]"``, one row per evidence set; ``corpus_train.csv`` with
        ``doc_id`` and ``abstract`` as numpy's repr of the sentence list), a folder of those CSVs,
        or a folder of the original jsonl files (``claims_*.jsonl`` with ``evidence``
        ``{doc_id: [{"sentences": [...], "label": ...}]}``, ``corpus.jsonl`` with ``doc_id`` and
        ``abstract`` lists).
    escape : bool, default True
        Escape sentences as BEIR's ``scifact/corpus.jsonl`` does (backslashes doubled,
        non-printable characters such as newlines written as ``\\n``), so that they join with
        single spaces into exactly the BEIR corpus text.

    Returns
    -------
    evidence : dict of (query_id, doc_id) to set of int
        0-based sentence indexes of the rationales (union over evidence sets and labels,
        SUPPORT and CONTRADICT) for every claim of every split. Claim ids are BEIR's
        ``queries.jsonl`` ids (BEIR's scifact ``test`` split is SciFact's validation split, and its
        qrels pairs are the claims' cited documents; cited documents without rationales have no
        entry and fall back to document level in :func:`chunk_qrels`).
    sentences : dict of doc_id to list of str
        The abstract of each document as its sentence list.

    Raises
    ------
    FileNotFoundError
        No zip or folder at ``raw_dir``, or no claims or corpus file in it (listing its files).
    InputError
        A malformed record (naming the file and its line) or a rationale index outside its
        abstract.

    References
    ----------
    Wadden et al., "Fact or Fiction: Verifying Scientific Claims", EMNLP 2020.
    """
    src = _Source(Path(raw_dir))
    claims = src.find(r"(^|/)claims_[^/]*\.(csv|jsonl)$")
    corpora = src.find(r"(^|/)corpus[^/]*\.(csv|jsonl)$")
    if not claims or not corpora:
        raise FileNotFoundError(
            f"{raw_dir} holds no SciFact claims_*.csv/jsonl and corpus file; it holds "
            f"{src.names[:20]}"
        )
    sentences: dict[str, list[str]] = {}
    for name in corpora:
        sentences.update(_read_scifact_corpus(src, name))
    if escape:
        sentences = {d: [_beir_escape(s) for s in ss] for d, ss in sentences.items()}
    evidence: dict[tuple[str, str], set[int]] = {}
    for name in claims:
        for line, qid, did, idx in _read_scifact_claims(src, name):
            n = len(sentences.get(did, ()))
            bad = [i for i in idx if i >= n]
            if bad:
                raise InputError(
                    f"rationale sentence {bad[0]} of document {did!r} is outside its {n} sentences",
                    path=src.where(name),
                    line=line,
                    query_id=qid,
                )
            evidence.setdefault((qid, did), set()).update(idx)
    return evidence, sentences


def _read_scifact_corpus(src: _Source, name: str) -> Iterator[tuple[str, list[str]]]:
    where = src.where(name)
    with src.open(name) as f:
        if name.endswith(".csv"):
            for line, rec in _csv_records(f, where, ("doc_id", "abstract")):
                yield rec["doc_id"].strip(), _parse_sentence_list(rec["abstract"], where, line)
            return
        for line, obj in iter_json_lines(f, where, "malformed corpus record: {error}"):
            try:
                did, abstract = str(obj["doc_id"]), obj["abstract"]
            except (KeyError, TypeError) as e:
                raise InputError(f"malformed corpus record: {e}", path=where, line=line) from None
            if not isinstance(abstract, list) or not all(isinstance(s, str) for s in abstract):
                raise InputError("abstract is not a list of strings", path=where, line=line)
            yield did, abstract


def _read_scifact_claims(src: _Source, name: str) -> Iterator[tuple[int, str, str, list[int]]]:
    where = src.where(name)
    with src.open(name) as f:
        if name.endswith(".csv"):
            for line, rec in _csv_records(
                f, where, ("id", "evidence_doc_id", "evidence_sentences")
            ):
                did = rec["evidence_doc_id"].strip()
                idx = _int_list(rec["evidence_sentences"], where, line, "evidence_sentences")
                if not did:
                    if idx:
                        raise InputError(
                            "evidence sentences without an evidence_doc_id", path=where, line=line
                        )
                    continue
                yield line, rec["id"].strip(), did, idx
            return
        for line, obj in iter_json_lines(f, where, "malformed claim record: {error}"):
            try:
                qid, ev = str(obj["id"]), obj.get("evidence") or {}
                for did, sets in ev.items():
                    idx = [int(i) for s in sets for i in s["sentences"]]
                    yield line, qid, str(did), idx
            except (KeyError, TypeError, ValueError, AttributeError) as e:
                raise InputError(f"malformed claim record: {e}", path=where, line=line) from None
