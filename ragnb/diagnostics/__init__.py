"""Targeted diagnostics of embedders (Dallaire section 4): proper names and conversational noise.

- :mod:`ragnb.diagnostics.names`: five-candidate bundles "Which works by [AUTHOR] on [TOPIC]?",
  author tables from real data, and the margins Delta_name, Delta_topic, Delta_both.
- :mod:`ragnb.diagnostics.ablations`: the ten ablations of section 4.2 as pure functions
  ``Bundle -> Bundle`` and the Delta-Delta table of section 4.3.
- :mod:`ragnb.diagnostics.noise`: noise levels 0-4 (EN/FR), the rule-based denoiser, cosine drops
  (Appendix A.4) and the retrieval impact with paired bootstrap CIs and top-K agreement.

Data flows one way: author table -> bundles -> (ablations) -> embeddings -> per-bundle margins ->
summary table; queries -> noisy queries -> cosines or runs -> per-level tables. Every function
returns a tidy DataFrame; nothing here reads or writes files except through :mod:`ragnb.io`.

:class:`DiagnosticsConfig` holds the parameters of a diagnostics notebook.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from ragnb.diagnostics.ablations import (
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
from ragnb.diagnostics.names import (
    CANDIDATE_IDS,
    Bundle,
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
from ragnb.diagnostics.noise import (
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
from ragnb.embed import DEFAULT_MODEL
from ragnb.errors import InputError

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
    "scifact_author_table",
    "strip_diacritics",
    "subset_dataset",
    "summarize_ablations",
    "unicode_normalization_stress",
]


@dataclass
class DiagnosticsConfig:
    """Parameters of the diagnostics analyses (a notebook's ``parameters`` cell mirrors them).

    Attributes
    ----------
    model : str
        Embedder: sentence-transformers name or path, or ``openai:<model>``.
    table : str
        Author table: ``"pydocs"`` (:func:`default_author_table`) or ``"scifact"``
        (:func:`scifact_author_table`).
    languages : list of str
        Template and noise languages, among ``"en"``, ``"fr"``.
    ablations : list of str
        Names from :data:`ABLATIONS`; empty for all ten.
    runs : int
        Runs with fresh impostors (the paper: 15).
    seed : int
    min_base_margin : float
        Bundles whose base Delta_name is below are left out of Delta-Delta% (the paper: 0.02).
    noise_levels : list of int
        Among 0-4.
    noise_dataset : str
        BEIR folder for the noise analyses; relative paths from the project root.
    k : int
        Cutoff of nDCG, recall, overlap and Kendall's tau in the retrieval impact.
    n_resamples : int
        Bootstrap resamples.
    cache_dir : str
        Embedding cache folder; empty for the default.
    """

    model: str = DEFAULT_MODEL
    table: str = "pydocs"
    languages: list[str] = field(default_factory=lambda: ["en", "fr"])
    ablations: list[str] = field(default_factory=list)
    runs: int = 15
    seed: int = 0
    min_base_margin: float = 0.02
    noise_levels: list[int] = field(default_factory=lambda: [0, 1, 2, 3, 4])
    noise_dataset: str = "data/pydocs"
    k: int = 10
    n_resamples: int = 10_000
    cache_dir: str = ""

    def __post_init__(self) -> None:
        if self.table not in ("pydocs", "scifact"):
            raise InputError(f"table must be 'pydocs' or 'scifact', got {self.table!r}")
        bad = [x for x in self.languages if x not in ("en", "fr")]
        if bad or not self.languages:
            raise InputError(f"languages must be among ['en', 'fr'], got {self.languages}")
        unknown = [a for a in self.ablations if a not in ABLATIONS]
        if unknown:
            raise InputError(f"unknown ablation(s) {unknown}; known: {list(ABLATIONS)}")
        if int(self.runs) < 1:
            raise InputError(f"runs must be at least 1, got {self.runs}")
        bad_levels = [lv for lv in self.noise_levels if lv not in LEVELS]
        if bad_levels or not self.noise_levels:
            raise InputError(f"noise_levels must be among {list(LEVELS)}, got {self.noise_levels}")

    @classmethod
    def from_params(cls, **params: Any) -> DiagnosticsConfig:
        """Build from notebook parameters; unknown names raise :class:`InputError`."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(params) - names)
        if unknown:
            raise InputError(f"unknown parameter(s) {unknown}; known: {sorted(names)}")
        return cls(**params)
