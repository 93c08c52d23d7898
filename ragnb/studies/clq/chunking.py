"""Chunking a corpus for cost-latency-quality sweeps, and mapping judgements to chunks.

A sweep that varies the chunker (SPEAR's "segmentation strategy" dimension; Dallaire's fixed
"sentence-aligned chunks with ~70-token overlap plus breadcrumb metadata") needs three things:

1. chunkers with names that round-trip (``"tokens-256-64"``, ``"sentences-200-70+title"``),
   :class:`Chunker` and :func:`chunk_corpus`;
2. a way to score chunk runs against document qrels, :func:`collapse_to_documents` (best chunk
   per document), so that runs over different segmentations stay comparable (SPEAR section 2.3:
   chunks of different lengths that hold the same ground truth must not count as different hits);
3. chunk-level qrels from sentence evidence, :func:`ragnb.studies.clq.evidence.chunk_qrels`, where
   the dataset marks the sentences that support a judgement (SciFact's rationales, read by
   :func:`ragnb.studies.clq.evidence.scifact_evidence`): the chunk that holds the evidence is
   relevant, the other chunks of the same document are not. This is the dataset-given analogue of
   SPEAR's "minimal retrieval facts".

Tokens
------
Window sizes and overlaps count *tokens* of a simple tokenizer, not LLM tokens: by default
``"whitespace"`` (maximal runs of non-space characters, ``\\S+``), or ``"words"`` (runs of word
characters and single punctuation marks, ``\\w+|[^\\w\\s]``), or a callable ``text -> list[str]``.
English prose has about 1.3 BPE tokens per whitespace token; use
:func:`ragnb.llm.ledger.count_tokens` on the chunk texts to price them.

Chunk frame
-----------
``chunk_id`` (str, ``"{doc_id}#{position}"``), ``doc_id`` (str), ``position`` (int, 0-based within
the document), ``title`` (str), ``text`` (str, the chunk text, prefixed with ``"{title} > "`` when
the chunker has ``breadcrumb``), ``first_sentence``, ``last_sentence`` (int, 0-based indexes of the
document sentences the chunk covers or, for token windows, overlaps; -1 for an empty document),
``n_tokens`` (int, tokens of ``text`` including the breadcrumb).

References
----------
Dallaire, "Practical RAG Evaluation: A Rarity-Aware Set-Based Metric and Cost-Latency-Quality
Trade-offs", arXiv 2511.09545, sections 3.1 and 3.5 (chunking), 3.2 (tokens per candidate drive
cost).
SPEAR: subset-sampled retriever evaluation (rednote), section 2.3 (cross-segmentation comparison)
and appendix B (segmentation strategies: original, nms, nmns).
Wadden et al., "Fact or Fiction: Verifying Scientific Claims", EMNLP 2020 (SciFact rationales).
"""

from __future__ import annotations

import bisect
import re
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ragnb.core.validation import require_columns
from ragnb.errors import InputError
from ragnb.frames.index import sort_run
from ragnb.frames.schema import check_run

__all__ = [
    "CHUNKER_KINDS",
    "CHUNK_COLUMNS",
    "Chunker",
    "chunk_corpus",
    "collapse_to_documents",
    "split_sentences",
    "chunk_index",
]

CHUNKER_KINDS: tuple[str, ...] = ("document", "tokens", "sentences")
CHUNK_COLUMNS: tuple[str, ...] = (
    "chunk_id",
    "doc_id",
    "position",
    "title",
    "text",
    "first_sentence",
    "last_sentence",
    "n_tokens",
)
BREADCRUMB_SEPARATOR = " > "

Tokenizer = str | Callable[[str], Sequence[str]]


# --------------------------------------------------------------------------------------------
# chunkers

_NAME = re.compile(r"^(document|tokens|sentences)(?:-(\d+)-(\d+))?(\+title)?$")


