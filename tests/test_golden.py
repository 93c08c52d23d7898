"""The golden-set pipeline (ragnb.studies.golden): S1-S6 on a real subset of data/pydocs, resumable
stages, incremental judging, the run folder and its manifest, and an LLM judge end to end
against the local OpenAI-compatible server (with a canary API key)."""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from openai_server import ChatAnswer, error

from ragnb.errors import InputError
from ragnb.io.files import read_beir, read_json, write_jsonl, write_qrels
from ragnb.io.readers import read_qrels
from ragnb.judge import NoisyJudge, OpenAIJudge, QrelsJudge
from ragnb.judge.base import Judge
from ragnb.llm.ledger import BudgetExceededError, Ledger
from ragnb.retrievers.retrieve import BM25Retriever, doc_texts
from ragnb.studies.golden import (
    GoldenPipeline,
    GoldenSetConfig,
    build_pipeline,
    default_keep_grade,
    judge_banner,
    merge_pools,
    normalise_queries,
    pool_candidates,
    prune_pool,
    public_judge_info,
)

REPO = Path(__file__).resolve().parents[1]
PYDOCS = REPO / "data" / "pydocs"
CHAT = "/v1/chat/completions"


# ----------------------------------------------------------------------------- helpers


@pytest.fixture(scope="module")
def pydocs():
    return read_beir(PYDOCS)


@pytest.fixture(scope="module")
def ten(pydocs):
    """The first 10 judged queries of data/pydocs."""
    return pydocs.judged_queries.head(10)


class CountingJudge(Judge):
    """Wraps a judge and counts what reaches it (items graded, batches ranked)."""

    def __init__(self, inner: Judge) -> None:
        self.inner = inner
        self.judge_id = inner.judge_id
        self.scale = inner.scale
        self.graded = 0
        self.ranked = 0

    def _grade_batch(self, requests, stage):
        self.graded += len(requests)
        return self.inner._grade_batch(requests, stage)

    def _rank_batch(self, requests, stage):
        self.ranked += len(requests)
        return self.inner._rank_batch(requests, stage)

    def describe(self):
        return self.inner.describe()

    def fingerprint(self):
        return self.inner.fingerprint()


def lexical_systems():
    return {
        "bm25": BM25Retriever(),
        "bm25-plain": BM25Retriever(stemmer=None, stopwords=None, name="bm25-plain"),
    }


def build(data, queries, judge, run_dir=None, **kw):
    kw.setdefault("depth", 10)
    kw.setdefault("min_pool", 12)
    kw.setdefault("top_n", 8)
    return GoldenPipeline(
        data.corpus,
        queries,
        judge,
        kw.pop("systems", None) or lexical_systems(),
        run_dir=run_dir,
        **kw,
    )


def tiny_config(tmp_path: Path, **kw) -> GoldenSetConfig:
    """A golden set of 2 queries, BM25 pools of 4, no new system, no simulation, no PPI."""
    params = {
        "judge": "noisy",
        "retrievers": ["bm25"],
        "new_systems": [],
        "max_queries": 2,
        "depth": 4,
        "min_pool": 4,
        "top_n": 2,
        "simulate": False,
        "ppi_labels": 0,
        "cache_dir": str(tmp_path / "cache"),
    }
    return GoldenSetConfig(**{**params, **kw})


def small_beir(src: Path, dst: Path, n_queries: int = 3) -> Path:
    """The first ``n_queries`` judged queries of ``src`` with the whole corpus (so that the
    retrievers find unjudged documents too)."""
    data = read_beir(src)
    qids = list(dict.fromkeys(data.judged_queries["query_id"]))[:n_queries]
    write_jsonl(
        [
            {"_id": d, "title": t, "text": x}
            for d, t, x in data.corpus[["doc_id", "title", "text"]].itertuples(index=False)
        ],
        dst / "corpus.jsonl",
    )
    queries = data.queries[data.queries["query_id"].isin(qids)]
    write_jsonl(
        [{"_id": q, "text": t} for q, t in queries[["query_id", "text"]].itertuples(index=False)],
        dst / "queries.jsonl",
    )
    write_qrels(data.qrels[data.qrels["query_id"].isin(qids)], dst / "qrels" / "test.tsv", "beir")
    return dst


# ----------------------------------------------------------------------------- stage functions


