"""The chat client (ragnb.llm.ChatClient): cache keys pinned to their values (a cache written
before keeps hitting), the judge's calls and its client's calls share keys, one RetryPolicy for
the retry settings, the users that take a client refuse anything else, and a rewrite through a
scripted server is sent once then served from the cache."""

from __future__ import annotations

import pytest
from openai_server import ChatAnswer

from ragnb.core.cache import Cache
from ragnb.errors import InputError
from ragnb.judge import OpenAIJudge
from ragnb.llm import ChatClient, load_prompt
from ragnb.llm.ledger import Ledger
from ragnb.llm.prompts import LABELS
from ragnb.llm.transport import DEFAULT_RETRY, RetryPolicy
from ragnb.rewrite import REWRITE_STAGE, LLMRewriter
from ragnb.studies.correlation.generate import load_answer_prompt
from ragnb.studies.retrieval.querygen import QueryGenerator

#: Keys of calls of model "m" with the default settings, as the cache holds them.
PINNED = {
    "grade": "d5bf44d49b697f8d60dff504fccf6be553c181db21e90603a1c3e2cc9147fed4",
    "rank": "3b8b6158f9b1ff10019abd6c611429c51b1ec9eefe898330ab7d0d21edc655cb",
    "rewrite": "3ae4bc736c312b3750154ca7910c10e586bc11a466dfc04fced3c9d87fa1fffb",
    "claims": "ba315f64742d27dd56062f247afd2ee60d6d00ddfd6d31b7b929fccbb37f6868",
    "answer": "e4096693528a287380473633c1625227041b899d12eaf3eba1bbc5952c3aceb3",
    "querygen": "d6b829975769916a7f6b3e684e8efd393c467856b1956deeacc436fdd07cbe3e",
    # constrained output and log-probabilities change the grade call's key only
    "grade constrained logprobs=5": (
        "935882d5cdad9121b889979bbf7b0a4a96440e55cef9ada1d5c46fcb4de9ae86"
    ),
}


def test_cache_keys_keep_their_values(tmp_path):
    judge = OpenAIJudge("m", cache=Cache(tmp_path), progress=False)
    client = judge.client
    rank = judge.rank_prompt
    answer = load_answer_prompt()
    keys = {
        "grade": client.make_call(
            judge.prompt,
            {"query": "q", "passage": "p"},
            item="i",
            **judge.call_options(judge.prompt),
        ).key,
        "rank": client.make_call(
            rank,
            rank.rank_fields("q", ["a", "b"]),
            item="i",
            labels=LABELS[:2],
            **judge.call_options(rank, LABELS[:2]),
        ).key,
        "rewrite": LLMRewriter(client).call("hi q", "q0").key,
        "claims": client.make_call(
            load_prompt("claim-extraction"), {"reference": "r"}, item="s0/claims", query_id="s0"
        ).key,
        "answer": client.make_call(
            answer, {"query": "q", "references": answer.references(["x", "y"])}, item="x"
        ).key,
        "querygen": QueryGenerator(client, grammar=True)
        ._call("question", "passage text", "syn-q-d1")
        .key,
    }
    options = OpenAIJudge(
        "m", cache=Cache(tmp_path), progress=False, constrained="json_object_schema", logprobs=5
    )
    keys["grade constrained logprobs=5"] = options.client.make_call(
        options.prompt,
        {"query": "q", "passage": "p"},
        item="i",
        **options.call_options(options.prompt),
    ).key
    assert keys == PINNED


def test_judge_and_its_client_give_calls_without_options_the_same_key(tmp_path):
    judge = OpenAIJudge(
        "m", cache=Cache(tmp_path), progress=False, constrained="json_object_schema", logprobs=5
    )
    tpl = load_prompt("query-rewrite")
    via_judge = judge.client.make_call(tpl, {"query": "x"}, item="q0", **judge.call_options(tpl))
    via_client = judge.client.make_call(tpl, {"query": "x"}, item="q0")
    assert via_judge.key == via_client.key and not via_client.body
    assert judge.client.params == {"temperature": 0.0, "request_params": {}, "reminder": True}
    assert judge.params == {
        **judge.client.params,
        "constrained": "json_object_schema",
        "logprobs": 5,
    }
    # a parameter of one call joins its key, and only that call's
    other = judge.client.make_call(tpl, {"query": "x"}, item="q0", params={"max_tokens": 8})
    assert other.key != via_client.key


def test_retry_settings_are_one_policy(tmp_path):
    retry = RetryPolicy(max_attempts=2, timeout=7.5)
    judge = OpenAIJudge("m", cache=Cache(tmp_path), progress=False, retry=retry)
    assert judge.client.retry is retry and judge.client.sender.policy is retry
    info = judge.describe()
    assert (info["timeout_s"], info["max_attempts"]) == (7.5, 2)
    assert ChatClient("m", cache=Cache(tmp_path)).retry is DEFAULT_RETRY
    with pytest.raises(InputError, match="retry must be a ragnb.llm.transport.RetryPolicy"):
        ChatClient("m", cache=Cache(tmp_path), retry={"max_attempts": 2})  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        OpenAIJudge("m", cache=Cache(tmp_path), max_attempts=2)  # type: ignore[call-arg]
    with pytest.raises(InputError, match="model must be a non-empty string"):
        ChatClient("", cache=Cache(tmp_path))


def test_users_of_the_client_refuse_a_judge(tmp_path):
    judge = OpenAIJudge("m", cache=Cache(tmp_path), progress=False)
    with pytest.raises(InputError, match="LLMRewriter needs a ragnb.llm.ChatClient"):
        LLMRewriter(judge)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="QueryGenerator needs a ragnb.llm.ChatClient"):
        QueryGenerator(judge)  # type: ignore[arg-type]


def test_a_rewrite_is_sent_once_then_cached(openai_server, tmp_path):
    openai_server.chat.push(ChatAnswer("1. what is bm25"), times=10)

    def client() -> ChatClient:
        return ChatClient(
            "rewrite-test",
            base_url=openai_server.base_url,
            api_key="sk-test",
            cache=Cache(tmp_path / "cache"),
            ledger=Ledger(tmp_path / "ledger.jsonl"),
            progress=False,
            client_id="rewrite-test-client",
        )

    first = LLMRewriter(client()).many(["Hi! what is BM25?", "Hi! what is BM25?"])
    assert first == [("what is bm25", ""), ("what is bm25", "")]
    assert len(openai_server.bodies("/v1/chat/completions")) == 1  # the same prompt, sent once
    again = client()
    assert LLMRewriter(again).many(["Hi! what is BM25?"]) == [("what is bm25", "")]
    assert len(openai_server.bodies("/v1/chat/completions")) == 1  # from the cache
    ledger = again.ledger.frame()
    assert set(ledger["stage"]) == {REWRITE_STAGE}
    assert set(ledger["judge_id"]) == {"rewrite-test-client"}
    assert ledger["cached"].any() and "sk-test" not in (tmp_path / "ledger.jsonl").read_text()
