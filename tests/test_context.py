"""Context precision and recall: ContextPrecision@K, PR-AUC and its curve, SPEAR's pooled ground
truth, and the non-LLM (string, embedding, id) relevance of RAG samples against references.

The seed's two worked examples ("RAG Evaluation Part 1") are reproduced exactly, naive references
written from the definitions are checked on random inputs, and PR-AUC is compared with
ir_measures' AP (trec_eval ``map`` / ``map_cut``) on real BM25 runs and on the runs the repository
carries (``tests/data/oracle``).
"""

from __future__ import annotations

import difflib
import doctest
import math

import ir_measures
import numpy as np
import oracle_data
import pandas as pd
import pytest
from generated import shares_no_query
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_measures_incomplete import SOURCES, max_abs_diff, qrels_and_run

import ragnb.context.nonllm as context_module
import ragnb.measures.context as measures_context_module
from ragnb.context.nonllm import (
    context_matches,
    id_based_context_scores,
    levenshtein_similarity,
    non_llm_context_scores,
    sequence_matcher_similarity,
    similarity_matrix,
)
from ragnb.errors import InputError
from ragnb.evaluation.evaluate import evaluate
from ragnb.measures import (
    context_precision_at_k,
    parse_measure,
    pooled_qrels,
    pr_auc,
    pr_curve,
)
from ragnb.measures.context import context_precision_from_verdicts

TOL = 1e-9


def ranked(v: list[int], qid: str = "q") -> tuple[dict, dict]:
    """Qrels and run whose ranking has relevance vector ``v`` (rank 1 first)."""
    docs = [f"d{i}" for i in range(len(v))]
    qrels = {qid: {d: 1 for d, r in zip(docs, v, strict=True) if r} | {"never": 0}}
    run = {qid: {d: float(len(v) - i) for i, d in enumerate(docs)}}
    return qrels, run


# ----------------------------------------------------------------------------- the seed's examples


def test_seed_example_1_high_quality_retrieval():
    qrels, run = ranked([1, 1, 0, 1, 0])
    # (1.0 * 1 + 1.0 * 1 + 0.67 * 0 + 0.75 * 1 + 0.6 * 0) / 3 = 2.75 / 3
    assert context_precision_at_k(qrels, run, 5) == pytest.approx(11 / 12, abs=1e-15)
    assert round(context_precision_at_k(qrels, run, 5), 3) == 0.917


def test_seed_example_2_poor_retrieval():
    qrels, run = ranked([0, 0, 1, 1, 1])
    # (1/3 + 2/4 + 3/5) / 3 = 43/90 = 0.4778; the seed rounds 1/3 to 0.33 and prints 0.477
    value = context_precision_at_k(qrels, run, 5)
    assert value == pytest.approx(43 / 90, abs=1e-15)
    assert round(value, 4) == 0.4778 and round((0.33 + 0.5 + 0.6) / 3, 3) == 0.477


def test_seed_examples_through_reference_texts():
    ex1 = ["Einstein was...", "Einstein born...", "Physics history...", "Relativity theory..."]
    ex1 += ["Tesla was..."]
    ex2 = ["Tesla...", "Physics...", "Einstein was...", "Einstein born...", "Relativity..."]
    samples = [
        {"retrieved_contexts": ex1, "reference_contexts": [ex1[0], ex1[1], ex1[3]]},
        {"retrieved_contexts": ex2, "reference_contexts": ex2[2:]},
    ]
    out = non_llm_context_scores(samples, tau=1.0)  # exact matches only
    np.testing.assert_allclose(
        out["non_llm_context_precision_with_reference"], [11 / 12, 43 / 90], atol=1e-15
    )
    np.testing.assert_allclose(out["precision"], [3 / 5, 3 / 5])
    np.testing.assert_allclose(out["non_llm_context_recall"], [1.0, 1.0])


# ------------------------------------------------------------------- ContextPrecision, PR-AUC


