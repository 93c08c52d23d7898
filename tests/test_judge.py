"""Judges: strict parsers, prompt templates, OpenAIJudge against a real local server, the cache,
and the offline judges (qrels, noisy, similarity).

The ``openai_server`` fixture is a real HTTP server on 127.0.0.1 driven through the real
``openai`` client; nothing is mocked. Faults (429, 5xx, malformed bodies, timeouts) are in
``test_judge_faults.py``; the SIGKILL-and-resume test in ``test_judge_crash.py``.
"""

from __future__ import annotations

import asyncio
import json
import math
import re

import numpy as np
import pandas as pd
import pytest
from openai_server import ChatAnswer

from ragnb.core.cache import Cache
from ragnb.errors import InputError
from ragnb.judge import (
    GRADE_COLUMNS,
    RANK_COLUMNS,
    NoisyJudge,
    OpenAIJudge,
    QrelsJudge,
)
from ragnb.llm import PromptTemplate, available_prompts, load_prompt
from ragnb.llm.calls import INFLIGHT_NAMESPACE, KEY_PARTS, NAMESPACE
from ragnb.llm.ledger import Ledger, PriceTable
from ragnb.llm.prompts import (
    parse_integer,
    parse_json_grade,
    parse_json_order,
    parse_numbered_list,
)
from ragnb.llm.transport import RetryPolicy

CHAT = "/v1/chat/completions"
DOC = re.compile(r"passage number (\d+)")
PRICES = PriceTable.from_dict(
    {"as_of": "2025-01-01", "models": {"judge-test": {"input": 1.0, "output": 4.0}}}
)


def grade_of(n: int) -> int:
    return n % 5 + 1


def rubric_handler(request):
    """Answers the utility rubric: grade = n % 5 + 1 for "passage number n"."""
    text = request.json["messages"][-1]["content"]
    return ChatAnswer(json.dumps({"grade": grade_of(int(DOC.search(text).group(1)))}))


def items(n: int, query_id: str = "q1") -> list[dict[str, str]]:
    return [
        {
            "query_id": query_id,
            "doc_id": f"d{i}",
            "query": "how do I sort a list?",
            "passage": f"passage number {i}: sorted(iterable) returns a new sorted list",
        }
        for i in range(n)
    ]


def make_judge(server, tmp_path, **kwargs) -> OpenAIJudge:
    kwargs.setdefault("cache", Cache(tmp_path / "cache"))
    kwargs.setdefault("ledger", Ledger(tmp_path / "ledger.jsonl", prices=PRICES))
    kwargs.setdefault("progress", False)
    kwargs.setdefault("api_key", "sk-test")
    return OpenAIJudge(kwargs.pop("model", "judge-test"), base_url=server.base_url, **kwargs)


# ----------------------------------------------------------------------------- parsers


@pytest.mark.parametrize(
    "text, expected",
    [("4", 4), (" 4\n", 4), ("\t1 ", 1), ("5", 5)],
)
def test_parse_integer_accepts_one_bare_integer_on_the_scale(text, expected):
    assert parse_integer(text, (1, 5)) == (expected, None)


@pytest.mark.parametrize(
    "text, reason",
    [
        ("", "empty answer"),
        ("   ", "empty answer"),
        ("Score: 4/5", "not a bare integer"),
        ("four", "not a bare integer"),
        ("6", "off the scale 1-5"),
        ("0", "off the scale 1-5"),
        ("4.", "not a bare integer"),
        ("4.0", "not a bare integer"),
        ("**4**", "not a bare integer"),
        ("04", "not a bare integer"),
        ("+4", "not a bare integer"),
        ("4 5", "not a bare integer"),
        ("\u0664", "not a bare integer"),  # Arabic-Indic digit four
        ('{"grade": 4}', "not a bare integer"),
    ],
)
def test_parse_integer_rejects_everything_else(text, reason):
    value, why = parse_integer(text, (1, 5))
    assert value is None and reason in why


@pytest.mark.parametrize(
    "text, expected",
    [('{"grade": 4}', 4), (' {"grade":1}\n', 1), ('{\n  "grade": 5\n}', 5)],
)
def test_parse_json_grade_accepts_the_exact_object(text, expected):
    assert parse_json_grade(text, (1, 5)) == (expected, None)


