"""``ragnb run`` and ``ragnb params``: the studies through the registry, from a shell."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from ragnb.cli.main import main
from ragnb.core.paths import resolve_path
from ragnb.evaluation.evaluate import evaluate
from ragnb.report.params import SAMPLE_DATASET
from ragnb.retrievers.retrieve import compute_runs
from ragnb.studies.registry import STUDIES, study

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
WHATIF_CELL = "06_what_if.ipynb"


@pytest.fixture
def notebooks(tmp_path):
    folder = tmp_path / "notebooks"
    folder.mkdir()
    for s in STUDIES:
        shutil.copy(NOTEBOOKS / f"{s.notebook}.ipynb", folder)
    return folder


def _drift(path: Path) -> None:
    nb = json.loads(path.read_text(encoding="utf-8"))
    cell = next(c for c in nb["cells"] if "parameters" in c["metadata"].get("tags", []))
    cell["source"] = ["seed: int = 99  # drifted\n"]
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def test_params_check_exits_1_naming_the_drifted_notebook_and_write_repairs_it(notebooks, capsys):
    only = ["--only", "whatif", "--only", "retrieval", "--notebooks", str(notebooks)]
    assert main(["params", "--check", *only]) == 0
    _drift(notebooks / WHATIF_CELL)
    assert main(["params", *only]) == 1  # --check is the default
    out, err = capsys.readouterr()
    assert "06_what_if: differs from its config" in out
    assert "01_retrieval" not in out
    assert "ragnb params --write" in err
    assert main(["params", "--write", *only]) == 0
    assert "06_what_if: rewritten" in capsys.readouterr().out
    assert main(["params", "--check", *only]) == 0
    assert (notebooks / WHATIF_CELL).read_bytes() == (NOTEBOOKS / WHATIF_CELL).read_bytes()


def test_params_check_and_write_are_exclusive(capsys):
    with pytest.raises(SystemExit):
        main(["params", "--check", "--write"])
    assert "not allowed with" in capsys.readouterr().err


def test_configure_reads_strings_as_the_field_types():
    config = study("retrieval").configure(
        {
            "depth": "20",
            "proc_pool": "20",
            "retrievers": "[bm25]",
            "alpha": "0.25",
            "cutoffs": "[5, 20]",
        }
    )
    assert config.depth == 20 and config.retrievers == ["bm25"]
    assert config.alpha == 0.25 and config.cutoffs == [5, 20]
    assert study("whatif").configure({"ks": [1, 10]}).ks == [1, 10]  # typed values pass as they are


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-p", "no_such_knob=3"], "unknown parameter 'no_such_knob'"),
        (["-p", "dept=3"], "unknown parameter 'dept' (did you mean 'depth'?)"),
        (["-p", "depth", "20"], "write -p depth=20, not -p depth 20"),
        (["-p", "depth=many"], "parameter 'depth' takes a int, got 'many'"),
        (["-p", "depth"], "-p takes NAME=VALUE, got 'depth'"),
        (["-p", "retrievers=[splade]"], "splade"),
    ],
)
def test_run_bad_parameter_exit_2_names_it(argv, message, capsys):
    assert main(["run", "whatif", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ragnb: error:") and message in err


def test_run_unknown_study_exit_2_lists_the_known(capsys):
    assert main(["run", "nope"]) == 2
    assert "retrieval, golden, diagnostics" in capsys.readouterr().err


def test_run_whatif_prints_the_banner_and_exports_the_grid(tmp_path, capsys):
    out = tmp_path / "export"
    argv = ["run", "06", "-p", "retrievers=[bm25]", "-p", "ks=[1, 5, 10]", "-p", "depth=10"]
    argv += ["-p", "alphas=[0, 0.5, 1]", "-p", "families=[F, P]", "-p", "rank_families=[F]"]
    assert main([*argv, "--export", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "What produced these numbers" in printed
    assert "Grid: 3 K x 3 alpha; 1 retrievers" in printed
    written = [Path(line) for line in printed.splitlines() if line.startswith(str(out))]
    assert sorted(p.name for p in written) == [
        "changes.csv",
        "grid.csv",
        "provenance.json",
        "ranks.csv",
        "slider.csv",
    ]
    grid = pd.read_csv(out / "grid.csv")
    p5 = grid[(grid["measure"] == "P@5") & (grid["alpha"] == 0.0)]["value"].item()
    from ragnb.io.files import read_beir

    dataset = read_beir(resolve_path(SAMPLE_DATASET))
    runs, _, _ = compute_runs(dataset, ["bm25"], depth=10, progress=False)
    direct = evaluate(dataset.qrels, runs["bm25"], ["P@5"]).aggregate["value"].item()
    assert p5 == pytest.approx(direct, abs=1e-12)
    provenance = json.loads((out / "provenance.json").read_text())
    assert provenance["config"]["ks"] == [1, 5, 10]
