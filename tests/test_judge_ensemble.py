"""EnsembleJudge against the scripted local server (two prompts of one model), and the agreement
tables on the graded MS MARCO subset with a simulated judge as a member.

The server answers each prompt from its own table of grades, so majority, mean and the tie
rules have known outcomes; a member's failed call must leave the pair ungraded and be sent
again (only it) on the next run; a rerun is served by the members' caches without a request.
"""

from __future__ import annotations

import dataclasses
import json
import re

import numpy as np
import pandas as pd
import pytest
from openai_server import ChatAnswer, error, rerank_score
from scripted_judging import items, passage_number

from ragnb.core.cache import Cache
from ragnb.errors import InputError
from ragnb.judge import (
    EnsembleJudge,
    NoisyJudge,
    OpenAIJudge,
    QrelsJudge,
    combine_grades,
    ensemble_agreement,
)
from ragnb.judge.agreement import kendall_tau, krippendorff_alpha, weighted_kappa
from ragnb.llm.ledger import Ledger
from ragnb.llm.transport import RetryPolicy

CHAT = "/v1/chat/completions"
# the grade each prompt gives passage number n
EN = {0: 2, 1: 3, 2: 5, 3: 1}
FR = {0: 2, 1: 4, 2: 2, 3: 5}


def is_french(request) -> bool:
    return "juge" in request.json["messages"][0]["content"]


def by_prompt(request):
    n = passage_number(request)
    grade = (FR if is_french(request) else EN)[n]
    return ChatAnswer(json.dumps({"grade": grade}))


def two_prompts(server, tmp_path, **kwargs) -> EnsembleJudge:
    """utility-rubric in English and in French, one model, one cache and ledger each."""
    members = []
    for lang in ("en", "fr"):
        members.append(
            OpenAIJudge(
                "judge-test",
                base_url=server.base_url,
                api_key="sk-test",
                prompt="utility-rubric",
                language=lang,
                cache=Cache(tmp_path / f"cache-{lang}"),
                ledger=Ledger(tmp_path / f"ledger-{lang}.jsonl"),
                progress=False,
                concurrency=1,
                retry=RetryPolicy(max_attempts=1, timeout=5.0),
                reminder=False,
            )
        )
    return EnsembleJudge(members, **kwargs)


def grades(frame: pd.DataFrame) -> list:
    return [None if pd.isna(g) else int(g) for g in frame["grade"]]


# ----------------------------------------------------------------------------- combining


def test_combine_grades_rules_by_hand():
    assert combine_grades([4, 2, 4]) == 4  # a real majority, whatever the tie rule
    assert combine_grades([4, 2, 4], tie="higher") == 4
    assert combine_grades([1, 5, 3]) == 1 and combine_grades([1, 5, 3], tie="higher") == 5
    assert combine_grades([1, 5, 3], tie="median") == 3
    assert combine_grades([1, 1, 2, 5, 5], tie="median") == 2  # low median of all five
    assert combine_grades([1, 2, 2, 5], "mean") == 2  # 2.5 -> lower
    assert combine_grades([1, 2, 2, 5], "mean", "higher") == 3  # 2.5 -> higher is 3
    assert combine_grades([1, 2], "mean", "higher") == 2 and combine_grades([1, 2], "mean") == 1
    assert combine_grades([1, 1, 2], "mean", "higher") == 1  # 1.33 is not a half
    assert combine_grades([5]) == 5
    with pytest.raises(InputError, match="median"):
        combine_grades([1, 2], "mean", "median")
    with pytest.raises(InputError, match="at least one"):
        combine_grades([])
    with pytest.raises(InputError, match="integers"):
        combine_grades([1, 2.5])  # type: ignore[list-item]


