"""The ten ablations of Dallaire section 4.2, and the Delta-Delta table of section 4.3.

Each ablation is a pure function ``Bundle -> Bundle``
(:class:`ragnb.studies.diagnostics.names.Bundle`) that changes the pieces the texts are rendered
from; the docstrings quote the paper's definition and say how it is implemented. :data:`ABLATIONS`
holds them in the paper's order.

======================= ============================================== =======================
ablation                changes                                         where
======================= ============================================== =======================
hard_name_mask          every name -> one mask ``AUTHOR_###``           query and candidates
gibberish_name          each name -> stable ``ID-XXXXXX`` token         query and candidates
edit_distance_near_miss C2a, C2b, C4 -> the author at Levenshtein 1/2/3 candidates C2a, C2b, C4
remove_label            the "Author:" / "Auteur :" label deleted        candidates
strip_diacritics        combining marks removed from every string       query and candidates
initials_form           "Alice Dupont" -> "A. Dupont"                   query and candidates
name_order_inversion    "Alice Dupont" -> "Dupont, Alice"               candidates
case_punct_perturb      one casing (upper/lower/title), ' for ’, ' '    query and candidates
                        for -, applied to every name
author_position_shift   author segment before the work segment         candidates
unicode_normalization_  query NFC; candidates NFD with U+202F before    query and candidates
stress                  ``: ; ! ?``
======================= ============================================== =======================

Reporting (section 4.3): for each ablation, per run, the mean Delta_name over the bundles; the
Delta-Delta against the base condition; the Delta-Delta% over the bundles whose base Delta_name is
at least 0.02 (the paper excludes the others from percent summaries); the Name/Topic ratio
mean Delta_name / mean Delta_topic; and how many bundles the ablation actually changed.

References
----------
Dallaire, "Practical RAG evaluation" (arXiv 2511.09545): section 4.2 ("Ablations (definitions
and intent)"), section 4.3 (Tables 4.1 and 4.2, the formal definitions of Delta-Delta and
Delta-Delta%), Appendix A.2 (base margins) and A.3 (Name/Topic ratios).
V. I. Levenshtein, "Binary codes capable of correcting deletions, insertions, and reversals",
Soviet Physics Doklady 10(8), 1966.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from ragnb.core.docstrings import doc_filler
from ragnb.core.validation import check_positive_int, require_columns
from ragnb.errors import InputError
from ragnb.studies.diagnostics.names import (
    PARTICLES,
    Bundle,
    Embedder,
    installed_author_names,
    make_bundles,
    margin_frame,
    similarities,
    strip_marks,
)

__all__ = [
    "ABLATIONS",
    "Ablation",
    "ablated_runs",
    "ablation_margins",
    "ablation_table",
    "author_position_shift",
    "case_punct_perturb",
    "edit_distance_near_miss",
    "gibberish_name",
    "hard_name_mask",
    "gibberish_token",
    "initials",
    "initials_form",
    "inverted_name",
    "levenshtein",
    "name_order_inversion",
    "near_miss",
    "perturbed_name",
    "remove_label",
    "stress_candidate_text",
    "strip_diacritics",
    "summarize_ablations",
    "unicode_normalization_stress",
    "changed_bundles",
    "fill_draw_doc",
]

Ablation = Callable[[Bundle], Bundle]

#: numpydoc entries of the draw parameters (:func:`ablated_runs`) that the public functions of the
#: ablations share; :data:`fill_draw_doc` expands them (:func:`ragnb.core.docstrings.doc_filler`).
_DRAW_ENTRIES: dict[str, str] = {
    "table": "table : DataFrame\n    Author table (``author``, ``title``, ``topic``).",
    "ablations": "ablations : names, callables or {name: callable}, optional\n"
    "    Default all ten (:data:`ragnb.studies.diagnostics.ABLATIONS`).",
    "runs": "runs : int, default 15\n    Runs of bundles, each drawn with fresh impostors.",
    "language": 'language : {"en", "fr"}, default "en"',
    "seed": "seed : int, default 0",
    "names": "names : sequence of str, optional\n"
    "    Impostor pool (see :func:`ragnb.studies.diagnostics.names.make_bundles`).",
    "jitter": "jitter : bool, default True\n"
    "    False uses the paper's canonical templates everywhere (see ``make_bundles``).",
}
fill_draw_doc = doc_filler(_DRAW_ENTRIES)
"""Expands the ``{{name}}`` lines of a docstring from the draw parameters' entries."""


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()


