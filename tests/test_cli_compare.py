"""``ragnb compare``: several run files per system, several baselines, rank intervals."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from journeys import ragnb

from ragnb.cli.main import main
from ragnb.io.readers import read_qrels, read_run
from ragnb.stats import compare


def _write_run(path: Path, scores: np.ndarray, tag: str) -> str:
    lines = []
    for q in range(scores.shape[0]):
        order = np.argsort(-scores[q])
        for rank, d in enumerate(order[:10], start=1):
            lines.append(f"q{q} Q0 d{d} {rank} {scores[q, d]:.6f} {tag}")
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, object]:
    rng = np.random.default_rng(0)
    n_q, n_d = 40, 30
    rel = rng.random((n_q, n_d)) < 0.1
    rel[:, 0] = True
    qrels = tmp_path / "qrels"
    qrels.write_text(
        "".join(f"q{q} 0 d{d} 1\n" for q in range(n_q) for d in range(n_d) if rel[q, d])
    )
    signal = rel.astype(float)
    bm25 = _write_run(tmp_path / "bm25.trec", signal * 0.8 + rng.random((n_q, n_d)), "bm25")
    seeds = [
        _write_run(tmp_path / f"dense{i}.trec", signal * 1.2 + rng.random((n_q, n_d)), "dense")
        for i in range(3)
    ]
    weak = _write_run(tmp_path / "weak.trec", signal * 0.2 + rng.random((n_q, n_d)), "weak")
    return {"qrels": str(qrels), "bm25": bm25, "seeds": seeds, "weak": weak}


def test_compare_takes_several_runs_per_system(files, capsys) -> None:
    args = [
        "compare",
        files["qrels"],
        "--run",
        f"bm25={files['bm25']}",
        "--run",
        "dense=" + ",".join(files["seeds"]),
        "--run",
        f"weak={files['weak']}",
        "-m",
        "nDCG@10",
        "--resamples",
        "1000",
        "--format",
        "json",
    ]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    means = pd.DataFrame(out["means"]).set_index("system")
    assert means.loc["dense", "n_runs"] == 3 and means.loc["bm25", "n_runs"] == 1
    qrels = read_qrels(files["qrels"])
    runs = [read_run(p) for p in files["seeds"]]
    python = compare(
        {"bm25": read_run(files["bm25"]), "dense": runs, "weak": read_run(files["weak"])},
        ["nDCG@10"],
        qrels=qrels,
        n_resamples=1000,
    )
    pairs = pd.DataFrame(out["pairs"])
    assert pairs["difference"].to_numpy() == pytest.approx(python.pairs["difference"].to_numpy())
    wide = pairs["ci_high_runs"] - pairs["ci_low_runs"]
    assert (wide >= pairs["ci_high"] - pairs["ci_low"] - 1e-12).all()
    assert [r["system"] for r in out["ranking"]][0] == "dense"
    assert any("weak" in g for g in out["tie_groups"])


def test_compare_table_with_baselines_and_power(files, capsys) -> None:
    args = ["compare", files["qrels"], "--run", f"bm25={files['bm25']}"]
    args += ["--run", f"dense={files['seeds'][0]}", "--run", f"weak={files['weak']}"]
    args += ["--baseline", "bm25", "--baseline", "weak", "--target-effect", "0.05"]
    assert main([*args, "--resamples", "500", "-m", "nDCG@10"]) == 0
    text = capsys.readouterr().out
    assert "dense − bm25" in text and "dense − weak" in text and "weak − bm25" in text
    assert "tie_group" in text and "queries_needed_t" in text


def test_compare_bad_run_spec_exit_2(files, capsys) -> None:
    assert main(["compare", files["qrels"], "--run", files["bm25"], "--run", "x=y"]) == 2
    assert "NAME=FILE" in capsys.readouterr().err
    assert main(["compare", files["qrels"], "--run", f"bm25={files['bm25']}"]) == 2
    assert "at least two systems" in capsys.readouterr().err


def _beir_folder(folder: Path, n_q: int = 40, n_d: int = 30) -> str:
    """A BEIR folder of ``n_d`` documents and ``n_q`` queries, ids as in ``files``."""
    folder.mkdir()
    docs = [{"_id": f"d{d}", "title": "", "text": f"doc {d} word{d}"} for d in range(n_d)]
    queries = [{"_id": f"q{q}", "text": f"word{q % n_d}"} for q in range(n_q)]
    for name, rows in (("corpus.jsonl", docs), ("queries.jsonl", queries)):
        (folder / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(folder)


def test_compare_ranks_the_kits_retrievers_beside_the_runs(files, tmp_path, capsys) -> None:
    dataset = _beir_folder(tmp_path / "beir")
    args = ["compare", files["qrels"], "--run", f"prod={files['bm25']}", "--retriever", "bm25"]
    assert main([*args, "--dataset", dataset, "--resamples", "200"]) == 0
    table = capsys.readouterr().out.split("\n\n")[0]
    assert sorted(row.split()[1] for row in table.splitlines()[1:]) == ["bm25", "prod"]
    queries = tmp_path / "some.jsonl"
    queries.write_text(
        "".join(json.dumps({"_id": f"q{q}", "text": "word1"}) + "\n" for q in (1, 2))
    )
    argv = [*args, "--dataset", dataset, "--queries", str(queries), "--resamples", "200"]
    assert main(argv) == 0
    assert "38 of the 40 queries of the qrels have no text in" in capsys.readouterr().err


def test_compare_says_what_the_kits_retrievers_lack(files, tmp_path, capsys) -> None:
    dataset = _beir_folder(tmp_path / "beir")
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"_id": "x1", "text": "word1"}) + "\n")
    base = ["compare", files["qrels"], "--run", f"bm25={files['bm25']}"]
    cases = [
        (["--retriever", "hybrid2", "--dataset", dataset], "unknown retriever 'hybrid2'"),
        (["--retriever", "bm25-plain"], "--retriever needs --dataset DIR"),
        (["--retriever", "bm25", "--dataset", dataset], "['bm25'] named twice"),
        (
            ["--retriever", "bm25-plain", "--dataset", dataset, "--queries", str(other)],
            "other.jsonl: none of the 40 queries of the qrels",
        ),
    ]
    for extra, message in cases:
        assert main([*base, *extra]) == 2
        assert message in capsys.readouterr().err


def test_parser_choices_are_the_library_names() -> None:
    from ragnb.cli.evaluate import COMPARE_CORRECTIONS, COMPARE_TESTS
    from ragnb.stats import TESTS
    from ragnb.stats.corrections import CORRECTIONS

    assert COMPARE_TESTS == TESTS and COMPARE_CORRECTIONS == CORRECTIONS


def test_installed_compare_tukey_bh_gives_the_apis_table(files, tmp_path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    runs = ["--run", f"bm25={files['bm25']}", "--run", "dense=" + ",".join(files["seeds"])]
    runs += ["--run", f"weak={files['weak']}"]
    args = ["compare", files["qrels"], *runs, "-m", "nDCG@10", "-m", "P@5"]
    args += ["--test", "tukey", "--correction", "bh", "--resamples", "300", "--format", "json"]
    done = ragnb(*args, cwd=work)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    python = compare(
        {
            "bm25": read_run(files["bm25"]),
            "dense": [read_run(p) for p in files["seeds"]],
            "weak": read_run(files["weak"]),
        },
        ["nDCG@10", "P@5"],
        qrels=read_qrels(files["qrels"]),
        n_resamples=300,
        test="tukey",
        correction="bh",
    )
    pairs = pd.DataFrame(out["pairs"])
    assert list(pairs.columns) == list(python.pairs.columns)
    for col in ("difference", "p_value", "p_adjusted", "cohens_dz", "gz_low", "ci_low_runs"):
        assert pairs[col].to_numpy() == pytest.approx(python.pairs[col].to_numpy(), abs=1e-12)
    assert pairs["significant"].tolist() == python.pairs["significant"].tolist()
    omnibus = pd.DataFrame(out["omnibus"])
    assert omnibus["f"].to_numpy() == pytest.approx(python.omnibus["f"].to_numpy())
    assert omnibus["design"].tolist() == ["repeated-measures"] * 2  # runs 1, 3, 1: averaged
    letters = pd.DataFrame(out["letters"]).set_index("system")
    assert letters.to_dict() == python.letters().to_dict()
    assert out["settings"]["test"] == "tukey" and out["settings"]["correction"] == "bh"
    table = ragnb(*args[:-2], cwd=work)
    assert table.returncode == 0, table.stderr
    assert "Tukey's HSD on the ANOVA's error" in table.stdout and "all systems:" in table.stdout
