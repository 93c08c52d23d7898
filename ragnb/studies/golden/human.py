"""Human labels for a golden set: where they come from, on the judge's scale, and what they buy.

A golden set built from queries alone has no labels but the judge's. Calibration
(:func:`ragnb.judge.calibration.calibrate`) and prediction-powered estimates
(:func:`ragnb.ppi.ppi_system_estimates`) need some human labels; this module finds them:

1. a ``human_labels`` file (TREC qrels, e.g. written by the labelling widget's
   :class:`~ragnb.studies.golden.labelling.LabelStore`), with the inclusion probabilities of its
   ``<file>.sample.jsonl`` when the pairs were drawn by
   :func:`~ragnb.studies.golden.labelling.calibration_sample`, or marked there as an audit of the
   refined top (:mod:`ragnb.studies.golden.audit`, ``design`` :data:`AUDIT_DESIGN`);
2. else the dataset's own labels (``qrels/<split>.tsv``): all of them for calibration, and a
   calibration sample of ``ppi_labels`` judged pairs whose labels stand in for a person's for
   the PPI estimates;
3. else nothing, and the report says what it needs (:data:`NO_LABELS`).

Labels are put on the judge's scale (:func:`on_judge_scale`): grades inside it are kept; binary
0/1 labels onto a 1-5 judge go through the ``binary`` map (1 -> 5, 0 -> 1), other scales through
``grade_map``.

How many more labels halve an interval: a CLT interval's width scales as ``1 / sqrt(n)``, so at
the current per-label variances (and PPI++'s ``lam``) about ``3 n`` more labels halve it, a little
fewer with the finite-population correction (:attr:`ragnb.ppi.PPIEstimate.labels_to_halve`).

References
----------
.. [1] A. N. Angelopoulos et al., "Prediction-powered inference", Science 382, 2023.
.. [2] A. N. Angelopoulos, J. C. Duchi and T. Zrnic, "PPI++", arXiv:2311.01453, 2023.
.. [3] J. Saad-Falcon et al., "ARES", NAACL 2024 (a few hundred human labels with PPI).
.. [4] P. Thomas, S. Spielman, N. Craswell and B. Mitra, "Large language models can accurately
   predict searcher preferences", SIGIR 2024 (Cohen's kappa up to about 0.64 against TREC
   assessors for their best prompt).
.. [5] S. Upadhyay et al., "UMBRELA: UMbrela is the (Open-Source Reproduction of the) Bing
   RELevance Assessor", arXiv:2406.06519, 2024 (high system-ranking correlation with human
   qrels at fair per-label agreement).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ragnb.errors import InputError
from ragnb.measures import GRADE_MAPS, map_grades, parse_measure, resolve_grade_map

if TYPE_CHECKING:
    from ragnb.studies.golden.goldenset import GoldenSet

__all__ = [
    "AUDIT_DESIGN",
    "AUDIT_NOTE",
    "NO_LABELS",
    "REFERENCE_POINTS",
    "HumanLabels",
    "draw_sample",
    "halving_markdown",
    "on_judge_scale",
    "ppi_estimates",
    "read_human_labels",
    "sampled_labels",
]

#: What the report says when there is no human label at all.
NO_LABELS = (
    "**No human labels:** the dataset has no qrels for this split and no `human_labels` file "
    "was given, so the judge cannot be calibrated and no interval corrects its measures. To "
    "get them, label a calibration sample in JupyterLab "
    "(`ragnb.studies.golden.labelling_view.label_pairs(<run folder>)` writes "
    "`<run folder>/human.qrels` and its `.sample.jsonl`; 100-200 labels are a start), then run "
    "again with `human_labels` set to that file."
)

#: The ``design`` of a sample table whose pairs are an audit of the refined top
#: (:func:`ragnb.studies.golden.audit.fold_audit`): chosen by rank, with certainty, not at random.
AUDIT_DESIGN = "audit of the refined top"

#: What the report says of audit labels read as ``human_labels``.
AUDIT_NOTE = (
    "the labels audit the refined top (the pairs the refinement ranked highest, each audited "
    "with certainty, the rest of the pool never): calibration compares the judge with them on "
    "its own top only, where relevant pairs abound, so agreement there says little of the "
    "pool; they are no random sample, so no prediction-powered interval rests on them"
)

#: Published agreement of strong LLM judges with people: context for the local model's numbers.
REFERENCE_POINTS = (
    "Published reference points (other models, other data: context, not targets): Thomas et "
    "al. (SIGIR 2024) report Cohen's kappa up to about 0.64 against TREC assessors for their "
    "best GPT-4 prompt; UMBRELA (Upadhyay et al. 2024) reports high system-ranking correlation "
    "with human qrels (Kendall's tau about 0.8-0.9 on TREC DL) at fair per-label agreement."
)


@dataclass(eq=False)
class HumanLabels:
    """Human labels on the judge's scale, where they came from, and how they were drawn.

    Attributes
    ----------
    qrels : DataFrame
        ``query_id``, ``doc_id``, ``relevance`` (int64) on the judge's scale.
    source : str
        In words, for the report (``"the file human.qrels (200 labels)"``, ...).
    sample : DataFrame or None
        The sampler's table (``query_id``, ``doc_id``, ``stratum``, ``inclusion_probability``) when
        the pairs were drawn by :func:`~ragnb.studies.golden.labelling.calibration_sample`; None:
        treated as a simple random sample.
    grade_map : (str, dict) or None
        The map applied to put the labels on the judge's scale.
    notes : list of str
    audit : bool
        The pairs are an audit of the refined top (:mod:`ragnb.studies.golden.audit`), chosen by
        rank, not drawn at random: calibration may compare the judge with them (on its own top
        only), :func:`ppi_estimates` does not take them as its labelled sample.
    """

    qrels: pd.DataFrame
    source: str
    sample: pd.DataFrame | None = None
    grade_map: tuple[str, dict[int, int]] | None = None
    notes: list[str] = field(default_factory=list)
    audit: bool = False

    def __len__(self) -> int:
        return len(self.qrels)


def on_judge_scale(
    labels: pd.DataFrame, scale: tuple[int, int] | None, grade_map: str = "auto"
) -> tuple[pd.DataFrame, tuple[str, dict[int, int]] | None]:
    """``labels`` put on the judge's grade scale, and the map used (None: kept as they are).

    ``grade_map="auto"`` keeps grades that lie on ``scale``; otherwise binary 0/1 labels take the
    ``binary`` map (1 -> 5, 0 -> 1) and 0-3 labels :func:`ragnb.measures.resolve_grade_map`'s
    (``dbpedia-entity``, ``trec-dl``). ``"none"`` keeps them; a name or a mapping is applied.

    Parameters
    ----------
    labels : DataFrame
        ``query_id``, ``doc_id``, ``relevance``.
    scale : (int, int) or None
        The judge's scale (None: labels kept unless a map is named).
    grade_map : str, default "auto"

    Returns
    -------
    labels : DataFrame
    grade_map : (str, dict) or None

    Examples
    --------
    >>> q = pd.DataFrame({"query_id": ["a", "a"], "doc_id": ["x", "y"], "relevance": [1, 0]})
    >>> out, gm = on_judge_scale(q, (1, 5))
    >>> out["relevance"].tolist(), gm[0]
    ([5, 1], 'binary')
    >>> on_judge_scale(q, (0, 1))[1] is None
    True
    """
    grades = {int(g) for g in labels["relevance"].unique()}
    spec = str(grade_map).strip()
    gm: tuple[str, dict[int, int]] | None
    if spec == "auto":
        if scale is None or all(scale[0] <= g <= scale[1] for g in grades):
            return labels, None
        if grades <= {0, 1}:
            gm = ("binary", dict(GRADE_MAPS["binary"]))
        else:
            gm = resolve_grade_map("auto", labels)
    else:
        gm = resolve_grade_map(spec, labels)
    if gm is None:
        return labels, None
    return map_grades(labels, gm[1]), gm


def read_human_labels(
    path: Any, scale: tuple[int, int] | None, grade_map: str = "auto"
) -> HumanLabels:
    """A human-label file (TREC or BEIR qrels) on the judge's scale, with its sample table.

    Parameters
    ----------
    path : str or PathLike
        The labels; ``<path>.sample.jsonl`` beside it (written by
        :class:`~ragnb.studies.golden.labelling.LabelStore`) gives the inclusion probabilities.
    scale : (int, int) or None
    grade_map : str, default "auto"
        See :func:`on_judge_scale`.

    Raises
    ------
    InputError
        A malformed or empty file (named, with the line); a sample table without
        ``inclusion_probability``.
    FileNotFoundError
        When ``path`` does not exist.
    """
    from pathlib import Path

    from ragnb.core.paths import display_path
    from ragnb.io.files import read_records
    from ragnb.io.readers import read_qrels

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"human_labels file {path} not found")
    qrels = read_qrels(path)
    if qrels.empty:
        raise InputError("the human-label file holds no label", path=path)
    mapped, gm = on_judge_scale(qrels, scale, grade_map)
    sample_path = path.with_name(path.name + ".sample.jsonl")
    sample = None
    notes: list[str] = []
    audit = False
    if sample_path.is_file():
        sample = read_records(sample_path).astype({"query_id": str, "doc_id": str})
        if "inclusion_probability" not in sample.columns:
            raise InputError("the sample table lacks inclusion_probability", path=sample_path)
        audit = "design" in sample.columns and bool((sample["design"] == AUDIT_DESIGN).any())
    if audit:
        notes.append(AUDIT_NOTE)
    elif sample is not None:
        notes.append(
            f"the labels were drawn by calibration_sample ({len(sample)} pairs in "
            f"{sample['stratum'].nunique() if 'stratum' in sample else 1} strata): estimates "
            "weigh each label by 1 / its inclusion probability"
        )
    else:
        notes.append("no sample table beside the file: the labels count as a simple random sample")
    if gm is not None:
        notes.append(f"labels mapped onto the judge's scale by the {gm[0]!r} map {gm[1]}")
    source = f"the file `{display_path(path)}` ({len(qrels)} labels)"
    return HumanLabels(mapped, source, sample, gm, notes, audit)


def draw_sample(judged: pd.DataFrame, *, n: int, seed: int) -> pd.DataFrame:
    """:func:`~ragnb.studies.golden.labelling.calibration_sample` of ``n`` judged pairs with the
    finest strata ``n`` allows: judge grade by pool systems with at least 2 pairs each, else at
    least 1, else judge grade alone, else a simple random sample.

    Parameters
    ----------
    judged : DataFrame
        ``query_id``, ``doc_id``, ``grade``, ``systems`` (:attr:`GoldenSet.judgements`).
    n : int >= 1
    seed : int
    """
    from ragnb.studies.golden.labelling import calibration_sample

    for by, least in ((("grade", "system"), 2), (("grade", "system"), 1), (("grade",), 1)):
        try:
            return calibration_sample(judged, n=int(n), seed=seed, by=by, min_per_stratum=least)
        except InputError:
            continue
    return calibration_sample(judged, n=int(n), seed=seed, by=())


def sampled_labels(
    golden: GoldenSet, labels: pd.DataFrame, *, n: int, seed: int, unjudged: int
) -> HumanLabels:
    """A calibration sample of the golden set's judged pairs whose labels are looked up in
    ``labels`` (the dataset's, on the judge's scale), standing in for a person's.

    Parameters
    ----------
    golden : GoldenSet
    labels : DataFrame
        ``query_id``, ``doc_id``, ``relevance`` on the judge's scale.
    n : int >= 2
        Pairs drawn (:func:`~ragnb.studies.golden.labelling.calibration_sample`, stratified by the
        judge's grade and the pool systems that found each pair).
    seed : int
    unjudged : int
        The label of a sampled pair the dataset does not judge (trec_eval's convention: not
        relevant, on the judge's scale).

    Returns
    -------
    HumanLabels
        With the sample table (inclusion probabilities).
    """
    judged = golden.judgements[["query_id", "doc_id", "grade", "systems"]]
    sample = draw_sample(judged, n=n, seed=seed)
    found = labels.astype({"query_id": str, "doc_id": str}).set_index(["query_id", "doc_id"])
    keys = list(zip(sample["query_id"], sample["doc_id"], strict=True))
    rel = found["relevance"].reindex(pd.MultiIndex.from_tuples(keys)).to_numpy()
    missing = int(np.isnan(rel.astype(float)).sum())
    qrels = pd.DataFrame(
        {
            "query_id": sample["query_id"].to_numpy(dtype=object),
            "doc_id": sample["doc_id"].to_numpy(dtype=object),
            "relevance": np.where(np.isnan(rel.astype(float)), unjudged, rel).astype(np.int64),
        }
    )
    notes = [
        f"{len(sample)} of the {len(judged)} judged pairs drawn by calibration_sample (seed "
        f"{seed}, stratified by judge grade and pool systems); their dataset labels stand in "
        f"for a person's ({missing} pairs without a label count as not relevant, grade "
        f"{unjudged})"
    ]
    source = f"the dataset's labels on a calibration sample of {len(sample)} pairs"
    return HumanLabels(qrels, source, sample, None, notes)


def _measure_spec(name: str, keep_grade: int) -> tuple[str, str | None, str]:
    """``(measure to estimate, ndcg_ideal, shown name)`` for a ``ppi_measures`` entry."""
    m = parse_measure(name)
    if m.family == "P" and "rel" not in name:
        spec = f"P(rel={keep_grade})@{m.cutoff}"
        return spec, None, spec
    if m.family == "nDCG":
        return str(m), "judge", f"{m}[judge ideal]"
    return str(m), None, str(m)


def ppi_estimates(
    golden: GoldenSet,
    human: HumanLabels,
    measures: list[str],
    *,
    alpha: float = 0.05,
    target_width: float | None = None,
) -> tuple[pd.DataFrame, list[str]]:
    """Judge-only, human-only and PPI++ estimates of each system's measures from pair labels.

    The population is every (query, document) pair a system ranks in its top K on the golden
    set's queries; the judge labelled them all (S4 and the increments), the humans a sample
    (:func:`ragnb.ppi.ppi_system_estimates` with ``unit="pair"``, ``population="finite"``).
    Systems: the pool systems, their RRF fusion and the new systems. With the sampler's
    inclusion probabilities each label weighs ``1 / pi``: as a stratified sample when the
    sample's strata cover exactly this population (the stratum sizes ``n_h / pi_h`` add up to
    it), else as a weighted (Hajek) domain estimate with the with-replacement variance
    (conservative).

    Parameters
    ----------
    golden : GoldenSet
    human : HumanLabels
    measures : list of str
        See :class:`~ragnb.studies.golden.GoldenSetConfig`'s ``ppi_measures``.
    alpha : float, default 0.05
    target_width : float > 0, optional
        Adds ``labels_for_width``: the further human labels that would narrow each PPI interval
        to this total width (:func:`ragnb.ppi.ppi_system_estimates`).

    Returns
    -------
    table : DataFrame
        :func:`ragnb.ppi.ppi_system_estimates`'s columns, one row per (system, measure).
    notes : list of str
        Measures that cannot be estimated from pair labels, with the reason, and the design.
    """
    from ragnb.ppi import ppi_system_estimates

    if human.audit:
        return pd.DataFrame(), [
            "not estimated: these labels audit the refined top (chosen by rank, not at random), "
            "so they are no sample of the population; fold them into the golden qrels "
            "(ragnb.studies.golden.fold_audit) and label a calibration sample for the intervals"
        ]
    runs: dict[str, pd.DataFrame] = {**golden.runs, "rrf": golden.fused_run, **golden.new_runs}
    keep = golden.build.keep_grade
    parts: list[pd.DataFrame] = []
    notes: list[str] = []
    inclusion = _inclusion(golden, human, runs, measures, keep, notes)
    for name in measures:
        spec, ideal, shown = _measure_spec(name, keep)
        try:
            t = ppi_system_estimates(
                golden.qrels,
                human.qrels,
                runs,
                [spec],
                unit="pair",
                inclusion=inclusion,
                alpha=alpha,
                ndcg_ideal=ideal,  # type: ignore[arg-type]
                target_width=target_width,
            )
        except InputError as e:
            notes.append(f"{name}: not estimated: {e}")
            continue
        parts.append(t.assign(measure=shown))
    if not parts:
        return pd.DataFrame(), notes
    return pd.concat(parts, ignore_index=True), notes


def _inclusion(
    golden: GoldenSet,
    human: HumanLabels,
    runs: dict[str, pd.DataFrame],
    measures: list[str],
    keep: int,
    notes: list[str],
) -> pd.DataFrame | None:
    """The sample table to pass as ``inclusion``: with its strata when they cover the PPI
    population exactly, without them otherwise (a note says which)."""
    if human.sample is None:
        notes.append("no inclusion probabilities: the labels count as a simple random sample")
        return None
    from ragnb.ppi import pair_contributions

    sample = human.sample
    k_specs = []
    for name in measures:
        try:
            spec, ideal, _ = _measure_spec(name, keep)
            k_specs.append((spec, ideal))
        except (InputError, ValueError):
            continue
    implied = float((1.0 / sample["inclusion_probability"].astype(float)).sum())
    population = None
    for spec, ideal in k_specs:
        try:
            pc = pair_contributions(golden.qrels, runs, [spec], ndcg_ideal=ideal)  # type: ignore[arg-type]
        except InputError:
            continue
        population = len(pc[["query_id", "doc_id"]].drop_duplicates())
        break
    cols = ["query_id", "doc_id", "inclusion_probability"]
    lonely = True
    if "stratum" in sample.columns:
        sizes = sample.groupby("stratum")["inclusion_probability"].agg(["size", "first"])
        lonely = bool(((sizes["size"] < 2) & (sizes["first"] < 1)).any())
    if population is not None and abs(implied - population) <= 0.5 and not lonely:
        notes.append(
            f"design: stratified simple random samples ({sample['stratum'].nunique()} strata "
            "of the same population), weights 1 / inclusion probability"
        )
        return sample[[*cols, "stratum"]]
    notes.append(
        f"design: the sample was drawn from {implied:.0f} judged pairs, the estimates' "
        f"population is the {population} pairs the systems rank in their top K: a domain "
        "estimate weighted by 1 / inclusion probability (Hajek), with-replacement variance "
        "(conservative)"
    )
    return sample[cols]


def width_markdown(table: pd.DataFrame, target_width: float) -> str:
    """Markdown: the further human labels each system needs for a PPI interval of
    ``target_width`` on each measure (the table's ``labels_for_width``), worst system first.

    Parameters
    ----------
    table : DataFrame
        :func:`ppi_estimates`' table with ``labels_for_width`` (``system``, ``measure``,
        ``n_labelled``, ``n_total``).
    target_width : float
        The total width of the 95% interval, in the measure's units.
    """
    n = int(table["n_labelled"].max())
    n_pop = int(table["n_total"].max())
    parts = []
    for measure, rows in table.groupby("measure", sort=False):
        need = rows.set_index("system")["labels_for_width"].astype(float)
        worst = need.sort_values(ascending=False)
        cells = ", ".join(
            f"{s} {'unreachable' if not np.isfinite(v) else f'{v:.0f}'}" for s, v in worst.items()
        )
        parts.append(f"- {measure}: {cells}")
    return "\n".join(
        [
            f"**Labels for a PPI interval {target_width:g} wide** (`ppi_target_width`): further "
            f"human labels, beyond the {n} used now and drawn the same way, per system (at most "
            f"{n_pop} pairs can be labelled; 0: already that narrow; unreachable: the judge-only "
            "part of the variance alone is wider). Basis: the per-label variances and PPI++ "
            "weight measured now, which a small sample estimates roughly.",
            *parts,
        ]
    )


def halving_markdown(table: pd.DataFrame) -> str:
    """Markdown: how many more human labels would halve the PPI intervals, and on what basis.

    Estimates whose interval has zero width (every sampled label the same, or every unit
    labelled) are left out of the median and counted apart: their intervals say nothing about
    what more labels would show.
    """
    if table.empty:
        return ""
    n = int(table["n_labelled"].max())
    n_pop = int(table["n_total"].max())
    flat = table["ppi_se"].to_numpy(dtype=float) <= 0
    extra = table.loc[~flat, "labels_to_halve"].to_numpy(dtype=float)
    zero = (
        f" {int(flat.sum())} of the {len(table)} estimates have an interval of zero width: the "
        "labelled pairs all carry the same human grade for them (or every pair is labelled), "
        "so the interval says nothing yet; labels of other pairs are needed first."
        if flat.any()
        else ""
    )
    finite = extra[np.isfinite(extra)]
    if not finite.size:
        what = "no number of further labels halves the other intervals at the current variances"
        return (
            f"**More labels:** with {n} labels, {what if extra.size else 'nothing to halve'}.{zero}"
        )
    med = float(np.median(finite))
    lo, hi = float(finite.min()), float(finite.max())
    return (
        f"**How many more human labels would halve the interval:** about **{med:.0f}** more "
        f"than the {n} used now (median over {finite.size} system-measure estimates; range "
        f"{lo:.0f}-{hi:.0f}). Basis: a CLT interval's width scales as 1/sqrt(n), so halving it "
        f"takes about 4n labels, i.e. 3n = {3 * n} more, at the current per-label variances and "
        f"PPI++ weight; with a finite population of N pairs (here N = {n_pop}), each of which "
        "can be labelled once, it is fewer, 3nN / (N + 3n) for a simple random sample "
        f"(= {3 * n * n_pop / (n_pop + 3 * n):.0f} here). Column `labels to halve` gives it per "
        f"estimate (ragnb.ppi.PPIEstimate.labels_to_halve).{zero}"
    )