def test_members_must_share_a_scale_and_names_must_be_usable():
    a, b = QrelsJudge({"q": {"d": 1}}, scale=(1, 5)), QrelsJudge({"q": {"d": 1}}, scale=(0, 2))
    with pytest.raises(InputError, match="one scale"):
        EnsembleJudge([a, b])
    with pytest.raises(InputError, match="at least 2"):
        EnsembleJudge([a])
    with pytest.raises(InputError, match="reserved"):
        EnsembleJudge([a, a], names=["ensemble", "x"])
    with pytest.raises(InputError, match="quorum"):
        EnsembleJudge([a, a], quorum=3)
    # two members with one judge_id get distinct default names
    assert EnsembleJudge([a, a]).names == ["qrels-judge#0", "qrels-judge#1"]


# ----------------------------------------------------------------------------- scripted server


def test_majority_mean_and_ties_over_two_prompts_then_reruns_hit_the_caches(
    openai_server, tmp_path
):
    openai_server.chat.handler = by_prompt
    judge = two_prompts(openai_server, tmp_path)
    out = judge.grade_members(items())
    assert openai_server.request_count(CHAT) == 8  # 4 pairs x 2 prompts
    en, fr = judge.names
    assert en.endswith("/utility-rubric.en") and fr.endswith("/utility-rubric.fr")
    assert grades(out.members[en]) == [2, 3, 5, 1] and grades(out.members[fr]) == [2, 4, 2, 5]
    # majority: agree -> that grade; disagree -> tie -> the lower grade
    assert grades(out.grades) == [2, 3, 2, 1]
    assert out.grades["valid"].all() and not out.grades["cached"].any()
    assert out.grades["attempts"].tolist() == [2, 2, 2, 2]
    wide = out.wide()
    assert wide["ensemble"].tolist() == [2, 3, 2, 1] and str(wide[fr].dtype) == "Int64"
    assert "utility-rubric/en" in out.grades["prompt"][0]
    assert "utility-rubric/fr" in out.grades["prompt"][0]
    # every other rule is served from the members' caches: no request reaches the server
    expected = {
        ("majority", "higher"): [2, 4, 5, 5],
        ("majority", "median"): [2, 3, 2, 1],  # the low median of two grades is the lower
        ("mean", "lower"): [2, 3, 3, 3],  # 3.5 -> 3, 3.5 -> 3, 3.0
        ("mean", "higher"): [2, 4, 4, 3],
    }
    for (combine, tie), want in expected.items():
        again = two_prompts(openai_server, tmp_path, combine=combine, tie=tie)
        frame = again.grade_many(items())
        assert grades(frame) == want, (combine, tie)
        assert frame["cached"].all() and (frame["attempts"] == 0).all()
    assert openai_server.request_count(CHAT) == 8
    # each member's ledger: its 4 requests once, then a cache hit per pair and rerun
    for lang in ("en", "fr"):
        led = Ledger.read(tmp_path / f"ledger-{lang}.jsonl")
        assert (~led["cached"]).sum() == 4 and led["cached"].sum() == 4 * len(expected)


def test_a_failed_member_call_is_not_a_grade_and_only_it_is_sent_again(openai_server, tmp_path):
    def flaky(request):
        if is_french(request) and passage_number(request) == 1:
            return error(500, "scripted outage", should_retry=False)
        return by_prompt(request)

    openai_server.chat.handler = flaky
    first = two_prompts(openai_server, tmp_path).grade_members(items())
    assert openai_server.request_count(CHAT) == 8
    row = first.grades.iloc[1]
    assert row["status"] == "failed" and pd.isna(row["grade"]) and not row["valid"]
    assert "utility-rubric.fr" in row["reason"] and "HTTP 500" in row["reason"]
    assert grades(first.grades) == [2, None, 2, 1]  # the English grade alone is not recorded
    assert grades(first.members[two_prompts(openai_server, tmp_path).names[0]]) == [2, 3, 5, 1]

    openai_server.chat.handler = by_prompt  # the outage is over: resume
    second = two_prompts(openai_server, tmp_path).grade_members(items())
    assert openai_server.request_count(CHAT) == 9  # only the failed French call
    assert grades(second.grades) == [2, 3, 2, 1] and second.grades["valid"].all()
    assert second.grades["repeated"].tolist() == [False, True, False, False]
    assert second.grades["cached"].tolist() == [True, False, True, True]