def test_context_precision_and_pr_auc_hand_values():
    # v = 0 1 0 1, N_p = 4 (two relevant never retrieved)
    qrels = {"q": {"a": 0, "b": 1, "d": 1, "y": 1, "z": 1}}
    run = {"q": {"a": 4, "b": 3, "c": 2, "d": 1}}
    num = 1 / 2 + 2 / 4
    got = evaluate(qrels, run, ["ContextPrecision@4", "ContextPrecision@2", "PR-AUC", "PR-AUC@2"])
    assert got.aggregate_to_dict() == pytest.approx(
        {
            "ContextPrecision@4": num / 2,
            "ContextPrecision@2": 1 / 2,
            "PR-AUC": num / 4,
            "PR-AUC@2": (1 / 2) / 4,
        }  # fmt: skip
    )
    assert context_precision_at_k(qrels, run, 1) == 0.0  # no relevant in the top 1
    assert pr_auc(qrels, run) == pytest.approx(num / 4)


def test_one_vector_and_the_family_share_one_arithmetic():
    # context_precision_from_verdicts runs the family kernel's sums on one row: bit-equal
    rng = np.random.default_rng(11)
    for n in (1, 5, 8, 9, 17, 33, 100):
        for p in (0.1, 0.5, 0.9):
            v = (rng.random(n) < p).astype(int).tolist()
            qrels, run = ranked(v)
            kernel = evaluate(qrels, run, ["ContextPrecision"]).per_query["value"].iloc[0]
            one = context_precision_from_verdicts(v)
            assert one == kernel
            hits = np.cumsum(v)
            naive_v = sum(hits[i] / (i + 1) for i in range(n) if v[i]) / max(sum(v), 1)
            assert one == pytest.approx(naive_v, rel=1e-14, abs=0)
    assert context_precision_from_verdicts(np.array([True, False, True])) == (1 + 2 / 3) / 2
    assert context_precision_from_verdicts([]) == 0.0


@pytest.mark.parametrize(
    ("v", "match"),
    [
        ([1, 2, 0], "rank 2 is 2; expected 0 or 1"),
        ([0.0, float("nan")], "rank 2 is nan"),
        (["1"], "rank 1 is '1'"),
        ([[1, 0], [0, 1]], "flat sequence of 0 and 1, got shape"),
        ([[1], [1, 0]], "flat sequence of 0 and 1"),
    ],
)
def test_verdicts_must_be_zero_or_one(v, match):
    with pytest.raises(InputError, match=match):
        context_precision_from_verdicts(v)


def test_grades_and_rel_threshold():
    qrels = {"q": {"a": 2, "b": 1, "c": 2}}
    run = {"q": {"b": 3, "a": 2, "c": 1}}  # v(rel=2) = 0 1 1
    assert context_precision_at_k(qrels, run, 3, rel=2) == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert pr_auc(qrels, run, rel=2) == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert context_precision_at_k(qrels, run, 3) == 1.0


def test_names_round_trip_and_aliases():
    for name in ["ContextPrecision@10", "ContextPrecision", "ContextPrecision(rel=2)@5", "PR-AUC"]:
        assert str(parse_measure(name)) == name
    for name in ["PR-AUC@10", "PR-AUC(rel=2)@10"]:
        assert str(parse_measure(name)) == name
    assert str(parse_measure("context_precision@5")) == "ContextPrecision@5"


def test_evaluate_accepts_every_new_name():
    qrels, run = ranked([1, 0, 1, 0, 0, 1])
    names = ["bpref", "ContextPrecision@10", "PR-AUC@10", "PR-AUC", "nDCG'@10", "P'@5"]
    names += ["nDCG(judged_only=True)@10", "P(judged_only=True)@5"]
    res = evaluate(qrels, run, names)
    assert list(res.aggregate["measure"]) == [
        "Bpref", "ContextPrecision@10", "PR-AUC@10", "PR-AUC", "nDCG'@10", "P'@5",
    ]  # fmt: skip
    assert res.aggregate["value"].between(0, 1).all()


def test_doctests():
    for module in (measures_context_module, context_module):
        result = doctest.testmod(module)
        assert result.attempted >= 8 and result.failed == 0, module.__name__


# ----------------------------------------------------------------------------- the PR curve


