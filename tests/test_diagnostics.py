"""Proper-name bundles and margins (ragnb.studies.diagnostics.names): parsing metadata names, author
tables from real data, bundle construction, margin arithmetic on hand-set vectors, determinism,
and a tiny real run with MiniLM.

The fake embedders are real subclasses of :class:`ragnb.embed.Embedder`: one looks vectors up
in a table set by the test (so margins are known by hand), one is a hashed bag of words.
"""

from __future__ import annotations

import doctest
import hashlib
import re
import unicodedata

import numpy as np
import pandas as pd
import pytest

from ragnb.embed import Embedder
from ragnb.errors import InputError
from ragnb.studies.diagnostics import (
    ABLATIONS,
    CANDIDATE_IDS,
    Bundle,
    DiagnosticsConfig,
    ablation_table,
    bundles_frame,
    default_author_table,
    has_diacritics,
    installed_author_names,
    make_bundles,
    name_margins,
    name_pool_summary,
    parse_person_names,
    scifact_author_table,
)


class LookupEmbedder(Embedder):
    """Vectors from a {text: vector} table; unknown texts raise (the test set them all)."""

    model_id = "lookup"

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        super().__init__()
        self.vectors = vectors
        self.kinds: list[str] = []

    def _embed(self, texts, kind):
        self.kinds.append(kind)
        return np.stack([self.vectors[t] for t in texts]).astype(np.float32)


class BagOfWordsEmbedder(Embedder):
    """A signed hashed bag of lower-cased word tokens, 256 dimensions, L2-normalised."""

    model_id = "bag-of-words"
    batch_size = 10_000

    def _embed(self, texts, kind):
        out = np.zeros((len(texts), 256), dtype=np.float32)
        for i, t in enumerate(texts):
            for tok in re.findall(r"\w+", unicodedata.normalize("NFKC", t).lower()):
                h = int(hashlib.sha256(tok.encode()).hexdigest()[:8], 16)
                out[i, h % 256] += 1.0 if (h >> 8) % 2 else -1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1, norms)


NAMES = [
    "Alice Dupont",
    "Bruno Martin",
    "Chloé Lefèvre",
    "David Hewitt",
    "Emma Schmidt",
    "François Girard",
    "Grace Hopper",
    "Hugo Bernard",
]


def small_table(n: int = 8) -> pd.DataFrame:
    topics = [f"topic number {i}" for i in range(n)]
    return pd.DataFrame(
        {
            "author": [NAMES[i % len(NAMES)] for i in range(n)],
            "title": [f"A study of subject {i}" for i in range(n)],
            "topic": topics,
        }
    )


def hand_bundle(**kwargs) -> Bundle:
    args = dict(
        topic="analytical engines",
        titles=("Notes on the engine", "Poems", "Proofs"),
        other_topics=("poetry", "logic"),
    )
    args.update(kwargs)
    return Bundle.build("Ada Lovelace", ("Alan Turing", "Grace Hopper"), "Kurt Gödel", **args)


# ----------------------------------------------------------------------------- names


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("Julian Berman <Julian+jsonschema@GrayVines.com>", ["Julian Berman"]),
        (
            '"Guido van Rossum, Jukka Lehtosalo, Łukasz Langa, Michael Lee" <x@y.org>',
            ["Guido van Rossum", "Jukka Lehtosalo", "Łukasz Langa", "Michael Lee"],
        ),
        (
            "Noah Spurrier; Thomas Kluyver; Jeff Quast",
            ["Noah Spurrier", "Thomas Kluyver", "Jeff Quast"],
        ),
        (
            '"David R. MacIver and Zac Hatfield-Dodds" <d@x.com>',
            ["David R. MacIver", "Zac Hatfield-Dodds"],
        ),
        ("Travis E. Oliphant et al.", ["Travis E. Oliphant"]),
        ("Christophe Van Gysel -> forked by Terrier team", ["Christophe Van Gysel"]),
        ("Jeffrey 'Alex' Clark <aclark@aclark.net>", ["Jeffrey Clark"]),
        ("Dmitry Sagalovskiy, Grist Labs", ["Dmitry Sagalovskiy"]),
        ("Hugging Face, Inc.", []),
        ("The Pandas Development Team <pandas-dev@python.org>", []),
        ("Python Software Foundation", []),
        ("liris.pp@gmail.com", []),
        ("engn33r", []),
        ("Matt <matt@example.com>", []),
        (
            "Brianna Laugher, Others (See AUTHORS), Ronny Pfannschmidt",
            ["Brianna Laugher", "Ronny Pfannschmidt"],
        ),
        ("Ewald R. de Wit", ["Ewald R. de Wit"]),
        ("Sebastián Ramírez <tiangolo@gmail.com>", ["Sebastián Ramírez"]),
    ],
)
def test_parse_person_names(value, expected):
    assert parse_person_names(value) == expected