def test_s1_normalises_to_nfc_keeps_the_original_and_rewrites_by_a_plain_function():
    q = pd.DataFrame({"query_id": ["q1", "q2"], "text": ["Cafe\u0301 au lait ", "ok"]})
    plain = normalise_queries(q)
    assert plain["original"].tolist() == ["Cafe\u0301 au lait ", "ok"]
    assert plain["normalised"].tolist() == ["Caf\u00e9 au lait", "ok"]
    assert plain["text"].tolist() == plain["normalised"].tolist()
    assert not plain["rewritten"].any() and (plain["rewrite_reason"] == "").all()
    # a rewriter gets the normalised text; None keeps it, with the reason
    seen = []

    def rewrite(text):
        seen.append(text)
        return None if text == "ok" else f"what is {text}?"

    out = normalise_queries(q, rewrite)
    assert seen == ["Caf\u00e9 au lait", "ok"]
    assert out["text"].tolist() == ["what is Caf\u00e9 au lait?", "ok"]
    assert out["rewritten"].tolist() == [True, False]
    assert out["rewrite_reason"].tolist() == ["", "the rewriter returned nothing"]


def test_s2_and_s3_provenance_and_rrf_by_hand():
    runs = {
        "a": pd.DataFrame({"query_id": "q", "doc_id": ["x", "y", "z"], "score": [3.0, 2.0, 1.0]}),
        "b": pd.DataFrame({"query_id": "q", "doc_id": ["y", "w"], "score": [9.0, 8.0]}),
    }
    queries = pd.DataFrame({"query_id": ["q"], "text": ["t"]})
    pools = pool_candidates(queries, runs, depth=2)
    assert pools[["system", "doc_id", "rank"]].values.tolist() == [
        ["a", "x", 1],
        ["a", "y", 2],
        ["b", "y", 1],
        ["b", "w", 2],
    ]
    merged = merge_pools(pools, rrf_k=60).set_index("doc_id")
    assert merged.loc["y", "rrf_score"] == pytest.approx(1 / 62 + 1 / 61)
    assert merged.loc["x", "rrf_score"] == pytest.approx(1 / 61)
    assert merged["rrf_rank"].to_dict() == {"y": 1, "x": 2, "w": 3}
    assert merged.loc["y", "systems"] == "b,a" and merged.loc["y", "n_systems"] == 2
    assert merged.loc["w", "best_rank"] == 2


def test_s5_keeps_every_high_grade_then_fills_by_bucket_in_rrf_order():
    g = pd.DataFrame(
        {
            "query_id": ["q"] * 7,
            "doc_id": list("abcdefg"),
            "rrf_rank": [1, 2, 3, 4, 5, 6, 7],
            "grade": pd.array([1, 5, 2, 4, 2, None, 5], dtype="Int64"),
            "valid": [True, True, True, True, True, False, True],
        }
    )
    # min_pool 2: the three high grades stay anyway (b, g: 5; d: 4)
    assert prune_pool(g, 2, keep_grade=4)["doc_id"].tolist() == ["b", "g", "d"]
    # min_pool 5: then grade 2 in RRF order (c before e)
    out = prune_pool(g, 5, keep_grade=4)
    assert out["doc_id"].tolist() == ["b", "g", "d", "c", "e"]
    assert out["kept"].tolist() == ["grade"] * 3 + ["fill"] * 2
    # the ungraded document comes last of all
    assert prune_pool(g, 7, keep_grade=4)["doc_id"].tolist()[-2:] == ["a", "f"]
    assert [default_keep_grade(s) for s in [(1, 5), (0, 1), (0, 2)]] == [4, 1, 2]


# ----------------------------------------------------------------------------- the pipeline