@dataclass(frozen=True)
class Chunker:
    """How to cut documents into chunks. The name round-trips through :meth:`parse`.

    Parameters
    ----------
    kind : {"document", "tokens", "sentences"}
        ``"document"``: one chunk per document. ``"tokens"``: windows of ``size`` tokens, each
        starting ``size - overlap`` tokens after the previous one (the last window ends at the
        document's last token). ``"sentences"``: whole sentences packed greedily up to ``size``
        tokens (a longer sentence is a chunk on its own: sentences are never split); each chunk
        after the first starts by repeating the longest run of the previous chunk's last
        sentences that fits in ``overlap`` tokens (sentence-aligned overlap, Dallaire section 3.1
        uses about 70 tokens), dropping repeated sentences when they would push the chunk's first
        new sentence over ``size``.
    size : int
        Tokens per window (``tokens``) or the most tokens per chunk (``sentences``); ``>= 1``.
        Set to 0 for ``document``.
    overlap : int
        Tokens shared by consecutive windows (``tokens``) or the most tokens of repeated
        sentences (``sentences``); ``0 <= overlap < size``. Set to 0 for ``document``.
    breadcrumb : bool, default False
        Prefix each chunk with ``"{title} > "`` (the document title; Dallaire's breadcrumb
        "paper -> section -> subsection" reduced to the one level a BEIR corpus has). Documents
        without a title get no prefix.

    Raises
    ------
    InputError
        Unknown kind, or sizes outside the ranges above.

    Examples
    --------
    >>> Chunker("sentences", 200, 70, breadcrumb=True).name
    'sentences-200-70+title'
    >>> Chunker.parse("tokens-256-64")
    Chunker(kind='tokens', size=256, overlap=64, breadcrumb=False)
    >>> Chunker("document", size=512).name  # size is ignored for whole documents
    'document'
    """

    kind: str
    size: int = 0
    overlap: int = 0
    breadcrumb: bool = False

    def __post_init__(self) -> None:
        if self.kind not in CHUNKER_KINDS:
            raise InputError(
                f"unknown chunker kind {self.kind!r}; known kinds: {', '.join(CHUNKER_KINDS)}"
            )
        for name in ("size", "overlap"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | np.integer):
                raise InputError(f"chunker {name} must be an integer, got {value!r}")
        if not isinstance(self.breadcrumb, bool):
            raise InputError(f"chunker breadcrumb must be True or False, got {self.breadcrumb!r}")
        if self.kind == "document":
            object.__setattr__(self, "size", 0)
            object.__setattr__(self, "overlap", 0)
            return
        object.__setattr__(self, "size", int(self.size))
        object.__setattr__(self, "overlap", int(self.overlap))
        if self.size < 1:
            raise InputError(f"{self.kind} chunker size must be >= 1, got {self.size}")
        if not 0 <= self.overlap < self.size:
            raise InputError(
                f"{self.kind} chunker overlap must be in [0, size={self.size}), got {self.overlap}"
            )

    @property
    def name(self) -> str:
        """``document``, ``tokens-{size}-{overlap}`` or ``sentences-{size}-{overlap}``, plus
        ``+title`` with a breadcrumb."""
        base = self.kind if self.kind == "document" else f"{self.kind}-{self.size}-{self.overlap}"
        return base + ("+title" if self.breadcrumb else "")

    @classmethod
    def parse(cls, name: str) -> Chunker:
        """The chunker named ``name`` (the inverse of :attr:`name`).

        Raises
        ------
        InputError
            A name that does not follow the grammar, listing the accepted forms.
        """
        m = _NAME.match(name.strip()) if isinstance(name, str) else None
        if m is None or (m.group(1) == "document") != (m.group(2) is None):
            raise InputError(
                f"cannot parse chunker name {name!r}; expected 'document', "
                "'tokens-<size>-<overlap>' or 'sentences-<size>-<overlap>', optionally "
                "followed by '+title'"
            )
        kind, size, overlap, title = m.groups()
        return cls(kind, int(size or 0), int(overlap or 0), breadcrumb=title is not None)

    def __str__(self) -> str:
        return self.name


# --------------------------------------------------------------------------------------------
# sentences and tokens

