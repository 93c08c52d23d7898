"""ragnb.studies.golden.audit on a golden set of the MS MARCO DL subset (graded 0-3 labels, a noisy
offline judge): the audit CSV of the refined top, its round trip with grades filled in as a
spreadsheet saves them, folding into the golden qrels and the human labels, bad and torn files,
and the labelling view on the audit rows."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ragnb.errors import InputError
from ragnb.io.files import read_beir, read_records
from ragnb.io.readers import read_qrels
from ragnb.judge import NoisyJudge
from ragnb.retrievers.retrieve import BM25Retriever
from ragnb.studies.golden import (
    GoldenPipeline,
    audit_markdown,
    audit_sample,
    export_audit,
    fold_audit,
    read_audit,
    read_human_labels,
)
from ragnb.studies.golden.audit import AUDIT_COLUMNS
from ragnb.studies.golden.evaluation import ppi_for
from ragnb.studies.golden.labelling_view import audit_view, label_pairs

TOP_N = 5


@pytest.fixture(scope="module")
def msmarco(msmarco_path):
    """The MS MARCO DL subset, its first 4 judged queries, and two BM25 systems' runs on them
    (computed once: each golden set below pools these runs)."""
    data = read_beir(msmarco_path)
    queries = data.judged_queries.head(4)
    systems = {
        "bm25": BM25Retriever(),
        "bm25-plain": BM25Retriever(stemmer=None, stopwords=None, name="bm25-plain"),
    }
    runs = {n: r.index(data.corpus).retrieve(queries, k=8) for n, r in systems.items()}
    return data, queries, runs


def build(msmarco, run_dir: Path):
    """A golden set of 4 MS MARCO queries: two BM25 pools of 8, a noisy judge on the 0-3
    labels, pools pruned to at least 8, refined to a top 5; exported to ``run_dir``."""
    data, queries, runs = msmarco
    judge = NoisyJudge(data.qrels, sd=0.8, seed=1, missing=0, scale=(0, 3))
    pipe = GoldenPipeline(
        data.corpus, queries, judge, runs, depth=8, min_pool=8, top_n=TOP_N, run_dir=run_dir
    )
    gs = pipe.run()
    gs.export()
    return gs


@pytest.fixture(scope="module")
def golden(msmarco, tmp_path_factory):
    """Shared and never folded: tests that fold build their own."""
    return build(msmarco, tmp_path_factory.mktemp("audit") / "run")


def rows_of(path: Path) -> tuple[list[str], list[list[str]]]:
    with path.open(encoding="utf-8-sig", newline="") as f:
        table = list(csv.reader(f))
    return table[0], table[1:]


def fill(path: Path, grades: dict[tuple[str, str], str], *, excel: bool = False) -> None:
    """Put ``grades`` into the ``human_grade`` cells, as a spreadsheet saves the file
    (``excel``: with a byte-order mark and CRLF line ends)."""
    header, body = rows_of(path)
    at = header.index("human_grade")
    for row in body:
        row[at] = grades.get((row[0], row[1]), row[at])
    out = io.StringIO(newline="")
    csv.writer(out, lineterminator="\r\n" if excel else "\n").writerows([header, *body])
    path.write_text(("\ufeff" if excel else "") + out.getvalue(), encoding="utf-8", newline="")


# ----------------------------------------------------------------------------- export


def test_export_holds_the_refined_top_n_of_each_query_with_texts(golden, msmarco):
    data = msmarco[0]
    path = export_audit(golden)
    assert path == golden.run_dir / "audit_top.csv"
    header, body = rows_of(path)
    assert header == AUDIT_COLUMNS
    frame = pd.DataFrame(body, columns=header)
    top = golden.order[golden.order["in_top"]]
    assert len(frame) == len(top) == 4 * TOP_N  # pools hold at least 8 >= top_n
    for qid, g in frame.groupby("query_id", sort=False):
        assert g["rank"].tolist() == [str(r) for r in range(1, TOP_N + 1)]
        want = top[top["query_id"] == qid].sort_values("rank")
        assert g["doc_id"].tolist() == want["doc_id"].tolist()
        assert g["judge_grade"].tolist() == [str(x) for x in want["grade"]]
    assert (frame["human_grade"] == "").all()
    # texts: the query as the judge read it, the passage of the corpus
    qtext = dict(zip(data.queries["query_id"], data.queries["text"], strict=True))
    dtext = dict(zip(data.corpus["doc_id"], data.corpus["text"], strict=True))
    assert all(frame["query"] == [qtext[q].strip() for q in frame["query_id"]])
    assert all(
        dtext[d].strip() in p for d, p in zip(frame["doc_id"], frame["passage"], strict=True)
    )
    scores = frame["score"].astype(float).to_numpy()
    np.testing.assert_allclose(scores, golden.top()["score"].to_numpy())
    # a text a spreadsheet would run as a formula is written inert; ids as they are
    rows = audit_sample(golden).head(2)
    rows.loc[0, "passage"] = '=HYPERLINK("http://example.invalid","x")'
    header, body = rows_of(export_audit(rows, golden.run_dir / "inert.csv"))
    assert body[0][-1] == "'" + rows.loc[0, "passage"] and body[1][-1] == rows.loc[1, "passage"]
    # a shorter top, and a bad top_n
    two = audit_sample(golden, top_n=2)
    assert two.groupby("query_id").size().tolist() == [2] * 4 and two.attrs["scale"] == (0, 3)
    with pytest.raises(InputError, match="top_n"):
        audit_sample(golden, top_n=0)


def test_round_trip_with_grades_filled_in_a_spreadsheet(golden, tmp_path):
    path = export_audit(audit_sample(golden), tmp_path / "audit.csv")
    rows = audit_sample(golden)
    given = {
        tuple(rows.loc[0, ["query_id", "doc_id"]]): "2",
        tuple(rows.loc[3, ["query_id", "doc_id"]]): "0",
        tuple(rows.loc[7, ["query_id", "doc_id"]]): "3.0",  # a spreadsheet's number
    }
    fill(path, given, excel=True)
    back = read_audit(path, scale=(0, 3))
    assert back["query_id"].tolist() == rows["query_id"].tolist()
    assert back["doc_id"].tolist() == rows["doc_id"].tolist()
    assert back["rank"].tolist() == rows["rank"].tolist()
    assert back["line"].tolist() == list(range(2, len(rows) + 2))
    got = {
        (q, d): int(g)
        for q, d, g in back[["query_id", "doc_id", "human_grade"]].itertuples(index=False)
        if not pd.isna(g)
    }
    assert got == {k: int(float(v)) for k, v in given.items()}
    assert back["passage"].tolist() == rows["passage"].tolist()
    # exporting again (each render does) keeps the grades; a shorter top keeps graded rows too
    export_audit(audit_sample(golden, top_n=2), path)
    again = read_audit(path)
    kept = again.dropna(subset=["human_grade"])
    assert {(q, d): int(g) for q, d, g in kept[["query_id", "doc_id", "human_grade"]].values} == (
        got
    )
    assert len(again) == 4 * 2 + sum(r > 2 for r in rows.loc[[0, 3, 7], "rank"])


# ----------------------------------------------------------------------------- folding


def test_folding_changes_exactly_the_audited_pairs(msmarco, tmp_path):
    gs = build(msmarco, tmp_path / "run")
    before = gs.qrels.copy()
    path = export_audit(gs)
    rows = audit_sample(gs)
    picks = rows.iloc[[1, 6, 12]]
    new = {  # two grades changed, one confirmed
        (picks.iloc[0]["query_id"], picks.iloc[0]["doc_id"]): (picks.iloc[0]["judge_grade"] + 1)
        % 4,
        (picks.iloc[1]["query_id"], picks.iloc[1]["doc_id"]): (picks.iloc[1]["judge_grade"] + 2)
        % 4,
        (picks.iloc[2]["query_id"], picks.iloc[2]["doc_id"]): picks.iloc[2]["judge_grade"],
    }
    same, nothing = fold_audit(gs, path)  # exported, not yet filled: nothing audited
    assert len(nothing) == 0 and same.qrels.equals(before)
    assert (same.judgements["source"] != "audit").all()
    fill(path, {k: str(v) for k, v in new.items()})
    folded, labels = fold_audit(gs, path)
    assert gs.qrels.equals(before)  # a golden set is a value: folding returns a new one
    gs = folded
    after = gs.qrels
    assert len(after) == len(before)
    merged = before.merge(after, on=["query_id", "doc_id"], suffixes=("_b", "_a"))
    moved = merged[merged["relevance_b"] != merged["relevance_a"]]
    assert set(zip(moved["query_id"], moved["doc_id"], strict=True)) == set(list(new)[:2])
    graded = merged.set_index(["query_id", "doc_id"])["relevance_a"]
    assert {k: int(graded[k]) for k in new} == new
    audited = gs.judgements[gs.judgements["source"] == "audit"]
    assert set(zip(audited["query_id"], audited["doc_id"], strict=True)) == set(new)
    # recorded as human labels: the qrels file, its design table, the exported golden qrels
    run = gs.run_dir
    saved = read_qrels(run / "audit.qrels")
    assert {(q, d): g for q, d, g in saved.values} == new
    assert labels.audit and len(labels) == 3 and "differ from the judge's: 2." in labels.notes[0]
    design = read_records(run / "audit.qrels.sample.jsonl")
    assert (design["inclusion_probability"] == 1.0).all() and len(design) == 3
    exported = read_qrels(run / "golden.qrels")
    assert exported.values.tolist() == after.values.tolist()
    human = read_human_labels(run / "audit.qrels", (0, 3))
    assert human.audit and "no random sample" in human.notes[0]
    table, notes = ppi_for(gs, human)
    assert table.empty and "not estimated" in notes[0]
    # folding the same audit again changes nothing
    gs, _ = fold_audit(gs, path)
    pd.testing.assert_frame_equal(gs.qrels, after)
    assert read_qrels(run / "audit.qrels").values.tolist() == saved.values.tolist()


# ----------------------------------------------------------------------------- bad files


def write_rows(path: Path, header: list[str], body: list[list[str]]) -> Path:
    out = io.StringIO(newline="")
    csv.writer(out, lineterminator="\n").writerows([header, *body])
    path.write_text(out.getvalue(), encoding="utf-8", newline="")
    return path


def test_bad_lines_name_the_file_line_and_column(golden, tmp_path):
    header, body = rows_of(export_audit(audit_sample(golden), tmp_path / "a.csv"))
    at = header.index("human_grade")
    # a passage spanning three physical lines before the bad row: lines count as a reader sees
    body[1][header.index("passage")] = "first line\nsecond line\nthird line"
    for bad, match in (("x", "not a grade"), ("2.5", "not a grade"), ("-", "not a grade")):
        rows = [list(r) for r in body]
        rows[2][at] = bad
        path = write_rows(tmp_path / "bad.csv", header, rows)
        with pytest.raises(InputError, match=match) as e:
            read_audit(path)
        assert (e.value.line, e.value.column) == (6, "human_grade")  # header 1, row 2 on 3-5
        assert str(path) in str(e.value) and "line 6" in str(e.value)
    rows = [list(r) for r in body]
    rows[4][at] = "7"
    path = write_rows(tmp_path / "scale.csv", header, rows)
    assert read_audit(path)["human_grade"].iloc[4] == 7  # no scale given: read as it is
    with pytest.raises(InputError, match="outside the judge's scale 0-3") as e:
        fold_audit(golden, path)  # folding checks the judge's scale
    assert (e.value.line, e.value.column) == (8, "human_grade")
    # missing column, extra cell, empty id, a pair twice, a pair outside the golden set
    path = write_rows(tmp_path / "m.csv", header[:at] + header[at + 1 :], [])
    with pytest.raises(InputError, match="missing column 'human_grade'") as e:
        read_audit(path)
    assert (e.value.line, e.value.column) == (1, "human_grade")
    rows = [list(r) for r in body]
    rows[3].append("extra")
    with pytest.raises(InputError, match="10 cells where the header has 9") as e:
        read_audit(write_rows(tmp_path / "x.csv", header, rows))
    assert e.value.line == 7
    rows = [list(r) for r in body]
    rows[0][1] = " "
    with pytest.raises(InputError, match="not an id") as e:
        read_audit(write_rows(tmp_path / "i.csv", header, rows))
    assert (e.value.line, e.value.column) == (2, "doc_id")
    rows = [list(r) for r in body] + [list(body[0])]
    with pytest.raises(InputError, match="also on line 2") as e:
        read_audit(write_rows(tmp_path / "d.csv", header, rows))
    assert e.value.line == len(rows) + 3  # the passage of row 2 spans 3 lines
    rows = [list(r) for r in body]
    rows[5][1], rows[5][at] = "no-such-doc", "1"
    with pytest.raises(InputError, match="not in the golden set's refined order") as e:
        fold_audit(golden, write_rows(tmp_path / "o.csv", header, rows))
    assert e.value.line == 9 and e.value.query_id == rows[5][0]
    assert (golden.judgements["source"] != "audit").all()  # nothing folded on error


def test_a_torn_file_is_refused_and_never_folded(msmarco, tmp_path):
    gs = build(msmarco, tmp_path / "run")
    before = gs.qrels.copy()
    path = export_audit(gs)
    rows = audit_sample(gs)
    fill(path, {(q, d): "1" for q, d in rows[["query_id", "doc_id"]].values[:10]})
    whole = path.read_bytes()
    last = whole.rstrip(b"\n").rfind(b"\n") + 1  # where the last record starts
    line = whole[:last].count(b"\n") + 1
    # cut inside the quoted passage of the last record, then inside its first cells
    for cut in (len(whole) - 20, last + 12):
        path.write_bytes(whole[:cut])
        with pytest.raises(InputError, match="torn or partial") as e:
            read_audit(path)
        assert e.value.line == line
        with pytest.raises(InputError, match="torn or partial"):
            fold_audit(gs, path)
        # exporting over it refuses too: the file is a person's work, left as it is
        with pytest.raises(InputError, match="torn or partial"):
            export_audit(gs)
        assert path.read_bytes() == whole[:cut]
    pd.testing.assert_frame_equal(gs.qrels, before)
    assert not (gs.run_dir / "audit.qrels").exists()
    # a file cut exactly between records is a shorter audit: its rows fold
    path.write_bytes(whole[:last])
    assert len(read_audit(path)) == len(rows) - 1
    assert len(fold_audit(gs, path)[1]) == 10


# ----------------------------------------------------------------------------- the view


def test_the_labelling_view_opens_on_the_audit_rows(msmarco, tmp_path):
    gs = build(msmarco, tmp_path / "run")
    rows = audit_sample(gs)
    w = audit_view(gs)
    assert w.store.path == gs.run_dir / "audit.qrels" and w.grades == [0, 1, 2, 3]
    assert w.counts() == {"labelled": 0, "skipped": 0, "remaining": 20, "total": 20}
    first = tuple(rows.loc[0, ["query_id", "doc_id"]])
    assert w.current == first and rows.loc[0, "query"] in w.query.value
    assert w.judge.value == ""  # the judge's grade is shown only after an answer
    w.buttons[3].click()
    assert "ragnb-judge-grade'>" + str(rows.loc[0, "judge_grade"]) in w.judge.value
    w.keys.value = "0"
    assert w.counts()["labelled"] == 2
    # the view's labels fold as they are (the design table marks them as an audit)
    gs, labels = fold_audit(gs, gs.run_dir / "audit.qrels")
    assert labels.audit and len(labels) == 2
    second = tuple(rows.loc[1, ["query_id", "doc_id"]])
    q = gs.qrels.set_index(["query_id", "doc_id"])["relevance"]
    assert (q[first], q[second]) == (3, 0)
    assert read_human_labels(gs.run_dir / "audit.qrels", (0, 3)).audit
    # rows read back from a filled CSV: the graded ones are left out of the view
    path = export_audit(gs)
    fill(path, {tuple(rows.loc[i, ["query_id", "doc_id"]]): "2" for i in (2, 3, 4)})
    w2 = audit_view(read_audit(path), tmp_path / "more.qrels", scale=(0, 3))
    assert w2.counts()["total"] == 17 and w2.grades == [0, 1, 2, 3]
    # label_pairs itself opens rows that hold their texts, in their order, no sample drawn
    w3 = label_pairs(rows.iloc[5:9], tmp_path / "plain.qrels")
    assert w3.counts()["total"] == 4 and w3.current == tuple(rows.loc[5, ["query_id", "doc_id"]])
    assert not w3.store.sample_path.exists()


def test_the_notebook_text_shows_no_absolute_path(golden, tmp_path):
    path = export_audit(golden)
    text = audit_markdown(golden, path)
    assert "audit_top.csv" in text and str(path.parent) not in text and "20 pairs" in text
    assert "fold_audit" in text and "not a random sample" in text
    assert "no run folder" in audit_markdown(golden, None)
