"""Answers (Primer A.2) and grades (A.3) generated against the real local OpenAI-compatible server:
end to end over a few queries and two Ks, the cache (a second run sends nothing), the ledger's
stages, and the API key never written."""

from __future__ import annotations

import re

import pandas as pd
import pytest
from openai_server import ChatAnswer

from ragnb.core.cache import Cache
from ragnb.errors import InputError
from ragnb.judge import OpenAIJudge
from ragnb.llm.ledger import Ledger, PriceTable
from ragnb.llm.transport import RetryPolicy
from ragnb.studies.correlation import (
    generate_graded,
    load_answer_prompt,
    read_graded,
    validate_graded,
    write_samples,
)
from ragnb.studies.correlation.data import graded_labels

CHAT = "/v1/chat/completions"
KEY = "sk-correlation-secret-0123"
PRICES = PriceTable.from_dict({"models": {"llm-test": {"input": 1.0, "output": 4.0}}})


def query_texts() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "id": ["M-0", "M-1", "M-2"],
            "q": [f"question {i}?" for i in range(3)],
            "p": [[f"POS{i}-{j}" for j in range(3)] for i in range(3)],
            "n": [[f"NEG{i}-{j}" for j in range(4)] for i in range(3)],
        }
    )


def ranked() -> pd.DataFrame:
    # Nc=5, Np=2: candidates POSi-0, POSi-1, NEGi-0, NEGi-1, NEGi-2
    ranks = [[0, 2, 1, 3, 4], [2, 3, 0, 4, 1], [0, 1, 2, 3, 4]]
    rows = []
    for i, rank in enumerate(ranks):
        n_in = [sum(r < 2 for r in rank[:k]) for k in (2, 4)]
        rows.append(
            {
                "id": f"M-{i}",
                "E": "AM",
                "Nc": 5,
                "Np": 2,
                "K": [2, 4],
                "P": [n_in[0] / 2, n_in[1] / 4],
                "R": [n_in[0] / 2, n_in[1] / 2],
                "rank": rank,
            }
        )
    return pd.DataFrame(rows)


