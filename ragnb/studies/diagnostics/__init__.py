"""Targeted diagnostics of embedders (Dallaire section 4): proper names and conversational noise.

- :mod:`ragnb.studies.diagnostics.names`: five-candidate bundles "Which works by [AUTHOR] on
  [TOPIC]?" and the margins Delta_name, Delta_topic, Delta_both.
- :mod:`ragnb.studies.diagnostics.author_tables`: author tables from real data (``data/pydocs``,
  SciFact under :func:`datasets_root`, ``$RAGNB_DATASETS``).
- :mod:`ragnb.studies.diagnostics.ablations`: the ten ablations of section 4.2 as pure functions
  ``Bundle -> Bundle`` and the Delta-Delta table of section 4.3.
- :mod:`ragnb.studies.diagnostics.study`: all of it over several embedders and languages, shaped
  like the paper's tables (notebook 03).
- :mod:`ragnb.studies.diagnostics.noise`: noise levels 0-4 (EN/FR), the rule-based denoiser, cosine
  drops (Appendix A.4) and the retrieval impact with paired bootstrap CIs and top-K agreement.

Data flows one way: author table -> bundles -> (ablations) -> embeddings -> per-bundle margins ->
summary table; queries -> noisy queries -> cosines or runs -> per-level tables. Every function
returns a tidy DataFrame; nothing here reads or writes files except through :mod:`ragnb.io.files`.

:class:`DiagnosticsConfig` holds the parameters of a diagnostics notebook.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import ragnb.studies.diagnostics.study as study
from ragnb.core.validation import check_among, check_choice
from ragnb.embed import DEFAULT_MODEL, STUDY_MODEL
from ragnb.errors import InputError
from ragnb.judge.llm import DEFAULT_JUDGE_MODEL
from ragnb.report.params import SAMPLE_DATASET, NotebookParams
from ragnb.studies.diagnostics.ablations import (
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
    name_order_inversion,
    near_miss,
    remove_label,
    strip_diacritics,
    summarize_ablations,
    unicode_normalization_stress,
)
from ragnb.studies.diagnostics.author_tables import (
    datasets_root,
    default_author_table,
    scifact_author_table,
)
from ragnb.studies.diagnostics.names import (
    CANDIDATE_IDS,
    Bundle,
    bundles_frame,
    has_diacritics,
    installed_author_names,
    make_bundles,
    name_margins,
    name_pool_summary,
    parse_person_names,
)
from ragnb.studies.diagnostics.noise import (
    LEVELS,
    NoiseImpact,
    add_noise,
    denoise,
    noise_retrieval_impact,
    noise_similarity,
    noise_summary,
    prompt_rewriter,
    recovered_share,
    reference_passages,
    subset_dataset,
)
from ragnb.studies.diagnostics.retrieval_impact import AblationRetrieval, ablation_retrieval
from ragnb.studies.diagnostics.study import *  # noqa: F403 (re-exported: see __all__)

__all__ = [
    "ABLATIONS",
    "CANDIDATE_IDS",
    "LEVELS",
    "Bundle",
    "DiagnosticsConfig",
    "NoiseImpact",
    "ablation_margins",
    "ablation_table",
    "add_noise",
    "author_position_shift",
    "bundles_frame",
    "case_punct_perturb",
    "default_author_table",
    "denoise",
    "edit_distance_near_miss",
    "gibberish_name",
    "hard_name_mask",
    "has_diacritics",
    "initials_form",
    "installed_author_names",
    "levenshtein",
    "make_bundles",
    "name_margins",
    "name_order_inversion",
    "name_pool_summary",
    "near_miss",
    "noise_retrieval_impact",
    "noise_similarity",
    "noise_summary",
    "parse_person_names",
    "prompt_rewriter",
    "recovered_share",
    "reference_passages",
    "remove_label",
    "datasets_root",
    "scifact_author_table",
    "strip_diacritics",
    "subset_dataset",
    "summarize_ablations",
    "unicode_normalization_stress",
]
__all__ += study.__all__
__all__ += ["AblationRetrieval", "ablation_retrieval"]


@dataclass
class DiagnosticsConfig(NotebookParams):
    """Parameters of notebook 03 (its ``parameters`` cell is generated from them); see
    :func:`~ragnb.studies.diagnostics.study.run`. ``cache_dir`` is
    :class:`~ragnb.report.params.NotebookParams`' own.

    Attributes
    ----------
    embedders : list of str
        Names for :func:`ragnb.embed.make_embedder`; empty for every available one
        (:func:`~ragnb.studies.diagnostics.study.available_embedders`).
    exclude : list of str
        Embedders left out (the report lists them and why). Default: the float
        all-MiniLM-L6-v2 (``minilm-l6-int8-onnx`` is the same model quantised, the reports'
        default, faster) and the 4-bit e5, which embeds about 4 short texts per second on 2
        cores.
    table : str
        Author table: ``"default"`` (installed distributions' author names x ``data/pydocs``
        topics), ``"scifact"`` (SciFact titles and claims from ``dataset``) or a CSV path with
        ``author``, ``title``, ``topic``.
    max_bundles : int
        Rows of the author table used (bundles per run); 0 for all.
    languages : list of str
        Template and noise languages, among ``"en"``, ``"fr"``.
    ablations : list of str
        Names from :data:`ABLATIONS`; empty for all ten.
    runs : int
        Runs with fresh impostors (the paper: 15).
    seed : int
        Seed of the impostor draws, jitter, noise phrasing, sampling and bootstrap.
    min_base_margin : float
        Bundles whose base Delta_name is below are left out of Delta-Delta% (the paper: 0.02).
    dataset : str
        BEIR folder of the noise analyses (and of the ``"scifact"`` table); relative paths from
        the project root.
    split : str
        Its qrels split.
    noise_levels : list of int
        Noise levels among 0-4; 0 is the clean query.
    noise_queries : int
        Judged queries (with a relevant passage) of the cosine analysis; 0 for all.
    impact_retrievers : list of str
        Retrievers of the retrieval impact: ``"bm25"`` or embedder names (exact dense search).
    impact_queries : int
        Judged queries of the retrieval impact, a seeded subset (:func:`subset_dataset`); 0 for
        all.
    impact_max_docs : int
        Passages of the retrieval impact's subset, the judged ones kept
        (:func:`subset_dataset`); 0 for the whole corpus.
    k : int
        Cutoff of nDCG, recall, overlap and Kendall's tau in the retrieval impact.
    n_resamples : int
        Bootstrap resamples.
    rewrite : str
        Mitigation: ``"rules"`` (:func:`denoise`), ``"llm"`` (an OpenAI-compatible model through
        the chat client and its cache; key from ``$OPENAI_API_KEY``) or ``"none"``.
    base_url : str
        OpenAI-compatible endpoint of the LLM rewrite; empty for OpenAI's.
    llm_model : str
        Model of the LLM rewrite.
    export_dir : str
        Folder that receives the tables (CSV) and ``provenance.json``
        (:meth:`~ragnb.studies.diagnostics.study.DiagnosticsResult.export`); empty to export
        nothing. Relative paths are taken from the project root.
    """

    embedders: list[str] = field(default_factory=list)
    exclude: list[str] = field(
        default_factory=lambda: [DEFAULT_MODEL, "multilingual-e5-small-4bit"]
    )
    table: str = "default"
    max_bundles: int = 6
    languages: list[str] = field(default_factory=lambda: ["en", "fr"])
    ablations: list[str] = field(default_factory=list)
    runs: int = 15
    seed: int = 0
    min_base_margin: float = 0.02
    dataset: str = SAMPLE_DATASET
    split: str = "test"
    noise_levels: list[int] = field(default_factory=lambda: [0, 1, 2, 3, 4])
    noise_queries: int = 20
    impact_retrievers: list[str] = field(default_factory=lambda: ["bm25", STUDY_MODEL])
    impact_queries: int = 0
    impact_max_docs: int = 0
    k: int = 10
    n_resamples: int = 2000
    rewrite: str = "rules"
    base_url: str = ""
    llm_model: str = DEFAULT_JUDGE_MODEL
    cache_dir: str = ""
    export_dir: str = ""

    def __post_init__(self) -> None:
        check_among(self.languages, "languages", ("en", "fr"))
        unknown = [a for a in self.ablations if a not in ABLATIONS]
        if unknown:
            raise InputError(f"unknown ablation(s) {unknown}; known: {list(ABLATIONS)}")
        self._check_ints_at_least(1, "runs", "k", "n_resamples")
        self._check_ints_at_least(
            0, "max_bundles", "noise_queries", "impact_queries", "impact_max_docs"
        )
        check_among(self.noise_levels, "noise_levels", LEVELS)
        check_choice(self.rewrite, "rewrite", ("rules", "llm", "none"))
        if self.rewrite == "llm" and not self.llm_model:
            raise InputError("rewrite='llm' needs llm_model")
        if not self.impact_retrievers:
            raise InputError("impact_retrievers is empty; give at least 'bm25'")
