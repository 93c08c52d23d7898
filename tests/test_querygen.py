"""Synthetic queries (ragnb.studies.retrieval.querygen): generation through the chat client, the
round-trip filter, near-duplicate removal, the written BEIR folder, cache and ledger."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from ragnb.core.cache import Cache
from ragnb.errors import InputError
from ragnb.io.files import read_beir
from ragnb.llm import ChatClient
from ragnb.llm.ledger import Ledger
from ragnb.llm.transport import RetryPolicy
from ragnb.studies.retrieval.querygen import (
    QUERYGEN_STAGE,
    QueryGenerator,
    dedupe,
    is_synthetic,
    normalise_query,
    read_query_metadata,
    round_trip,
    style_grammar,
    synthesize_queries,
    synthetic_notice,
    write_synthetic,
)

CORPUS = pd.DataFrame(
    {
        "doc_id": ["d1", "d2", "d3", "d4"],
        "title": ["Aspirin", "", "", "Graphene"],
        "text": [
            "Acetylsalicylic acid inhibits cyclooxygenase enzymes and lowers prostaglandin "
            "synthesis in platelets.",
            "The mitochondrial membrane potential drives ATP synthase in eukaryotic cells "
            "during respiration.",
            "Regulatory T cells suppress autoimmunity through interleukin ten and TGF beta "
            "signalling pathways.",
            "Its high electron mobility makes it attractive for fast transistors and gas sensors.",
        ],
    }
)

#: What the scripted model answers, by the first words of the passage in the prompt.
ANSWERS = {
    "Aspirin. Acetylsalicylic": "1. how does aspirin inhibit cyclooxygenase",
    "The mitochondrial": "1. What drives ATP synthase in eukaryotic cells?",
    "Regulatory T cells": "1. I wonder how volcanoes erupt lava, can you explain?",
    "Graphene. Its high": "1. graphene electron mobility transistors",
}


#: A phrase of each style's shipped prompt.
MARKS = {
    "keyword": "short keyword query",
    "question": "write one question",
    "conversational": "chat assistant",
}


def scripted(answers: dict[str, str]):
    """A chat handler answering by the passage in the prompt."""

    def handler(request):
        content = request.json["messages"][0]["content"]
        for start, answer in answers.items():
            if f"Passage:\n{start}" in content:
                return answer
        return "no answer scripted"

    return handler


def make_generator(server, tmp_path: Path, concurrency: int = 8, **kwargs) -> QueryGenerator:
    client = ChatClient(
        "test-gen",
        base_url=server.base_url,
        api_key="sk-test",
        cache=Cache(tmp_path / "cache"),
        ledger=Ledger(tmp_path / "ledger.jsonl"),
        progress=False,
        concurrency=concurrency,
        retry=RetryPolicy(max_attempts=2, backoff_base=0.01, backoff_max=0.02),
    )
    return QueryGenerator(client, **kwargs)


# ----------------------------------------------------------------------------- generation


def test_generation_sends_each_style_prompt_and_grammar(openai_server, tmp_path):
    openai_server.chat.handler = scripted(ANSWERS)
    gen = make_generator(openai_server, tmp_path, grammar=True, max_tokens=48)
    styles = ["keyword", "question", "conversational", "keyword"]
    out = gen.generate(CORPUS, styles)
    assert out["query_id"].tolist() == [
        "syn-keyword-d1",
        "syn-question-d2",
        "syn-conversational-d3",
        "syn-keyword-d4",
    ]
    assert out["style"].tolist() == styles
    assert out["valid"].all() and (out["status"] == "ok").all()
    assert out.loc[1, "text"] == "What drives ATP synthase in eukaryotic cells?"
    assert out["model"].eq("test-gen").all() and out["prompt"][0].startswith("querygen-keyword/")
    bodies = openai_server.bodies("/v1/chat/completions")
    assert len(bodies) == 4
    sent = []  # requests go out concurrently: tell each one's style by its prompt
    for body in bodies:
        content = body["messages"][0]["content"]
        style = next(s for s, m in MARKS.items() if m in content)
        assert body["grammar"] == style_grammar(style) and body["max_tokens"] == 48
        sent.append(style)
    assert sorted(sent) == sorted(styles)
    assert out["input_tokens"].gt(0).all() and out["output_tokens"].gt(0).all()


def test_without_grammar_no_grammar_field_and_other_cache_keys(openai_server, tmp_path):
    openai_server.chat.handler = scripted(ANSWERS)
    plain = make_generator(openai_server, tmp_path, max_tokens=None)
    plain.generate(CORPUS.head(1), "keyword")
    body = openai_server.bodies("/v1/chat/completions")[-1]
    assert "grammar" not in body and "max_tokens" not in body
    # the grammar is part of the key: the same passage is sent again with it
    make_generator(openai_server, tmp_path, grammar=True).generate(CORPUS.head(1), "keyword")
    assert openai_server.request_count() == 2


def test_unusable_answers_are_invalid_with_their_reason(openai_server, tmp_path):
    copy = "1. " + CORPUS.loc[1, "text"][:70]
    openai_server.chat.handler = scripted(
        {
            "Aspirin. Acetylsalicylic": "Sure! Here is a query: aspirin",  # not "1. ..."
            "The mitochondrial": copy,  # a span of the passage
            "Regulatory T cells": "1. tregs",  # one word
            "Graphene. Its high": "1. graphene mobility\n2. transistors",  # two queries
        }
    )
    out = make_generator(openai_server, tmp_path).generate(CORPUS, "keyword")
    assert not out["valid"].any() and out["text"].isna().all()
    reasons = out["reason"].tolist()
    assert "after a reminder" in reasons[0]
    assert reasons[1] == "copies a span of the passage"
    assert reasons[2].startswith("fewer than two words")
    assert reasons[3] == "expected one query, got 2 lines"
    # the first answer got one reminder: five requests for four passages
    assert openai_server.request_count() == 5


def test_bad_styles_and_prompts_are_refused(openai_server, tmp_path):
    gen = make_generator(openai_server, tmp_path)
    with pytest.raises(InputError, match="unknown query style 'casual'"):
        gen.generate(CORPUS, "casual")
    with pytest.raises(InputError, match="unknown query style"):
        style_grammar("casual")
    with pytest.raises(InputError, match="extract prompt with a numbered_list"):
        make_generator(openai_server, tmp_path, prompts={"keyword": "utility-rubric"})
    with pytest.raises(InputError, match="'text' column"):
        gen.generate(CORPUS[["doc_id"]], "keyword")


# ----------------------------------------------------------------------------- filter, dedupe


def candidates(texts: dict[str, str | None]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "query_id": [f"q-{d}" for d in texts],
            "doc_id": list(texts),
            "text": list(texts.values()),
            "valid": [t is not None for t in texts.values()],
        }
    )


def test_round_trip_keeps_queries_whose_source_comes_back():
    cand = candidates(
        {
            "d1": "aspirin cyclooxygenase prostaglandin",  # its own passage
            "d2": "interleukin TGF beta autoimmunity",  # about d3, not d2
            "d3": None,  # invalid: never searched
            "d4": "graphene transistors",
        }
    )
    out = round_trip(cand, "bm25", corpus=CORPUS, k=1)
    assert out["round_trip"].tolist() == [True, False, False, True]
    assert out["source_rank"].tolist()[0] == 1.0 and out["source_rank"].isna().tolist() == [
        False,
        True,
        True,
        False,
    ]
    # a query matching its source and another passage equally well: rank 1 or 2 by tie order;
    # with k=4 every query whose source shares a term comes back
    deep = round_trip(cand, "bm25", corpus=CORPUS, k=4)
    assert deep["round_trip"].tolist() == [True, False, False, True]
    with pytest.raises(InputError, match="k must be a positive integer"):
        round_trip(cand, "bm25", corpus=CORPUS, k=0)


def test_dedupe_by_normalised_text_and_jaccard():
    q = pd.DataFrame(
        {
            "query_id": ["a", "b", "c", "d", "e", "f"],
            "text": [
                "What is BM25?",
                "what is  bm25",  # same normalised text as a
                "alpha beta gamma delta",
                "alpha beta gamma delta epsilon",  # Jaccard 4/5 = 0.8 with c
                "alpha beta gamma",  # 3/4 = 0.75 with c, 3/5 with d: kept
                None,
            ],
        }
    )
    out = dedupe(q, threshold=0.8)
    assert out["duplicate_of"].tolist() == [None, "a", None, "c", None, None]
    assert dedupe(q, threshold=0.75)["duplicate_of"].tolist() == [None, "a", None, "c", "c", None]
    # only the rows taking part are compared
    among = pd.Series([False, True, True, True, True, False])
    assert dedupe(q, among=among)["duplicate_of"].tolist() == [None, None, None, "c", None, None]
    assert normalise_query("  Ｗhat is   BM25's k1? ") == "what is bm25 s k1"
    with pytest.raises(InputError, match=r"threshold must be in \(0, 1\]"):
        dedupe(q, threshold=0)


# ----------------------------------------------------------------------------- the pipeline


def test_pipeline_writes_a_synthetic_beir_folder(openai_server, tmp_path):
    answers = dict(ANSWERS)
    answers["Graphene. Its high"] = "1. How does aspirin inhibit cyclooxygenase?"  # a near-dup
    openai_server.chat.handler = scripted(answers)
    gen = make_generator(openai_server, tmp_path, grammar=True)
    passages = CORPUS.iloc[[0, 1, 2, 3]].reset_index(drop=True)
    result = synthesize_queries(gen, CORPUS, passages=passages, style="question", k=2)
    c = result.candidates
    # d3's query is about volcanoes: bm25 does not bring d3 back; d4's duplicates d1's
    assert c["round_trip"].tolist() == [True, True, False, False]
    assert c["kept"].tolist() == [True, True, False, False]
    stats = result.stats()
    assert stats["valid"] == 4 and stats["round_trip"] == 2 and stats["pass_rate"] == 0.5
    assert stats["kept"] == 2 and stats["by_style"] == {"question": 2}

    corpus_file = tmp_path / "corpus.jsonl"
    corpus_file.write_text(
        "".join(
            json.dumps({"_id": d, "title": t, "text": x}) + "\n"
            for d, t, x in zip(CORPUS["doc_id"], CORPUS["title"], CORPUS["text"], strict=True)
        )
    )
    folder = write_synthetic(result, tmp_path / "beir", corpus_path=corpus_file)
    lines = [json.loads(x) for x in (folder / "queries.jsonl").read_text().splitlines()]
    assert lines[0] == {
        "_id": "syn-question-d1",
        "text": "how does aspirin inhibit cyclooxygenase",
        "metadata": {
            "synthetic": True,
            "source_doc": "d1",
            "style": "question",
            "model": "test-gen",
        },
    }
    assert (folder / "qrels" / "synthetic.tsv").read_text().splitlines() == [
        "query-id\tcorpus-id\tscore",
        "syn-question-d1\td1\t1",
        "syn-question-d2\td2\t1",
    ]
    assert (folder / "corpus.jsonl").is_symlink()
    data = read_beir(folder, split="synthetic")
    assert data.meta["synthetic"] is True and data.meta["filter"]["retriever"] == "bm25"
    assert len(data.judged_queries) == 2 and len(data.corpus) == 4
    meta = read_query_metadata(folder)
    assert meta["synthetic"].all() and meta["source_doc"].tolist() == ["d1", "d2"]
    assert is_synthetic(folder) and is_synthetic(data) and is_synthetic(folder / "queries.jsonl")
    assert is_synthetic(result.queries)
    notice = synthetic_notice(folder)
    assert notice is not None and notice.startswith("These 2 queries are synthetic")
    assert "test-gen" in notice and "bm25 found their source passage in its top 2" in notice


def test_real_queries_are_not_synthetic(tmp_path):
    (tmp_path / "queries.jsonl").write_text('{"_id": "1", "text": "what is bm25"}\n')
    assert not is_synthetic(tmp_path)
    assert synthetic_notice(tmp_path) is None
    assert not is_synthetic(pd.DataFrame({"query_id": ["1"], "text": ["x"]}))


def test_second_run_makes_no_calls_and_the_ledger_says_cached(openai_server, tmp_path):
    openai_server.chat.handler = scripted(ANSWERS)
    gen = make_generator(openai_server, tmp_path, grammar=True)
    first = synthesize_queries(gen, CORPUS, n=4, seed=3, k=2)
    sent = openai_server.request_count()
    assert sent == 4
    second = synthesize_queries(gen, CORPUS, n=4, seed=3, k=2)
    assert openai_server.request_count() == sent  # nothing sent
    assert second.candidates["cached"].all()
    pd.testing.assert_frame_equal(
        first.candidates.drop(columns=["cached", "attempts"]),
        second.candidates.drop(columns=["cached", "attempts"]),
    )
    ledger = gen.client.ledger.frame()
    assert set(ledger["stage"]) == {QUERYGEN_STAGE}
    assert (ledger["status"] == "ok").sum() == 4 and (ledger["status"] == "cached").sum() == 4


def test_a_failed_call_is_not_recorded_as_done(openai_server, tmp_path):
    openai_server.chat.handler = scripted(ANSWERS)
    openai_server.chat.fail(500, times=2)  # both attempts of the first call
    gen = make_generator(openai_server, tmp_path, concurrency=1)
    out = gen.generate(CORPUS.head(2), "question")
    assert out["status"].tolist() == ["failed", "ok"]
    assert pd.isna(out.loc[0, "text"]) and "500" in out.loc[0, "reason"]
    again = gen.generate(CORPUS.head(2), "question")
    assert again["status"].tolist() == ["ok", "ok"] and again["cached"].tolist() == [False, True]
    assert openai_server.request_count() == 2 + 1 + 1


def test_a_time_budget_stops_between_chunks(openai_server, tmp_path):
    openai_server.chat.handler = scripted(ANSWERS)
    gen = make_generator(openai_server, tmp_path)
    result = synthesize_queries(
        gen, CORPUS, passages=CORPUS, style=["keyword", "question"], time_budget_s=0.0, chunk=3
    )
    # the first chunk always runs; the budget is spent before the second
    assert len(result.candidates) == 3 and result.filter["passages"] == 3
    assert result.candidates["style"].tolist() == ["keyword", "question", "keyword"]


# ----------------------------------------------------------------------------- the real model

#: What each style's grammar lets through, as a regular expression of the whole answer.
SHAPES = {
    "keyword": r"1\. [a-z][a-z0-9-]{1,24}( [a-z][a-z0-9-]{1,24}){1,5}",
    "question": r"1\. [A-Z][a-zA-Z0-9 ,;:'()/%+-]{8,160}\?",
    "conversational": r"1\. [A-Z][a-zA-Z0-9 ,;:'()/%+?!.-]{15,220}[.?!]",
}


def test_real_model_writes_one_query_per_passage_in_each_style(
    local_server, tmp_path, scifact_path
):
    import re

    from ragnb.io.readers import read_corpus
    from ragnb.studies.retrieval.querygen import STYLES, sample_passages

    passages = sample_passages(read_corpus(scifact_path / "corpus.jsonl"), 3, seed=0)
    client = ChatClient(
        **local_server.client_options(),
        cache=Cache(tmp_path / "cache"),
        ledger=Ledger(tmp_path / "ledger.jsonl"),
        progress=False,
    )
    # short prompts and answers: three calls must fit in the suite's time on two cores
    gen = QueryGenerator(client, grammar=True, max_tokens=40, max_passage_chars=400)
    out = gen.generate(passages, list(STYLES))
    assert out["style"].tolist() == list(STYLES)
    assert set(out["status"]) <= {"ok", "invalid"}, out[["status", "reason"]]
    for style, raw, n_out in zip(out["style"], out["raw"], out["output_tokens"], strict=True):
        # the grammar holds every answer to its style's shape (unless cut at max_tokens)
        assert re.fullmatch(SHAPES[style], raw) or n_out >= 40, (style, raw)
    for text, reason in zip(out["text"], out["reason"], strict=True):
        assert (isinstance(text, str) and len(text.split()) >= 2) or reason
    ledger = client.ledger.frame()
    assert (ledger["status"] == "ok").sum() == 3 and ledger["input_tokens"].gt(0).all()
    again = gen.generate(passages, list(STYLES))
    assert again["cached"].all()
