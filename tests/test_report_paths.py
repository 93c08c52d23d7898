"""Reports shared with a colleague show no absolute local path, home folder or user name:
a project under a temporary home folder renders notebook 02, whose report
names its dataset, run folder and cache, and the index page lists its parameters."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ragnb.core.paths import display_path
from ragnb.report.render import build_index, redact_local_paths, render_report

REPO = Path(__file__).resolve().parents[1]
USER = "zqalice7"  # a user name that appears nowhere else


@pytest.fixture
def project_in_home(tmp_path, monkeypatch):
    home = tmp_path / "home" / USER
    root = home / "work" / "myproject"
    shutil.copytree(REPO / "notebooks", root / "notebooks")
    shutil.copytree(REPO / "data" / "pydocs", root / "data" / "pydocs")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("RAGNB_ROOT", str(root))
    monkeypatch.setenv("RAGNB_CACHE_DIR", str(home / ".cache" / "ragnb"))
    return home, root


def test_report_from_a_project_under_home_names_no_local_path(project_in_home):
    home, root = project_in_home
    result = render_report("02_golden_set", {"retrievers": "[bm25]", "judge": "noisy"})
    assert result.html.parent == root / "reports"
    index = build_index(root / "reports")
    for page in (result.html, index):
        text = page.read_text(encoding="utf-8")
        assert str(home) not in text, page.name
        assert USER not in text, page.name
    # nor does any file the report exported beside it (manifest, ledger, cache summary, runs)
    exported = [p for p in (root / "reports").rglob("*") if p.is_file()]
    assert len(exported) > 5
    leaks = [
        str(path.relative_to(root))
        for path in exported
        if str(home).encode() in path.read_bytes() or USER.encode() in path.read_bytes()
    ]
    assert not leaks, f"files naming the home folder or the user: {leaks}"
    # the paths are still there, in a form a colleague can read
    report = result.html.read_text(encoding="utf-8")
    assert "pydocs" in report
    assert "reports/02_golden_set" in index.read_text(encoding="utf-8")


def test_display_path_forms(tmp_path, monkeypatch):
    home = tmp_path / "home" / USER
    root = home / "proj"
    monkeypatch.setenv("HOME", str(home))
    assert display_path(root / "reports" / "x", root) == "reports/x"
    assert display_path(root, root) == "."
    assert (
        display_path(home / "shared" / "datasets" / "scifact", root) == "~/shared/datasets/scifact"
    )
    assert display_path(home / ".cache" / "ragnb" / "c.sqlite", root) == "~/.cache/ragnb/c.sqlite"
    assert display_path("/opt/data/scifact", root) == "scifact"


def test_redaction_keeps_urls_and_longer_names(tmp_path, monkeypatch):
    home = tmp_path / "home" / USER
    monkeypatch.setenv("HOME", str(home))
    root = home / "proj"
    text = f"{root}/reports/a, {root}, {home}/x, {root}extra, https://host{root}/y"
    out = redact_local_paths(text, root)
    assert out == f"reports/a, ., ~/x, ~/projextra, https://host{root}/y"


def test_paths_given_to_a_notebook_outside_project_and_home_are_shown_by_name(
    tmp_path, monkeypatch
):
    # a dataset folder elsewhere on the disk (not under the project, its parent or home)
    home = tmp_path / "home" / USER
    monkeypatch.setenv("HOME", str(home))
    root = home / "proj"
    outside = f"/srv/{USER}-data/synthetic"
    text = f"Folder: `{outside}`; file {outside}/corpus.jsonl; other /srv/{USER}-data/x"
    out = redact_local_paths(text, root, paths=[outside])
    assert out == f"Folder: `synthetic`; file synthetic/corpus.jsonl; other /srv/{USER}-data/x"


def test_provenance_block_names_the_dataset_folder_by_display_path(tmp_path, monkeypatch):
    from ragnb.report.tables import provenance_markdown

    monkeypatch.setenv("HOME", str(tmp_path / "home" / USER))
    folder = f"/srv/{USER}-data/synthetic"
    text = provenance_markdown({"dataset": {"dataset": "synthetic", "path": folder}})
    assert "Folder: `synthetic`" in text
    assert USER not in text


def test_cache_summary_names_its_file_under_home_as_tilde(tmp_path, monkeypatch):
    from ragnb.core.cache import Cache

    home = tmp_path / "home" / USER
    monkeypatch.setenv("HOME", str(home))
    with Cache(home / ".cache" / "ragnb") as cache:
        summary = cache.summary()
    assert summary["path"].startswith("~/.cache/ragnb/")
    assert USER not in summary["path"]
    with Cache(tmp_path / "elsewhere") as cache:
        assert cache.summary()["path"] == cache.path.name


def test_default_author_table_names_its_dataset_without_a_local_path():
    from ragnb.studies.diagnostics.author_tables import default_author_table

    source = default_author_table().attrs["source"]
    assert source.endswith("works: data/pydocs"), source
    assert str(REPO) not in source
