"""The simulated judge: true labels (or latent utilities) seen through noise.

:class:`NoisyJudge` is the one simulated judge of ragnb. A pair's latent utility is its label
(or a utility given as a float) plus noise; its grade rounds the utility onto the scale, a batch's
order sorts the utilities, optionally as a Plackett-Luce sample (Gumbel-max). Three uses:

- **grading with noise** (``noise="gaussian"``, the default): ``u = label + sd * z``,
  ``z ~ N(0, 1)``; an offline stand-in for an LLM judge in pipelines, ensembles and
  self-consistency checks;
- **a noisy listwise judge** for the refinement simulation (:meth:`NoisyJudge.from_utilities`
  and :meth:`NoisyJudge.rank_items`): the order of latent utilities seen through Gaussian
  (Thurstone case V) or Gumbel (Plackett-Luce) noise, each call charged by a :class:`TokenCost`;
- **a biased labeller** for prediction-powered inference (``noise="confusion"``): each grade
  shifted by a random offset of a Toeplitz confusion
  (:func:`ragnb.ppi.simulation.confusion_grades`, the noise model
  :func:`ragnb.ppi.coverage_simulation` draws too), every labelled pair at once with
  :meth:`NoisyJudge.noisy_qrels`.

Where the randomness comes from (``stream``):

- ``"pair"`` (default): every pair (grade) and every batch (rank) draws from its own generator,
  seeded by (``seed``, query id, doc ids): an answer does not depend on the batch it comes in
  nor on the calls before it;
- ``"calls"``: one generator seeded by ``seed``, advancing with every call: the same batch shown
  twice gets fresh noise (every call is an independent look, as in the refinement simulation).
  A noise term whose scale is 0 draws nothing from it.

References
----------
.. [1] L. L. Thurstone, "A law of comparative judgment", Psychological Review 34, 1927.
.. [2] R. L. Plackett, "The analysis of permutations", Applied Statistics 24(2), 1975;
   R. D. Luce, "Individual Choice Behavior", 1959.
.. [3] E. J. Gumbel, 1954; the Gumbel-max trick: W. Kool, H. van Hoof, M. Welling,
   "Stochastic beams and where to find them", ICML 2019, section 2.
.. [4] Dallaire (arXiv 2511.09545), section 3.4: Plackett-Luce listwise refinement.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import numpy as np
import pandas as pd

from ragnb.errors import InputError
from ragnb.judge.base import GradeRequest, RankRequest, check_sample
from ragnb.judge.offline import LabelJudge
from ragnb.ppi.simulation import check_confusion, confusion_grades

__all__ = [
    "Model",
    "NoisyJudge",
    "SimulatedRanking",
    "TokenCost",
    "estimate_passage_tokens",
]

#: The noise models of :meth:`NoisyJudge.from_utilities`.
Model = Literal["thurstone", "plackett-luce"]
Noise = Literal["gaussian", "confusion"]
Stream = Literal["pair", "calls"]
Seed: TypeAlias = int | np.random.SeedSequence | np.random.Generator | None


# ----------------------------------------------------------------------------- tokens


@dataclass(frozen=True)
class TokenCost:
    """Tokens of one listwise call: ``prompt_tokens + k * (passage_tokens + item_overhead)``.

    Attributes
    ----------
    passage_tokens : float > 0, default 100
        Mean tokens of one passage (title and text).
    prompt_tokens : int >= 0, default 300
        Instructions, query and answer framing, once per call.
    item_overhead : int >= 0, default 10
        Per passage: its identifier in the prompt and its share of the output permutation.

    Examples
    --------
    >>> TokenCost(passage_tokens=80)(20), TokenCost(passage_tokens=80)(5)   # 300 + k * 90
    (2100, 750)
    """

    passage_tokens: float = 100.0
    prompt_tokens: int = 300
    item_overhead: int = 10

    def __post_init__(self) -> None:
        if not (math.isfinite(self.passage_tokens) and self.passage_tokens > 0):
            raise InputError(f"passage_tokens must be > 0, got {self.passage_tokens!r}")
        if self.prompt_tokens < 0 or self.item_overhead < 0:
            raise InputError("prompt_tokens and item_overhead must be >= 0")

    def __call__(self, n_items: int) -> int:
        return math.ceil(self.prompt_tokens + n_items * (self.passage_tokens + self.item_overhead))


def estimate_passage_tokens(corpus: pd.DataFrame, chars_per_token: float = 4.0) -> float:
    """Mean tokens of a passage, by the rule of thumb of ``chars_per_token`` characters a token.

    Parameters
    ----------
    corpus : DataFrame
        Columns ``text`` and optionally ``title`` (:func:`ragnb.io.readers.read_corpus`).
    chars_per_token : float > 0, default 4
        About 4 for English with GPT-style tokenisers.

    Returns
    -------
    float
        Mean of ``len(title + " " + text) / chars_per_token`` (``len(text) / ...`` without a
        title).
    """
    if "text" not in corpus.columns or len(corpus) == 0:
        raise InputError("corpus needs a 'text' column and at least one passage")
    chars = corpus["text"].astype(str).str.len()
    if "title" in corpus.columns:
        title = corpus["title"].fillna("").astype(str).str.len()
        chars = chars + np.where(title > 0, title + 1, 0)
    return float(chars.mean() / chars_per_token)


@dataclass(frozen=True)
class SimulatedRanking:
    """:meth:`NoisyJudge.rank_items`' answer: ``permutation`` (positions, best first) and
    ``tokens`` (what the call was charged)."""

    permutation: list[int]
    tokens: int


# ----------------------------------------------------------------------------- the judge


def _keyed_rng(seed: int, *parts: Any) -> np.random.Generator:
    blob = json.dumps([seed, *parts], ensure_ascii=False).encode("utf-8")
    return np.random.default_rng(int.from_bytes(hashlib.sha256(blob).digest()[:8], "little"))


def _check_scale(name: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float) or not (math.isfinite(v) and v >= 0):
        raise InputError(f"{name} must be a finite number >= 0, got {v!r}")
    return float(v)


def _seed_text(seed: Seed) -> str:
    if isinstance(seed, np.random.SeedSequence):
        return f"{seed.entropy}/{'.'.join(map(str, seed.spawn_key))}"
    return "generator" if isinstance(seed, np.random.Generator) else str(seed)


class NoisyJudge(LabelJudge):
    """A simulated judge: existing labels plus noise on a latent utility.

    The latent utility of a pair is ``u = label + noise``:

    - ``noise="gaussian"``: ``sd * z``, ``z ~ N(0, 1)``;
    - ``noise="confusion"``: an integer offset drawn from ``confusion`` (``{offset:
      probability}``, a Toeplitz confusion matrix: :func:`ragnb.ppi.simulation.confusion_grades`).

    :meth:`grade` rounds ``u`` half up onto the scale: ``clip(floor(u + 0.5), low, high)``.
    :meth:`rank` draws fresh noise for the batch and, with ``gumbel_scale > 0``, a Plackett-Luce
    sample with worths ``exp(u_i / gumbel_scale)`` by the Gumbel-max trick: sort
    ``u_i + gumbel_scale * g_i``, ``g_i ~ Gumbel(0, 1)``, descending (ties in input order).
    With ``stream="pair"`` a pair's grade is drawn from a generator seeded by (``seed``, query id,
    doc id), a batch's order from one seeded by (``seed``, query id, the batch's doc ids in
    order): the same pair always gets the same grade, the same batch the same order.
    :meth:`with_sample` gives a copy whose noise is fresh (another answer of the same judge, for
    self-consistency: :class:`~ragnb.judge.SelfConsistentJudge`).

    Parameters
    ----------
    qrels : DataFrame or dict of dict
    sd : float >= 0, default 1.0
        Standard deviation of the Gaussian noise, in grade units (0: the labels themselves).
    seed : int, default 0
        With ``stream="calls"`` also a ``SeedSequence``, a ``Generator`` or None (fresh entropy).
    scale : (int, int), optional
        Default: (lowest, highest) label.
    gumbel_scale : float >= 0, default 1.0
        Temperature of the Plackett-Luce sampling of :meth:`rank` (0: sort the noisy utilities).
    missing : "invalid" or int, default "invalid"
        As in :class:`~ragnb.judge.QrelsJudge`.
    noise : {"gaussian", "confusion"}, default "gaussian"
    confusion : mapping of int to float, optional
        For ``noise="confusion"``; default :data:`ragnb.ppi.simulation.DEFAULT_CONFUSION`.
    stream : {"pair", "calls"}, default "pair"
        Where the noise comes from (see :mod:`ragnb.judge.simulated`).
    cost : TokenCost, optional
        Tokens charged per :meth:`rank_items` call (default ``TokenCost()``).

    Attributes
    ----------
    calls, tokens_used : int
        :meth:`rank_items` calls answered and tokens charged so far.

    References
    ----------
    .. [1] R. L. Plackett, 1975; R. D. Luce, 1959; the Gumbel-max trick: Kool et al., ICML 2019.
    .. [2] Dallaire (arXiv 2511.09545), section 3.4: Plackett-Luce listwise refinement.

    Examples
    --------
    >>> j = NoisyJudge({"q": {"a": 2, "b": 0}}, sd=0.0)
    >>> [r.grade for r in j.grade("query", ["A", "B"], doc_ids=["a", "b"])]
    [2, 0]
    >>> exact = NoisyJudge({"q": {"a": 0, "b": 2}}, noise="confusion", confusion={0: 1.0})
    >>> exact.noisy_qrels()["relevance"].tolist()
    [0, 2]
    """

    def __init__(
        self,
        qrels: Any,
        *,
        sd: float = 1.0,
        seed: Seed = 0,
        scale: tuple[int, int] | None = None,
        gumbel_scale: float = 1.0,
        missing: str | int = "invalid",
        noise: Noise = "gaussian",
        confusion: Mapping[int, float] | None = None,
        stream: Stream = "pair",
        cost: TokenCost | None = None,
    ) -> None:
        super().__init__(qrels, scale, missing)
        self.sd = _check_scale("sd", sd)
        self.gumbel_scale = _check_scale("gumbel_scale", gumbel_scale)
        if noise not in ("gaussian", "confusion"):
            raise InputError(f"noise must be 'gaussian' or 'confusion', got {noise!r}")
        if stream not in ("pair", "calls"):
            raise InputError(f"stream must be 'pair' or 'calls', got {stream!r}")
        if stream == "pair" and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise InputError(f"seed must be an integer, got {seed!r}")
        self.noise = noise
        self.confusion = dict(check_confusion(confusion)) if noise == "confusion" else None
        self.stream = stream
        self.seed = seed
        self._pair_seed = seed if isinstance(seed, int) else 0
        self.cost = cost if cost is not None else TokenCost()
        self.sample = 0
        self._rng = np.random.default_rng(seed) if stream == "calls" else None
        self._latent: dict[tuple[str, str], float] = dict(self._qrels)
        self.calls = 0
        self.tokens_used = 0
        what = f"sd={self.sd:g}" if noise == "gaussian" else "confusion"
        calls = ",stream=calls" if stream == "calls" else ""
        self.judge_id = f"noisy-judge({what},seed={_seed_text(seed)}{calls})"

    @classmethod
    def from_utilities(
        cls,
        utilities: Mapping[str, float],
        noise_sd: float,
        *,
        model: Model = "thurstone",
        cost: TokenCost | None = None,
        seed: Seed = None,
        query_id: str = "q",
    ) -> NoisyJudge:
        """A simulated listwise judge over latent utilities (the refinement simulation's).

        Every call of :meth:`rank_items` draws fresh noise for each item shown (``stream=
        "calls"``) and answers the argsort of ``u + noise``, highest first.

        Parameters
        ----------
        utilities : mapping of str to float
            Latent utility of every item the judge may be shown (item ids: the simulation
            passes doc ids as passages); the judge's labels are the utilities rounded half up.
        noise_sd : float >= 0
            Standard deviation of the noise, in utility units; 0 is a perfect judge.
        model : {"thurstone", "plackett-luce"}, default "thurstone"
            Gaussian noise (Thurstone case V: ``sd=noise_sd``, no Gumbel sampling), or Gumbel
            noise of the same standard deviation (scale ``noise_sd * sqrt(6) / pi``: a
            Plackett-Luce sample).
        cost : TokenCost, optional
            Tokens charged per call.
        seed : int, SeedSequence, Generator or None
            The noise stream.
        query_id : str, default "q"
            The query the utilities belong to (:meth:`rank_items`' ``query``).

        Returns
        -------
        NoisyJudge

        Examples
        --------
        >>> judge = NoisyJudge.from_utilities({"a": 0.0, "b": 2.0, "c": 1.0}, noise_sd=0.0)
        >>> judge.rank_items("q", ["a", "b", "c"])
        SimulatedRanking(permutation=[1, 2, 0], tokens=630)
        """
        if isinstance(noise_sd, bool) or not (
            isinstance(noise_sd, int | float) and math.isfinite(noise_sd) and noise_sd >= 0
        ):
            raise InputError(f"noise_sd must be a finite number >= 0, got {noise_sd!r}")
        if model not in ("thurstone", "plackett-luce"):
            raise InputError(f"model must be 'thurstone' or 'plackett-luce', got {model!r}")
        labels = {str(d): math.floor(float(u) + 0.5) for d, u in utilities.items()}
        low, high = (min(labels.values()), max(labels.values())) if labels else (0, 1)
        pl = model == "plackett-luce"
        judge = cls(
            {query_id: labels},
            sd=0.0 if pl else noise_sd,
            gumbel_scale=noise_sd * math.sqrt(6.0) / math.pi if pl else 0.0,
            seed=seed,
            scale=(low, high) if low < high else (low, low + 1),
            stream="calls",
            cost=cost,
        )
        judge._latent = {(query_id, str(d)): float(u) for d, u in utilities.items()}
        return judge

    def with_sample(self, sample: int, temperature: float | None = None) -> NoisyJudge:
        """A copy drawing the noise of its ``sample``-th answer (sample 0 draws the judge's usual
        noise). With ``stream="pair"`` the generators are seeded by (``seed``, ``sample``, ...)
        for ``sample > 0``; with ``stream="calls"`` the copy has its own generator, spawned from
        the judge's seed and ``sample``. ``temperature`` is checked and not used: the noise is
        this judge's randomness.

        Raises
        ------
        InputError
            ``sample`` not an integer >= 0, ``temperature`` not a number > 0.
        """
        sample, _ = check_sample(sample, temperature)
        other = copy.copy(self)
        other.sample = sample
        if self.stream == "calls" and sample:
            base = self.seed if isinstance(self.seed, int) else None
            other._rng = np.random.default_rng(np.random.SeedSequence(base, spawn_key=(sample,)))
        return other

    def _draw(self, *parts: Any) -> np.random.Generator:
        if self._rng is not None:
            return self._rng
        seed = self._pair_seed
        if self.sample:
            return _keyed_rng(seed, self.sample, *parts)
        return _keyed_rng(seed, *parts)

    def _latent_of(self, query_id: str, doc_id: str) -> float | None:
        u = self._latent.get((query_id, doc_id))
        if u is None:
            g = self._label(query_id, doc_id)
            return None if g is None else float(g)
        return u

    def _noisy(self, rng: np.random.Generator, u: np.ndarray) -> np.ndarray:
        """``u`` plus this judge's noise (shape of ``u``)."""
        if self.noise == "confusion":
            return confusion_grades(u, self.confusion, rng=rng)
        if self._rng is not None and not self.sd:
            return u
        return u + self.sd * rng.standard_normal(u.size)

    def utility(self, query_id: str, doc_id: str) -> float | None:
        """The latent utility :meth:`grade` rounds (None when unjudged and invalid)."""
        g = self._latent_of(query_id, doc_id)
        if g is None:
            return None
        return float(self._noisy(self._draw("grade", query_id, doc_id), np.array([g]))[0])

    def _round(self, u: float) -> int:
        lo, hi = self.scale or (0, 1)
        return int(min(hi, max(lo, math.floor(u + 0.5))))

    def _grade_one(self, r: GradeRequest, g: int) -> tuple[int, str]:
        u = self.utility(r.query_id, r.doc_id)
        u = float(g) if u is None else u  # never None: the pair has label g
        grade = self._round(u)
        return grade, f"noisy utility {u:.4f} -> {grade}"

    def _keys(self, rng: np.random.Generator, latent: list[float]) -> tuple[np.ndarray, np.ndarray]:
        """The noisy utilities of a batch and the keys it is sorted by."""
        u = self._noisy(rng, np.array(latent, dtype=float))
        if self._rng is not None and not self.gumbel_scale:
            return u, u
        return u, u + self.gumbel_scale * rng.gumbel(size=len(latent))

    def _order(self, r: RankRequest, labels: list[int]) -> tuple[tuple[int, ...], str]:
        latent = [self._latent_of(r.query_id, d) for d in r.doc_ids]
        rng = self._draw("rank", r.query_id, list(r.doc_ids))
        u, keys = self._keys(rng, [float(g) if g is not None else 0.0 for g in latent])
        perm = tuple(int(i) for i in np.argsort(-keys, kind="stable"))
        raw = (
            f"noisy utilities {np.round(u, 4).tolist()}, Gumbel-max keys "
            f"{np.round(keys, 4).tolist()}"
        )
        return perm, raw

    def rank_items(self, query: str, items: Sequence[str]) -> SimulatedRanking:
        """Order ``items`` (doc ids of the query ``query``) by noisy utility, best first.

        The light listwise answer of the refinement simulation
        (:func:`ragnb.studies.golden.refine.refine` and the sliding window take it as their
        ranker): no audit trail, the call charged ``cost(len(items))`` tokens.

        Parameters
        ----------
        query : str
            The query id whose labels or utilities rank the items.
        items : sequence of str

        Returns
        -------
        SimulatedRanking

        Raises
        ------
        InputError
            An item the judge holds no label or utility for.
        """
        latent = []
        for d in items:
            u = self._latent_of(query, d)
            if u is None:
                raise InputError(f"the simulated judge knows no item {d!r}", query_id=query)
            latent.append(u)
        _, keys = self._keys(self._draw("rank", query, list(items)), latent)
        perm = np.lexsort((np.arange(keys.size), -keys))
        tokens = self.cost(len(latent))
        self.calls += 1
        self.tokens_used += tokens
        return SimulatedRanking([int(i) for i in perm], tokens)

    def noisy_qrels(self) -> pd.DataFrame:
        """The judge's grade of every labelled pair, as qrels.

        With ``stream="calls"`` the noise of all pairs is drawn at once, in the labels' order
        (the order of the qrels given), from the judge's generator.

        Returns
        -------
        DataFrame
            ``query_id``, ``doc_id``, ``relevance`` (int64, on the judge's scale), one row per
            labelled pair.
        """
        keys = list(self._qrels)
        if self._rng is None:
            grades = [self._round(self.utility(q, d) or 0.0) for q, d in keys]
        else:
            u = self._noisy(self._rng, np.array([self._latent[k] for k in keys], dtype=float))
            lo, hi = self.scale or (0, 1)
            grades = np.clip(np.floor(u + 0.5), lo, hi).astype(np.int64).tolist()
        return pd.DataFrame(
            {
                "query_id": [q for q, _ in keys],
                "doc_id": [d for _, d in keys],
                "relevance": np.asarray(grades, dtype=np.int64),
            }
        )

    def describe(self) -> dict[str, Any]:
        info = super().describe()
        seed = self.seed if isinstance(self.seed, int) else _seed_text(self.seed)
        info.update({"sd": self.sd, "seed": seed, "gumbel_scale": self.gumbel_scale})
        if self.noise != "gaussian":
            info.update({"noise": self.noise, "confusion": self.confusion})
        if self.stream != "pair":
            info["stream"] = self.stream
        if self.sample:
            info["sample"] = self.sample
        return info