def _family_split(name: str) -> tuple[list[str], list[str]]:
    """(given-name tokens, family-name tokens): the last token and the particles before it."""
    tokens = name.split()
    if len(tokens) < 2:
        return [], tokens
    start = len(tokens) - 1
    while start > 1 and tokens[start - 1].lower() in PARTICLES:
        start -= 1
    return tokens[:start], tokens[start:]


# ----------------------------------------------------------------------------- identity-destroying


def hard_name_mask(bundle: Bundle) -> Bundle:
    """Replace every name in the query and the candidates with one mask, ``AUTHOR_###``.

    Paper: "Replace every author string in the bundle with the same deterministic mask (e.g.,
    AUTHOR_### / AUTEUR_###) in both queries and candidates; this erases identity (C1, C2a, C2b
    share an identical author token). Purpose: negative-control ablation that should collapse
    any name-based margin."

    The mask is ``AUTHOR_`` (``AUTEUR_`` in French) and three digits from the SHA-256 of the
    bundle id and the author. C1, C2a and C2b become the same text, so Delta_name = 0 and
    Delta-Delta% = -100% by construction (section 4.3.1, "Caveat").

    Examples
    --------
    >>> b = Bundle.build("Ada Lovelace", ("Alan Turing", "Grace Hopper"), "Kurt Gödel",
    ...                  topic="t", titles=("A", "B", "C"))
    >>> m = hard_name_mask(b)
    >>> m.candidates[0] == m.candidates[1] == m.candidates[2]
    True
    """
    stem = "AUTEUR" if bundle.language == "fr" else "AUTHOR"
    mask = f"{stem}_{int(_digest(bundle.bundle_id, bundle.author)[:8], 16) % 1000:03d}"
    return bundle.with_names(mask, [mask] * 5).tagged("hard_name_mask")


def gibberish_token(name: str) -> str:
    """``ID-`` and six upper-case hex digits of the SHA-256 of the NFC name: ``ID-AB12F3``."""
    return "ID-" + _digest(unicodedata.normalize("NFC", name))[:6].upper()


def gibberish_name(bundle: Bundle) -> Bundle:
    """Replace each name with a stable pseudo-random token, the same wherever it occurs.

    Paper: "Replace each author with a stable, pseudo-random token (e.g., ID-XXXXXX) so names are
    non-linguistic yet uniquely consistent across query/candidates. Purpose: preserve identity
    linkage while removing natural-language surface cues (wordpiece familiarity, orthography);
    tests how much Delta_name comes from form/tokenization versus meaning."

    Implemented with :func:`gibberish_token` on the query's name and every candidate's name: the
    query and C1/C3 share one token, the impostors have their own.
    """
    return bundle.with_names(
        gibberish_token(bundle.query_name), [gibberish_token(n) for n in bundle.candidate_names]
    ).tagged("gibberish_name")