@pytest.mark.parametrize(
    "text, reason",
    [
        ("", "empty answer"),
        ("4", "not a JSON object"),
        ('{"grade": "4"}', "not a JSON integer"),
        ('{"grade": 4.0}', "not a JSON integer"),
        ('{"grade": true}', "not a JSON integer"),
        ('{"grade": 6}', "off the scale"),
        ('{"grade": 4, "why": "x"}', 'only the key "grade"'),
        ('{"grade_1_5": 4}', 'only the key "grade"'),
        ('{"grade": 4, "grade": 5}', "repeated key"),
        ('```json\n{"grade": 4}\n```', "not a JSON object"),
        ('Grade: {"grade": 4}', "not a JSON object"),
        ('{"grade": 4', "not a JSON object"),
    ],
)
def test_parse_json_grade_rejects_everything_else(text, reason):
    value, why = parse_json_grade(text, (1, 5))
    assert value is None and reason in why


def test_parse_json_order():
    assert parse_json_order('{"order": ["C", "A", "B"]}', "ABC") == ((2, 0, 1), None)
    cases = {
        '{"order": ["A", "B"]}': "missing label(s) ['C']",
        '{"order": ["A", "B", "B"]}': "repeated label(s) ['B']",
        '{"order": ["A", "B", "C", "D"]}': "unknown label(s) ['D']",
        '{"order": ["a", "b", "c"]}': "unknown label(s)",
        '{"order": "ABC"}': "not a list of labels",
        '{"order": [1, 2, 3]}': "not a list of labels",
        '["A", "B", "C"]': "not a JSON object",
        "A > B > C": "not a JSON object",
        "": "empty answer",
    }
    for text, reason in cases.items():
        value, why = parse_json_order(text, "ABC")
        assert value is None and reason in why, text


def test_parse_numbered_list():
    text = "1. Einstein developed relativity\n\n2) He did it in 1905\n3. He worked in Bern"
    claims, why = parse_numbered_list(text)
    assert why is None
    assert claims == ("Einstein developed relativity", "He did it in 1905", "He worked in Bern")
    for bad, reason in {
        "": "empty answer",
        "- a claim": "line 1",
        "Claims:\n1. a": "line 1",
        "1. a\n3. b": "numbered 3",
        "2. a": "numbered 2",
    }.items():
        value, why = parse_numbered_list(bad)
        assert value is None and reason in why, bad


# ----------------------------------------------------------------------------- templates


def test_the_rewrite_prompt_keeps_its_hash_as_a_shipped_file():
    # once built in code: its hash is part of cache keys and of the S1 stage hash
    # (rewriter_id), so moving it to ragnb/prompts must not change it
    t = load_prompt("query-rewrite")
    assert t.sha256[:16] == "8d62842a007aecd0"
    assert (t.kind, t.answer, t.path) == (
        "extract",
        "numbered_list",
        "ragnb/prompts/query-rewrite.en.yaml",
    )


def test_shipped_prompts_load_with_languages_and_distinct_hashes():
    shipped = available_prompts()
    assert shipped["utility-rubric"] == ["en", "fr"]
    assert shipped["listwise"] == ["en", "fr"]
    for name in ("vespa-0-2", "binary-relevance", "primer-response"):
        assert "en" in shipped[name]
    hashes = set()
    for name, langs in shipped.items():
        for lang in langs:
            t = load_prompt(name, lang)
            assert t.name == name and t.language == lang and t.source
            hashes.add(t.sha256)
    assert len(hashes) == sum(len(v) for v in shipped.values())
    assert load_prompt("vespa-0-2").scale == (0, 2)
    assert load_prompt("utility-rubric").scale == (1, 5)
    assert load_prompt("binary-relevance").fields == ("query", "passage", "answer")
    assert "fast-search" in load_prompt("vespa-0-2").user  # the two demonstrations


def test_unknown_prompt_or_language_lists_what_ships():
    with pytest.raises(InputError, match="no shipped prompt 'nope'.*utility-rubric"):
        load_prompt("nope")
    with pytest.raises(InputError, match=r"ships in \['en'\], not 'de'"):
        load_prompt("vespa-0-2", "de")


def test_rendering_fills_fields_and_keeps_literal_braces():
    t = load_prompt("utility-rubric")
    messages = t.render({"query": "Q?", "passage": "P {x} text"})
    assert [m["role"] for m in messages] == ["system", "user"]
    assert "Q?" in messages[1]["content"] and "P {x} text" in messages[1]["content"]
    assert '{"grade": <integer between 1 and 5>}' in messages[1]["content"]
    with pytest.raises(InputError, match="needs the text field 'passage'"):
        t.render({"query": "Q?"}, where="item q1/d1")