def test_pipeline_with_qrels_judge_reproduces_the_dataset_labels(pydocs, ten):
    judge = QrelsJudge(pydocs.qrels, missing=0)
    gs = build(pydocs, ten, judge).run()
    # S1-S3: every query, two systems, the union of their top 10
    assert len(gs.queries) == 10
    assert set(gs.pools["system"]) == {"bm25", "bm25-plain"}
    assert gs.pools.groupby(["system", "query_id"])["rank"].max().max() <= 10
    union = gs.pools[["query_id", "doc_id"]].drop_duplicates()
    assert len(gs.candidates) == len(union)
    # S4: every candidate graded; golden qrels = the labels on pooled documents, 0 elsewhere
    assert gs.grades["valid"].all() and len(gs.qrels) == len(gs.candidates)
    labels = pydocs.qrels.set_index(["query_id", "doc_id"])["relevance"]
    golden = gs.qrels.set_index(["query_id", "doc_id"])["relevance"]
    labelled = golden.index.isin(labels.index)
    assert labelled.sum() > 50
    assert (golden[labelled] == labels.reindex(golden.index[labelled])).all()
    assert (golden[~labelled] == 0).all()
    # S5: grade 1 (the keep grade on 0-1) always kept; pools of at least min_pool when possible
    kept = gs.pool.groupby("query_id").size()
    n_cand = gs.candidates.groupby("query_id").size()
    assert (kept >= np.minimum(12, n_cand)).all()
    rel = gs.grades[gs.grades["grade"] == 1]
    assert set(zip(rel["query_id"], rel["doc_id"], strict=True)) <= set(
        zip(gs.pool["query_id"], gs.pool["doc_id"], strict=True)
    )
    # S6: each query's order is a permutation of its pool; the top is the top 8
    for qid, g in gs.order.groupby("query_id"):
        assert sorted(g["doc_id"]) == sorted(gs.pool.loc[gs.pool["query_id"] == qid, "doc_id"])
        assert g["rank"].tolist() == list(range(1, len(g) + 1))
        assert g["in_top"].sum() == min(8, len(g))
    # with the labels as judge, no relevant document is ranked below an irrelevant one in the top
    top = gs.top()
    assert set(top.columns) >= {"query_id", "rank", "doc_id", "grade", "score", "sigma"}
    assert judge_banner(judge) == "**Judge: qrels-judge — the dataset's own labels, not an LLM.**"


def test_noisy_judge_grades_are_the_labels_plus_noise(pydocs, ten):
    exact = build(pydocs, ten, NoisyJudge(pydocs.qrels, sd=0.0, missing=0)).run()
    noisy = build(pydocs, ten, NoisyJudge(pydocs.qrels, sd=1.0, seed=3, missing=0)).run()
    base = build(pydocs, ten, QrelsJudge(pydocs.qrels, missing=0)).run()
    assert exact.qrels.equals(base.qrels)
    merged = noisy.qrels.merge(base.qrels, on=["query_id", "doc_id"], suffixes=("_n", "_b"))
    flips = (merged["relevance_n"] != merged["relevance_b"]).mean()
    assert 0.05 < flips < 0.6  # sd 1 on a 0-1 scale flips a good share of the grades
    assert "noisy-judge(sd=1,seed=3)" in noisy.banner() and "not an LLM" in noisy.banner()


def test_second_run_is_a_noop_and_a_changed_parameter_reruns_only_its_stages(pydocs, ten, tmp_path):
    first_judge = CountingJudge(NoisyJudge(pydocs.qrels, missing=0))
    first = build(pydocs, ten, first_judge, tmp_path / "run").run()
    assert first_judge.graded == len(first.candidates) and first_judge.ranked > 0
    assert not any(r.reused for r in first.build.stage_records.values())

    again_judge = CountingJudge(NoisyJudge(pydocs.qrels, missing=0))
    again = build(pydocs, ten, again_judge, tmp_path / "run").run()
    assert again_judge.graded == 0 and again_judge.ranked == 0  # zero judge calls
    assert all(r.reused for r in again.build.stage_records.values())
    assert again.qrels.equals(first.qrels)
    pd.testing.assert_frame_equal(again.order, first.order)
    pd.testing.assert_frame_equal(again.grades, first.grades)

    # another min_pool: S1-S4 reused (no grading), S5 and S6 recomputed
    third_judge = CountingJudge(NoisyJudge(pydocs.qrels, missing=0))
    third = build(pydocs, ten, third_judge, tmp_path / "run", min_pool=15).run()
    reused = {s: r.reused for s, r in third.build.stage_records.items()}
    assert reused == {"s1": True, "s2": True, "s3": True, "s4": True, "s5": False, "s6": False}
    assert third_judge.graded == 0 and third_judge.ranked > 0

    # another judge (other labels): S4 onwards recomputed
    other = CountingJudge(NoisyJudge(pydocs.qrels, sd=0.5, missing=0))
    build(pydocs, ten, other, tmp_path / "run", min_pool=15).run()
    assert other.graded == len(first.candidates)