class ScriptedLLM:
    """Answers with the positive documents it was given; grades by the share of the ideal's."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def __call__(self, request):
        messages = request.json["messages"]
        system = messages[0]["content"]
        user = messages[-1]["content"]
        self.prompts.append(user)
        if system.startswith("You are an AI assistant that uses reference documents"):
            found = re.findall(r"POS\d-\d", user)
            return ChatAnswer("Facts: " + " ".join(found) if found else "No relevant facts.")
        response = user.split("Response: ", 1)[1].split("\n\nIdeal Response:", 1)[0]
        ideal = user.split("Ideal Response: ", 1)[1]
        have = set(re.findall(r"POS\d-\d", response))
        want = set(re.findall(r"POS\d-\d", ideal))
        return ChatAnswer(str(1 + round(4 * len(have & want) / len(want))))


def make_judge(server, tmp_path) -> OpenAIJudge:
    return OpenAIJudge(
        "llm-test",
        base_url=server.base_url,
        api_key=KEY,
        cache=Cache(tmp_path / "cache"),
        ledger=Ledger(tmp_path / "ledger.jsonl", prices=PRICES),
        progress=False,
        retry=RetryPolicy(backoff_base=0.01),
    )


def test_answer_prompt_is_appendix_a2_verbatim():
    tpl = load_answer_prompt()
    assert tpl.system == (
        "You are an AI assistant that uses reference documents to respond to a given query."
    )
    assert tpl.user.startswith(
        "Please respond to the following query according to the information provided in the "
        "reference documents. Be sure to only use what is in the reference documents to respond "
        "to the query and nothing else."
    )
    assert tpl.fields == ("query", "references") and "A.2" in tpl.source
    assert tpl.references(["a", "b"]) == "1. a\n\n2. b"
    assert tpl.parse("  an answer ") == ("an answer", None) and tpl.parse(" ")[0] is None


def test_generation_and_grading_end_to_end_with_cache_and_ledger(openai_server, tmp_path):
    llm = ScriptedLLM()
    openai_server.chat.handler = llm
    judge = make_judge(openai_server, tmp_path)
    graded = generate_graded(ranked(), query_texts(), judge)

    # 3 ideal answers, 6 top-K answers, 5 grades: M-2's answers at K=2 and K=4 are the same
    # text ("POS2-0 POS2-1"), so their grade prompt is identical and sent once
    assert openai_server.request_count(CHAT) == 14
    assert len(graded) == 6 and graded["valid"].all()
    validate_graded(graded, ranked())
    # the ideal answer saw all three positives of the query-texts sample
    assert graded["answer_ideal"].iloc[0] == "Facts: POS0-0 POS0-1 POS0-2"
    # M-0, K=2: rank [0, 2] -> one positive; grade 1 + round(4 * 1/3) = 2
    first = graded.iloc[0]
    assert (first["id"], first["K"], first["inK"]) == ("M-0", 2, [1, 0])
    assert first["answer_topK"] == "Facts: POS0-0" and first["grade"] == 2.0
    assert first["grade_raw"] == "2"
    # M-1, K=2: rank [2, 3]: no positive -> grade 1
    assert graded.set_index(["id", "K"]).loc[("M-1", 2), "grade"] == 1.0
    # the top-K prompt lists the documents in rank order
    topk_prompt = next(p for p in llm.prompts if "NEG1-0" in p and "question 1?" in p)
    assert topk_prompt.index("1. NEG1-0") < topk_prompt.index("2. NEG1-1")

    ledger = judge.ledger.frame()
    sent = ledger[~ledger["cached"]]
    assert sent["stage"].value_counts().to_dict() == {
        "answer_topK": 6,
        "grade": 5,
        "answer_ideal": 3,
    }
    assert (sent["cost_usd"] > 0).all()

    # a second run: everything from the cache, nothing at the server
    judge2 = make_judge(openai_server, tmp_path)
    again = generate_graded(ranked(), query_texts(), judge2)
    assert openai_server.request_count(CHAT) == 14
    pd.testing.assert_frame_equal(again, graded)
    l2 = judge2.ledger.frame(run_id=judge2.ledger.run_id)
    assert l2["cached"].all() and len(l2) == 14 and (l2["cost_usd"] == 0).all()

    # the key is sent, never written
    out = tmp_path / "graded.jsonl"
    write_samples(graded, out)
    assert read_graded(out)["grade"].tolist() == graded["grade"].tolist()
    for f in tmp_path.rglob("*"):
        if f.is_file():
            assert KEY.encode() not in f.read_bytes(), f
    assert all(KEY not in str(r.headers) for r in openai_server.requests)


def test_invalid_grades_are_kept_as_missing_not_guessed(openai_server, tmp_path):
    llm = ScriptedLLM()

    def handler(request):
        if "RUBRIC" in request.json["messages"][-1]["content"]:
            return ChatAnswer("Score: high")  # invalid, and again after the reminder
        return llm(request)

    openai_server.chat.handler = handler
    graded = generate_graded(ranked().head(1), query_texts(), make_judge(openai_server, tmp_path))
    assert graded["grade"].isna().all() and not graded["valid"].any()
    assert graded["reason"].str.startswith("grade: invalid").all()
    assert graded["grade_raw"].iloc[0] == "Score: high"


def test_generation_needs_an_llm_judge_and_known_samples(openai_server, tmp_path):
    with pytest.raises(InputError, match="needs an OpenAIJudge"):
        generate_graded(ranked(), query_texts(), judge=None)
    judge = make_judge(openai_server, tmp_path)
    with pytest.raises(InputError, match="has no query-texts sample"):
        generate_graded(ranked(), query_texts().head(1), judge)
    assert openai_server.request_count(CHAT) == 0
    assert len(graded_labels(ranked())) == 6