def test_listwise_rendering_labels_passages():
    t = load_prompt("listwise", "fr")
    fields = t.rank_fields("Q?", ["alpha", "beta", "gamma"])
    assert fields["labels_json"] == '["A", "B", "C"]'
    messages = t.render(fields)
    assert "A. alpha\n\nB. beta\n\nC. gamma" in messages[1]["content"]
    assert "3 extraits étiquetés A, B, C" in messages[0]["content"]
    assert '{"order": ["A", "B", "C"]}' in messages[0]["content"]
    with pytest.raises(InputError, match="2 to 26 passages"):
        t.rank_fields("Q?", ["only one"])


def test_user_template_file(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text(
        "name: mine\nkind: grade\nanswer: integer\nscale: [0, 3]\n"
        "user: 'Grade {passage} for {query} from 0 to 3: {{0..3}}'\n"
        "reminder: 'Just the digit.'\n",
        encoding="utf-8",
    )
    t = load_prompt(path)
    assert t.path == str(path) and t.scale == (0, 3) and t.language == "en"
    assert (
        t.render({"query": "q", "passage": "p"})[0]["content"]
        == "Grade p for q from 0 to 3: {0..3}"
    )
    assert load_prompt(str(path)).sha256 == t.sha256


@pytest.mark.parametrize(
    "body, match",
    [
        ("name: x\nkind: grade\nanswer: integer\nuser: '{passage}'\n", "needs scale"),
        (
            "name: x\nkind: grade\nanswer: integer\nscale: [1, 5]\nuser: '{passage.x}'\n",
            "plain name",
        ),
        (
            "name: x\nkind: grade\nanswer: integer\nscale: [1, 5]\nuser: '{passage!r}'\n",
            "plain name",
        ),
        ("name: x\nkind: grade\nanswer: integer\nscale: [1, 5]\nuser: '{query}'\n", "item field"),
        ("name: x\nkind: grade\nanswer: json_order\nscale: [1, 5]\nuser: '{passage}'\n", "needs"),
        ("name: x\nkind: rank\nanswer: json_order\nuser: '{passage}'\n", "rank prompt takes"),
        ("name: x\nkind: grade\nanswer: integer\nscale: [1, 5]\nuser: '{'\n", "literal braces"),
        ("name: x\nkind: grade\nanswer: integer\nscale: [1, 5]\nusr: '{passage}'\n", "unknown"),
        ("name: x\nkind: grade\nanswer: integer\nscale: [1, 5]\nuser: [oops\n", "YAML"),
    ],
)
def test_invalid_template_files_name_the_problem(tmp_path, body, match):
    path = tmp_path / "bad.yaml"
    path.write_text(body, encoding="utf-8")
    with pytest.raises(InputError, match=match):
        load_prompt(path)


def test_template_hash_ignores_name_and_source_but_not_wording():
    t = load_prompt("utility-rubric")
    same = PromptTemplate(**{**t.__dict__, "name": "renamed", "source": "elsewhere"})
    other = PromptTemplate(**{**t.__dict__, "user": t.user + "\nThink hard."})
    assert same.sha256 == t.sha256 and other.sha256 != t.sha256


# ----------------------------------------------------------------------------- OpenAIJudge


def test_grade_many_valid_answers_requests_and_usage(openai_server, tmp_path):
    openai_server.chat.handler = rubric_handler
    judge = make_judge(openai_server, tmp_path, concurrency=4)
    df = judge.grade_many(items(12))
    assert list(df.columns) == list(GRADE_COLUMNS)
    assert df["grade"].tolist() == [grade_of(i) for i in range(12)]
    assert df["valid"].all() and (df["status"] == "ok").all() and (df["reason"] == "").all()
    assert df["attempts"].tolist() == [1] * 12
    assert not df["cached"].any() and not df["reminded"].any()
    assert df["raw"].tolist() == [json.dumps({"grade": grade_of(i)}) for i in range(12)]
    assert df["first_raw"].isna().all()
    assert (df["judge_id"] == "openai-judge:judge-test").all()
    assert (df["prompt"] == load_prompt("utility-rubric").id).all()
    assert (df["input_tokens"] > 0).all() and (df["output_tokens"] == 2).all()
    assert str(df["grade"].dtype) == "Int64"

    bodies = openai_server.bodies(CHAT)
    assert len(bodies) == 12
    body = bodies[0]
    assert body["model"] == "judge-test" and body["temperature"] == 0.0
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert "how do I sort a list?" in body["messages"][1]["content"]
    for r in openai_server.requests:
        assert r.headers["authorization"] == "[REDACTED]"


def test_second_run_is_served_from_the_cache(openai_server, tmp_path):
    openai_server.chat.handler = rubric_handler
    judge = make_judge(openai_server, tmp_path)
    first = judge.grade_many(items(6))
    assert openai_server.request_count(CHAT) == 6
    again = make_judge(openai_server, tmp_path).grade_many(items(6))
    assert openai_server.request_count(CHAT) == 6
    assert again["cached"].all() and (again["attempts"] == 0).all()
    assert again["grade"].tolist() == first["grade"].tolist()
    assert again["raw"].tolist() == first["raw"].tolist()
    assert again["input_tokens"].tolist() == first["input_tokens"].tolist()
    cache = Cache(tmp_path / "cache")
    assert cache.key_schema(NAMESPACE) == sorted(KEY_PARTS)
    assert cache.key_schema(INFLIGHT_NAMESPACE) == sorted(KEY_PARTS)


def test_cache_key_holds_model_prompt_and_parameters_not_key_or_url(openai_server, tmp_path):
    openai_server.chat.handler = rubric_handler
    make_judge(openai_server, tmp_path).grade_many(items(2))
    assert openai_server.request_count(CHAT) == 2
    # another API key and another spelling of the URL: same answers, no request
    other = OpenAIJudge(
        "judge-test",
        base_url=openai_server.base_url.replace("127.0.0.1", "localhost"),
        api_key="sk-another-key",
        cache=Cache(tmp_path / "cache"),
        progress=False,
    )
    assert other.grade_many(items(2))["cached"].all()
    assert openai_server.request_count(CHAT) == 2
    # each of these changes the key
    variants = [
        {"model": "judge-test-2"},
        {"temperature": 0.7},
        {"request_params": {"seed": 1}},
        {"prompt": "utility-rubric", "language": "fr"},
        {"reminder": False},
    ]
    for n, kw in enumerate(variants, start=1):
        df = make_judge(openai_server, tmp_path, **kw).grade_many(items(2))
        assert not df["cached"].any(), kw
        assert openai_server.request_count(CHAT) == 2 + 2 * n


def test_french_rubric_prompt_goes_out_in_french(openai_server, tmp_path):
    openai_server.chat.handler = rubric_handler
    judge = make_judge(openai_server, tmp_path, language="fr")
    assert judge.grade("comment trier ?", ["passage number 3: sorted()"])[0].grade == 4
    (body,) = openai_server.bodies(CHAT)
    assert body["messages"][0]["content"].startswith("Tu es un juge d’adéquation")
    assert "Réponds en JSON minifié EXACTEMENT" in body["messages"][1]["content"]


def test_vespa_and_primer_prompts_with_extra_fields(openai_server, tmp_path):
    openai_server.chat.push("2", "4")
    vespa = make_judge(openai_server, tmp_path, prompt="vespa-0-2")
    assert vespa.scale == (0, 2)
    assert vespa.grade("what is fast-search", ["B-tree posting lists"])[0].grade == 2
    primer = vespa.with_prompt("primer-response")
    assert primer.scale == (1, 5) and vespa.scale == (0, 2)
    assert primer.cache is vespa.cache and primer.ledger is vespa.ledger
    res = primer.grade("q?", ["my answer"], fields={"reference": "the ideal answer"})
    assert res[0].grade == 4
    body = openai_server.bodies(CHAT)[-1]
    assert "Response: my answer" in body["messages"][1]["content"]
    assert "Ideal Response: the ideal answer" in body["messages"][1]["content"]


def test_missing_prompt_field_fails_before_any_request(openai_server, tmp_path):
    judge = make_judge(openai_server, tmp_path, prompt="binary-relevance")
    with pytest.raises(InputError, match="item q1/d0.*needs the text field 'answer'"):
        judge.grade_many(items(3))
    rows = [{**row, "answer": "use sorted()"} for row in items(2)]
    rows.append({"query_id": "q1", "doc_id": "dx", "query": "q"})  # no passage
    with pytest.raises(InputError, match="item q1/dx.*'passage'"):
        judge.grade_many(rows)
    with pytest.raises(InputError, match="row 0: missing 'doc_id'"):
        judge.grade_many([{"query_id": "q1", "query": "q", "passage": "p"}])
    assert openai_server.request_count() == 0


def test_rank_valid_permutation(openai_server, tmp_path):
    def handler(request):
        text = request.json["messages"][-1]["content"]
        # best = highest passage number
        found = re.findall(r"([A-Z])\. passage number (\d+)", text)
        order = [lab for lab, _ in sorted(found, key=lambda x: -int(x[1]))]
        return ChatAnswer(json.dumps({"order": order}))

    openai_server.chat.handler = handler
    judge = make_judge(openai_server, tmp_path)
    passages = [f"passage number {n}" for n in (3, 9, 1, 7, 5)]
    res = judge.rank("q?", passages, doc_ids=["a", "b", "c", "d", "e"], query_id="q9")
    assert res.valid and res.permutation == (1, 3, 4, 0, 2)
    assert res.order == ("b", "d", "e", "a", "c")
    assert res.total_tokens == res.input_tokens + res.output_tokens > 0
    df = judge.rank_many(
        [
            {"query_id": "q1", "query": "q?", "doc_ids": ["x", "y"], "passages": passages[:2]},
            {"query_id": "q1", "query": "q?", "doc_ids": ["y", "x"], "passages": passages[1::-1]},
        ]
    )
    assert list(df.columns) == list(RANK_COLUMNS)
    assert df["batch_id"].tolist() == ["0", "1"]
    assert df["order"].tolist() == [("y", "x"), ("y", "x")]
    body = openai_server.bodies(CHAT)[0]
    assert '{"order": ["A", "B", "C", "D", "E"]}' in body["messages"][0]["content"]


def test_duplicate_prompts_are_sent_once(openai_server, tmp_path):
    openai_server.chat.handler = rubric_handler
    rows = items(3) + items(3, query_id="q1")  # same query_id, doc ids and texts again
    df = make_judge(openai_server, tmp_path).grade_many(rows)
    assert len(df) == 6 and df["valid"].all()
    assert openai_server.request_count(CHAT) == 3


def test_judge_runs_inside_a_running_event_loop(openai_server, tmp_path):
    """Jupyter runs an event loop in the kernel's thread; grade_many must still work."""
    openai_server.chat.handler = rubric_handler
    judge = make_judge(openai_server, tmp_path)

    async def notebook_cell():
        return judge.grade_many(items(3))

    df = asyncio.run(notebook_cell())
    assert df["grade"].tolist() == [1, 2, 3]


def test_describe_is_json_safe_without_secrets(openai_server, tmp_path):
    judge = OpenAIJudge(
        "judge-test",
        base_url="http://user:pw-hidden@127.0.0.1:9/v1?token=tok-hidden",
        api_key="sk-secret-describe",
        cache=Cache(tmp_path / "cache"),
        progress=False,
    )
    info = judge.describe()
    text = json.dumps(info)
    for secret in ("sk-secret-describe", "pw-hidden", "tok-hidden"):
        assert secret not in text
    assert info["base_url"] == "http://127.0.0.1:9/v1"
    assert info["prompt"]["id"] == load_prompt("utility-rubric").id


def test_judge_parameters_are_validated(tmp_path):
    cache = Cache(tmp_path)
    for kw, match in [
        ({"concurrency": 0}, "concurrency"),
        ({"retry": {"max_attempts": 3}}, "retry must be a ragnb.llm.transport.RetryPolicy"),
        ({"request_params": {"messages": []}}, "may not set 'messages'"),
        ({"request_params": {"x": object()}}, "JSON values"),
        ({"prompt": "listwise"}, "not grade"),
        ({"rank_prompt": "utility-rubric"}, "not a rank prompt"),
    ]:
        with pytest.raises(InputError, match=match):
            OpenAIJudge("m", cache=cache, **kw)
    for kw, match in [({"max_attempts": 0}, "max_attempts"), ({"timeout": -1}, "timeout")]:
        with pytest.raises(InputError, match=match):
            RetryPolicy(**kw)


# ----------------------------------------------------------------------------- QrelsJudge


QRELS = pd.DataFrame(
    {
        "query_id": ["q1", "q1", "q1", "q2"],
        "doc_id": ["a", "b", "c", "a"],
        "relevance": pd.array([2, 0, 1, 1], dtype="int64"),
    }
)


def test_qrels_judge_grades_and_orders_from_labels():
    judge = QrelsJudge(QRELS)
    assert judge.judge_id == "qrels-judge" and judge.scale == (0, 2)
    df = judge.grade_many([{"query_id": "q1", "doc_id": d} for d in ("a", "b", "c", "zz")])
    assert df["grade"].tolist()[:3] == [2, 0, 1]
    assert df["valid"].tolist() == [True, True, True, False]
    assert "unjudged" in df["reason"].iloc[3] and pd.isna(df["grade"].iloc[3])
    assert df["raw"].iloc[0] == "qrels label 2"
    res = judge.rank("q", ["B", "C", "A"], query_id="q1", doc_ids=["b", "c", "a"])
    assert res.order == ("a", "c", "b")
    bad = judge.rank("q", ["A", "Z"], query_id="q1", doc_ids=["a", "zz"])
    assert not bad.valid and "zz" in bad.reason


def test_qrels_judge_missing_grade_and_ties():
    judge = QrelsJudge({"q": {"a": 1, "b": 1}}, missing=0, scale=(0, 3))
    assert judge.scale == (0, 3)
    assert [r.grade for r in judge.grade("q", ["x"], query_id="q", doc_ids=["u"])] == [0]
    # ties keep the input order
    assert judge.rank("q", ["B", "A"], query_id="q", doc_ids=["b", "a"]).order == ("b", "a")
    with pytest.raises(InputError, match="missing"):
        QrelsJudge(QRELS, missing="zero")


# ----------------------------------------------------------------------------- NoisyJudge


def test_noisy_judge_without_noise_is_the_qrels_judge():
    noisy = NoisyJudge(QRELS, sd=0.0, gumbel_scale=0.0)
    exact = QrelsJudge(QRELS)
    rows = [
        {"query_id": q, "doc_id": d}
        for q, d in zip(QRELS["query_id"], QRELS["doc_id"], strict=True)
    ]
    assert noisy.grade_many(rows)["grade"].tolist() == exact.grade_many(rows)["grade"].tolist()
    args = ("q", ["B", "C", "A"])
    kw = {"query_id": "q1", "doc_ids": ["b", "c", "a"]}
    assert noisy.rank(*args, **kw).order == exact.rank(*args, **kw).order
    assert noisy.judge_id == "noisy-judge(sd=0,seed=0)"


def test_noisy_judge_is_deterministic_per_seed_query_and_passages():
    qrels = {f"q{i}": {f"d{j}": j % 3 for j in range(6)} for i in range(20)}
    rows = [{"query_id": q, "doc_id": d} for q in qrels for d in qrels[q]]
    a = NoisyJudge(qrels, sd=1.0, seed=7).grade_many(rows)["grade"].tolist()
    b = NoisyJudge(qrels, sd=1.0, seed=7).grade_many(rows[::-1])["grade"].tolist()[::-1]
    c = NoisyJudge(qrels, sd=1.0, seed=8).grade_many(rows)["grade"].tolist()
    assert a == b  # a pair's grade does not depend on the batch or its order
    assert a != c
    assert set(a) <= {0, 1, 2}  # clipped onto the scale
    batches = [{"query_id": q, "doc_ids": list(qrels[q])} for q in qrels]
    r7 = NoisyJudge(qrels, sd=1.0, seed=7).rank_many(batches)["permutation"].tolist()
    assert NoisyJudge(qrels, sd=1.0, seed=7).rank_many(batches)["permutation"].tolist() == r7
    r8 = NoisyJudge(qrels, sd=1.0, seed=8).rank_many(batches)["permutation"].tolist()
    assert r7 != r8
    # a different batch of the same query draws other noise: not the same order every time
    shuffled = [{**b, "doc_ids": b["doc_ids"][::-1]} for b in batches]
    orders7 = NoisyJudge(qrels, sd=1.0, seed=7).rank_many(batches)["order"].tolist()
    orders_rev = NoisyJudge(qrels, sd=1.0, seed=7).rank_many(shuffled)["order"].tolist()
    assert orders7 != orders_rev


def test_noisy_judge_grade_noise_has_the_requested_sd():
    """Rounding a label plus N(0, sd^2) noise: P(grade == label) = P(|z| < 0.5 / sd)."""
    qrels = {f"q{i}": {"d": 2} for i in range(4000)}
    rows = [{"query_id": q, "doc_id": "d"} for q in qrels]
    grades = NoisyJudge(qrels, sd=0.5, seed=1, scale=(0, 4)).grade_many(rows)["grade"]
    share = float((grades == 2).mean())
    expected = math.erf(1 / math.sqrt(2))  # P(|z| < 1) = 0.6827
    assert abs(share - expected) < 0.03


def test_noisy_judge_ranking_is_plackett_luce():
    """Two items, utilities 1 and 0, no Gaussian noise: the better one comes first with
    probability e / (e + 1) = 0.731 (Gumbel-max sampling of a Plackett-Luce model)."""
    qrels = {f"q{i}": {"good": 1, "bad": 0} for i in range(4000)}
    judge = NoisyJudge(qrels, sd=0.0, seed=3)
    df = judge.rank_many([{"query_id": q, "doc_ids": ["bad", "good"]} for q in qrels])
    share = float(np.mean([o[0] == "good" for o in df["order"]]))
    assert abs(share - math.e / (math.e + 1)) < 0.03
    # three items: P(order) = prod of stage-wise choice probabilities
    qrels3 = {f"q{i}": {"a": 2, "b": 1, "c": 0} for i in range(6000)}
    df3 = NoisyJudge(qrels3, sd=0.0, seed=4).rank_many(
        [{"query_id": q, "doc_ids": ["c", "b", "a"]} for q in qrels3]
    )
    w = np.exp([2.0, 1.0, 0.0])
    p_abc = w[0] / w.sum() * w[1] / (w[1] + w[2])
    share3 = float(np.mean([o == ("a", "b", "c") for o in df3["order"]]))
    assert abs(share3 - p_abc) < 0.03


# ----------------------------------------------------------------------------- options


def logprob_answer(grade: int, probs: dict[str, float]):
    """A scripted chat body: ``{"grade": n}`` with log-probabilities at the grade's token."""

    def content_token(token: str, alternatives: dict[str, float] | None = None) -> dict:
        top = alternatives or {token: 1.0}
        return {
            "token": token,
            "logprob": math.log(top.get(token, 1.0)),
            "top_logprobs": [{"token": t, "logprob": math.log(p)} for t, p in top.items()],
        }

    content = [
        content_token('{"'),
        content_token("grade"),
        content_token('":'),
        content_token(f" {grade}", probs),
        content_token("}"),
    ]
    return {
        "object": "chat.completion",
        "model": "judge-test",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": f'{{"grade": {grade}}}'},
                "finish_reason": "stop",
                "logprobs": {"content": content},
            }
        ],
        "usage": {"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55},
    }