def test_a_code_change_reruns_the_stages_that_run_it(pydocs, ten, tmp_path, monkeypatch):
    import ragnb.studies.golden.config

    build(pydocs, ten, QrelsJudge(pydocs.qrels, missing=0), tmp_path / "run").run()
    # as if the prune code had changed: S5 runs again, S1-S4 do not; S5's output is the same, and
    # S6 is keyed on that output, not on S5's inputs, so S6 is still valid and reused
    monkeypatch.setitem(
        ragnb.studies.golden.config.STAGE_CODE, "s5", ("ragnb.studies.golden.stages", "ragnb.stats")
    )
    judge = CountingJudge(QrelsJudge(pydocs.qrels, missing=0))
    gs = build(pydocs, ten, judge, tmp_path / "run").run()
    reused = {s: r.reused for s, r in gs.build.stage_records.items()}
    assert reused == {"s1": True, "s2": True, "s3": True, "s4": True, "s5": False, "s6": True}
    assert judge.graded == 0 and judge.ranked == 0
    # a change of the refinement code reruns S6
    monkeypatch.setitem(
        ragnb.studies.golden.config.STAGE_CODE, "s6", ("ragnb.studies.golden.stages", "ragnb.stats")
    )
    gs = build(pydocs, ten, judge, tmp_path / "run").run()
    assert not gs.build.stage_records["s6"].reused and judge.ranked > 0


class Crash(RuntimeError):
    pass


class CrashingJudge(CountingJudge):
    def _grade_batch(self, requests, stage):
        raise Crash("the judge died mid-stage")


def test_a_crash_mid_stage_leaves_no_partial_file_and_the_rerun_resumes(pydocs, ten, tmp_path):
    run = tmp_path / "run"
    with pytest.raises(Crash):
        build(pydocs, ten, CrashingJudge(QrelsJudge(pydocs.qrels, missing=0)), run).run()
    stages = run / "stages"
    names = sorted(p.name for p in stages.iterdir())
    assert names == [
        "s1.done.json",
        "s1_queries.parquet",
        "s2.done.json",
        "s2_pools.parquet",
        "s3.done.json",
        "s3_candidates.parquet",
    ]
    assert not list(run.rglob("*.tmp")) and not (run / "manifest.json").exists()
    judge = CountingJudge(QrelsJudge(pydocs.qrels, missing=0))
    gs = build(pydocs, ten, judge, run).run()
    reused = {s: r.reused for s, r in gs.build.stage_records.items()}
    assert reused == {"s1": True, "s2": True, "s3": True, "s4": False, "s5": False, "s6": False}
    assert not list(run.rglob("*.tmp"))
    # a stage file changed behind the pipeline's back is not trusted: S4 is graded again
    (stages / "s4_grades.parquet").write_bytes(b"not parquet")
    judge = CountingJudge(QrelsJudge(pydocs.qrels, missing=0))
    build(pydocs, ten, judge, run).run()
    assert judge.graded == len(gs.candidates)


