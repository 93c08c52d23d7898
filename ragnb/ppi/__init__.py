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
- :mod:`ragnb.ppi.simulation`: a simulated judge (:func:`simulate_judge`) and the coverage of
  the intervals when most labels are hidden (:func:`coverage_simulation`).

References
----------
.. [1] A. N. Angelopoulos, S. Bates, C. Fannjiang, M. I. Jordan and T. Zrnic,
   "Prediction-powered inference", Science 382(6671), 2023, pp. 669-674; mean estimation,
   the mean-estimation example (``lam = 1``).
.. [2] A. N. Angelopoulos, J. C. Duchi and T. Zrnic, "PPI++: Efficient prediction-powered
   inference", arXiv:2311.01453, 2023; the tuned estimator and the optimal ``lam`` for the
   mean, Section 2.
.. [3] J. Saad-Falcon, O. Khattab, C. Potts and M. Zaharia, "ARES: An automated evaluation
   framework for retrieval-augmented generation systems", NAACL 2024, Section 3.3.
.. [4] W. G. Cochran, *Sampling Techniques*, 3rd ed., Wiley, 1977, chapters 5 and 9A
   (stratified sampling, Horvitz-Thompson and ratio estimators).
.. [5] ``ppi_py`` (github.com/aangelopoulos/ppi_py), ``ppi_mean_ci`` and ``_calc_lam_glm``.
"""

from ragnb.ppi.means import PPIEstimate, classical_mean, judge_mean, ppi_mean
from ragnb.ppi.simulation import DEFAULT_CONFUSION as DEFAULT_CONFUSION
from ragnb.ppi.simulation import coverage_simulation, simulate_judge
from ragnb.ppi.systems import (
    LINEAR_FAMILIES,
    pair_contributions,
    ppi_system_estimates,
)

__all__ = [
    "LINEAR_FAMILIES",
    "PPIEstimate",
    "classical_mean",
    "coverage_simulation",
    "judge_mean",
    "pair_contributions",
    "ppi_mean",
    "ppi_system_estimates",
    "simulate_judge",
]