def test_response_schemas_admit_only_the_scale_or_the_labels():
    rubric = load_prompt("utility-rubric").response_schema()
    assert rubric == {
        "type": "object",
        "properties": {"grade": {"type": "integer", "enum": [1, 2, 3, 4, 5]}},
        "required": ["grade"],
        "additionalProperties": False,
    }
    assert load_prompt("binary-relevance").response_schema() == {
        "type": "integer",
        "enum": [0, 1],
    }
    order = load_prompt("listwise").response_schema("ABC")["properties"]["order"]
    assert order["items"]["enum"] == ["A", "B", "C"] and order["minItems"] == order["maxItems"] == 3
    assert load_prompt("claim-extraction").response_schema() is None


@pytest.mark.parametrize(
    ("constrained", "expected"),
    [
        (None, None),
        (
            "json_schema",
            {"type": "json_schema", "json_schema": {"name": "ragnb_json_grade", "strict": True}},
        ),
        ("json_object_schema", {"type": "json_object"}),
    ],
)
def test_constrained_output_sends_the_schema_only_when_on(
    openai_server, tmp_path, constrained, expected
):
    openai_server.chat.handler = rubric_handler
    judge = make_judge(openai_server, tmp_path, constrained=constrained)
    df = judge.grade_many(items(3))
    assert df["valid"].all() and df["expected_grade"].isna().all()
    schema = load_prompt("utility-rubric").response_schema()
    for body in openai_server.bodies(CHAT):
        assert "logprobs" not in body and "top_logprobs" not in body
        if expected is None:
            assert "response_format" not in body
            continue
        rf = body["response_format"]
        assert rf["type"] == expected["type"]
        if constrained == "json_schema":
            assert {k: v for k, v in rf["json_schema"].items() if k != "schema"} == expected[
                "json_schema"
            ]
            assert rf["json_schema"]["schema"] == schema
        else:
            assert rf["schema"] == schema
    assert judge.describe()["constrained"] == constrained
    assert judge.fingerprint()["constrained"] == constrained