def test_incremental_judging_judges_only_the_new_systems_unjudged_top_k(pydocs, ten, tmp_path):
    judge = CountingJudge(QrelsJudge(pydocs.qrels, missing=0))
    systems = {"bm25": BM25Retriever()}
    pipeline = build(pydocs, ten, judge, tmp_path / "run", systems=systems)
    gs = pipeline.run()
    pooled = set(zip(gs.qrels["query_id"], gs.qrels["doc_id"], strict=True))
    plain = BM25Retriever(stemmer=None, stopwords=None, name="bm25-plain").index(pydocs.corpus)
    run = plain.retrieve(gs.queries[["query_id", "text"]], k=15)
    top = run[run["rank"] <= 15]
    unjudged = {
        (q, d) for q, d in zip(top["query_id"], top["doc_id"], strict=True) if (q, d) not in pooled
    }
    assert unjudged, "bm25-plain should bring documents bm25 did not"
    graded_before = judge.graded
    extended = pipeline.extend(gs, run, "bm25-plain", k=15)
    assert gs.increments == [] and len(extended.increments) == 1  # gs itself is left as it was
    gs, inc = extended, extended.increments[-1]
    assert judge.graded - graded_before == len(unjudged) == inc.calls
    assert set(zip(inc.frame["query_id"], inc.frame["doc_id"], strict=True)) == unjudged
    # every pair of the top is judged now; a query the system returns nothing for scores 0
    covered = top["query_id"].nunique() / len(gs.queries)
    assert inc.judged_before < covered and inc.judged_after == pytest.approx(covered)
    new = gs.judgements[gs.judgements["source"] == "incremental"]
    assert len(new) == len(unjudged) and (new["systems"] == "bm25-plain").all()
    # on disk: the increment, the extended qrels, the manifest
    assert len(read_qrels(tmp_path / "run" / "golden.qrels")) == len(pooled) + len(unjudged)
    manifest = read_json(tmp_path / "run" / "manifest.json")
    assert manifest["increments"][0]["new_judgements"] == len(unjudged)
    assert manifest["counts"]["qrels_from_increments"] == len(unjudged)
    # the same run again: nothing left to judge
    again = pipeline.extend(gs, run, "bm25-plain", k=15).increments[-1]
    assert again.calls == 0 and judge.graded - graded_before == len(unjudged)
    # a rebuilt golden set picks the increment up from the run folder, without judging
    judge2 = CountingJudge(QrelsJudge(pydocs.qrels, missing=0))
    rebuilt = build(pydocs, ten, judge2, tmp_path / "run", systems={"bm25": BM25Retriever()}).run()
    assert judge2.graded == 0
    assert len(rebuilt.qrels) == len(pooled) + len(unjudged)
    # Judged@K: pool system fully judged at depth; the new system after its increment
    table = rebuilt.judged_at_k([5, 10])
    assert (table.loc[table["role"] == "pool", "judged"] == 1.0).all()


def test_manifest_records_stages_seeds_counts_and_no_secret(pydocs, ten, tmp_path):
    config = GoldenSetConfig(max_queries=10, retrievers=["bm25"], new_systems=[], depth=10)
    judge = NoisyJudge(pydocs.qrels, sd=0.5, seed=7, missing=0)
    gs = build(
        pydocs,
        ten,
        judge,
        tmp_path / "run",
        systems={"bm25": BM25Retriever()},
        seed=7,
        config=config,
        dataset_info=pydocs.summary(),
    ).run()
    m = read_json(tmp_path / "run" / "manifest.json")
    for key in ("config", "versions", "seeds", "counts", "cache", "costs", "judge_id", "stages"):
        assert key in m, key
    assert m["format"] == "ragnb-golden-set/1"
    assert m["judge_id"] == "noisy-judge(sd=0.5,seed=7)" and m["judge"]["sd"] == 0.5
    assert m["seeds"]["pipeline"] == 7 and m["seeds"]["judge"] == 7
    assert m["config"]["retrievers"] == ["bm25"] and "api_key" not in json.dumps(m)
    assert m["costs"] is None  # offline: no ledger
    assert list(m["stages"]) == ["s1", "s2", "s3", "s4", "s5", "s6"]
    s4 = m["stages"]["s4"]
    assert s4["counts"]["graded"] == len(gs.candidates) == m["counts"]["graded"]
    assert len(s4["input_hash"]) == 64 and s4["files"] == ["s4_grades.parquet"]
    assert m["dataset"]["dataset"] == "pydocs" and len(m["data_sha256"]) == 64
    assert m["counts"]["qrels"] == len(read_qrels(tmp_path / "run" / "golden.qrels"))
    assert m["systems"]["bm25"]["role"] == "pool" and m["systems"]["bm25"]["k1"] == 1.2
    for name in (
        "judgements.csv",
        "refined.trec",
        "refined_top.csv",
        "pool_provenance.csv",
        "judged_at_k.csv",
        "runs/bm25.trec",
    ):
        assert (tmp_path / "run" / name).exists(), name
    prov = pd.read_csv(tmp_path / "run" / "pool_provenance.csv", dtype=str)
    assert list(prov.columns) == ["query_id", "doc_id", "system", "rank", "score"]