def test_pr_curve_frame_and_its_area():
    qrels = {"q1": {"a": 1, "c": 1, "z": 1}, "q2": {"e": 0}, "q3": {"f": 1}}
    run = {"q1": {"a": 3, "b": 2, "c": 1}, "q2": {"e": 1, "g": 0.5}}
    curve = pr_curve(qrels, run)
    assert list(curve.columns) == ["query_id", "rank", "precision", "recall", "relevant"]
    assert curve["query_id"].tolist() == ["q1"] * 3 + ["q2"] * 2  # q3 not in the run: no rows
    np.testing.assert_allclose(curve["precision"][:3], [1, 1 / 2, 2 / 3])
    np.testing.assert_allclose(curve["recall"][:3], [1 / 3, 1 / 3, 2 / 3])
    assert curve["recall"][3:].isna().all()  # q2 has no relevant document
    # the step-wise area: precision times the width of each recall step = PR-AUC
    steps = curve.assign(width=curve.groupby("query_id")["recall"].diff().fillna(curve["recall"]))
    area = (steps["precision"] * steps["width"]).groupby(steps["query_id"]).sum(min_count=1)
    per_query = evaluate(qrels, run, ["PR-AUC"]).per_query_wide()["PR-AUC"]
    assert area["q1"] == pytest.approx(per_query["q1"]) == pytest.approx((1 + 2 / 3) / 3)
    assert len(pr_curve(qrels, run, 2)) == 4


def test_pr_curve_validates():
    with pytest.raises(InputError, match="positive integer"):
        pr_curve({"q": {"a": 1}}, {"q": {"a": 1}}, 0)


# ----------------------------------------------------------------------------- SPEAR's pooled GT


def test_pooled_qrels_make_recall_relative_to_the_compared_systems():
    qrels = {"q": {"a": 1, "b": 1, "c": 1, "d": 0}, "q2": {"z": 1}}
    s1 = {"q": {"a": 2, "x": 1.5, "d": 1}}
    s2 = {"q": {"b": 2, "a": 1, "y": 0.5}}
    pooled = pooled_qrels(qrels, {"s1": s1, "s2": s2})
    assert pooled.to_dict("list") == {
        "query_id": ["q", "q", "q"], "doc_id": ["a", "b", "d"], "relevance": [1, 1, 0],
    }  # fmt: skip
    # q2 drops out; N_p of q is now 2 (c was found by neither system)
    assert pr_auc(pooled, s1) == pytest.approx(1 / 2)
    assert pr_auc(pooled, s2) == pytest.approx(1.0)
    assert pooled_qrels(qrels, [s1, s2], 1)["doc_id"].tolist() == ["a", "b"]
    with pytest.raises(InputError, match="at least one run"):
        pooled_qrels(qrels, [])


# ----------------------------------------------------------------------------- naive reference


def _ranking(run_q: dict[str, float]) -> list[str]:
    return [d for d, _ in sorted(run_q.items(), key=lambda x: (x[1], x[0]), reverse=True)]


def naive(name: str, qrels_q: dict[str, int], run_q: dict[str, float]) -> float:
    m = parse_measure(name)
    k, rel = m.cutoff, m.params["rel"]
    top = _ranking(run_q)[:k] if k else _ranking(run_q)
    v = [d in qrels_q and qrels_q[d] >= rel for d in top]
    num = sum(sum(v[: i + 1]) / (i + 1) for i in range(len(v)) if v[i])
    den = sum(v) if m.family == "ContextPrecision" else sum(g >= rel for g in qrels_q.values())
    return num / den if den else 0.0