def test_constrained_listwise_calls_carry_the_batch_labels(openai_server, tmp_path):
    openai_server.chat.handler = lambda request: ChatAnswer('{"order": ["B", "A", "C"]}')
    judge = make_judge(openai_server, tmp_path, constrained="json_object_schema", logprobs=5)
    r = judge.rank("q", ["a", "b", "c"])
    assert r.valid and r.permutation == (1, 0, 2)
    (body,) = openai_server.bodies(CHAT)
    assert body["response_format"]["schema"]["properties"]["order"]["items"]["enum"] == list("ABC")
    assert "logprobs" not in body  # log-probabilities are for grades only


def test_logprobs_give_the_expected_grade_beside_the_sampled_grade(openai_server, tmp_path):
    # the grade token " 4" with p=0.5; " 5" 0.2, "5" 0.1 (the same grade, without the space),
    # " 3" 0.1; " the" is not a grade: expected = (4*0.5 + 5*0.3 + 3*0.1) / 0.9
    answer = logprob_answer(4, {" 4": 0.5, " 5": 0.2, "5": 0.1, " 3": 0.1, " the": 0.05})
    openai_server.chat.push(answer, times=2)
    judge = make_judge(openai_server, tmp_path, logprobs=5)
    df = judge.grade_many(items(2))
    assert df["grade"].tolist() == [4, 4]
    assert df["expected_grade"].tolist() == pytest.approx([3.8 / 0.9] * 2)
    for body in openai_server.bodies(CHAT):
        assert body["logprobs"] is True and body["top_logprobs"] == 5
        assert "response_format" not in body
    # cached with the answer
    again = make_judge(openai_server, tmp_path, logprobs=5).grade_many(items(2))
    assert again["cached"].all()
    assert again["expected_grade"].tolist() == pytest.approx([3.8 / 0.9] * 2)
    assert judge.describe()["logprobs"] == 5


