"""The ten ablations of Dallaire section 4.2 on hand-made bundles, and the Delta-Delta table.

Each ablation is checked against the paper's definition: what it changes, where (query,
candidates), and what it must leave alone. The table's arithmetic is checked on a hand-made
margins frame and, end to end, with a deterministic bag-of-words embedder (a real
:class:`ragnb.embed.Embedder` subclass).
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_diagnostics import NAMES, BagOfWordsEmbedder, hand_bundle, small_table

from ragnb.errors import InputError
from ragnb.studies.diagnostics import (
    ABLATIONS,
    ablation_margins,
    ablation_table,
    author_position_shift,
    case_punct_perturb,
    edit_distance_near_miss,
    gibberish_name,
    hard_name_mask,
    initials_form,
    levenshtein,
    make_bundles,
    name_order_inversion,
    near_miss,
    remove_label,
    strip_diacritics,
    summarize_ablations,
    unicode_normalization_stress,
)
from ragnb.studies.diagnostics.ablations import NNBSP, initials, inverted_name, perturbed_name


def reference_levenshtein(a: str, b: str) -> int:
    """Textbook recursion with memoisation (Wagner-Fischer's definition)."""

    @cache
    def d(i: int, j: int) -> int:
        if i == 0:
            return j
        if j == 0:
            return i
        return min(d(i - 1, j) + 1, d(i, j - 1) + 1, d(i - 1, j - 1) + (a[i - 1] != b[j - 1]))

    return d(len(a), len(b))


def test_paper_order_and_count():
    assert list(ABLATIONS) == [
        "hard_name_mask",
        "gibberish_name",
        "edit_distance_near_miss",
        "remove_label",
        "strip_diacritics",
        "initials_form",
        "name_order_inversion",
        "case_punct_perturb",
        "author_position_shift",
        "unicode_normalization_stress",
    ]


@pytest.mark.parametrize("name", list(ABLATIONS))
def test_every_ablation_is_pure_and_tags(name):
    b = hand_bundle()
    before = b.texts
    out = ABLATIONS[name](b)
    assert b.texts == before  # the input bundle is untouched (frozen)
    assert out.ablation == name
    assert out.author == b.author and out.impostors == b.impostors  # provenance kept
    assert ABLATIONS[name](b) == out  # deterministic


# ----------------------------------------------------------------------------- identity-destroying


def test_hard_name_mask_makes_c1_c2_identical():
    b = hard_name_mask(hand_bundle())
    c = b.candidates
    assert c[0] == c[1] == c[2]
    mask = b.query_name
    assert re.fullmatch(r"AUTHOR_\d{3}", mask)
    assert set(b.candidate_names) == {mask} and mask in b.query
    assert not any(n in t for t in b.texts for n in ("Ada", "Turing", "Hopper", "Gödel"))
    assert re.fullmatch(r"AUTEUR_\d{3}", hard_name_mask(hand_bundle(language="fr")).query_name)


def test_gibberish_keeps_identity_linkage():
    b = gibberish_name(hand_bundle())
    names = b.candidate_names
    assert all(re.fullmatch(r"ID-[0-9A-F]{6}", n) for n in names)
    assert b.query_name == names[0] == names[3]  # query, C1, C3: the author
    assert len({names[0], names[1], names[2], names[4]}) == 4  # impostors keep their own tokens


@given(st.text(max_size=12), st.text(max_size=12))
@settings(max_examples=200, deadline=None)
def test_levenshtein_matches_reference(a, b):
    assert levenshtein(a, b) == reference_levenshtein(a, b)


@pytest.mark.parametrize("name", [*NAMES, "Xing Han Lù", "Łukasz Langa", "Ewald R. de Wit"])
@pytest.mark.parametrize("distance", [1, 2, 3])
def test_near_miss_distance_exact(name, distance):
    out = near_miss(name, distance)
    assert reference_levenshtein(name, out) == distance
    assert len(out) == len(name)
    assert near_miss(name, distance) == out  # fixed substitutions


def test_near_miss_at_distance_one_is_one_substitution():
    out = near_miss("Alice Dupont", 1)
    diffs = [i for i, (x, y) in enumerate(zip("Alice Dupont", out, strict=True)) if x != y]
    assert len(diffs) == 1 and out[diffs[0]].isalpha()


def test_edit_distance_near_miss_bundle():
    b = hand_bundle()
    out = edit_distance_near_miss(b)
    author = b.author
    assert out.query == b.query
    assert out.candidates[0] == b.candidates[0] and out.candidates[3] == b.candidates[3]
    dist = [reference_levenshtein(author, out.candidate_names[i]) for i in (1, 2, 4)]
    assert dist == [1, 2, 3]  # C2a = 1, C2b = 2, C4 = 3
    same = edit_distance_near_miss(b, distances=2)
    assert [reference_levenshtein(author, same.candidate_names[i]) for i in (1, 2, 4)] == [2] * 3
    with pytest.raises(InputError, match="three"):
        edit_distance_near_miss(b, distances=(1, 2))
    with pytest.raises(InputError, match="distance 9"):
        near_miss("Al Bo", 9)


# ----------------------------------------------------------------------------- layout


def test_remove_label_deletes_the_author_field_label_only():
    b = hand_bundle()
    out = remove_label(b)
    assert out.query == b.query  # the query's "by" is not the label
    assert all("Author:" not in c for c in out.candidates)
    assert out.candidates[0] == 'Research paper: "Notes on the engine". Ada Lovelace.'
    fr = remove_label(hand_bundle(language="fr"))
    assert all("Auteur" not in c for c in fr.candidates)
    assert fr.query.startswith("Quels travaux de Ada Lovelace")


def test_author_position_shift_moves_author_first_in_candidates_only():
    b = hand_bundle()
    out = author_position_shift(b)
    assert out.query == b.query
    assert out.candidates[0] == 'Author: Ada Lovelace. Research paper: "Notes on the engine".'
    assert all(c.startswith("Author: ") for c in out.candidates)
    assert sorted(out.candidates[1]) == sorted(b.candidates[1])  # same characters, reordered


# ----------------------------------------------------------------------------- orthography


def test_strip_diacritics_changes_marked_names_and_is_idempotent():
    b = hand_bundle()  # C4's author is Kurt Gödel
    out = strip_diacritics(b)
    assert out.candidates[4].endswith("Author: Kurt Godel.")
    assert out.candidates[:4] == b.candidates[:4] and out.query == b.query
    assert strip_diacritics(out).texts == out.texts
    fr = strip_diacritics(hand_bundle(language="fr", topic="les équations différentielles"))
    assert "equations differentielles" in fr.query
    assert all(t == unicodedata.normalize("NFC", t) for t in fr.texts)
    assert not any(unicodedata.category(ch) == "Mn" for t in fr.texts for ch in t)


@given(st.text(alphabet="aeéèêëiîïoôöuùüçAÉÈÇ Ł-", max_size=20))
@settings(max_examples=100, deadline=None)
def test_strip_diacritics_idempotent_on_any_name(name):
    b = hand_bundle().with_names(name, [name] * 5)
    once = strip_diacritics(b)
    assert strip_diacritics(once).texts == once.texts


def test_strip_diacritics_changes_nothing_on_ascii_bundles():
    names = ["Ada Lovelace", "Alan Turing", "Grace Hopper", "Ada Lovelace", "Kurt Godel"]
    b = hand_bundle().with_names("Ada Lovelace", names)
    assert strip_diacritics(b).texts == b.texts


def test_initials_form():
    assert initials("Alice Dupont") == "A. Dupont"
    assert initials("Ewald R. de Wit") == "E. R. de Wit"
    assert initials("Jean-Pierre Pierre de la Fontaine") == "J.-P. P. de la Fontaine"
    assert initials("Plato") == "Plato"
    out = initials_form(hand_bundle())
    assert out.query == "Which works by A. Lovelace on analytical engines?"
    assert out.candidate_names == (
        "A. Lovelace",
        "A. Turing",
        "G. Hopper",
        "A. Lovelace",
        "K. Gödel",
    )


def test_name_order_inversion_candidates_only():
    assert inverted_name("Alice Dupont") == "Dupont, Alice"
    assert inverted_name("Guido van Rossum") == "van Rossum, Guido"
    b = hand_bundle()
    out = name_order_inversion(b)
    assert out.query == b.query
    assert out.candidates[0].endswith("Author: Lovelace, Ada.")
    assert out.candidates[1].endswith("Author: Turing, Alan.")


def test_case_punct_perturb():
    assert perturbed_name("Zac Hatfield-Dodds", "upper") == "ZAC HATFIELD DODDS"
    assert perturbed_name("Seán O’Brien", "lower") == "seán o'brien"
    assert perturbed_name("ewald de wit", "title") == "Ewald De Wit"
    seen = set()
    for i in range(30):
        b = hand_bundle(bundle_id=f"r00-{i:04d}")
        out = case_punct_perturb(b)
        assert out.query_name == out.candidate_names[0] == out.candidate_names[3]
        for old, new in zip(b.candidate_names, out.candidate_names, strict=True):
            assert new.casefold() == old.replace("-", " ").casefold()
        seen.add(
            "upper"
            if out.query_name.isupper()
            else "lower"
            if out.query_name.islower()
            else "title"
        )
    assert seen == {"upper", "lower", "title"}  # the three casings occur


def _unstress(text: str) -> str:
    return re.sub(r"\s(?=[:;!?])", "", unicodedata.normalize("NFC", text))


@pytest.mark.parametrize("language", ["en", "fr"])
def test_unicode_stress_changes_bytes_not_nfc_text(language):
    b = hand_bundle(language=language)
    out = unicode_normalization_stress(b)
    assert out.query == unicodedata.normalize("NFC", b.query)
    assert all(c != o for c, o in zip(out.candidates, b.candidates, strict=True))  # bytes differ
    assert all(unicodedata.is_normalized("NFD", c) for c in out.candidates)
    assert all(NNBSP + ":" in c for c in out.candidates)
    assert [_unstress(c) for c in out.candidates] == [_unstress(c) for c in b.candidates]
    assert "Go\u0308del" in out.candidates[4]  # NFD: o + combining diaeresis


# ----------------------------------------------------------------------------- the table


def _margins_frame():
    """Two runs, two bundles, base and one ablation; bundle r1-b1 has a base margin < 0.02."""
    rows = []
    base = {(0, "b0"): 0.10, (0, "b1"): 0.04, (1, "b0"): 0.08, (1, "b1"): 0.01}
    abl = {(0, "b0"): 0.05, (0, "b1"): 0.03, (1, "b0"): 0.02, (1, "b1"): 0.03}
    for (run, bid), value in base.items():
        for cond, d in (("base", value), ("abl", abl[(run, bid)])):
            rows.append(
                {
                    "bundle_id": bid,
                    "run": run,
                    "ablation": cond,
                    "delta_name": d,
                    "delta_topic": 0.2,
                    "delta_both": 0.3,
                    "base_delta_name": value,
                    "changed": cond != "base",
                }
            )
    return pd.DataFrame(rows)


def test_summarize_ablations_hand_computed():
    out = summarize_ablations(_margins_frame()).set_index("ablation")
    assert list(out.index) == ["base", "abl"]
    a = out.loc["abl"]
    # run 0: mean 0.04, dd mean (-0.05 - 0.01) / 2 = -0.03; run 1: mean 0.025, dd (-0.06 + 0.02)/2
    assert a["delta_name"] == pytest.approx((0.04 + 0.025) / 2)
    assert a["delta_name_sd"] == pytest.approx(np.std([0.04, 0.025], ddof=1))
    assert a["delta_delta"] == pytest.approx((-0.03 + -0.02) / 2)
    # percentages leave out r1-b1 (base 0.01 < 0.02):
    # run 0: (0.04 - 0.07) / 0.07; run 1: (0.02 - 0.08) / 0.08
    pct = [100 * (0.04 - 0.07) / 0.07, 100 * (0.02 - 0.08) / 0.08]
    assert a["delta_delta_pct"] == pytest.approx(np.mean(pct))
    assert a["delta_delta_pct_sd"] == pytest.approx(np.std(pct, ddof=1))
    per_query = [np.mean([-50.0, -25.0]), -75.0]
    assert a["delta_delta_pct_per_query"] == pytest.approx(np.mean(per_query))
    assert a["name_topic_ratio"] == pytest.approx(np.mean([0.05, 0.03, 0.02, 0.03]) / 0.2)
    assert (a["n_changed"], a["n_bundles"], a["n_excluded"], a["runs"]) == (4, 4, 1, 2)
    assert out.loc["base", "delta_delta"] == 0 and out.loc["base", "delta_delta_pct"] == 0
    assert out.loc["base", "n_changed"] == 0


def test_summarize_ablations_threshold_parameter():
    out = summarize_ablations(_margins_frame(), min_base_margin=0.0).set_index("ablation")
    assert out.loc["abl", "n_excluded"] == 0


def test_ablation_table_end_to_end_bag_of_words():
    emb = BagOfWordsEmbedder()
    table = small_table(8)
    out = ablation_table(emb, table, runs=3, seed=1, names=NAMES).set_index("ablation")
    assert list(out.index) == ["base", *ABLATIONS]
    assert emb.n_calls == 3 * 2  # one embed call per kind per run
    assert out.loc["base", "delta_name"] > 0.02
    assert out.loc["hard_name_mask", "delta_delta_pct"] == pytest.approx(-100.0)
    assert out.loc["hard_name_mask", "delta_name"] == pytest.approx(0.0, abs=1e-7)
    assert (out["n_bundles"] == 24).all() and (out["runs"] == 3).all()
    # a bag of words is blind to order and to "Author:" when the label word is shared
    assert out.loc["author_position_shift", "delta_delta"] == pytest.approx(0.0, abs=1e-6)
    # names with diacritics: some bundles change, not all
    assert 0 < out.loc["strip_diacritics", "n_changed"] < 24
    assert out.loc["remove_label", "n_changed"] == 24
    assert out.loc["base", "name_topic_ratio"] == pytest.approx(
        out.loc["base", "delta_name"] / out.loc["base", "delta_topic"]
    )


def test_ablation_table_determinism_and_subset():
    emb = BagOfWordsEmbedder()
    table = small_table(6)
    a = ablation_table(emb, table, ["gibberish_name", initials_form], runs=2, names=NAMES)
    b = ablation_table(emb, table, ["gibberish_name", initials_form], runs=2, names=NAMES)
    pd.testing.assert_frame_equal(a, b)
    assert list(a["ablation"]) == ["base", "gibberish_name", "initials_form"]
    c = ablation_table(emb, table, ["gibberish_name"], runs=2, names=NAMES, seed=5)
    assert c.loc[0, "delta_name"] != a.loc[0, "delta_name"]


def test_ablation_margins_changed_flags_and_base_margin():
    emb = BagOfWordsEmbedder()
    m = ablation_margins(emb, small_table(6), ["strip_diacritics"], runs=1, names=NAMES)
    base = m[m["ablation"] == "base"].set_index("bundle_id")
    abl = m[m["ablation"] == "strip_diacritics"].set_index("bundle_id")
    np.testing.assert_allclose(abl["base_delta_name"], base["delta_name"])
    bundles = {b.bundle_id: b for b in make_bundles(small_table(6), names=NAMES)}
    for bid, changed in abl["changed"].items():
        assert changed == (strip_diacritics(bundles[bid]).texts != bundles[bid].texts)


def test_ablation_table_validates():
    emb = BagOfWordsEmbedder()
    with pytest.raises(InputError, match="unknown ablation"):
        ablation_table(emb, small_table(), ["mask"], names=NAMES)
    with pytest.raises(InputError, match="runs"):
        ablation_table(emb, small_table(), runs=0, names=NAMES)
    with pytest.raises(InputError, match="base"):
        ablation_table(emb, small_table(), {"base": remove_label}, names=NAMES)