def test_config_validates_and_never_takes_credentials():
    with pytest.raises(InputError, match="credentials"):
        GoldenSetConfig(judge="openai", base_url="https://user:secret@example.com/v1")
    with pytest.raises(InputError, match="credentials"):
        GoldenSetConfig(judge="openai", base_url="https://example.com/v1?api-key=secret")
    with pytest.raises(InputError, match="unknown parameter"):
        GoldenSetConfig.from_params(api_key="sk-x")
    with pytest.raises(InputError, match="retrievers"):
        GoldenSetConfig(retrievers=["bm26"])
    with pytest.raises(InputError, match="rewrite"):
        GoldenSetConfig(rewrite=True, judge="noisy")
    GoldenSetConfig(judge="openai", base_url="http://127.0.0.1:8000/v1")


def test_manifest_withholds_a_base_url_with_credentials(tmp_path):
    judge = OpenAIJudge(
        "gpt-4o-mini", base_url="http://user:pw@127.0.0.1:9/v1?key=k", cache_dir=tmp_path / "c"
    )
    info = public_judge_info(judge)
    assert info["base_url"] is None and "credentials" in info["base_url_withheld"]
    assert "pw" not in json.dumps(info) and "pw" not in judge_banner(judge)
    assert "withheld" in judge_banner(judge)
    clean = OpenAIJudge("gpt-4o-mini", base_url="http://127.0.0.1:9/v1", cache_dir=tmp_path / "c")
    assert public_judge_info(clean)["base_url"] == "http://127.0.0.1:9/v1"


# ----------------------------------------------------------------------------- with an LLM


def grade_of(passage: str) -> int:
    return int(hashlib.sha256(passage.encode()).hexdigest(), 16) % 5 + 1


def scripted(state: dict):
    """The server's answers: rewrites, listwise orders, grades by passage hash; the first grade
    request gets a malformed answer, the second a 429."""

    def handler(request):
        messages = request.json["messages"]
        system = messages[0]["content"] if messages[0]["role"] == "system" else ""
        user = next(m["content"] for m in messages if m["role"] == "user")
        if "Extract and restate" in user:
            query = user.split("Query:\n", 1)[1].split("\n\n", 1)[0]
            return ChatAnswer(f"1. {query} (restated)")
        if "ranking judge" in system:
            n = int(re.search(r"receive (\d+) passages", system).group(1))
            return ChatAnswer(json.dumps({"order": [chr(65 + i) for i in reversed(range(n))]}))
        passage = user.split("Text:\n", 1)[1].rsplit("\n\nAnswer with EXACTLY", 1)[0]
        state["grade_requests"] = state.get("grade_requests", 0) + 1
        if state["grade_requests"] == 1:
            return ChatAnswer("Score: 4/5")
        if state["grade_requests"] == 2:
            return error(429, retry_after_ms=1)
        return ChatAnswer(json.dumps({"grade": grade_of(passage)}))

    return handler


def scan_for(secret: str, *folders: Path) -> list[str]:
    hits = []
    for folder in folders:
        for path in folder.rglob("*"):
            if path.is_file() and secret.encode() in path.read_bytes():
                hits.append(str(path))
    return hits


def llm_config(data: Path, tmp_path: Path, server, **kw) -> GoldenSetConfig:
    params = dict(
        dataset=str(data),
        retrievers=["bm25"],
        new_systems=["bm25-plain"],
        incremental_k=4,
        depth=4,
        min_pool=4,
        top_n=3,
        refine_max_iterations=6,
        judge="openai",
        model="gpt-4o-mini",
        base_url=server.base_url,
        rewrite=True,
        cache_dir=str(tmp_path / "cache"),
        export_dir=str(tmp_path / "run"),
        budget_usd=1.0,
    )
    params.update(kw)
    return GoldenSetConfig(**params)


