"""Self-consistency: a judge sampled n times (each sample its own cache entry, sample 0 keeping
the key of the judge at that temperature), combined by the ensemble's rule, and the samples'
agreement with each other (mean pairwise kappa, Krippendorff's alpha over all samples)."""

from __future__ import annotations

import itertools
import json
import math
import threading

import numpy as np
import pandas as pd
import pytest
from openai_server import ChatAnswer

from ragnb.core.cache import Cache
from ragnb.errors import InputError
from ragnb.judge import (
    Judge,
    NoisyJudge,
    OpenAIJudge,
    QrelsJudge,
    SelfConsistentJudge,
    combine_grades,
    self_agreement,
)
from ragnb.judge.agreement import krippendorff_alpha, krippendorff_alpha_coders, weighted_kappa
from ragnb.llm.ledger import Ledger

QRELS = {f"q{q}": {f"d{d}": (q + d) % 3 for d in range(8)} for q in range(5)}
ITEMS = [{"query_id": q, "doc_id": d} for q, docs in QRELS.items() for d in docs]


def texts(n: int = 3) -> list[dict[str, str]]:
    return [
        {"query_id": "q", "doc_id": f"d{i}", "query": "what is bm25", "passage": f"text {i}"}
        for i in range(n)
    ]


# ----------------------------------------------------------------------------- offline judges


def test_noisy_samples_differ_and_sample_zero_is_the_judge_itself():
    judge = NoisyJudge(QRELS, sd=1.0, seed=4)
    base = judge.grade_many(ITEMS)["grade"].tolist()
    assert judge.with_sample(0, 0.7).grade_many(ITEMS)["grade"].tolist() == base
    one = judge.with_sample(1).grade_many(ITEMS)["grade"].tolist()
    assert one != base
    assert judge.with_sample(1).grade_many(ITEMS)["grade"].tolist() == one  # reproducible
    assert judge.with_sample(1).describe()["sample"] == 1
    assert "sample" not in judge.describe()  # sample 0: the judge's identity is unchanged


def test_combined_grade_is_the_ensemble_rule_of_the_samples():
    judge = SelfConsistentJudge(NoisyJudge(QRELS, sd=1.2, seed=2), samples=3, combine="mean")
    out = judge.grade_members(ITEMS)
    wide = out.wide()
    for _, row in wide.iterrows():
        grades = [int(row[f"sample {i}"]) for i in range(3)]
        assert row["ensemble"] == combine_grades(grades, "mean", "lower")
    assert out.grades["judge_id"].iloc[0] == judge.judge_id
    assert "samples=3" in judge.judge_id and "temperature=0.7" in judge.judge_id
    assert judge.grade_many(ITEMS)["grade"].tolist() == out.grades["grade"].tolist()


def test_describe_and_fingerprint_name_samples_and_temperature():
    base = NoisyJudge(QRELS, sd=1.0)
    a = SelfConsistentJudge(base, samples=3, temperature=0.7)
    info = a.describe()
    assert (info["samples"], info["temperature"]) == (3, 0.7)
    assert info["judge"]["class"] == "NoisyJudge"
    assert a.fingerprint() != SelfConsistentJudge(base, samples=4).fingerprint()
    assert a.fingerprint() != SelfConsistentJudge(base, temperature=1.0).fingerprint()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"samples": 1}, "samples must be an integer >= 2"),
        ({"samples": True}, "samples must be"),
        ({"temperature": 0.0}, "temperature must be a number > 0"),
        ({"temperature": "hot"}, "temperature must be"),
    ],
)
def test_bad_settings_are_refused(kwargs, match):
    with pytest.raises(InputError, match=match):
        SelfConsistentJudge(NoisyJudge(QRELS), **kwargs)


def test_a_judge_that_does_not_sample_is_refused_and_labels_agree_with_themselves():
    class Fixed(QrelsJudge):
        with_sample = Judge.with_sample  # the base class refuses

    with pytest.raises(InputError, match="does not draw samples"):
        SelfConsistentJudge(Fixed(QRELS))
    out = SelfConsistentJudge(QrelsJudge(QRELS), samples=3).grade_members(ITEMS)
    table = self_agreement(out).set_index("statistic")["value"]
    assert table["exact agreement"] == 1.0 and table["kappa"] == 1.0
    assert table["alpha (interval)"] == 1.0


# ----------------------------------------------------------------------------- agreement


def test_self_agreement_matches_pairwise_kappa_and_multi_coder_alpha():
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 4, 60)
    samples = [np.clip(truth + rng.integers(-1, 2, 60), 0, 3) for _ in range(3)]
    frames = {
        f"s{i}": pd.DataFrame({"query_id": "q", "doc_id": [f"d{j}" for j in range(60)], "grade": g})
        for i, g in enumerate(samples)
    }
    out = self_agreement(frames, labels=[0, 1, 2, 3]).set_index("statistic")
    pairs = list(itertools.combinations(samples, 2))
    kappa = np.mean([weighted_kappa(a, b, weights="linear", labels=[0, 1, 2, 3]) for a, b in pairs])
    assert out.loc["kappa (linear)", "value"] == pytest.approx(kappa)
    assert out.loc["exact agreement", "value"] == pytest.approx(
        np.mean([np.mean(a == b) for a, b in pairs])
    )
    alpha = krippendorff_alpha_coders(np.column_stack(samples), level="ordinal")
    assert out.loc["alpha (ordinal)", "value"] == pytest.approx(alpha)
    assert set(out["n_pairs"]) == {60} and set(out["n_samples"]) == {3}