def levenshtein(a: str, b: str) -> int:
    """Edit distance (insertions, deletions, substitutions, cost 1) on code points.

    Examples
    --------
    >>> levenshtein("kitten", "sitting")
    3
    """
    if len(a) < len(b):
        a, b = b, a
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        cur = [i]
        for j, cb in enumerate(b, start=1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


_VOWELS = "aeiou"
_CONSONANTS = "bcdfghjklmnpqrstvwxz"


def _substitute(ch: str) -> str:
    """A fixed substitute letter: the next vowel for a vowel, the next consonant for a
    consonant (cyclic, on the letter without diacritics), case kept; other letters -> x."""
    base = strip_marks(ch).lower()
    if base in _VOWELS:
        new = _VOWELS[(_VOWELS.index(base) + 1) % len(_VOWELS)]
    elif base in _CONSONANTS:
        new = _CONSONANTS[(_CONSONANTS.index(base) + 1) % len(_CONSONANTS)]
    elif base == "y":
        new = "i"
    else:
        new = "x"
    return new.upper() if ch.isupper() else new


def near_miss(name: str, distance: int, *, attempts: int = 64) -> str:
    """``name`` with ``distance`` letters substituted, at Levenshtein distance exactly ``distance``.

    Positions are drawn among the letters by a generator seeded with the SHA-256 of the name and
    the distance (so the result is fixed); each chosen letter becomes :func:`_substitute` of it.
    A draw whose edit distance falls short (a substitution undone by a shift) is redrawn.

    Raises
    ------
    InputError
        If the name has fewer letters than ``distance`` or no draw reaches it.

    Examples
    --------
    >>> levenshtein(near_miss("Alice Dupont", 2), "Alice Dupont")
    2
    """
    distance = int(distance)
    letters = [i for i, ch in enumerate(name) if ch.isalpha()]
    if distance < 1 or len(letters) < distance:
        raise InputError(
            f"cannot make a near miss at distance {distance} of {name!r} ({len(letters)} letters)"
        )
    rng = np.random.default_rng(int(_digest(name, str(distance))[:16], 16))
    for _ in range(attempts):
        chosen = rng.choice(letters, size=distance, replace=False)
        chars = list(name)
        for i in chosen:
            chars[int(i)] = _substitute(chars[int(i)])
        out = "".join(chars)
        if levenshtein(out, name) == distance:
            return out
    raise InputError(f"no near miss of {name!r} at distance {distance} in {attempts} draws")


def edit_distance_near_miss(bundle: Bundle, distances: int | Sequence[int] = (1, 2, 3)) -> Bundle:
    """Impostor names become near misses of the true author's name.

    Paper: "For impostor authors only, mutate the true author's name with fixed character
    substitutions at preset Levenshtein distances (C2a = 1, C2b = 2, C4 = 3); C1/C3 remain
    unchanged. Purpose: probe robustness to small orthographic perturbations and how quickly the
    name margin erodes as impostors become confusable."

    Parameters
    ----------
    bundle : Bundle
    distances : int or (int, int, int), default (1, 2, 3)
        Levenshtein distances of C2a, C2b and C4's names from the author's; one int for all
        three. See :func:`near_miss`.
    """
    ds: tuple[int, ...]
    if isinstance(distances, int | np.integer):
        ds = (int(distances),) * 3
    else:
        ds = tuple(int(d) for d in distances)
        if len(ds) != 3:
            raise InputError(f"distances must be one int or three (C2a, C2b, C4), got {ds}")
    true = bundle.candidate_names[0]
    names = list(bundle.candidate_names)
    names[1], names[2], names[4] = (near_miss(true, d) for d in ds)
    return bundle.with_names(candidate_names=names).tagged("edit_distance_near_miss")


# ----------------------------------------------------------------------------- layout


def remove_label(bundle: Bundle) -> Bundle:
    """Delete the author field's label from the candidates.

    Paper: "Delete the explicit 'Author:' / 'Auteur:' label tokens from candidates (and, if
    present, queries). Purpose: test reliance on structural cues (field labels) versus content;
    checks if models latch onto boilerplate markers."

    The label is the candidate field name ``"Author: "`` / ``"Auteur : "``, not the query's "by" /
    "de": queries carry no label, so they are unchanged. ``Research paper: "Y". Author: X.``
    becomes ``Research paper: "Y". X.``
    """
    return replace(bundle, label="").tagged("remove_label")


def author_position_shift(bundle: Bundle) -> Bundle:
    """Put the candidates' author segment first.

    Paper: "Reorder the candidate template so the author segment appears first (e.g., 'Author:
    X. Research paper: 'Y'.'). Purpose: test layout/proximity effects -- whether similarity
    depends on where the author appears, not just the author string itself."

    Candidates only; ``Research paper: "Y". Author: X.`` becomes ``Author: X. Research paper:
    "Y".``
    """
    return replace(bundle, author_first=True).tagged("author_position_shift")


# ----------------------------------------------------------------------------- orthography


def _map_strings(bundle: Bundle, query_side: Callable[[str], str], cand_side: Callable[[str], str]):
    """Apply one function to every query-side piece and one to every candidate-side piece."""
    return replace(
        bundle,
        topic=query_side(bundle.topic),
        query_template=query_side(bundle.query_template),
        query_name=query_side(bundle.query_name),
        titles=tuple(cand_side(t) for t in bundle.titles),  # type: ignore[arg-type]
        work_template=cand_side(bundle.work_template),
        label=cand_side(bundle.label),
        candidate_names=tuple(cand_side(n) for n in bundle.candidate_names),  # type: ignore[arg-type]
    )


def strip_diacritics(bundle: Bundle) -> Bundle:
    """Remove diacritical marks from every string of the bundle.

    Paper: "Remove diacritical marks from all French strings (names, topics, full texts) via
    Unicode decomposition/recomposition to mirror common normalization pipelines [...]. Purpose:
    assess diacritic invariance typical of search normalization and whether accent marks
    contribute to identity/topic matching."

    Implemented with :func:`ragnb.studies.diagnostics.names.strip_marks` (NFD, drop combining marks,
    NFC) on names, topic, titles, templates and label, in either language (English templates
    have no marks; names may). Letters that do not decompose (``Ł``) are kept. Idempotent.
    """
    return _map_strings(bundle, strip_marks, strip_marks).tagged("strip_diacritics")


def initials(name: str) -> str:
    """``"Alice Dupont"`` -> ``"A. Dupont"``; hyphenated given names ``"J.-P."``; particles and
    the family name kept (``"Ewald R. de Wit"`` -> ``"E. R. de Wit"``).

    Examples
    --------
    >>> initials("Jean-Pierre Pierre de la Fontaine")
    'J.-P. P. de la Fontaine'
    """
    given, family = _family_split(name)
    if not given:
        return name
    inits = ["-".join(part[0] + "." for part in g.split("-") if part) for g in given]
    return " ".join([*inits, *family])


def initials_form(bundle: Bundle) -> Bundle:
    """Convert every name to initials style in queries and candidates.

    Paper: "Convert author to initials style (e.g., 'Alice Dupont' -> 'A. Dupont') consistently
    in queries and candidates. Purpose: examine sensitivity to name abbreviation (family name +
    initial vs. full first name)."

    Implemented with :func:`initials` on the query's and every candidate's name.
    """
    return bundle.with_names(
        initials(bundle.query_name), [initials(n) for n in bundle.candidate_names]
    ).tagged("initials_form")


def inverted_name(name: str) -> str:
    """``"Alice Dupont"`` -> ``"Dupont, Alice"`` (family name with its particles first).

    Examples
    --------
    >>> inverted_name("Guido van Rossum")
    'van Rossum, Guido'
    """
    given, family = _family_split(name)
    if not given:
        return name
    return f"{' '.join(family)}, {' '.join(given)}"


def name_order_inversion(bundle: Bundle) -> Bundle:
    """Write the candidates' names "Last, First".

    Paper: "In candidates only, invert author order to 'Last, First' (e.g., 'Alice Dupont' ->
    'Dupont, Alice'). Purpose: check format/order invariance in entity matching."

    Implemented with :func:`inverted_name` on the five candidates' names; the query keeps
    "First Last".
    """
    return bundle.with_names(
        candidate_names=[inverted_name(n) for n in bundle.candidate_names]
    ).tagged("name_order_inversion")


CASINGS = ("upper", "lower", "title")


def perturbed_name(name: str, casing: str) -> str:
    """Curly apostrophes straightened, hyphens to spaces, then ``str.upper``/``lower``/``title``.

    Examples
    --------
    >>> perturbed_name("Zac Hatfield-Dodds", "upper")
    'ZAC HATFIELD DODDS'
    """
    text = name.replace("’", "'").replace("‘", "'")
    text = re.sub(r"[-‐‑]", " ", text)
    return getattr(text, casing)()


def case_punct_perturb(bundle: Bundle) -> Bundle:
    """Change the names' casing and light punctuation.

    Paper: "Apply deterministic casing (upper/lower/title) and light punctuation normalization
    (curly -> straight apostrophes; hyphen -> space) to author strings. Purpose: measure
    robustness to text-normalization noise so the model is not brittle to superficial variants."

    One casing per bundle, chosen from ``upper``, ``lower``, ``title`` by the SHA-256 of the
    bundle id, applied with :func:`perturbed_name` to the query's and every candidate's name (so
    the query and C1 still agree). A title-cased bundle of already title-cased names without
    hyphens is unchanged; ``n_changed`` in the table counts this.
    """
    casing = CASINGS[int(_digest(bundle.bundle_id)[:8], 16) % len(CASINGS)]
    return bundle.with_names(
        perturbed_name(bundle.query_name, casing),
        [perturbed_name(n, casing) for n in bundle.candidate_names],
    ).tagged("case_punct_perturb")


NNBSP = "\u202f"
_STRESS_PUNCT = re.compile(r"\s?([:;!?])")


def stress_candidate_text(text: str) -> str:
    """NFD, and a narrow no-break space (U+202F) instead of any space before ``: ; ! ?``."""
    return _STRESS_PUNCT.sub(NNBSP + r"\1", unicodedata.normalize("NFD", text))


def unicode_normalization_stress(bundle: Bundle) -> Bundle:
    """Query in NFC, candidates in NFD with narrow no-break spaces before punctuation.

    Paper: "Normalize queries to NFC; normalize candidates to NFD (Unicode Consortium, 2025) and
    insert narrow nonbreaking spaces before selected punctuation (e.g., : ; !). Purpose: stress
    Unicode/tokenization resilience so identity and topic signals survive cross-normalization
    and special whitespace."

    Query pieces are NFC-normalised; candidate pieces go through :func:`stress_candidate_text`
    (``: ; ! ?``; a space already there, as in French "Auteur :", is replaced). NFD changes only
    characters with marks; the U+202F changes every candidate (the label's colon). NFC of the
    result equals NFC of the base once the U+202F (and the base's space) before those marks are
    removed.
    """
    nfc = lambda s: unicodedata.normalize("NFC", s)  # noqa: E731
    return _map_strings(bundle, nfc, stress_candidate_text).tagged("unicode_normalization_stress")


ABLATIONS: dict[str, Ablation] = {
    "hard_name_mask": hard_name_mask,
    "gibberish_name": gibberish_name,
    "edit_distance_near_miss": edit_distance_near_miss,
    "remove_label": remove_label,
    "strip_diacritics": strip_diacritics,
    "initials_form": initials_form,
    "name_order_inversion": name_order_inversion,
    "case_punct_perturb": case_punct_perturb,
    "author_position_shift": author_position_shift,
    "unicode_normalization_stress": unicode_normalization_stress,
}
"""The ten ablations in the paper's order (section 4.2), by name."""


# ----------------------------------------------------------------------------- the table


def _resolve_ablations(
    ablations: Sequence[str | Ablation] | Mapping[str, Ablation] | None,
) -> dict[str, Ablation]:
    if ablations is None:
        return dict(ABLATIONS)
    if isinstance(ablations, Mapping):
        out = dict(ablations)
    else:
        out = {}
        for a in ablations:
            if isinstance(a, str):
                if a not in ABLATIONS:
                    raise InputError(f"unknown ablation {a!r}; known: {list(ABLATIONS)}")
                out[a] = ABLATIONS[a]
            elif callable(a):
                out[getattr(a, "__name__", repr(a))] = a
            else:
                raise InputError(f"an ablation must be a name or a callable, got {a!r}")
    if "base" in out:
        raise InputError("'base' is the unablated condition; do not pass it as an ablation")
    return out


def ablated_runs(
    table: pd.DataFrame,
    ablations: Sequence[str | Ablation] | Mapping[str, Ablation] | None,
    runs: int,
    *,
    names: Sequence[str] | None = None,
    **draw: Any,
) -> Iterator[dict[str, list[Bundle]]]:
    """The bundles of each run under every condition: the draws that both
    :func:`ablation_margins` and :func:`ragnb.studies.diagnostics.ablation_retrieval` measure.

    Run ``r`` (``0 .. runs - 1``) draws its bundles with
    :func:`ragnb.studies.diagnostics.names.make_bundles` (fresh impostors, template jitter) and
    applies every ablation to them, each result tagged with the ablation's name
    (:attr:`Bundle.ablation`).

    Parameters
    ----------
    table : DataFrame
        Author table (``author``, ``title``, ``topic``).
    ablations : names, callables or {name: callable}, or None
        None for all ten (:data:`ABLATIONS`).
    runs : int
        Number of runs (not validated here: the callers check it).
    names : sequence of str, optional
        Impostor pool (see :func:`make_bundles`); default the installed author names, read once.
    **draw
        ``language``, ``seed``, ``jitter`` of :func:`make_bundles`.

    Yields
    ------
    dict of str to list of Bundle
        One per run: ``"base"`` (the drawn bundles) first, then each ablation in order, every
        list in the base's row order.

    Raises
    ------
    InputError
        On an unknown ablation, one named ``"base"``, or a bad language or author table (when
        the first run is drawn).
    """
    chosen = _resolve_ablations(ablations)
    if names is None:
        names = installed_author_names()  # read once, not once per run
    for r in range(int(runs)):
        base = make_bundles(table, run=r, names=names, **draw)
        conditions = {"base": base}
        for name, fn in chosen.items():
            conditions[name] = [replace(fn(b), ablation=name) for b in base]
        yield conditions


def changed_bundles(bundles: Sequence[Bundle], base: Sequence[Bundle]) -> list[bool]:
    """Per bundle of one condition: does some text differ from the same row's base bundle?

    Parameters
    ----------
    bundles, base : sequence of Bundle
        The bundles of one ablation and the unablated ones, row by row (same length).

    Returns
    -------
    list of bool
        One per bundle.
    """
    return [b.texts != o.texts for b, o in zip(bundles, base, strict=True)]


@fill_draw_doc
def ablation_margins(
    embedder: Embedder,
    table: pd.DataFrame,
    ablations: Sequence[str | Ablation] | Mapping[str, Ablation] | None = None,
    *,
    runs: int = 15,
    language: str = "en",
    seed: int = 0,
    names: Sequence[str] | None = None,
    jitter: bool = True,
) -> pd.DataFrame:
    """Per-bundle margins of the base condition and each ablation, over ``runs`` runs.

    Run ``r`` draws its bundles with :func:`ragnb.studies.diagnostics.names.make_bundles` (fresh
    impostors, template jitter), applies every ablation to them, and embeds every text of the
    run in one ``embed`` call per kind (queries ``kind="query"``, candidates ``kind="passage"``).

    Parameters
    ----------
    embedder : CachedEmbedder or Embedder
    {{table, ablations, runs, language, seed, names, jitter}}

    Returns
    -------
    DataFrame
        The columns of :func:`ragnb.studies.diagnostics.names.name_margins` (``ablation`` is
        ``"base"`` or the ablation's name), plus ``changed`` (bool: some text of the bundle
        differs from its base bundle) and ``base_delta_name`` (the same bundle's base margin).

    Raises
    ------
    InputError
        On a bad ``runs``, an unknown ablation, or a malformed author table.
    """
    check_positive_int(runs, "runs")
    frames = []
    drawn = ablated_runs(
        table, ablations, runs, names=names, language=language, seed=seed, jitter=jitter
    )
    for conditions in drawn:
        base = conditions["base"]
        flat = [b for bs in conditions.values() for b in bs]
        sims = similarities(embedder, flat)
        frame = margin_frame(flat, sims)
        frame["changed"] = [c for bs in conditions.values() for c in changed_bundles(bs, base)]
        base_margin = frame["delta_name"].to_numpy()[: len(base)]
        frame["base_delta_name"] = np.tile(base_margin, len(conditions))
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


SUMMARY_COLUMNS = (
    "ablation",
    "delta_name",
    "delta_name_sd",
    "delta_topic",
    "delta_both",
    "delta_delta",
    "delta_delta_sd",
    "delta_delta_pct",
    "delta_delta_pct_sd",
    "delta_delta_pct_per_query",
    "name_topic_ratio",
    "n_changed",
    "n_bundles",
    "n_excluded",
    "runs",
)


def _nanmean(x: np.ndarray) -> float:
    return float(np.nanmean(x)) if np.isfinite(x).any() else float("nan")


def summarize_ablations(margins: pd.DataFrame, *, min_base_margin: float = 0.02) -> pd.DataFrame:
    """The Delta-Delta table from :func:`ablation_margins`' per-bundle frame.

    Per run and condition: means of Delta_name, Delta_topic, Delta_both over all bundles;
    Delta-Delta = mean(Delta_name(abl) - Delta_name(base)) over all bundles; Delta-Delta% =
    100 (mean Delta_name(abl) - mean Delta_name(base)) / mean Delta_name(base) over the bundles
    whose base Delta_name >= ``min_base_margin``. Each is then averaged over runs, with the
    between-run standard deviation (``ddof=1``; NaN for one run).

    Parameters
    ----------
    margins : DataFrame
        From :func:`ablation_margins`.
    min_base_margin : float, default 0.02
        The paper's exclusion threshold for percent summaries.

    Returns
    -------
    DataFrame
        One row per condition, base first, columns:

        - ``delta_name``, ``delta_topic``, ``delta_both``: means over runs of the per-run means
          (cosine differences, in [-2, 2]); ``delta_name_sd`` the between-run SD;
        - ``delta_delta``, ``delta_delta_sd``: absolute change of Delta_name vs base (Appendix
          A.2's "absolute deltas");
        - ``delta_delta_pct``, ``delta_delta_pct_sd``: percent change of the mean margin over the
          kept bundles (Tables 4.1/4.2), in percent;
        - ``delta_delta_pct_per_query``: the mean of per-bundle percentages over the kept
          bundles instead (noisier; shown for comparison);
        - ``name_topic_ratio``: mean Delta_name / mean Delta_topic over all runs (Appendix A.3);
        - ``n_changed``: bundles (over all runs) whose texts the ablation changed, of
          ``n_bundles``; ``n_excluded``: bundles left out of the percentages; ``runs``.

    References
    ----------
    Dallaire (arXiv 2511.09545), section 4.3, "Formal definitions" and "Reporting note".
    """
    need = ("ablation", "run", "delta_name", "delta_topic", "delta_both", "base_delta_name")
    require_columns(margins, need, "the margins frame")
    frame = margins.copy()
    frame["dd"] = frame["delta_name"] - frame["base_delta_name"]
    kept = frame["base_delta_name"] >= float(min_base_margin)
    frame["kept"] = kept
    with np.errstate(divide="ignore", invalid="ignore"):
        frame["pct_q"] = np.where(kept, 100.0 * frame["dd"] / frame["base_delta_name"], np.nan)
    rows = []
    for name, g in frame.groupby("ablation", sort=False):
        per_run = []
        for _, gr in g.groupby("run", sort=True):
            k = gr[gr["kept"]]
            base_mean = k["base_delta_name"].mean() if len(k) else np.nan
            pct = 100.0 * (k["delta_name"].mean() - base_mean) / base_mean if len(k) else np.nan
            per_run.append(
                (
                    gr["delta_name"].mean(),
                    gr["dd"].mean(),
                    pct,
                    k["pct_q"].mean() if len(k) else np.nan,
                )
            )
        arr = np.asarray(per_run, dtype=np.float64)
        sd = arr.std(axis=0, ddof=1) if len(arr) > 1 else np.full(arr.shape[1], np.nan)
        rows.append(
            {
                "ablation": name,
                "delta_name": arr[:, 0].mean(),
                "delta_name_sd": sd[0],
                "delta_topic": g.groupby("run")["delta_topic"].mean().mean(),
                "delta_both": g.groupby("run")["delta_both"].mean().mean(),
                "delta_delta": arr[:, 1].mean(),
                "delta_delta_sd": sd[1],
                "delta_delta_pct": _nanmean(arr[:, 2]),
                "delta_delta_pct_sd": sd[2],
                "delta_delta_pct_per_query": _nanmean(arr[:, 3]),
                "name_topic_ratio": g["delta_name"].mean() / g["delta_topic"].mean(),
                "n_changed": int(g["changed"].sum()) if "changed" in g else -1,
                "n_bundles": len(g),
                "n_excluded": int((~g["kept"]).sum()),
                "runs": int(g["run"].nunique()),
            }
        )
    out = pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))
    order = ["base"] + [a for a in out["ablation"] if a != "base"]
    return out.set_index("ablation").loc[order].reset_index()


