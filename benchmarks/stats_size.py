"""The size of ragnb's tests when systems have several runs (seeds): how often each rejects a
true null hypothesis at level alpha, against the 95% Monte Carlo interval of alpha.

Usage (from the repository root)::

    .venv/bin/python benchmarks/stats_size.py                      # 2000 null experiments each
    .venv/bin/python benchmarks/stats_size.py --experiments 1000 --resamples 499

Null experiments: two systems with the same mean on n queries, R runs (seeds) each,

    y[s, r, q] = 0.5 + query[q] + interaction[s, q] + seed[s, r] + noise[s, r, q]

all normal with mean 0: query sd 0.2, system x query interaction sd 0.1, noise sd 0.05, and the
seed sd of each setting (a seed moves every query of its run alike). Each experiment draws
fresh values; each test then rejects or not at ``--alpha``:

* ``one-level``: the paired randomization test on the run-averaged values (what a comparison
  of run averages does; :func:`ragnb.stats.randomization_test`, Monte Carlo);
* ``two-level``: :func:`ragnb.stats.two_level_randomization_test` (queries and runs), what
  ``ragnb.stats.compare`` runs when a system has several runs;
* ``anova two-way``: the quasi-F of :func:`ragnb.stats.anova` (design ``"two-way"``, runs
  nested in systems, Satterthwaite's degrees of freedom); with two systems it is also Tukey's
  HSD on that design.

A last setting checks the family-wise error of Tukey's HSD over 4 systems (one run each, 6
pairs): the share of null experiments in which any pair is rejected, for the parametric and
the randomised HSD (:func:`ragnb.stats.tukey_hsd`, :func:`ragnb.stats.randomized_tukey_hsd`).

The interval: the 2.5% and 97.5% quantiles of Binomial(N, alpha) / N, N experiments; a test of
exact size alpha falls outside it 5% of the time. Prints one row per setting and test, then the
machine's load average.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from scipy import stats as sps

from ragnb.stats import (
    anova,
    randomization_test,
    randomized_tukey_hsd,
    tukey_hsd,
    two_level_randomization_test,
)

#: (name, queries, runs, seed sd): the seeds' share of a difference's variance grows down the list
SETTINGS = [
    ("queries dominate (seed sd 0.005)", 50, 3, 0.005),
    ("balanced (seed sd 0.02)", 50, 3, 0.02),
    ("five seeds (seed sd 0.02)", 50, 5, 0.02),
    ("seeds dominate (seed sd 0.03, 200 queries)", 200, 3, 0.03),
]


def _experiment(rng: np.random.Generator, n: int, r: int, seed_sd: float) -> np.ndarray:
    """One null experiment: shape (2 systems, r runs, n queries)."""
    query = rng.normal(0, 0.2, n)
    out = np.empty((2, r, n))
    for s in range(2):
        inter = rng.normal(0, 0.1, n)
        seeds = rng.normal(0, seed_sd, (r, 1))
        out[s] = 0.5 + query + inter + seeds + rng.normal(0, 0.05, (r, n))
    return out


def _rejections(
    n: int, r: int, seed_sd: float, experiments: int, resamples: int, alpha: float, seed: int
) -> dict[str, int]:
    rng = np.random.default_rng(seed)
    counts = {"one-level": 0, "two-level": 0, "anova two-way": 0}
    for i in range(experiments):
        y = _experiment(rng, n, r, seed_sd)
        a, b = y[0].mean(axis=0), y[1].mean(axis=0)
        one = randomization_test(
            dict(enumerate(a)), dict(enumerate(b)), n_resamples=resamples, exact=False, seed=i
        )
        two = two_level_randomization_test(y[0], y[1], n_resamples=resamples, seed=i)
        quasi = anova({"a": y[0], "b": y[1]}, design="two-way")
        counts["one-level"] += one.p_value <= alpha
        counts["two-level"] += two.p_value <= alpha
        counts["anova two-way"] += quasi.p_value <= alpha
    return counts


def _familywise(experiments: int, resamples: int, alpha: float, seed: int) -> dict[str, int]:
    """4 systems, 50 queries, one run: experiments in which any of the 6 pairs is rejected."""
    rng = np.random.default_rng(seed)
    counts = {"tukey": 0, "randomized tukey": 0}
    for i in range(experiments):
        y = rng.normal(0, 0.2, (50, 1)) + rng.normal(0, 0.1, (50, 4))
        counts["tukey"] += bool((tukey_hsd(y)["p_value"] <= alpha).any())
        rand = randomized_tukey_hsd(y, n_resamples=resamples, seed=i)
        counts["randomized tukey"] += bool((rand["p_value"] <= alpha).any())
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--experiments", type=int, default=2000, help="null experiments (2000)")
    parser.add_argument("--resamples", type=int, default=999, help="B of each test (999)")
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    n_exp, alpha = args.experiments, args.alpha
    low, high = (sps.binom.ppf(q, n_exp, alpha) / n_exp for q in (0.025, 0.975))
    print(f"alpha {alpha}, {n_exp} null experiments, B = {args.resamples}")
    print(
        f"95% Monte Carlo interval of the rejection rate of an exact test: [{low:.4f}, {high:.4f}]"
    )
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    print()
    print(f"{'setting':46s} {'test':18s} {'rate':>7s}  inside")
    start = time.perf_counter()
    runs = [
        (name, _rejections(n, r, sd, n_exp, args.resamples, alpha, args.seed))
        for name, n, r, sd in SETTINGS
    ]
    runs.append(
        (
            "4 systems, any of 6 pairs (family-wise)",
            _familywise(n_exp, args.resamples, alpha, args.seed),
        )
    )
    for name, counts in runs:
        for test, count in counts.items():
            rate = count / n_exp
            inside = "yes" if low <= rate <= high else "no"
            print(f"{name:46s} {test:18s} {rate:7.4f}  {inside}")
    print()
    print(f"{time.perf_counter() - start:.0f} s; load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
