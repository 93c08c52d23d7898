"""Chunkers, chunk runs and chunk qrels for CLQ sweeps; SciFact rationale alignment."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from ragnb.errors import InputError
from ragnb.io.files import read_beir
from ragnb.studies.clq.chunking import (
    CHUNK_COLUMNS,
    Chunker,
    chunk_corpus,
    collapse_to_documents,
    split_sentences,
)
from ragnb.studies.clq.evidence import chunk_qrels, scifact_evidence

WORDS = " ".join(f"w{i}" for i in range(25))
SENTS = [
    "Alpha beta gamma.",  # 3 tokens
    "Delta epsilon.",  # 2
    "Zeta eta theta iota kappa lambda.",  # 6
    "Mu nu.",  # 2
    "Xi omicron pi rho sigma tau upsilon phi chi psi omega one two.",  # 13, longer than size
    "Three four five.",  # 3
]


def _corpus(text: str, title: str = "Greek letters") -> pd.DataFrame:
    return pd.DataFrame({"doc_id": ["d1"], "title": [title], "text": [text]})


def test_token_windows_cover_every_token_with_exact_overlap() -> None:
    chunks = chunk_corpus(_corpus(WORDS), Chunker("tokens", 10, 3))
    assert list(chunks.columns) == list(CHUNK_COLUMNS)
    windows = [t.split() for t in chunks["text"]]
    assert [w[0] for w in windows] == ["w0", "w7", "w14", "w21"]
    assert windows[-1][-1] == "w24"
    covered = {w for win in windows for w in win}
    assert covered == set(WORDS.split())
    for a, b in zip(windows, windows[1:], strict=False):
        assert len(a) == 10 and a[-3:] == b[:3]  # exactly 3 tokens shared
    assert chunks["chunk_id"].tolist() == ["d1#0", "d1#1", "d1#2", "d1#3"]
    assert chunks["position"].tolist() == [0, 1, 2, 3]
    assert chunks["n_tokens"].tolist() == [10, 10, 10, 4]


def test_short_document_is_one_window() -> None:
    chunks = chunk_corpus(_corpus("a b c"), "tokens-10-3")
    assert chunks["text"].tolist() == ["a b c"]


def test_sentence_windows_never_split_a_sentence() -> None:
    text = " ".join(SENTS)
    chunks = chunk_corpus(_corpus(text), Chunker("sentences", 8, 3))
    firsts, lasts = chunks["first_sentence"].tolist(), chunks["last_sentence"].tolist()
    for body, f, last in zip(chunks["text"], firsts, lasts, strict=True):
        assert body == " ".join(SENTS[f : last + 1])  # whole sentences only
        n = len(body.split())
        assert n <= 8 or f == last  # over size only as a single long sentence
    assert firsts[0] == 0 and lasts[-1] == len(SENTS) - 1
    assert all(b > a for a, b in zip(firsts, firsts[1:], strict=False))  # always progresses
    for prev_last, nxt_first in zip(lasts, firsts[1:], strict=False):
        assert nxt_first <= prev_last + 1  # no sentence skipped
        repeated = SENTS[nxt_first : prev_last + 1]
        assert sum(len(s.split()) for s in repeated) <= 3  # overlap budget
    # the hand-worked packing: [0,1] (5) | [1] carried + [2] is 8 | [3] (carry of 6 too big) ...
    assert list(zip(firsts, lasts, strict=True)) == [(0, 1), (1, 2), (3, 3), (4, 4), (5, 5)]


def test_sentence_overlap_is_about_the_budget() -> None:
    sents = [f"S{i} " + " ".join(["word"] * 9) + "." for i in range(12)]  # 10 tokens each
    chunks = chunk_corpus(_corpus(" ".join(sents)), "sentences-50-20")
    spans = list(zip(chunks["first_sentence"], chunks["last_sentence"], strict=True))
    assert spans[0] == (0, 4)
    assert all(b[0] == a[1] - 1 for a, b in zip(spans, spans[1:], strict=False))  # 2 sentences
    assert (chunks["n_tokens"] <= 50).all()


def test_breadcrumb_prefix() -> None:
    plain = chunk_corpus(_corpus(" ".join(SENTS)), "sentences-8-3")
    crumb = chunk_corpus(_corpus(" ".join(SENTS)), "sentences-8-3+title")
    assert (crumb["text"] == "Greek letters > " + plain["text"]).all()
    assert (crumb["n_tokens"] == plain["n_tokens"] + 3).all()  # "Greek letters >"
    untitled = chunk_corpus(_corpus("A b.", title=""), "document+title")
    assert untitled["text"].tolist() == ["A b."]


def test_document_chunker() -> None:
    chunks = chunk_corpus(_corpus(" ".join(SENTS)), "document")
    assert len(chunks) == 1 and chunks["text"][0] == " ".join(SENTS)
    assert (chunks["first_sentence"][0], chunks["last_sentence"][0]) == (0, len(SENTS) - 1)


@pytest.mark.parametrize(
    "name", ["document", "document+title", "tokens-256-64", "sentences-200-70+title", "tokens-1-0"]
)
def test_chunker_names_round_trip(name: str) -> None:
    chunker = Chunker.parse(name)
    assert chunker.name == name and Chunker.parse(chunker.name) == chunker


def test_chunker_validation() -> None:
    assert Chunker("document", 300, 20) == Chunker("document")
    for bad in ["tokens", "tokens-10", "document-10-2", "words-10-2", "tokens-10-2+author"]:
        with pytest.raises(InputError, match="cannot parse"):
            Chunker.parse(bad)
    with pytest.raises(InputError, match="overlap must be in"):
        Chunker("tokens", 10, 10)
    with pytest.raises(InputError, match="size must be >= 1"):
        Chunker("sentences", 0, 0)
    with pytest.raises(InputError, match="known kinds: document, tokens, sentences"):
        Chunker("paragraphs", 10, 0)
    with pytest.raises(InputError, match="tokenizer"):
        chunk_corpus(_corpus("a"), "tokens-5-1", tokenizer="bpe")
    with pytest.raises(InputError, match="'text' column"):
        chunk_corpus(pd.DataFrame({"doc_id": ["a"]}), "document")


def test_callable_tokenizer_and_words() -> None:
    text = "Hello, world. Bye now."
    words = chunk_corpus(_corpus(text), "tokens-3-1", tokenizer="words")
    assert words["text"].tolist() == ["Hello, world", "world. Bye", "Bye now."]
    calls = chunk_corpus(_corpus(text), "tokens-3-1", tokenizer=lambda t: t.split())
    assert calls["text"].tolist() == ["Hello, world. Bye", "Bye now."]
    with pytest.raises(InputError, match="substrings"):
        chunk_corpus(_corpus(text), "tokens-3-1", tokenizer=lambda t: t.lower().split())


def test_token_windows_map_to_sentences() -> None:
    chunks = chunk_corpus(_corpus(" ".join(SENTS)), "tokens-4-1")
    # tokens 0-3: "Alpha beta gamma. Delta" -> sentences 0..1; tokens 3-6 -> 1..2
    assert (chunks["first_sentence"][0], chunks["last_sentence"][0]) == (0, 1)
    assert (chunks["first_sentence"][1], chunks["last_sentence"][1]) == (1, 2)


def test_split_sentences_keeps_abbreviations() -> None:
    text = (
        "Results differ, e.g. in mice. Smith et al. reported this in Fig. 2 of the study. "
        'J. Doe agreed (p = 0.05). 12 cases were new! Were they? "Yes." Done'
    )
    assert split_sentences(text) == [
        "Results differ, e.g. in mice.",
        "Smith et al. reported this in Fig. 2 of the study.",
        "J. Doe agreed (p = 0.05).",
        "12 cases were new!",
        "Were they?",
        '"Yes."',
        "Done",
    ]
    assert split_sentences("   ") == []


def test_collapse_keeps_best_chunk() -> None:
    chunks = chunk_corpus(
        pd.DataFrame({"doc_id": ["a", "b"], "title": ["", ""], "text": [WORDS, "x y"]}),
        "tokens-10-0",
    )
    run = pd.DataFrame(
        {
            "query_id": ["q1", "q1", "q1", "q2", "q2"],
            "doc_id": ["a#0", "a#2", "b#0", "a#1", "a#0"],
            "score": [0.3, 0.8, 0.5, 0.4, 0.4],
        }
    )
    out = collapse_to_documents(run, chunks)
    q1 = out[out["query_id"] == "q1"]
    assert q1["doc_id"].tolist() == ["a", "b"] and q1["score"].tolist() == [0.8, 0.5]
    assert q1["best_chunk_id"].tolist() == ["a#2", "b#0"] and q1["rank"].tolist() == [1, 2]
    q2 = out[out["query_id"] == "q2"]
    assert q2["best_chunk_id"].tolist() == ["a#0"]  # a tie goes to the earlier chunk
    bad = pd.DataFrame({"query_id": ["q9"], "doc_id": ["zz#0"], "score": [1.0]})
    with pytest.raises(InputError, match="query 'q9'.*'zz#0'"):
        collapse_to_documents(bad, chunks)


def test_chunk_qrels_evidence_and_fallback() -> None:
    chunks = pd.DataFrame(
        {
            "chunk_id": ["a#0", "a#1", "a#2", "b#0", "b#1"],
            "doc_id": ["a", "a", "a", "b", "b"],
            "first_sentence": [0, 2, 3, 0, 2],
            "last_sentence": [2, 3, 5, 2, 4],
        }
    )
    qrels = pd.DataFrame(
        {
            "query_id": ["q", "q", "r", "s"],
            "doc_id": ["a", "b", "a", "zz"],
            "relevance": [2, 1, 0, 1],
        }
    )
    out = chunk_qrels(qrels, chunks, {("q", "a"): {3}, ("r", "a"): {0}})
    got = {(q, c): g for q, c, g in out.itertuples(index=False)}
    # evidence sentence 3 lies in a#1 (2-3) and a#2 (3-5), not a#0 (0-2)
    assert got[("q", "a#0")] == 0 and got[("q", "a#1")] == 2 and got[("q", "a#2")] == 2
    # no evidence for (q, b): document-level fallback
    assert got[("q", "b#0")] == 1 and got[("q", "b#1")] == 1
    # a non-relevant pair stays non-relevant on every chunk
    assert [got[("r", c)] for c in ("a#0", "a#1", "a#2")] == [0, 0, 0]
    assert out.attrs == {
        "n_pairs_evidence": 1,
        "n_pairs_fallback": 2,
        "n_pairs_without_chunks": 1,
    }
    assert out["relevance"].dtype == "int64"
    with pytest.raises(InputError, match="outside its 6 sentences"):
        chunk_qrels(qrels, chunks, {("q", "a"): {6}})


# ----------------------------------------------------------------------------- SciFact


@pytest.fixture(scope="module")
def scifact(scifact_path: Path):
    evidence, sentences = scifact_evidence(scifact_path / "raw")
    ds = read_beir(scifact_path, split="test")
    return ds, evidence, sentences


def test_scifact_ids_and_text_align(scifact) -> None:
    ds, evidence, sentences = scifact
    assert set(sentences) == set(ds.corpus["doc_id"])
    queries = set(ds.queries["query_id"])
    assert {q for q, _ in evidence} <= queries
    qrel_pairs = set(zip(ds.qrels["query_id"], ds.qrels["doc_id"], strict=True))
    test_pairs = {p for p in evidence if p[0] in set(ds.qrels["query_id"])}
    assert test_pairs and test_pairs <= qrel_pairs  # rationales name judged documents
    # the (escaped) sentence lists join into exactly BEIR's corpus text, for every document
    text = dict(zip(ds.corpus["doc_id"], ds.corpus["text"], strict=True))
    assert all(" ".join(s) == text[d] for d, s in sentences.items())


@pytest.mark.parametrize("name", ["sentences-60-20+title", "tokens-48-12"])
def test_scifact_evidence_lands_in_its_chunks(scifact, name: str) -> None:
    ds, evidence, sentences = scifact
    pairs = [p for p in zip(ds.qrels["query_id"], ds.qrels["doc_id"], strict=True)]
    docs = list(dict.fromkeys(d for _, d in pairs))[:100]
    corpus = ds.corpus[ds.corpus["doc_id"].isin(docs)]
    qrels = ds.qrels[ds.qrels["doc_id"].isin(docs)]
    chunks = chunk_corpus(corpus, name, sentences=sentences)
    cq = chunk_qrels(qrels, chunks, evidence)
    assert cq.attrs["n_pairs_evidence"] > 30 and cq.attrs["n_pairs_fallback"] > 0
    text_of = dict(zip(chunks["chunk_id"], chunks["text"], strict=True))
    checked = 0
    for (qid, did), idx in evidence.items():
        if did not in docs or qid not in set(qrels["query_id"]):
            continue
        rel = cq[(cq["query_id"] == qid) & cq["doc_id"].str.startswith(f"{did}#")]
        hits = rel[rel["relevance"] > 0]["doc_id"].tolist()
        assert hits
        union = " ".join(text_of[c] for c in hits)
        for i in idx:
            sentence = sentences[did][i]
            if name.startswith("sentences"):
                # whole sentences: some relevant chunk holds the evidence sentence verbatim
                assert any(sentence in text_of[c] for c in hits), (qid, did, i)
            else:
                # windows overlapping the sentence are relevant: together they hold all its words
                assert set(re.findall(r"\S+", sentence)) <= set(union.split()), (qid, did, i)
            checked += 1
        misses = rel[rel["relevance"] == 0]["doc_id"].tolist()
        for c in misses:  # a chunk marked 0 holds none of the evidence sentences
            assert not any(sentences[did][i] in text_of[c] for i in idx)
    assert checked > 50


def test_scifact_bad_lines_name_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "corpus_train.csv").write_text(
        "doc_id,title,abstract,structured\n1,T,\"['First one.'\n 'Second.']\",False\n"
    )
    (tmp_path / "claims_train.csv").write_text(
        "id,claim,evidence_doc_id,evidence_label,evidence_sentences,cited_doc_ids\n"
        "5,c,1,SUPPORT,[1],[1]\n"
        "6,c,1,SUPPORT,[one],[1]\n"
    )
    with pytest.raises(InputError, match=r"claims_train\.csv, line 3.*evidence_sentences"):
        scifact_evidence(tmp_path)
    (tmp_path / "claims_train.csv").write_text(
        "id,claim,evidence_doc_id,evidence_label,evidence_sentences,cited_doc_ids\n"
        "5,c,1,SUPPORT,[0 1],[1]\n"
        "6,c,1,CONTRADICT,[1],[1]\n"
    )
    evidence, sentences = scifact_evidence(tmp_path)
    assert evidence == {("5", "1"): {0, 1}, ("6", "1"): {1}}
    assert sentences == {"1": ["First one.", "Second."]}
    (tmp_path / "claims_train.csv").write_text(
        "id,claim,evidence_doc_id,evidence_label,evidence_sentences,cited_doc_ids\n"
        "5,c,1,SUPPORT,[2],[1]\n"
    )
    with pytest.raises(InputError, match="line 2.*query '5'.*outside its 2 sentences"):
        scifact_evidence(tmp_path)
    (tmp_path / "corpus_train.csv").write_text(
        "doc_id,title,abstract,structured\n1,T,\"['First one.' oops]\",False\n"
    )
    with pytest.raises(InputError, match=r"corpus_train\.csv, line 2.*oops"):
        scifact_evidence(tmp_path)
    with pytest.raises(FileNotFoundError, match="no SciFact"):
        scifact_evidence(tmp_path / "missing")


def test_scifact_jsonl_release_and_its_malformed_lines(tmp_path: Path) -> None:
    corpus = '{"doc_id": 1, "abstract": ["First one.", "Second."]}\n'
    (tmp_path / "corpus.jsonl").write_text(corpus)
    claims = '{"id": 5, "evidence": {"1": [{"sentences": [1], "label": "SUPPORT"}]}}\n'
    (tmp_path / "claims_train.jsonl").write_text("\n" + claims)  # a blank line is skipped
    evidence, sentences = scifact_evidence(tmp_path)
    assert evidence == {("5", "1"): {1}}
    assert sentences == {"1": ["First one.", "Second."]}
    (tmp_path / "claims_train.jsonl").write_text(claims + "\n" + '{"id": 6,\n')
    with pytest.raises(InputError, match=r"claims_train\.jsonl, line 3.*malformed claim record"):
        scifact_evidence(tmp_path)
    (tmp_path / "corpus.jsonl").write_text(corpus + "{oops\n")
    with pytest.raises(InputError, match=r"corpus\.jsonl, line 2.*malformed corpus record: Exp"):
        scifact_evidence(tmp_path)
