"""The retrieval-response dataset (Primer A.1): loaders in three formats, the consistency checks of
Figures 22 and 30 on good and broken samples, ranking with an embedder, and query-texts samples
from BEIR datasets (how many queries qualify)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from ragnb.core.cache import Cache
from ragnb.errors import InputError
from ragnb.io.files import read_beir
from ragnb.studies.correlation import (
    beir_query_texts,
    check_graded,
    check_ranked,
    graded_labels,
    rank_samples,
    read_graded,
    read_query_texts,
    read_ranked,
    validate_graded,
    validate_ranked,
    write_samples,
)
from ragnb.studies.correlation.data import ranked_texts, subset_of


def query_texts() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "id": ["A-0", "Hs-e-12"],
            "q": ["classical analysis and ODEs", "who wrote the song?"],
            "p": [["pa0", "pa1", "pa2"], ["ph0", "ph1"]],
            "n": [["na0", "na1", "na2", "na3"], ["nh0", "nh1", "nh2"]],
            "c1": ["math.ca", None],
        }
    )


def ranked() -> pd.DataFrame:
    # Nc=5, Np=2, rank [2, 0, 4, 1, 3]: positives (index < 2) at ranks 2 and 4
    return pd.DataFrame(
        {
            "id": ["A-0", "Hs-e-12"],
            "E": ["AM", "AM"],
            "Nc": [5, 4],
            "Np": [2, 2],
            "K": [[2, 4], [1, 2, 3]],
            "P": [[0.5, 0.5], [1.0, 0.5, 2 / 3]],
            "R": [[0.5, 1.0], [0.5, 0.5, 1.0]],
            "rank": [[2, 0, 4, 1, 3], [1, 3, 0, 2]],
        }
    )


def graded() -> pd.DataFrame:
    g = graded_labels(ranked())
    g["answer_ideal"] = "ideal"
    g["answer_topK"] = "top"
    g["grade"] = [3, 5, 2, 2, 4]
    return g


def test_subset_and_ranked_texts_follow_figure_21():
    assert subset_of("Hs-e-12") == "Hs-e" and subset_of("A-0") == "A"
    sq = query_texts().iloc[0]
    assert ranked_texts(ranked().iloc[0], sq) == ["na0", "pa0", "na2", "pa1", "na1"]


def test_graded_labels_cut_the_rank_and_mark_positives():
    g = graded_labels(ranked())
    assert len(g) == 5  # one per K of each ranked sample
    row = g[(g["id"] == "A-0") & (g["K"] == 4)].iloc[0]
    assert row["rank"] == [2, 0, 4, 1] and row["inK"] == [0, 1, 0, 1]
    assert row["P"] == 0.5 and row["R"] == 1.0


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet", ".csv"])
def test_loaders_round_trip_and_validate(tmp_path, suffix):
    qt, r, g = query_texts(), ranked(), graded()
    paths = {}
    for name, frame in (("qt", qt), ("r", r), ("g", g)):
        p = tmp_path / f"{name}{suffix}"
        if suffix == ".csv":
            out = frame.copy()
            for col in ("p", "n", "K", "P", "R", "rank", "inK"):
                if col in out:
                    out[col] = [json.dumps(v) for v in out[col]]
            out.to_csv(p, index=False)
        else:
            write_samples(frame, p)
        paths[name] = p
    qt2 = read_query_texts(paths["qt"])
    r2 = read_ranked(paths["r"])
    g2 = read_graded(paths["g"])
    assert qt2["p"].tolist() == qt["p"].tolist() and qt2["q"].tolist() == qt["q"].tolist()
    assert r2["rank"].tolist() == r["rank"].tolist() and r2["K"].tolist() == r["K"].tolist()
    assert g2["grade"].tolist() == [3.0, 5.0, 2.0, 2.0, 4.0]
    assert g2["grade_raw"].tolist() == ["3", "5", "2", "2", "4"]
    validate_ranked(r2, qt2)
    validate_graded(g2, r2)
    assert check_ranked(r2, qt2).empty and check_graded(g2, r2).empty


def test_jsonl_errors_name_the_file_and_line(tmp_path):
    p = tmp_path / "bad.jsonl"
    p.write_text('{"id": "A-0", "q": "x", "p": [], "n": []}\n{"id": "A-1", oops}\n')
    with pytest.raises(InputError, match=r"bad.jsonl, line 2: malformed JSON"):
        read_query_texts(p)
    p.write_text('{"id": "A-0", "q": "x", "p": ["a", 3], "n": []}\n')
    with pytest.raises(InputError, match=r"sample id='A-0': p holds 3, not text"):
        read_query_texts(p)
    p.write_text('{"id": "A-0", "E": "AM", "Nc": 5}\n')
    with pytest.raises(InputError, match=r"ranked samples lacks column\(s\) \['Np', 'K'"):
        read_ranked(p)


BROKEN_RANKED = [
    ("P", [[0.5], [1.0, 0.5, 2 / 3]], "len(Sr['P']) == len(Sr['K'])"),
    ("R", [[0.5, 1.0, 1.0], [0.5, 0.5, 1.0]], "len(Sr['R']) == len(Sr['K'])"),
    ("rank", [[2, 0, 4, 1], [1, 3, 0, 2]], "len(Sr['rank']) == Sr['Nc']"),
    ("Np", [5, 2], "Sr['Np'] < Sr['Nc']"),
    ("Np", [1, 2], "Sr['Np'] >= 2"),
    ("Nc", [1, 4], "Sr['Nc'] >= 2"),
    ("Nc", [9, 4], "Sr['Nc'] <= len(Sq['p']) + len(Sq['n'])"),
    ("Np", [4, 2], "Sr['Np'] <= len(Sq['p'])"),
    ("rank", [[2, 0, 4, 1, 1], [1, 3, 0, 2]], "rank is a permutation"),
    ("K", [[4, 2], [1, 2, 3]], "K sorted"),
    ("P", [[0.5, 0.75], [1.0, 0.5, 2 / 3]], "P == n_p/K"),
]


@pytest.mark.parametrize(("column", "values", "check"), BROKEN_RANKED)
def test_broken_ranked_samples_are_named(column, values, check):
    r = ranked()
    r[column] = values
    problems = check_ranked(r, query_texts())
    assert check in problems["check"].str.cat(sep="|")
    assert problems["id"].iloc[0] == "A-0"
    with pytest.raises(InputError, match=r"ranked sample id='A-0', E='AM'"):
        validate_ranked(r, query_texts())


def test_ranked_sample_without_query_texts_and_duplicate_key():
    r = pd.concat([ranked(), ranked().iloc[[1]]], ignore_index=True)
    r.loc[0, "id"] = "A-9"
    problems = check_ranked(r, query_texts())
    assert set(problems["check"]) == {"id in query-texts", "unique (id, E, Nc, Np)"}


def _broken_graded(change):
    g = graded()
    change(g)
    return g


BROKEN_GRADED = [
    (lambda g: g.at[1, "rank"].append(3), "len(Sg['rank']) == Sg['K']"),
    (lambda g: g.at[1, "inK"].pop(), "len(Sg['inK']) == Sg['K']"),
    (lambda g: g.at[1, "inK"].__setitem__(0, 1), "inK[i] == (rank[i] < Np)"),
    (lambda g: g.__setitem__("K", [2, 3, 1, 2, 3]), "Sg['K'] in Sr['K']"),
    (lambda g: g.at[1, "rank"].__setitem__(0, 0), "Sg['rank'] == Sr['rank'][:Sg['K']]"),
    (lambda g: g.__setitem__("P", [0.5, 0.9, 1.0, 0.5, 2 / 3]), "P == sum(inK)/K"),
    (lambda g: g.__setitem__("id", ["A-0", "A-7", "Hs-e-12", "Hs-e-12", "Hs-e-12"]), "exists"),
]


@pytest.mark.parametrize(("change", "check"), BROKEN_GRADED)
def test_broken_graded_samples_are_named(change, check):
    g = _broken_graded(change)
    problems = check_graded(g, ranked())
    assert check in problems["check"].str.cat(sep="|")
    with pytest.raises(InputError, match=r"graded sample id='A-[07]', E='AM', Nc=5, Np=2, K="):
        validate_graded(g, ranked())


def test_graded_sum_of_ink_above_np_is_caught():
    g = graded()
    g.at[1, "Np"] = 1  # inK holds 2 positives
    assert "sum(Sg['inK']) <= Sg['Np']" in set(check_graded(g)["check"])


def test_graded_duplicate_key_is_named_once_per_repeat():
    g = pd.concat([graded(), graded().iloc[[1, 1]]], ignore_index=True)
    problems = check_graded(g, ranked())
    assert problems["check"].tolist() == ["unique (id, E, Nc, Np, K)"] * 2
    assert problems.index.size == 2 and set(problems["id"]) == {graded()["id"][1]}


@pytest.fixture(scope="module")
def embedder(tmp_path_factory):
    from ragnb.embed import make_embedder

    return make_embedder(
        "wordllama", cache=Cache(tmp_path_factory.mktemp("emb-cache")), progress=False
    )


def test_rank_samples_orders_candidates_by_cosine(embedder):
    qt = pd.DataFrame(
        {
            "id": ["T-0"],
            "q": ["json encoder and decoder"],
            "p": [["Serialize obj to a JSON formatted str.", "Decode a JSON document.", "x"]],
            "n": [["Return the gzip compressed data.", "Open a bzip2 file.", "Tar archives."]],
        }
    )
    r = rank_samples(qt, embedder, name="WL", configs=[(5, 2), (6, 3), (9, 2)], ks=[1, 2, 5, 8])
    assert len(r) == 2  # (9, 2) needs 7 negatives
    validate_ranked(r, qt)
    first = r.iloc[0]
    assert first["K"] == [1, 2, 5] and first["E"] == "WL"
    cand = [*qt["p"][0][:2], *qt["n"][0][:3]]
    q = embedder.embed(["json encoder and decoder"], kind="query")[0]
    v = embedder.embed(cand, kind="passage")
    sims = (v / np.linalg.norm(v, axis=1, keepdims=True)) @ (q / np.linalg.norm(q))
    assert list(first["rank"]) == list(np.argsort(-sims, kind="stable"))
    assert sims[first["rank"][0]] >= sims[first["rank"][-1]]


def small_beir(tmp_path):
    d = tmp_path / "tiny"
    (d / "qrels").mkdir(parents=True)
    docs = [
        (f"d{i}", f"document {i} about {'cats' if i < 6 else 'dogs'} and pets") for i in range(20)
    ]
    with open(d / "corpus.jsonl", "w") as f:
        for i, t in docs:
            f.write(json.dumps({"_id": i, "title": "", "text": t}) + "\n")
    with open(d / "queries.jsonl", "w") as f:
        for q in ("q1", "q2", "q3"):
            f.write(json.dumps({"_id": q, "text": "cats and pets"}) + "\n")
    (d / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n"
        "q1\td0\t1\nq1\td1\t2\nq1\td2\t0\n"  # 2 positives: qualifies
        "q2\td3\t1\nq2\td4\t0\n"  # 1 positive: does not
        "q3\td5\t2\nq3\td0\t1\nq3\td1\t1\n"  # 3 positives
    )
    return d


def test_beir_query_texts_keeps_queries_with_two_positives(tmp_path):
    ds = read_beir(small_beir(tmp_path))
    qt, summary = beir_query_texts(ds, n_negatives=5, subset="tiny")
    assert summary["judged_queries"] == 3 and summary["qualified"] == 2 and summary["used"] == 2
    assert qt["query_id"].tolist() == ["q1", "q3"] and qt["id"].tolist() == ["tiny-0", "tiny-1"]
    # positives by grade first; negatives are retrieved documents that are not positives
    assert qt["p_ids"][0] == ["d1", "d0"] and qt["p_ids"][1] == ["d5", "d0", "d1"]
    for p_ids, n_ids in zip(qt["p_ids"], qt["n_ids"], strict=True):
        assert len(n_ids) == 5 and not set(p_ids) & set(n_ids)
    _, one = beir_query_texts(ds, min_positives=3, n_negatives=5)
    assert one["qualified"] == 1
    with pytest.raises(InputError, match="needs an embedder"):
        beir_query_texts(ds, negatives="dense")


def test_scifact_test_split_has_23_qualifying_queries(scifact_path):
    ds = read_beir(scifact_path)
    qt, summary = beir_query_texts(ds, max_queries=2, n_negatives=5)
    assert (summary["judged_queries"], summary["qualified"]) == (300, 23)
    assert len(qt) == 2 and all(len(p) >= 2 for p in qt["p"])