def test_installed_author_names_real_sorted_unique_with_diacritics():
    names = installed_author_names()
    assert len(names) >= 20  # the project's own dependencies name dozens of people
    keys = [unicodedata.normalize("NFD", n).casefold() for n in names]
    assert len(set(keys)) == len(keys)
    assert names == installed_author_names()  # deterministic
    assert all("@" not in n and len(n.split()) >= 2 for n in names)
    summary = name_pool_summary(names)
    assert summary["n_with_diacritics"] >= 1, "no installed metadata name carries diacritics"
    assert all(has_diacritics(n) for n in summary["with_diacritics"])


def test_default_author_table_real_sources():
    table = default_author_table()
    assert list(table.columns[:3]) == ["author", "title", "topic"]
    assert len(table) == 95  # one row per pydocs module
    assert table["topic"].nunique() == 95
    assert not table[["author", "title", "topic"]].isin([""]).any().any()
    pool = set(installed_author_names())
    assert set(table["author"]) <= pool
    # every name of the pool that strip_diacritics can change authors a work
    marked = {n for n in pool if has_diacritics(n)}
    assert marked <= set(table["author"])
    assert table.attrs["names"]["n_with_diacritics"] == len(marked)
    queries = pd.read_json("data/pydocs/queries.jsonl", lines=True)
    assert set(table["query_id"]) <= set(queries["_id"])


def test_default_author_table_warns_when_names_lack_diacritics():
    ascii_names = ["Alan Turing", "Grace Hopper", "Ada Lovelace", "John Backus"]
    with pytest.warns(UserWarning, match="diacritics"):
        table = default_author_table(names=ascii_names)
    assert set(table["author"]) == set(ascii_names)


def test_scifact_author_table(scifact_path):
    table = scifact_author_table(scifact_path, n=30)
    assert len(table) == 30
    corpus = pd.read_json(scifact_path / "corpus.jsonl", lines=True, dtype={"_id": str})
    titles = {t.rstrip(". ") for t in corpus["title"].map(lambda s: " ".join(str(s).split()))}
    assert set(table["title"]) <= titles
    assert table["doc_id"].is_unique


# ----------------------------------------------------------------------------- bundles


def test_bundle_rendering_and_candidate_roles():
    b = hand_bundle()
    assert b.query == "Which works by Ada Lovelace on analytical engines?"
    c1, c2a, c2b, c3, c4 = b.candidates
    assert c1 == 'Research paper: "Notes on the engine". Author: Ada Lovelace.'
    assert c2a == c1.replace("Ada Lovelace", "Alan Turing")
    assert c2b == c1.replace("Ada Lovelace", "Grace Hopper")
    assert c3 == 'Research paper: "Poems". Author: Ada Lovelace.'
    assert c4 == 'Research paper: "Proofs". Author: Kurt Gödel.'
    fr = hand_bundle(language="fr")
    assert fr.query == "Quels travaux de Ada Lovelace sur analytical engines ?"
    assert (
        fr.candidates[0] == "Article de recherche : « Notes on the engine ». Auteur : Ada Lovelace."
    )


def test_make_bundles_structure():
    table = small_table()
    bundles = make_bundles(table, seed=3, run=1, names=NAMES)
    assert [b.bundle_id for b in bundles] == [f"r01-{i:04d}" for i in range(len(table))]
    for b, row in zip(bundles, table.itertuples(), strict=True):
        assert b.author == row.author and b.topic == row.topic and b.titles[0] == row.title
        names = {b.author, *b.impostors, b.other_author}
        assert len(names) == 4  # author, two impostors, C4's author: all distinct
        assert b.topic not in b.other_topics and b.other_topics[0] != b.other_topics[1]
        c = b.candidates
        # C2a and C2b are C1's text but for the name
        assert c[1] == c[0].replace(b.author, b.impostors[0])
        assert c[2] == c[0].replace(b.author, b.impostors[1])
        assert b.author in c[3] and b.author not in c[4]


def test_make_bundles_c3_prefers_the_authors_other_work():
    table = small_table(6)
    table.loc[3, "author"] = table.loc[0, "author"]  # Alice Dupont wrote rows 0 and 3
    for run in range(5):
        b = make_bundles(table, run=run, names=NAMES)[0]
        assert b.titles[1] == table.loc[3, "title"]


def test_make_bundles_deterministic_and_fresh_per_run():
    table = small_table()
    a = make_bundles(table, seed=7, run=2, names=NAMES)
    b = make_bundles(table, seed=7, run=2, names=NAMES)
    assert a == b
    other_runs = [make_bundles(table, seed=7, run=r, names=NAMES) for r in range(4)]
    impostors = {tuple(x.impostors for x in bs) for bs in other_runs}
    assert len(impostors) == 4  # fresh impostors every run
    # EN and FR bundles of a run are paired: same names and works
    fr = make_bundles(table, seed=7, run=2, names=NAMES, language="fr")
    assert [(x.impostors, x.titles) for x in fr] == [(x.impostors, x.titles) for x in a]


