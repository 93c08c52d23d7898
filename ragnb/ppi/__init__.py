"""Prediction-powered inference: a few human labels corrected by many judge labels.

ARES (Saad-Falcon et al., NAACL 2024) estimates a RAG system's quality from a few hundred human
labels and an LLM judge's labels on everything else with prediction-powered inference (PPI,
Angelopoulos et al., Science 2023). The judge's mean over all units is corrected by the mean
judge error ("rectifier") measured on the human-labelled units; PPI++ (Angelopoulos, Duchi and
Zrnic 2023) scales the judge's part by a tuned ``lambda`` so that a useless judge costs almost
nothing. This package estimates means that way, for retrieval measures of several systems.

- :mod:`ragnb.ppi.means`: the estimator (its equations, the sampling designs: simple random,
  weighted, stratified) and :class:`PPIEstimate`, :func:`ppi_mean`, :func:`classical_mean`,
  :func:`judge_mean`.
- :mod:`ragnb.ppi.systems`: retrieval measures as units, per query or per (query, document)
  pair: :func:`ppi_system_estimates`, :func:`pair_contributions`, :data:`LINEAR_FAMILIES`.
- :mod:`ragnb.ppi.simulation`: the noise model of a simulated judge (:func:`confusion_grades`,
  drawn by :class:`ragnb.judge.NoisyJudge` with ``noise="confusion"``) and the coverage of the
  intervals when most labels are hidden (:func:`coverage_simulation`).

The references (Angelopoulos et al. 2023, PPI++, ARES, Cochran 1977, ``ppi_py``) are listed
once, in :mod:`ragnb.ppi.means`.
"""

from ragnb.ppi.means import PPIEstimate, classical_mean, judge_mean, ppi_mean
from ragnb.ppi.simulation import DEFAULT_CONFUSION as DEFAULT_CONFUSION
from ragnb.ppi.simulation import confusion_grades, coverage_simulation
from ragnb.ppi.systems import (
    LINEAR_FAMILIES,
    pair_contributions,
    ppi_system_estimates,
)

__all__ = [
    "LINEAR_FAMILIES",
    "PPIEstimate",
    "classical_mean",
    "confusion_grades",
    "coverage_simulation",
    "judge_mean",
    "pair_contributions",
    "ppi_mean",
    "ppi_system_estimates",
]