def test_invalid_answers_count_against_the_quorum(openai_server, tmp_path):
    def four_in_words(request):
        if is_french(request) and passage_number(request) == 2:
            return ChatAnswer("four")
        return by_prompt(request)

    openai_server.chat.handler = four_in_words
    strict = two_prompts(openai_server, tmp_path).grade_many(items())
    assert strict["status"].tolist() == ["ok", "ok", "invalid", "ok"]
    assert "1 of 2 members gave a valid answer, quorum 2" in strict["reason"][2]
    # quorum 1: the one valid grade decides (cached answers: no new request)
    lenient = two_prompts(openai_server, tmp_path, quorum=1).grade_many(items())
    assert grades(lenient) == [2, 3, 5, 1]
    assert openai_server.request_count(CHAT) == 8


def test_fingerprint_is_the_members_fingerprints_and_the_rule(openai_server, tmp_path):
    judge = two_prompts(openai_server, tmp_path)
    fp = judge.fingerprint()
    assert fp["members"] == [m.fingerprint() for m in judge.members]
    assert (fp["combine"], fp["tie"], fp["quorum"]) == ("majority", "lower", 2)
    text = json.dumps(fp)
    assert "cache-en" not in text and openai_server.base_url not in text
    assert two_prompts(openai_server, tmp_path / "other").fingerprint() == fp
    assert two_prompts(openai_server, tmp_path, combine="mean").fingerprint() != fp
    swapped = EnsembleJudge(list(reversed(judge.members)))
    assert swapped.fingerprint() != fp
    assert openai_server.request_count(CHAT) == 0


def test_rank_is_the_borda_order_of_the_members():
    one = QrelsJudge({"q": {"a": 0, "b": 2, "c": 1}})  # b, c, a
    two = QrelsJudge({"q": {"a": 2, "b": 1, "c": 0}})  # a, b, c
    res = EnsembleJudge([one, two]).rank("q", ["A", "B", "C"], doc_ids=["a", "b", "c"])
    # mean positions a (2 + 0) / 2 = 1, b (0 + 1) / 2 = 0.5, c (1 + 2) / 2 = 1.5
    assert res.order == ("b", "a", "c") and res.valid


class ShiftedExpectation(QrelsJudge):
    """Labels as grades, with an expected grade ``label + shift`` (as a logprobs judge has)."""

    def __init__(self, qrels, shift: float) -> None:
        super().__init__(qrels)
        self.shift = shift

    def _grade_batch(self, requests, stage):
        return [
            dataclasses.replace(r, expected_grade=r.grade + self.shift)
            for r in super()._grade_batch(requests, stage)
        ]


def test_expected_grade_is_the_members_mean_only_when_all_have_one():
    qrels = {"q": {"a": 2, "b": 0}}
    pair = [{"query_id": "q", "doc_id": d} for d in "ab"]
    both = EnsembleJudge([ShiftedExpectation(qrels, 0.25), ShiftedExpectation(qrels, -0.75)])
    assert both.grade_many(pair)["expected_grade"].tolist() == [1.75, -0.25]
    one = EnsembleJudge([ShiftedExpectation(qrels, 0.25), QrelsJudge(qrels)])
    assert one.grade_many(pair)["expected_grade"].isna().all()


# ----------------------------------------------------------------------------- agreement tables


@pytest.fixture(scope="module")
def msmarco_sample(msmarco_path):
    """40 labelled MS MARCO pairs (the first 40 by id of a fixed random draw), grades on 1-5."""
    from ragnb.io.files import read_beir
    from ragnb.measures import map_grades

    data = read_beir(msmarco_path)
    rng = np.random.default_rng(7)
    qrels = data.qrels.iloc[np.sort(rng.choice(len(data.qrels), 40, replace=False))]
    qrels = qrels.reset_index(drop=True)
    corpus = data.corpus.set_index("doc_id")["text"]
    queries = data.queries.set_index("query_id")["text"]
    items = qrels.assign(query=qrels["query_id"].map(queries), passage=qrels["doc_id"].map(corpus))[
        ["query_id", "doc_id", "query", "passage"]
    ]
    return map_grades(qrels, "trec-dl"), items