def test_invalid_grades_are_missing_values_not_zeros():
    frame = pd.DataFrame({"query_id": "q", "doc_id": list("abcd"), "grade": [1, 2, 3, 1]})
    other = frame.assign(grade=pd.array([1, 2, 3, None], dtype="Int64"))
    broken = frame.assign(valid=[True, True, True, False], grade=[1, 2, 3, 3])
    out = self_agreement({"a": frame, "b": other, "c": broken}).set_index("statistic")
    assert out.loc["exact agreement", "value"] == 1.0  # d: one valid grade, not comparable
    assert out.loc["alpha (nominal)", "value"] == 1.0
    assert out["n_pairs"].iloc[0] == 3


def test_misaligned_or_single_samples_are_refused():
    frame = pd.DataFrame({"query_id": "q", "doc_id": list("ab"), "grade": [1, 2]})
    with pytest.raises(InputError, match="at least 2 samples"):
        self_agreement({"a": frame})
    with pytest.raises(InputError, match="not aligned"):
        self_agreement({"a": frame, "b": frame.iloc[::-1]})


def naive_alpha(ratings: np.ndarray, level: str) -> float:
    """Krippendorff (2011) from the definition: pairable values, every ordered pair within a
    unit weighted 1 / (m_u - 1), disagreement from all pairs of pairable values."""
    units = [[v for v in row if not math.isnan(v)] for row in ratings]
    units = [u for u in units if len(u) >= 2]
    values = [v for u in units for v in u]
    cats = sorted(set(values))
    count = {c: values.count(c) for c in cats}

    def delta(c: float, k: float) -> float:
        if level == "nominal":
            return float(c != k)
        if level == "interval":
            return (c - k) ** 2
        lo, hi = min(c, k), max(c, k)
        between = sum(count[g] for g in cats if lo <= g <= hi)
        return (between - (count[c] + count[k]) / 2) ** 2

    n = len(values)
    observed = sum(
        delta(u[i], u[j]) / (len(u) - 1)
        for u in units
        for i in range(len(u))
        for j in range(len(u))
        if i != j
    )
    expected = sum(delta(a, b) for a in values for b in values)
    return 1 - (n - 1) * observed / expected


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_multi_coder_alpha_against_its_definition_and_the_two_coder_alpha(level):
    rng = np.random.default_rng(7)
    r = rng.integers(1, 5, size=(30, 4)).astype(float)
    r[rng.random(r.shape) < 0.2] = np.nan
    assert krippendorff_alpha_coders(r, level=level) == pytest.approx(naive_alpha(r, level))
    a, b = rng.integers(0, 3, 40), rng.integers(0, 3, 40)
    assert krippendorff_alpha_coders(np.c_[a, b], level=level) == pytest.approx(
        krippendorff_alpha(a, b, level=level)
    )


def test_multi_coder_alpha_refuses_bad_input():
    with pytest.raises(InputError, match="2-d"):
        krippendorff_alpha_coders([1, 2, 3])
    with pytest.raises(InputError, match="neither an integer"):
        krippendorff_alpha_coders([[1.5, 2.0]])
    assert math.isnan(krippendorff_alpha_coders([[1, np.nan], [2, np.nan]]))


# ----------------------------------------------------------------------------- an LLM judge


def test_each_sample_is_its_own_cache_entry_and_sample_zero_keeps_the_plain_key(
    openai_server, tmp_path
):
    sent: list[float] = []
    seen: dict[str, int] = {}
    lock = threading.Lock()

    def answer(request):  # the n-th request of a prompt gets grade n, whatever the arrival order
        with lock:
            sent.append(request.json["temperature"])
            prompt = json.dumps(request.json["messages"], sort_keys=True)
            seen[prompt] = seen.get(prompt, 0) + 1
            return ChatAnswer(json.dumps({"grade": seen[prompt]}))

    openai_server.chat.handler = answer
    settings = {
        "base_url": openai_server.base_url,
        "api_key": "sk-test",
        "cache": Cache(tmp_path / "cache"),
        "ledger": Ledger(),
        "progress": False,
    }
    plain = OpenAIJudge("m", temperature=0.7, **settings)
    first = plain.grade_many(texts())
    assert len(sent) == 3 and first["valid"].all()

    judge = SelfConsistentJudge(OpenAIJudge("m", **settings), samples=3, temperature=0.7)
    out = judge.grade_members(texts())
    # sample 0 answered from what the plain judge at 0.7 cached; samples 1, 2 were sent
    assert len(sent) == 9 and set(sent) == {0.7}
    assert out.members["sample 0"]["cached"].all()
    assert out.members["sample 0"]["grade"].tolist() == first["grade"].tolist()
    assert not out.members["sample 1"]["cached"].any()
    # every sample its own answer: the server answered each request differently
    grades = out.wide()[["sample 0", "sample 1", "sample 2"]].to_numpy()
    assert all(len(set(row)) == 3 for row in grades.tolist())
    assert judge.describe()["judge"]["params"]["temperature"] == 0.0
    assert judge.members[2].describe()["params"]["sample"] == 2

    again = SelfConsistentJudge(OpenAIJudge("m", **settings), samples=3, temperature=0.7)
    assert again.grade_members(texts()).grades["cached"].all()
    assert len(sent) == 9  # nothing sent twice
    assert "sk-test" not in json.dumps(judge.describe())


def test_planned_calls_count_every_sample(tmp_path):
    judge = SelfConsistentJudge(
        OpenAIJudge("m", cache=Cache(tmp_path), progress=False), samples=4, temperature=1.0
    )
    planned = judge.plan(texts(2))
    assert len(planned) == 8 and len({p.messages[-1]["content"] for p in planned}) == 2
