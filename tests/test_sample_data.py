"""ragnb.io.sample_data: the pydocs dataset built from the standard library's docstrings."""

from __future__ import annotations

import hashlib
import json
import sys
import types
from pathlib import Path

import pytest

import ragnb.io.files
from ragnb.io import sample_data
from ragnb.io.files import read_beir, read_json
from ragnb.io.sample_data import RELATED, build_sample

SHIPPED = Path(__file__).resolve().parents[1] / "data" / "pydocs"
FILES = ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv", "README.md", "recipe.json")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("build") / "pydocs"
    build_sample(out)
    return out


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _module_of(doc_id: str) -> str:
    """The curated module a passage ID starts with (the longest match: xml.dom.minidom)."""
    return max((m for m in RELATED if doc_id.startswith(m + ".")), key=len)


# --------------------------------------------------------------------------------------------
# determinism


def test_two_builds_are_byte_identical(built: Path, tmp_path: Path) -> None:
    again = tmp_path / "pydocs"
    recipe = build_sample(again)
    for name in FILES:
        assert (built / name).read_bytes() == (again / name).read_bytes(), name
    assert recipe == read_json(built / "recipe.json")
    for name, digest in recipe["files"].items():
        assert _sha256(again / name) == digest, name
    assert set(recipe["files"]) == set(FILES) - {"recipe.json"}


def test_shipped_data_matches_a_fresh_build(built: Path) -> None:
    recipe = read_json(SHIPPED / "recipe.json")
    if recipe["python"]["version"] != sys.version:
        pytest.skip(
            f"data/pydocs was built with Python {recipe['python']['version']!r}; this is "
            f"{sys.version!r}, whose docstrings differ"
        )
    for name in FILES:
        assert (SHIPPED / name).read_bytes() == (built / name).read_bytes(), name


def test_shipped_recipe_hashes_match_the_shipped_files() -> None:
    recipe = read_json(SHIPPED / "recipe.json")
    for name, digest in recipe["files"].items():
        assert _sha256(SHIPPED / name) == digest, name


def test_shipped_data_is_small() -> None:
    size = sum(p.stat().st_size for p in SHIPPED.rglob("*") if p.is_file())
    assert size < 3_000_000


# --------------------------------------------------------------------------------------------
# content


@pytest.mark.parametrize("which", ["built", "shipped"])
def test_counts_and_labels(which: str, built: Path) -> None:
    ds = read_beir(built if which == "built" else SHIPPED)
    counts = ds.meta["counts"]
    assert len(ds.queries) == counts["queries"] >= 30
    assert len(ds.corpus) == counts["passages"] >= 1000
    assert len(ds.qrels) == counts["qrels_pairs"]
    assert set(ds.qrels["doc_id"]) <= set(ds.corpus["doc_id"])
    assert set(ds.qrels["query_id"]) == set(ds.queries["query_id"])
    assert ds.corpus["text"].is_unique
    assert (ds.corpus["title"] == ds.corpus["doc_id"]).all()
    assert set(ds.qrels["relevance"]) == {0, 1}

    related = ds.meta["related"]
    for qid, group in ds.qrels.groupby("query_id"):
        module = qid.removeprefix("q-")
        positives = group.loc[group["relevance"] == 1, "doc_id"]
        negatives = group.loc[group["relevance"] == 0, "doc_id"]
        assert len(positives) >= 2, qid
        assert len(negatives) >= 1, qid
        assert {_module_of(d) for d in positives} == {module}, qid
        assert {_module_of(d) for d in negatives} == {related[module]}, qid
        # every passage of the module is judged relevant: none is left unjudged
        own = ds.corpus["doc_id"].map(_module_of) == module
        assert set(ds.corpus.loc[own, "doc_id"]) == set(positives), qid


def test_queries_do_not_carry_the_module_label(built: Path) -> None:
    ds = read_beir(built)
    for qid, text in zip(ds.queries["query_id"], ds.queries["text"], strict=True):
        module = qid.removeprefix("q-")
        assert text and not text[0].islower(), qid
        assert f"{module}.py" not in text, qid
        assert not text.lower().startswith((f"{module} --", f"the {module} module")), qid


def test_recipe_records_the_recipe(built: Path) -> None:
    recipe = read_json(built / "recipe.json")
    assert recipe["python"]["version"] == sys.version
    assert recipe["modules"]["requested"] == {m: list(RELATED[m]) for m in sorted(RELATED)}
    used, skipped = set(recipe["modules"]["used"]), set(recipe["modules"]["skipped"])
    assert used | skipped == set(RELATED) and not used & skipped
    assert set(recipe["rules"]) >= {"query", "passages", "positives", "negatives"}
    assert "A.1.1" in recipe["reference"]


def test_seed_changes_the_sample_not_the_shape(built: Path, tmp_path: Path) -> None:
    other = build_sample(tmp_path / "pydocs", seed=1)
    base = read_json(built / "recipe.json")
    assert other["counts"]["queries"] == base["counts"]["queries"]
    assert other["files"]["qrels/test.tsv"] != base["files"]["qrels/test.tsv"]


# --------------------------------------------------------------------------------------------
# query cleaning, by hand


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ("fake.py -- a tool to parse files.\n\nMore.", "A tool to parse files."),
        ("Module fake -- helpers for deltas.", "Helpers for deltas."),
        ("fake\n~~~~\n\nThe `fake` module helps. It does.", "This module helps."),
        ("The fake module: Support for typing.", "Support for typing."),
        ("Fake module.\n\nThis module allows I/O.", "This module allows I/O."),
        (
            "Heap queue (a.k.a. priority queue). Heaps are arrays.",
            "Heap queue (a.k.a. priority queue).",
        ),
        ("JSON <https://json.org> is a\n   format.", "JSON is a format."),
        ("Uses the fake library.", "Uses the fake library."),
    ],
)
def test_module_query(doc: str, expected: str) -> None:
    assert sample_data._module_query(types.ModuleType("fake", doc)) == expected


def test_module_without_docstring_gives_no_query() -> None:
    assert sample_data._module_query(types.ModuleType("fake")) is None


# --------------------------------------------------------------------------------------------
# safety of the files


def test_refuses_a_folder_it_did_not_write(tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    with pytest.raises(FileExistsError, match="did not write"):
        build_sample(out)
    assert (out / "notes.txt").read_text() == "keep me"


def test_interrupted_build_keeps_the_old_dataset(
    built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "pydocs"
    build_sample(out)
    before = {name: (out / name).read_bytes() for name in FILES}

    def crash(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(ragnb.io.files, "write_qrels", crash)  # build_sample imports it lazily
    with pytest.raises(KeyboardInterrupt):
        build_sample(out, seed=1)
    assert {name: (out / name).read_bytes() for name in FILES} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pydocs"]  # no temporary folders


def test_too_few_passages_writes_nothing(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="min_passages=1000000"):
        build_sample(tmp_path / "pydocs", min_passages=1_000_000)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("bad", [{"seed": -1}, {"min_queries": 2.5}, {"min_passages": True}])
def test_rejects_bad_parameters(bad: dict[str, object], tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="non-negative integer"):
        build_sample(tmp_path / "pydocs", **bad)  # type: ignore[arg-type]


def test_shipped_files_are_valid_json_lines() -> None:
    for name in ("corpus.jsonl", "queries.jsonl"):
        for line in (SHIPPED / name).read_text(encoding="utf-8").splitlines():
            assert isinstance(json.loads(line), dict)