QUESTION = re.compile(r"Question:\n(.*?)\n\nText:\n(.*)\n\nAnswer with", re.S)


def overlap_judge(request):
    """A weak but real judge: 1 + 4 x the share of the query's words found in the passage."""
    query, passage = QUESTION.search(request.json["messages"][1]["content"]).groups()
    return ChatAnswer(json.dumps({"grade": 1 + round(4 * rerank_score(query, passage))}))


def test_agreement_tables_on_msmarco_with_a_simulated_member(
    openai_server, tmp_path, msmarco_sample
):
    human, pairs = msmarco_sample
    openai_server.chat.handler = overlap_judge
    llm = OpenAIJudge(
        "judge-test",
        base_url=openai_server.base_url,
        api_key="sk-test",
        cache=Cache(tmp_path / "cache"),
        progress=False,
        retry=RetryPolicy(max_attempts=1),
    )
    noisy = NoisyJudge(human, sd=0.8, seed=3, scale=(1, 5))
    exact = NoisyJudge(human, sd=0.0, scale=(1, 5))
    judge = EnsembleJudge([llm, noisy, exact], combine="mean", names=["llm", "noisy", "exact"])
    out = judge.grade_members(pairs)
    report = ensemble_agreement(human, out, labels=range(1, 6))
    table = report.table.set_index("judge")
    assert table.index.tolist() == ["llm", "noisy", "exact", "ensemble"]
    assert table["role"].tolist() == ["member"] * 3 + ["ensemble"]
    assert (table["n_pairs"] == 40).all()
    assert table.loc["exact", "kappa"] == 1.0 and table.loc["exact", "kappa (quadratic)"] == 1.0
    h = human["relevance"].to_numpy()
    for name, frame in [*out.members.items(), ("ensemble", out.grades)]:
        g = frame["grade"].to_numpy(dtype=np.int64)  # aligned with human: same row order
        row = table.loc[name]
        assert row["exact agreement"] == pytest.approx(np.mean(g == h))
        assert row["kappa"] == pytest.approx(
            weighted_kappa(h, g, weights="none", labels=range(1, 6))
        )
        assert row["kappa (quadratic)"] == pytest.approx(
            weighted_kappa(h, g, weights="quadratic", labels=range(1, 6))
        )
        assert row["alpha (interval)"] == pytest.approx(krippendorff_alpha(h, g), nan_ok=True)
        assert row["kendall tau-b"] == pytest.approx(kendall_tau(h, g).tau, nan_ok=True)
    # the noisy member is off the labels, but not all the way
    assert 0 < table.loc["noisy", "kappa (quadratic)"] < 1
    pw = report.pairwise
    assert list(zip(pw["judge_a"], pw["judge_b"], strict=True)) == [
        ("llm", "noisy"),
        ("llm", "exact"),
        ("noisy", "exact"),
    ]
    noisy_exact = pw.iloc[2]
    assert noisy_exact["kappa (quadratic)"] == pytest.approx(
        table.loc["noisy", "kappa (quadratic)"]
    )  # exact equals the human labels
    assert openai_server.request_count(CHAT) == 40

    # a member's missing grades leave its pairs out of its rows only
    cut = {**out.members, "ensemble": out.grades}
    cut["llm"] = cut["llm"].assign(valid=[i != 0 for i in range(40)])
    again = ensemble_agreement(human, cut, labels=range(1, 6)).table.set_index("judge")
    assert again["n_pairs"].tolist() == [39, 40, 40, 40]


def test_docstring_examples():
    import doctest

    import ragnb.judge.ensemble

    for module in (ragnb.judge.ensemble,):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0, module.__name__