def test_a_server_without_logprobs_gives_nan_and_a_warning(openai_server, tmp_path, caplog):
    openai_server.chat.handler = rubric_handler  # answers carry "logprobs": null
    with caplog.at_level("WARNING", logger="ragnb.llm"):
        df = make_judge(openai_server, tmp_path, logprobs=True).grade_many(items(3))
    assert df["valid"].all() and df["expected_grade"].isna().all()
    assert "3 grade answers came without token log-probabilities" in caplog.text
    assert openai_server.bodies(CHAT)[0]["top_logprobs"] == 10


def test_each_option_has_its_own_cache_key(openai_server, tmp_path):
    openai_server.chat.handler = rubric_handler
    make_judge(openai_server, tmp_path).grade_many(items(2))
    sent = 2
    for kw in (
        {"constrained": "json_object_schema"},
        {"logprobs": 3},
        {"constrained": "json_schema"},
    ):
        df = make_judge(openai_server, tmp_path, **kw).grade_many(items(2))
        assert not df["cached"].any(), kw
        sent += 2
        assert openai_server.request_count(CHAT) == sent
        assert make_judge(openai_server, tmp_path, **kw).grade_many(items(2))["cached"].all()
        assert openai_server.request_count(CHAT) == sent
    # the options off: the first answers, still cached under the keys they always had
    assert make_judge(openai_server, tmp_path).grade_many(items(2))["cached"].all()


def test_options_are_validated(tmp_path):
    with pytest.raises(InputError, match="constrained must be one of"):
        OpenAIJudge(constrained="grammar", cache=Cache(tmp_path / "c"))
    with pytest.raises(InputError, match="logprobs must be an integer"):
        OpenAIJudge(logprobs=50, cache=Cache(tmp_path / "c"))
    with pytest.raises(InputError, match="request_params sets"):
        OpenAIJudge(
            constrained="json_schema",
            request_params={"response_format": {"type": "json_object"}},
            cache=Cache(tmp_path / "c"),
        )
    with pytest.raises(InputError, match="json_schema cannot constrain"):
        OpenAIJudge(prompt="vespa-0-2", constrained="json_schema", cache=Cache(tmp_path / "c"))
    # llama-cpp-python's form takes an integer root
    judge = OpenAIJudge(
        prompt="vespa-0-2", constrained="json_object_schema", cache=Cache(tmp_path / "c")
    )
    assert judge.describe()["constrained"] == "json_object_schema"