def test_make_bundles_jitter_off_uses_canonical_templates():
    bundles = make_bundles(small_table(), names=NAMES, jitter=False)
    assert all(b.query.startswith("Which works by ") for b in bundles)
    assert all(c.startswith("Research paper: ") for b in bundles for c in b.candidates)
    jittered = make_bundles(small_table(), names=NAMES, run=0)
    assert len({b.query_template for b in jittered}) > 1


def test_make_bundles_validates_input():
    with pytest.raises(InputError, match="column"):
        make_bundles(pd.DataFrame({"author": ["A B"], "title": ["t"]}))
    with pytest.raises(InputError, match="language"):
        make_bundles(small_table(), language="de", names=NAMES)
    bad = small_table()
    bad.loc[2, "topic"] = " "
    with pytest.raises(InputError, match="row 2"):
        make_bundles(bad, names=NAMES)
    with pytest.raises(InputError, match="3 distinct topics"):
        make_bundles(small_table(2), names=NAMES)


def test_bundles_frame_columns():
    frame = bundles_frame(make_bundles(small_table(4), names=NAMES))
    assert list(frame.columns) == [
        "bundle_id",
        "run",
        "language",
        "ablation",
        "author",
        "topic",
        "query",
        *CANDIDATE_IDS,
    ]
    assert len(frame) == 4


# ----------------------------------------------------------------------------- margins


def _unit(angle_cos: float) -> np.ndarray:
    return np.array([angle_cos, np.sqrt(1 - angle_cos**2)], dtype=np.float64)


def test_name_margins_hand_computed():
    b = hand_bundle()
    cosines = [0.9, 0.7, 0.8, 0.5, 0.2]
    vectors = {b.query: np.array([3.0, 0.0])}  # not normalised: margins must normalise
    for text, cos in zip(b.candidates, cosines, strict=True):
        vectors[text] = 2.0 * _unit(cos)
    emb = LookupEmbedder(vectors)
    m = name_margins(emb, [b]).iloc[0]
    assert m[["s_C1", "s_C2a", "s_C2b", "s_C3", "s_C4"]].tolist() == pytest.approx(cosines)
    assert m["delta_name"] == pytest.approx(0.9 - 0.8)
    assert m["delta_topic"] == pytest.approx(0.9 - 0.5)
    assert m["delta_both"] == pytest.approx(0.9 - 0.2)
    assert emb.kinds == ["query", "passage"]  # one call per kind


def test_name_margins_one_call_per_kind_for_many_bundles():
    emb = BagOfWordsEmbedder()
    bundles = make_bundles(small_table(8), names=NAMES)
    frame = name_margins(emb, bundles)
    assert emb.n_calls == 2 and emb.n_texts == 8 * 6
    assert len(frame) == 8
    s = frame[["s_C1", "s_C2a", "s_C2b", "s_C3", "s_C4"]].to_numpy()
    assert np.all(np.abs(s) <= 1 + 1e-6)
    np.testing.assert_allclose(frame["delta_name"], s[:, 0] - s[:, 1:3].max(axis=1))


def test_config_from_params():
    cfg = DiagnosticsConfig.from_params(runs=3, languages=["fr"])
    assert cfg.runs == 3 and cfg.ablations == []
    with pytest.raises(InputError, match="unknown parameter"):
        DiagnosticsConfig.from_params(rnus=3)
    with pytest.raises(InputError, match="unknown ablation"):
        DiagnosticsConfig(ablations=["mask"])


def test_doctests():
    from ragnb.studies.diagnostics import ablations, names, noise

    for module in (names, ablations, noise):
        result = doctest.testmod(module)
        assert result.failed == 0, module.__name__


# ----------------------------------------------------------------------------- real model


@pytest.fixture(scope="module")
def minilm(tmp_path_factory):
    from ragnb.embed import make_embedder

    return make_embedder(cache_dir=tmp_path_factory.mktemp("minilm-cache"), progress=False)


def test_tiny_real_run_minilm(minilm):
    """20 bundles of the default table, one run, base and the identity-destroying ablations."""
    table = default_author_table().iloc[:20]
    out = ablation_table(
        minilm,
        table,
        ["hard_name_mask", "gibberish_name", "edit_distance_near_miss"],
        runs=1,
        seed=0,
    ).set_index("ablation")
    assert out.loc["base", "delta_name"] > 0  # the name signal is real
    assert out.loc["base", "delta_topic"] > out.loc["base", "delta_name"]
    assert out.loc["hard_name_mask", "delta_name"] == pytest.approx(0.0, abs=1e-6)
    assert out.loc["hard_name_mask", "delta_delta_pct"] == pytest.approx(-100.0)
    assert out.loc["gibberish_name", "delta_delta_pct"] < 0
    assert out.loc["edit_distance_near_miss", "delta_delta_pct"] < 0
    assert (out["n_bundles"] == 20).all()
    assert set(out.index) == {"base", "hard_name_mask", "gibberish_name", "edit_distance_near_miss"}
    assert set(ABLATIONS) >= set(out.index) - {"base"}