def ablation_table(
    embedder: Embedder,
    table: pd.DataFrame,
    ablations: Sequence[str | Ablation] | Mapping[str, Ablation] | None = None,
    runs: int = 15,
    language: str = "en",
    seed: int = 0,
    *,
    names: Sequence[str] | None = None,
    jitter: bool = True,
    min_base_margin: float = 0.02,
) -> pd.DataFrame:
    """Delta_name under each ablation vs base, shaped like Dallaire's Tables 4.1/4.2.

    :func:`ablation_margins` then :func:`summarize_ablations`; see both for the parameters and
    the columns (call those two to keep the per-bundle frame). ``attrs`` records the language
    and the model.

    Examples
    --------
    >>> from ragnb.embed import make_embedder  # doctest: +SKIP
    >>> from ragnb.studies.diagnostics import default_author_table  # doctest: +SKIP
    >>> ablation_table(make_embedder(), default_author_table(), runs=15)  # doctest: +SKIP
    """
    margins = ablation_margins(
        embedder,
        table,
        ablations,
        runs=runs,
        language=language,
        seed=seed,
        names=names,
        jitter=jitter,
    )
    out = summarize_ablations(margins, min_base_margin=min_base_margin)
    out.attrs["language"] = language
    out.attrs["model"] = str(getattr(embedder, "model_id", type(embedder).__name__))
    return out