# Words after which a period does not end a sentence (compared lower-cased, without the period).
_ABBREVIATIONS = frozenset(
    "e.g i.e al fig figs eq eqs ref refs dr mr mrs ms prof vs cf approx no nos vol pp ca resp "
    "sp spp st jr sr inc ltd co corp dept univ".split()
)
_BOUNDARY = re.compile(r"[.!?]+[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
_LAST_WORD = re.compile(r"(\S+)$")


def _sentence_spans(text: str) -> list[tuple[int, int]]:
    """Character spans ``[start, end)`` of the sentences of ``text`` (see split_sentences)."""
    spans = []
    start = 0
    for m in _BOUNDARY.finditer(text):
        head = text[start : m.start() + 1]
        word = _LAST_WORD.search(head)
        if word is not None:
            w = word.group(1).lower().rstrip(".!?").lstrip("(\"'[")
            if w in _ABBREVIATIONS or (len(w) == 1 and w.isalpha()):
                continue  # "e.g. The", "et al. 2020", "J. Smith"
        end = m.end()
        sentence_end = end - (len(m.group(0)) - len(m.group(0).rstrip()))
        if text[start:sentence_end].strip():
            spans.append(_strip_span(text, start, sentence_end))
        start = end
    if text[start:].strip():
        spans.append(_strip_span(text, start, len(text)))
    return spans


def _strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def split_sentences(text: str) -> list[str]:
    """Split English prose into sentences with a regular expression.

    A sentence ends at ``.``, ``!`` or ``?`` (optionally followed by closing quotes or brackets)
    followed by white space and a capital letter or digit (optionally after an opening quote or
    bracket). A period after a known abbreviation (``e.g.``, ``i.e.``, ``et al.``, ``Fig.``,
    ``vs.``, ...) or a single letter (an initial, ``J. Smith``) does not end a sentence.
    Decimals (``1.5``) never split because no space follows the period.

    Parameters
    ----------
    text : str

    Returns
    -------
    list of str
        The sentences, stripped of surrounding white space; ``[]`` for blank text.

    Raises
    ------
    InputError
        ``text`` is not a string.

    Notes
    -----
    Where a dataset gives its own sentence split (SciFact's abstracts are lists of sentences, see
    :func:`ragnb.studies.clq.evidence.scifact_evidence`), pass it to :func:`chunk_corpus` as
    ``sentences`` instead, so that sentence indexes agree with the dataset's evidence.

    Examples
    --------
    >>> for s in split_sentences("Cells grew, e.g. in vitro. Smith et al. 2020 disagree! "
    ...                          "Rates were 1.5 times higher? Yes."):
    ...     print(s)
    Cells grew, e.g. in vitro.
    Smith et al. 2020 disagree!
    Rates were 1.5 times higher?
    Yes.
    """
    if not isinstance(text, str):
        raise InputError(f"text must be a string, got {type(text).__name__}")
    return [text[a:b] for a, b in _sentence_spans(text)]


_TOKEN_PATTERNS = {"whitespace": re.compile(r"\S+"), "words": re.compile(r"\w+|[^\w\s]")}


def _token_counter(tokenizer: Tokenizer) -> Callable[[str], int]:
    if isinstance(tokenizer, str):
        pattern = _token_pattern(tokenizer)
        return lambda text: sum(1 for _ in pattern.finditer(text))
    return lambda text: len(tokenizer(text))


def _token_pattern(name: str) -> re.Pattern[str]:
    if name not in _TOKEN_PATTERNS:
        raise InputError(
            f"unknown tokenizer {name!r}; known: {', '.join(_TOKEN_PATTERNS)} or a callable"
        )
    return _TOKEN_PATTERNS[name]


def _token_spans(text: str, tokenizer: Tokenizer, doc_id: str) -> list[tuple[int, int]]:
    """Character spans of the tokens of ``text``."""
    if isinstance(tokenizer, str):
        return [m.span() for m in _token_pattern(tokenizer).finditer(text)]
    spans = []
    pos = 0
    for tok in tokenizer(text):
        at = text.find(tok, pos)
        if not tok or at < 0:
            raise InputError(
                f"document {doc_id!r}: the tokenizer returned {tok!r}, which is not the next "
                "piece of the text; token windows need a tokenizer whose tokens are substrings "
                "of the text in order (use 'whitespace' or 'words')"
            )
        spans.append((at, at + len(tok)))
        pos = at + len(tok)
    return spans


# --------------------------------------------------------------------------------------------
# chunking


def _check_corpus(corpus: pd.DataFrame) -> None:
    if not isinstance(corpus, pd.DataFrame):
        raise InputError(f"corpus must be a DataFrame, got {type(corpus).__name__}")
    for col in ("doc_id", "text"):
        if col not in corpus.columns:
            raise InputError(
                f"corpus frame has no {col!r} column (columns: {list(corpus.columns)})",
                column=col,
            )
    dup = corpus["doc_id"].astype(str).duplicated()
    if dup.any():
        raise InputError(
            f"corpus has a duplicate doc_id {corpus['doc_id'][dup].iloc[0]!r}", column="doc_id"
        )


def _sentence_windows(lengths: list[int], size: int, overlap: int) -> list[tuple[int, int]]:
    """Chunks as sentence ranges ``[start, end)``: greedy packing with sentence-aligned overlap."""
    n = len(lengths)
    out: list[tuple[int, int]] = []
    i = 0  # first sentence not yet in any chunk
    prev_start = -1
    while i < n:
        start = i
        carried = 0
        if out:  # repeat the previous chunk's tail, at most `overlap` tokens, never all of it
            while start - 1 > prev_start and carried + lengths[start - 1] <= overlap:
                start -= 1
                carried += lengths[start]
        while start < i and carried + lengths[i] > size:
            carried -= lengths[start]
            start += 1
        total = carried + lengths[i]
        end = i + 1
        while end < n and total + lengths[end] <= size:
            total += lengths[end]
            end += 1
        out.append((start, end))
        prev_start, i = start, end
    return out


def _token_windows(n_tokens: int, size: int, overlap: int) -> list[tuple[int, int]]:
    """Token ranges ``[start, end)``: stride ``size - overlap``, the last ending at ``n_tokens``."""
    if n_tokens <= size:
        return [(0, n_tokens)]
    stride = size - overlap
    out = []
    start = 0
    while True:
        end = min(start + size, n_tokens)
        out.append((start, end))
        if end == n_tokens:
            return out
        start += stride


def chunk_corpus(
    corpus: pd.DataFrame,
    chunker: Chunker | str,
    *,
    tokenizer: Tokenizer = "whitespace",
    sentences: Mapping[str, Sequence[str]] | None = None,
) -> pd.DataFrame:
    """Cut every document of a corpus into chunks.

    Parameters
    ----------
    corpus : DataFrame
        Columns ``doc_id``, ``text`` and optionally ``title`` (the corpus frame of
        :func:`ragnb.io.files.read_beir`).
    chunker : Chunker or str
        A chunker or its name (``"sentences-200-70+title"``).
    tokenizer : {"whitespace", "words"} or callable, default "whitespace"
        What a token is, for sizes, overlaps and ``n_tokens`` (see the module docstring). A
        callable ``text -> list[str]``; for ``tokens`` chunkers its tokens must be substrings of
        the text in order.
    sentences : mapping of doc_id to list of str, optional
        The dataset's own sentence split (e.g. from
        :func:`ragnb.studies.clq.evidence.scifact_evidence`). For the documents it holds, the
        document text is taken to be the sentences joined by one space (a ``UserWarning`` counts
        documents whose corpus text differs from that), so sentence indexes agree with the dataset's
        evidence. Other documents are split with :func:`split_sentences`.

    Returns
    -------
    DataFrame
        The chunk frame (module docstring), documents in corpus order, chunks in text order.
        Every document yields at least one chunk (an empty document one empty chunk, with
        sentences -1).

    Raises
    ------
    InputError
        A corpus without ``doc_id`` or ``text``, duplicate doc ids, an unknown chunker name or
        tokenizer, or a callable tokenizer unusable for windows.

    References
    ----------
    Dallaire, arXiv 2511.09545, sections 3.1 and 3.5; SPEAR, appendix B.

    Examples
    --------
    >>> import pandas as pd
    >>> corpus = pd.DataFrame({"doc_id": ["d"], "title": ["T"],
    ...                        "text": ["One two three. Four five. Six seven eight."]})
    >>> chunks = chunk_corpus(corpus, "sentences-5-2+title")
    >>> cols = ["chunk_id", "text", "first_sentence", "last_sentence", "n_tokens"]
    >>> for row in chunks[cols].values:
    ...     print(*row, sep=" | ")
    d#0 | T > One two three. Four five. | 0 | 1 | 7
    d#1 | T > Four five. Six seven eight. | 1 | 2 | 7
    """
    if isinstance(chunker, str):
        chunker = Chunker.parse(chunker)
    if not isinstance(chunker, Chunker):
        raise InputError(f"chunker must be a Chunker or its name, got {type(chunker).__name__}")
    _check_corpus(corpus)
    if isinstance(tokenizer, str):
        _token_pattern(tokenizer)
    elif not callable(tokenizer):
        raise InputError(f"tokenizer must be a name or a callable, got {tokenizer!r}")
    count = _token_counter(tokenizer)
    titles = corpus["title"] if "title" in corpus.columns else pd.Series([""] * len(corpus))
    rows: list[tuple[Any, ...]] = []
    n_differ = 0
    for doc_id, title, text in zip(
        corpus["doc_id"].astype(str), titles.fillna("").astype(str), corpus["text"], strict=True
    ):
        if not isinstance(text, str):
            raise InputError(f"text of document {doc_id!r} is not a string", column="text")
        if sentences is not None and doc_id in sentences:
            sents = [str(s) for s in sentences[doc_id]]
            joined = " ".join(sents)
            n_differ += joined != text
            text = joined
            spans, pos = [], 0
            for s in sents:
                spans.append((pos, pos + len(s)))
                pos += len(s) + 1
        else:
            spans = _sentence_spans(text)
        prefix = f"{title}{BREADCRUMB_SEPARATOR}" if chunker.breadcrumb and title else ""
        for position, (body, first, last) in enumerate(
            _chunk_document(doc_id, text, spans, chunker, tokenizer, count)
        ):
            full = prefix + body
            rows.append(
                (f"{doc_id}#{position}", doc_id, position, title, full, first, last, count(full))
            )
    if n_differ:
        warnings.warn(
            f"{n_differ} documents' corpus text differs from their given sentences joined by "
            "spaces; chunks were built from the given sentences",
            UserWarning,
            stacklevel=2,
        )
    out = pd.DataFrame(rows, columns=list(CHUNK_COLUMNS))
    for col in ("position", "first_sentence", "last_sentence", "n_tokens"):
        out[col] = out[col].astype("int64")
    return out


def _chunk_document(
    doc_id: str,
    text: str,
    spans: list[tuple[int, int]],
    chunker: Chunker,
    tokenizer: Tokenizer,
    count: Callable[[str], int],
) -> Iterator[tuple[str, int, int]]:
    """(chunk body, first sentence, last sentence) for one document."""
    n_sent = len(spans)
    if chunker.kind == "document" or not text.strip():
        yield text, (0 if n_sent else -1), n_sent - 1
        return
    if chunker.kind == "sentences":
        lengths = [count(text[a:b]) for a, b in spans]
        for start, end in _sentence_windows(lengths, chunker.size, chunker.overlap):
            yield text[spans[start][0] : spans[end - 1][1]], start, end - 1
        return
    tokens = _token_spans(text, tokenizer, doc_id)
    if not tokens:
        yield text, (0 if n_sent else -1), n_sent - 1
        return
    starts = [a for a, _ in spans]
    ends = [b for _, b in spans]
    for a, b in _token_windows(len(tokens), chunker.size, chunker.overlap):
        lo, hi = tokens[a][0], tokens[b - 1][1]
        if n_sent:
            first = bisect.bisect_right(ends, lo)  # first sentence ending after the window start
            last = bisect.bisect_left(starts, hi) - 1  # last sentence starting before its end
            first, last = min(first, n_sent - 1), max(last, 0)
        else:
            first = last = -1
        yield text[lo:hi], first, last


# --------------------------------------------------------------------------------------------
# runs over chunks


def chunk_index(chunks: pd.DataFrame) -> pd.DataFrame:
    """``chunks`` itself, once checked to hold the columns that locate a chunk.

    Parameters
    ----------
    chunks : DataFrame
        The chunks of :func:`chunk_corpus`: ``chunk_id``, ``doc_id``, ``first_sentence``,
        ``last_sentence`` (0-based sentence numbers in the document).

    Returns
    -------
    DataFrame

    Raises
    ------
    InputError
        Naming a missing column.
    """
    require_columns(
        chunks,
        ("chunk_id", "doc_id", "first_sentence", "last_sentence"),
        "chunks frame (make it with chunk_corpus)",
    )
    return chunks


def collapse_to_documents(run: pd.DataFrame, chunks: pd.DataFrame) -> pd.DataFrame:
    """Turn a run over chunks into a run over documents: each document scores its best chunk.

    Parameters
    ----------
    run : DataFrame
        A run frame (``query_id``, ``doc_id``, ``score``) whose ``doc_id`` are chunk ids.
    chunks : DataFrame
        The chunk frame the run retrieved from (:func:`chunk_corpus`).

    Returns
    -------
    DataFrame
        A run frame in trec_eval order (:func:`ragnb.frames.index.sort_run`): ``query_id``,
        ``doc_id`` (the document), ``score`` (float, its best chunk's score), ``best_chunk_id``
        (str; ties between chunks go to the earlier chunk) and ``rank`` (int, 1-based). A run of the
        top ``k`` chunks gives at most ``k`` documents; retrieve more chunks to fill ``k``
        documents.

    Raises
    ------
    InputError
        A malformed run, or a chunk id that is not in ``chunks`` (naming the query).

    References
    ----------
    SPEAR, section 2.3: retrievers with different segmentations are compared on what they
    recall, not on their chunk boundaries.

    Examples
    --------
    >>> import pandas as pd
    >>> chunks = pd.DataFrame({"chunk_id": ["a#0", "a#1", "b#0"], "doc_id": ["a", "a", "b"],
    ...                        "first_sentence": [0, 1, 0], "last_sentence": [0, 1, 0]})
    >>> run = pd.DataFrame({"query_id": ["q"] * 3, "doc_id": ["a#0", "a#1", "b#0"],
    ...                     "score": [0.2, 0.9, 0.5]})
    >>> collapse_to_documents(run, chunks)[["doc_id", "score", "best_chunk_id"]].values.tolist()
    [['a', 0.9, 'a#1'], ['b', 0.5, 'b#0']]
    """
    check_run(run)
    chunk_index(chunks)
    doc_of = pd.Series(chunks["doc_id"].astype(str).values, index=chunks["chunk_id"].astype(str))
    if doc_of.index.has_duplicates:
        dup = doc_of.index[doc_of.index.duplicated()][0]
        raise InputError(f"chunks frame has a duplicate chunk_id {dup!r}", column="chunk_id")
    position = pd.Series(np.arange(len(doc_of)), index=doc_of.index)
    frame = pd.DataFrame(
        {
            "query_id": run["query_id"].astype(str).values,
            "chunk_id": run["doc_id"].astype(str).values,
            "score": run["score"].astype("float64").values,
        }
    )
    frame["doc_id"] = frame["chunk_id"].map(doc_of)
    unknown = frame["doc_id"].isna()
    if unknown.any():
        row = frame[unknown].iloc[0]
        raise InputError(
            f"run retrieves {row['chunk_id']!r}, which is not in the chunks frame "
            f"({int(unknown.sum())} such rows)",
            query_id=row["query_id"],
        )
    frame["_order"] = frame["chunk_id"].map(position)
    frame = frame.sort_values(
        ["query_id", "doc_id", "score", "_order"], ascending=[True, True, False, True]
    )
    best = frame.drop_duplicates(["query_id", "doc_id"], keep="first")
    out = pd.DataFrame(
        {
            "query_id": best["query_id"].values,
            "doc_id": best["doc_id"].values,
            "score": best["score"].values,
            "best_chunk_id": best["chunk_id"].values,
        }
    )
    return sort_run(out, warn=False).run