DOCS = [f"d{i}" for i in range(12)]
QIDS = ["q0", "q1", "q2"]
qrels_st = st.dictionaries(
    st.sampled_from(QIDS),
    st.dictionaries(st.sampled_from(DOCS), st.integers(-1, 3), min_size=1, max_size=9),
    min_size=1,
)
run_st = st.dictionaries(
    st.sampled_from(QIDS),
    st.dictionaries(st.sampled_from(DOCS), st.sampled_from([0.0, 0.5, 1.0, 2.0])),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(qrels=qrels_st, run=run_st, k=st.integers(1, 14), rel=st.integers(0, 3))
def test_agrees_with_naive_reference(qrels, run, k, rel):
    b = f"(rel={rel})" if rel != 1 else ""
    names = [f"ContextPrecision{b}@{k}", f"ContextPrecision{b}", f"PR-AUC{b}@{k}", f"PR-AUC{b}"]
    if shares_no_query(qrels, run):  # an error, not zeros
        with pytest.raises(InputError, match="share no query id"):
            evaluate(qrels, run, names)
        return
    wide = evaluate(qrels, run, names).per_query_wide()
    for name in names:
        for qid in qrels:
            expected = naive(name, qrels[qid], run.get(qid, {}))
            assert wide.loc[qid, name] == pytest.approx(expected, abs=1e-12), (name, qid)
    # same numerator, divisor n_p(K) <= N_p: PR-AUC@K <= ContextPrecision@K
    cp, ap = wide[names[0]], wide[names[2]]
    assert (ap <= cp + 1e-12).all()


@settings(max_examples=40, deadline=None)
@given(qrels=qrels_st, s1=run_st, s2=run_st)
def test_pooling_never_lowers_pr_auc(qrels, s1, s2):
    pooled = pooled_qrels(qrels, [s1, s2])
    if pooled.empty or shares_no_query(qrels, s1) or shares_no_query(pooled, s1):
        return  # nothing pooled, or s1 shares no query to score (an error: see the test above)
    full = evaluate(qrels, s1, ["PR-AUC"]).per_query_wide()["PR-AUC"]
    relative = evaluate(pooled, s1, ["PR-AUC"]).per_query_wide()["PR-AUC"]
    assert (relative >= full.loc[relative.index] - 1e-12).all()


# ----------------------------------------------------------------------------- oracle: AP


AP_PAIRS = {"PR-AUC": "AP", "PR-AUC@10": "AP@10", "PR-AUC(rel=2)@100": "AP(rel=2)@100"}


@pytest.mark.parametrize("source", SOURCES)
def test_pr_auc_is_ap_on_dbpedia(request, source):
    qrels, run = qrels_and_run(request, source, "dbpedia_path", "dbpedia-like")
    diffs = max_abs_diff(qrels, run, AP_PAIRS)
    assert max(diffs.values()) <= TOL, diffs


@pytest.mark.parametrize("system", oracle_data.SYSTEMS)
def test_pr_auc_is_ap_on_the_carried_dl_case(system):
    qrels, run = oracle_data.qrels("dl-like"), oracle_data.run("dl-like", system)
    diffs = max_abs_diff(qrels, run, AP_PAIRS | {"PR-AUC(rel=3)@5": "AP(rel=3)@5"})
    assert max(diffs.values()) <= TOL, diffs


@pytest.mark.parametrize("source", SOURCES)
def test_pr_auc_is_ap_on_scifact(request, source):
    qrels, run = qrels_and_run(request, source, "scifact_path", "scifact-like")
    diffs = max_abs_diff(qrels, run, {"PR-AUC": "AP", "PR-AUC@10": "AP@10"})
    assert max(diffs.values()) <= TOL, diffs
    # ContextPrecision ignores the relevant documents never retrieved: never below PR-AUC
    wide = evaluate(qrels, run, ["ContextPrecision@10", "PR-AUC@10"]).per_query_wide()
    assert (wide["ContextPrecision@10"] >= wide["PR-AUC@10"] - 1e-12).all()
    assert (wide["ContextPrecision@10"] > wide["PR-AUC@10"] + 1e-9).any()


def test_pr_auc_matches_ap_on_random_tied_runs():
    rng = np.random.default_rng(7)
    docs = [f"d{i:02d}" for i in range(40)]
    qrels = pd.DataFrame(
        [(f"q{q}", d, int(rng.integers(-1, 3))) for q in range(30) for d in rng.choice(docs, 12)],
        columns=["query_id", "doc_id", "relevance"],
    ).drop_duplicates(["query_id", "doc_id"])
    run = pd.DataFrame(
        [(f"q{q}", d, float(rng.integers(0, 4))) for q in range(35) for d in docs[:: q % 3 + 1]],
        columns=["query_id", "doc_id", "score"],
    )
    diffs = max_abs_diff(
        qrels, run, {"PR-AUC": "AP", "PR-AUC@5": "AP@5", "PR-AUC(rel=2)": "AP(rel=2)"}
    )
    assert max(diffs.values()) <= TOL, diffs


# ----------------------------------------------------------------------------- string similarity


def naive_levenshtein(a: str, b: str) -> int:
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        row = [i]
        for j, cb in enumerate(b, 1):
            row.append(min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = row
    return prev[-1]


text = st.text(alphabet="abcé d", max_size=14)


@settings(max_examples=300, deadline=None)
@given(a=text, b=text)
def test_levenshtein_agrees_with_the_textbook_recurrence(a, b):
    expected = 1.0 if not (a or b) else 1 - naive_levenshtein(a, b) / max(len(a), len(b))
    assert levenshtein_similarity(a, b) == pytest.approx(expected, abs=1e-15)
    assert levenshtein_similarity(a, b) == levenshtein_similarity(b, a)
    assert (
        sequence_matcher_similarity(a, b)
        == difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()
    )


def test_similarity_hand_values():
    assert levenshtein_similarity("kitten", "sitting") == pytest.approx(1 - 3 / 7)
    assert levenshtein_similarity("ab", "ac") == 0.5
    assert sequence_matcher_similarity("abcd", "bcde") == 0.75
    # autojunk off: a long text still matches itself with one edit
    long = "the quick brown fox jumps over the lazy dog " * 10
    assert sequence_matcher_similarity(long, long + "!") > 0.99
    with pytest.raises(InputError, match="must be a str"):
        levenshtein_similarity("a", None)  # type: ignore[arg-type]


def test_threshold_comparison_is_explicit():
    s = [{"retrieved_contexts": ["ab"], "reference_contexts": ["ac"]}]  # similarity exactly 0.5
    at = non_llm_context_scores(s, tau=0.5, compare=">=")
    above = non_llm_context_scores(s, tau=0.5, compare=">")
    assert at["precision"][0] == 1.0 and at["non_llm_context_recall"][0] == 1.0
    assert above["precision"][0] == 0.0 and above["non_llm_context_recall"][0] == 0.0
    assert above["non_llm_context_precision_with_reference"][0] == 0.0
    assert above.attrs == {"similarity": "levenshtein", "tau": 0.5, "compare": ">", "k": None}


def naive_scores(sample, sim, tau, k):
    """The seed's algorithm and ragas' weighting (with its 1e-10), in plain Python."""
    r, c = sample["retrieved_contexts"][:k], sample["reference_contexts"]
    v = [1 if c and max(sim(x, y) for y in c) >= tau else 0 for x in r]
    u = [1 if r and max(sim(x, y) for x in r) >= tau else 0 for y in c]
    ap = sum(sum(v[: i + 1]) / (i + 1) * v[i] for i in range(len(v))) / (sum(v) + 1e-10)
    return (
        sum(v) / len(r) if r else math.nan,
        ap if r else math.nan,
        sum(u) / len(c) if c else math.nan,
    )


sample_st = st.fixed_dictionaries(
    {
        "retrieved_contexts": st.lists(st.text(alphabet="abc", max_size=6), max_size=5),
        "reference_contexts": st.lists(st.text(alphabet="abc", max_size=6), max_size=3),
    }
)


@settings(max_examples=100, deadline=None)
@given(
    samples=st.lists(sample_st, min_size=1, max_size=4),
    tau=st.sampled_from([0.3, 0.5, 0.75, 1.0]),
    k=st.sampled_from([None, 1, 3]),
    which=st.sampled_from(["levenshtein", "sequence_matcher"]),
)
def test_text_scores_agree_with_naive_reference(samples, tau, k, which):
    sim = levenshtein_similarity if which == "levenshtein" else sequence_matcher_similarity
    out = non_llm_context_scores(samples, k, similarity=which, tau=tau)
    cols = ["precision", "non_llm_context_precision_with_reference", "non_llm_context_recall"]
    expected = np.array([naive_scores(s, sim, tau, k) for s in samples])
    np.testing.assert_allclose(out[cols].to_numpy(), expected, atol=1e-9, equal_nan=True)
    matches = context_matches(samples, k, similarity=which, tau=tau)
    hits = matches.groupby(["sample", "side"])["hit"].sum()
    for i, row in out.iterrows():
        assert hits.get((i, "retrieved"), 0) == row["n_relevant"]
        assert hits.get((i, "reference"), 0) == row["n_recalled"]


def test_text_scores_frame_and_edge_cases():
    frame = pd.DataFrame(
        {
            "user_input": ["q1", "q2", "q3"],
            "retrieved_contexts": [["abc", "xyz"], [], ["abc"]],
            "reference_contexts": [["abd"], ["abc"], []],
        },
        index=["s1", "s2", "s3"],
    )
    out = non_llm_context_scores(frame)
    assert out["sample"].tolist() == ["s1", "s2", "s3"]
    assert out["user_input"].tolist() == ["q1", "q2", "q3"]
    assert out.loc[0, "precision"] == 0.5 and out.loc[0, "non_llm_context_recall"] == 1.0
    assert math.isnan(out.loc[1, "precision"]) and out.loc[1, "non_llm_context_recall"] == 0.0
    assert out.loc[2, "precision"] == 0.0 and math.isnan(out.loc[2, "non_llm_context_recall"])
    assert out.loc[2, "non_llm_context_precision_with_reference"] == 0.0
    # a callable similarity and tuples of strings are accepted
    exact = non_llm_context_scores(
        [{"retrieved_contexts": ("abc", "abd"), "reference_contexts": ("abd",)}],
        similarity=lambda a, b: float(a == b),
        tau=1.0,
    )
    assert exact["non_llm_context_precision_with_reference"][0] == 0.5
    assert exact.attrs["similarity"] == "<lambda>"
    assert similarity_matrix(["a"], []).shape == (1, 0)


@pytest.mark.parametrize(
    ("samples", "message", "column"),
    [
        (
            [{"retrieved_contexts": ["a"]}],
            "lack the field 'reference_contexts'",
            "reference_contexts",
        ),
        (
            [{"retrieved_contexts": "abc", "reference_contexts": ["a"]}],
            "row 0: retrieved_contexts is a single string",
            "retrieved_contexts",
        ),
        (
            [{"retrieved_contexts": None, "reference_contexts": ["a"]}],
            "row 0: retrieved_contexts is missing",
            "retrieved_contexts",
        ),
        (
            [
                {"retrieved_contexts": ["a"], "reference_contexts": ["a"]},
                {"retrieved_contexts": ["a"], "reference_contexts": ["a", 3]},
            ],
            r"row 1: reference_contexts\[1\] must be a str, got int 3",
            "reference_contexts",
        ),
        (
            [{"retrieved_contexts": {"a": 1}, "reference_contexts": ["a"]}],
            "must be a list of strings, got dict",
            "retrieved_contexts",
        ),
    ],
)
def test_text_inputs_raise_input_error_naming_field_and_row(samples, message, column):
    with pytest.raises(InputError, match=message) as err:
        non_llm_context_scores(samples)
    assert err.value.column == column


def test_bad_arguments_raise_input_error():
    ok = [{"retrieved_contexts": ["a"], "reference_contexts": ["a"]}]
    for kwargs, message in [
        ({"compare": "=>"}, "compare must be"),
        ({"tau": float("nan")}, "tau must be"),
        ({"k": 0}, "k must be"),
        ({"similarity": "jaccard"}, "unknown similarity"),
        ({"similarity": "embedding"}, "needs an embedder"),
    ]:
        with pytest.raises(InputError, match=message):
            non_llm_context_scores(ok, **kwargs)
    with pytest.raises(InputError, match="row 0: a sample must be a dict"):
        non_llm_context_scores(["abc"])
    with pytest.raises(InputError, match="DataFrame or a list of dicts"):
        non_llm_context_scores(42)
    frame = pd.DataFrame(
        {"retrieved_contexts": [["a"]], "reference_contexts": [["a"]]}, index=["x"]
    )
    with pytest.raises(InputError, match="row x"):
        non_llm_context_scores(frame.assign(retrieved_contexts=["a"]))


# ----------------------------------------------------------------------------- embeddings


def test_embedding_cosine_relevance(tmp_path):
    from ragnb.embed import make_embedder

    embedder = make_embedder(cache_dir=tmp_path, progress=False)
    sample = {
        "user_input": "Who developed relativity?",
        "retrieved_contexts": [
            "Albert Einstein formulated the theory of relativity.",
            "Bananas are rich in potassium.",
            "The Eiffel Tower stands in Paris.",
        ],
        "reference_contexts": [
            "Einstein developed the theory of relativity.",
            "Paris is home to the Eiffel Tower.",
        ],
    }
    m = similarity_matrix(
        sample["retrieved_contexts"], sample["reference_contexts"], similarity="embedding",
        embedder=embedder,
    )  # fmt: skip
    assert m.shape == (3, 2) and np.all(m <= 1) and np.all(m >= -1)
    assert m[0, 0] > 0.8 and m[2, 1] > 0.8 and m[1].max() < 0.3  # paraphrases vs unrelated
    same = similarity_matrix(["a cat"], ["a cat"], similarity="embedding", embedder=embedder)
    assert same[0, 0] == pytest.approx(1.0, abs=1e-5)
    calls = embedder.backend.n_calls
    out = non_llm_context_scores([sample], similarity="embedding", embedder=embedder, tau=0.7)
    assert embedder.backend.n_calls == calls  # every text came from the cache
    assert out["n_relevant"][0] == 2 and out["non_llm_context_recall"][0] == 1.0
    assert out["non_llm_context_precision_with_reference"][0] == pytest.approx((1 + 2 / 3) / 2)
    assert out.attrs["embedding_model"].endswith("all-MiniLM-L6-v2")
    # the string similarity misses the paraphrase at the same threshold
    lexical = non_llm_context_scores([sample], tau=0.7)
    assert lexical["n_relevant"][0] < 2


# ----------------------------------------------------------------------------- ids


def test_id_based_example_from_the_brief():
    out = id_based_context_scores(
        [{"retrieved_context_ids": [1, 2, 3], "reference_context_ids": [1, 2, 4]}]
    )
    assert out["id_based_context_precision"][0] == pytest.approx(2 / 3)
    assert out["id_based_context_recall"][0] == pytest.approx(2 / 3)
    assert round(out["id_based_context_precision"][0], 3) == 0.667


def test_id_based_sets_strings_cutoff_and_empty_lists():
    frame = pd.DataFrame(
        {
            "user_input": ["a", "b", "c"],
            "retrieved_context_ids": [["1", 2, "2", "9"], [], ["x"]],
            "reference_context_ids": [[1, "2"], ["x"], []],
        }
    )
    out = id_based_context_scores(frame)
    assert out[["n_retrieved", "n_reference", "n_hits"]].values.tolist() == [
        [3, 2, 2], [0, 1, 0], [1, 0, 0],
    ]  # fmt: skip
    assert out["id_based_context_precision"][0] == pytest.approx(2 / 3)
    assert out["id_based_context_recall"][0] == 1.0
    assert math.isnan(out["id_based_context_precision"][1])
    assert math.isnan(out["id_based_context_recall"][2])
    cut = id_based_context_scores(frame, k=1)
    assert cut["id_based_context_precision"][0] == 1.0 and cut["id_based_context_recall"][0] == 0.5


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"retrieved_context_ids": [1]}, "lack the field 'reference_context_ids'"),
        ({"retrieved_context_ids": 1, "reference_context_ids": [1]}, "single id"),
        (
            {"retrieved_context_ids": [1.5], "reference_context_ids": [1]},
            r"\[0\] must be a str or int",
        ),
        ({"retrieved_context_ids": [True], "reference_context_ids": [1]}, "str or int"),
        ({"retrieved_context_ids": [1], "reference_context_ids": None}, "missing"),
    ],
)
def test_id_inputs_raise_input_error(row, message):
    with pytest.raises(InputError, match=message):
        id_based_context_scores([row])


def test_ir_measures_ap_is_the_unnormalised_sum_over_all_relevant():
    """Documents the relation the module docstring states, with ir_measures itself."""
    qrels, run = ranked([0, 1, 0, 1])
    qrels["q"] |= {"y": 1, "z": 1}  # N_p = 4, two never retrieved
    ap = next(ir_measures.iter_calc([ir_measures.AP], qrels, run)).value
    assert ap == pytest.approx(pr_auc(qrels, run)) == pytest.approx((1 / 2 + 2 / 4) / 4)
    assert context_precision_at_k(qrels, run) == pytest.approx(ap * 4 / 2)