def test_openai_judge_end_to_end_with_faults_ledger_and_canary(
    openai_server, tmp_path, monkeypatch
):
    canary = "sk-canary-" + secrets.token_hex(12)
    monkeypatch.setenv("OPENAI_API_KEY", canary)
    state: dict = {}
    openai_server.chat.handler = scripted(state)
    data = small_beir(PYDOCS, tmp_path / "data", n_queries=3)
    config = llm_config(data, tmp_path, openai_server)
    pipeline = build_pipeline(config)
    assert "an LLM, at http://127.0.0.1" in pipeline.banner()
    gs = pipeline.run()

    # the key reached the server only as the bearer token
    assert all(
        r.api_key_sha256 == hashlib.sha256(canary.encode()).hexdigest()
        for r in openai_server.requests
    )
    # S1 rewrote through the LLM, keeping the original
    assert gs.queries["rewritten"].all()
    assert (gs.queries["text"] == gs.queries["normalised"] + " (restated)").all()
    # S4: every candidate graded as scripted; the malformed answer was reminded and recovered
    corpus_text = dict(
        zip(read_beir(data).corpus["doc_id"], doc_texts(read_beir(data).corpus), strict=True)
    )
    assert gs.grades["valid"].all() and gs.grades["reminded"].sum() == 1
    expected = [grade_of(corpus_text[d]) for d in gs.qrels["doc_id"]]
    assert gs.qrels["relevance"].tolist() == expected
    assert len(read_qrels(tmp_path / "run" / "golden.qrels")) == len(gs.qrels)
    # S6 ran listwise calls; the new system was judged incrementally
    assert gs.refine_summary["calls"].sum() > 0
    assert gs.increments and gs.increments[0].system == "bm25-plain"

    ledger = Ledger.read(tmp_path / "run" / "ledger.jsonl")
    assert (ledger["status"] == "http_429").sum() == 1
    assert {"s1_rewrite", "s4_grade", "s6_rank"} <= set(ledger["stage"])
    m = read_json(tmp_path / "run" / "manifest.json")
    assert m["judge_id"] == "openai-judge:gpt-4o-mini"
    assert m["judge"]["base_url"] == openai_server.base_url
    assert m["rewriter"].startswith("llm-rewrite:gpt-4o-mini#")
    stages = {row["stage"]: row for row in m["costs"]["stages"]}
    billed = ledger[~ledger["cached"]]
    assert stages["s4_grade"]["requests"] == (billed["stage"] == "s4_grade").sum()
    assert m["costs"]["total"]["requests"] == len(billed) == openai_server.request_count(CHAT)
    assert m["costs"]["total"]["cost_usd"] > 0
    assert m["estimate"]["calls"] > 0 and m["counts"]["invalid"] == 0

    # again: every stage reused, no request at all
    before = openai_server.request_count(CHAT)
    again = build_pipeline(config).run()
    assert openai_server.request_count(CHAT) == before
    assert again.qrels.equals(gs.qrels)
    # without the run folder: every stage recomputed, every answer from the cache
    fresh = build_pipeline(
        llm_config(data, tmp_path, openai_server, export_dir=str(tmp_path / "run2"))
    ).run()
    assert openai_server.request_count(CHAT) == before
    assert fresh.grades["cached"].all() and fresh.qrels.equals(gs.qrels)
    m2 = read_json(tmp_path / "run2" / "manifest.json")
    assert m2["cache"]["cached_answers"]["s4"] == len(fresh.grades)
    assert m2["cache"]["judge_cache"]["namespaces"]["judge"]["hits"] > 0
    assert m2["costs"]["total"]["requests"] == 0

    assert not scan_for(canary, tmp_path), "the API key was written to a file"


def test_budget_stops_the_run_before_any_grade_is_paid(openai_server, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-budget")
    openai_server.chat.handler = scripted({})
    data = small_beir(PYDOCS, tmp_path / "data", n_queries=2)
    config = llm_config(data, tmp_path, openai_server, rewrite=False, budget_usd=0.0)
    with pytest.raises(BudgetExceededError, match="exceeds the budget"):
        build_pipeline(config).run()
    assert openai_server.request_count(CHAT) == 0
    assert not (tmp_path / "run" / "stages" / "s4.done.json").exists()


def test_run_takes_an_already_built_dataset_and_judge(tmp_path):
    from ragnb.studies import golden

    data = read_beir(PYDOCS)
    judge = QrelsJudge(data.qrels, missing=0)
    config = tiny_config(tmp_path)  # judge="noisy" is recorded only: the judge passed grades
    result = golden.run(config, dataset=data, judge=judge)
    assert result.golden is not None and result.golden.judge is judge
    assert result.golden.build.labels is data.qrels
    assert judge.judge_id in result.banner()
    assert "**Prediction-powered estimates skipped** because" in result.banner()
    assert "**Simulation skipped** because `simulate=False`." in result.banner()
    assert "ppi" not in result.tables() and "simulation" not in result.tables()
    assert result.section("simulation") == "**Simulation skipped** because `simulate=False`."
