"""Notebook 02's parameters (:class:`GoldenSetConfig`) and the names the golden-set pipeline shares:
its pool systems and judges, its stages, the files each stage writes, the modules whose source
is part of each stage's hash and the ledger stages of its LLM calls.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ragnb.core.provenance import has_credentials
from ragnb.core.validation import (
    check_among,
    check_choice,
    check_number_in,
    check_positive_ints,
)
from ragnb.embed import STUDY_MODEL
from ragnb.errors import InputError
from ragnb.judge.llm import DEFAULT_JUDGE_MODEL
from ragnb.report.params import SAMPLE_DATASET, NotebookParams
from ragnb.rewrite import REWRITE_STAGE

__all__ = [
    "COMMAND_SIZES",
    "command_sizes",
    "CHECKS",
    "FILE_LIST",
    "FILES",
    "FORMAT",
    "INCREMENTAL_STAGE",
    "JUDGES",
    "LEDGER_STAGES",
    "POOL_RETRIEVERS",
    "STAGES",
    "STAGE_CODE",
    "GoldenSetConfig",
]

POOL_RETRIEVERS = ("bm25", "bm25-plain", "dense", "hybrid")
JUDGES = ("noisy", "qrels", "openai", "local")
#: The judge checks run after the golden set is built (each calls the judge again), by the name
#: ``checks`` gives them, and how a console or report names them.
CHECKS = {
    "consistency": "self-consistency",
    "audit": "bias audit",
    "drift": "judge drift",
    "nuggets": "nuggets",
}
#: The words of ``checks`` besides the names of :data:`CHECKS`.
CHECK_WORDS = ("auto", "all", "none")

#: The pool and refinement sizes ``ragnb golden`` takes when none is given: small with the
#: ``local`` stand-in judge (notebook 02's defaults: its grades mean little, and each call takes
#: seconds on two cores), larger with a judge one can trust.
COMMAND_SIZES = {
    "local": {"depth": 5, "top_n": 3, "refine_max_iterations": 1},
    "other": {"depth": 10, "top_n": 5, "refine_max_iterations": 5},
}


def command_sizes(judge: str) -> dict[str, int]:
    """The sizes ``ragnb golden`` takes for ``judge`` when the options leave them out.

    Parameters
    ----------
    judge : str
        One of :data:`JUDGES`.

    Returns
    -------
    dict of str to int
        ``depth``, ``top_n`` and ``refine_max_iterations`` (:data:`COMMAND_SIZES`).

    Examples
    --------
    >>> command_sizes("local")["depth"], command_sizes("openai")["depth"]
    (5, 10)
    """
    return dict(COMMAND_SIZES["local" if judge == "local" else "other"])


#: Stage id -> (title, frames it writes, stages it reads).
STAGES: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "s1": ("S1 queries", ("queries",), ()),
    "s2": ("S2 pools", ("pools",), ("s1",)),
    "s3": ("S3 merge (RRF)", ("candidates",), ("s2",)),
    "s4": ("S4 grades", ("grades",), ("s3",)),
    "s5": ("S5 prune", ("pool",), ("s4",)),
    "s6": ("S6 refine", ("order", "history", "summary"), ("s5",)),
}
#: Stage id -> {frame name: file stem under ``stages/``}.
FILES: dict[str, dict[str, str]] = {
    "s1": {"queries": "s1_queries"},
    "s2": {"pools": "s2_pools"},
    "s3": {"candidates": "s3_candidates"},
    "s4": {"grades": "s4_grades"},
    "s5": {"pool": "s5_pool"},
    "s6": {"order": "s6_order", "history": "s6_history", "summary": "s6_summary"},
}
_JUDGE_CODE = (
    "ragnb.judge.base",
    "ragnb.judge.offline",
    "ragnb.judge.llm",
    "ragnb.llm.calls",
    "ragnb.llm.sender",
    "ragnb.llm.client",
    "ragnb.llm.prompts",
    "ragnb.llm.transport",
)
#: The modules that compute every stage: the stage functions and the pipeline that calls them.
_GOLDEN_CODE = ("ragnb.studies.golden.stages", "ragnb.studies.golden.pipeline")
#: The modules whose source is part of each stage's input hash (a code change reruns the stage).
STAGE_CODE: dict[str, tuple[str, ...]] = {
    "s1": (*_GOLDEN_CODE, "ragnb.rewrite.llm"),
    "s2": (
        *_GOLDEN_CODE,
        "ragnb.retrievers.retrieve",
        "ragnb.embed.base",
        "ragnb.embed.cached",
        "ragnb.embed.sentence_transformers",
        "ragnb.embed.openai",
        "ragnb.embed.offline",
    ),
    "s3": (*_GOLDEN_CODE, "ragnb.retrievers.retrieve"),
    "s4": (*_GOLDEN_CODE, *_JUDGE_CODE),
    "s5": _GOLDEN_CODE,
    "s6": (
        *_GOLDEN_CODE,
        "ragnb.studies.golden.refine",
        "ragnb.studies.golden.plackett_luce",
        *_JUDGE_CODE,
    ),
}
#: The ledger stage of each stage's LLM calls.
LEDGER_STAGES = {"s1": REWRITE_STAGE, "s4": "s4_grade", "s6": "s6_rank"}
INCREMENTAL_STAGE = "incremental"
FORMAT = "ragnb-golden-set/1"
#: What a run folder holds, as the manifest lists it.
FILE_LIST = [
    "manifest.json",
    "golden.qrels",
    "golden.qrels.README (which judge made golden.qrels, when, and the degenerate-judge checks)",
    "judgements.csv",
    "refined.trec",
    "refined_top.csv",
    "pool_provenance.csv",
    "judged_at_k.csv",
    "runs/<system>.trec",
    "stages/s<n>.done.json and stages/s<n>_*.parquet",
    "increments/<system>.parquet",
    "ledger.jsonl (LLM judges)",
]

# ----------------------------------------------------------------------------- configuration


@dataclass
class GoldenSetConfig(NotebookParams):
    """Parameters of notebook 02 (``notebooks/02_golden_set.ipynb``), field for field.

    The defaults build a small golden set with the ``local`` judge (2 queries, pools of depth 5,
    one listwise call per query) so that the report renders in minutes on two CPU cores; a
    real golden set wants ``max_queries=0``, ``depth=30``, ``min_pool=30``, ``top_n=20``,
    ``refine_max_iterations=60`` and a judge one can trust.

    ``dataset`` and ``cache_dir`` are :class:`~ragnb.report.params.NotebookParams`' own.

    Attributes
    ----------
    split : str
        Qrels split whose queries are used (and whose labels offline judges read and
        calibration compares with). A dataset without ``qrels/<split>.tsv`` (corpus and queries
        alone) works with an LLM judge: every query of ``queries.jsonl`` is used.
    queries : str
        A query file overriding the dataset's queries (relative to the project root): ``.txt``
        (one query a line), ``.csv`` (``query_id,text`` or ``text``) or ``.jsonl`` (BEIR);
        queries without an id get ``q`` + 12 hex digits of the SHA-256 of their text
        (:func:`ragnb.io.readers.read_query_file`). Empty: the dataset's judged queries (all its
        queries when it has no qrels).
    traces : str
        A trace file as the query source (relative to the project root): OpenInference
        retriever spans as OTLP JSON lines or Phoenix's span export (``.jsonl`` or
        ``.parquet``; :func:`ragnb.io.traces.read_traces`). Its distinct queries, most asked
        first, replace the dataset's (a query the dataset holds keeps its id and labels); each
        retriever in it joins the pool as the system ``traces-<name>``; the report says how
        many queries came from traces and how often each was asked. Write an example with
        ``ragnb traces example``. Empty: no traces. Not with ``queries``.
    max_queries : int
        Use the first ``max_queries`` queries (0: all); from traces, the most asked.
    retrievers : list of str
        Pool systems (S2): ``"bm25"`` (Lucene BM25, English stemming and stop words),
        ``"bm25-plain"`` (BM25 without stemming or stop words: a second lexical system),
        ``"dense"`` (``embedder``), ``"hybrid"`` (RRF of BM25 and dense).
    embedder : str
        Embedding model of ``dense`` and ``hybrid`` (default :data:`ragnb.embed.STUDY_MODEL`).
    depth : int
        Documents each pool system contributes per query (S2).
    rrf_k : int
        Constant of reciprocal rank fusion (S3).
    rewrite : bool
        Rewrite queries with the LLM (S1; only with an LLM judge, ``"openai"`` or ``"local"``).
    judge : str
        ``"noisy"`` (:class:`~ragnb.judge.NoisyJudge`: the dataset's labels plus Gaussian noise of
        ``judge_sd``), ``"qrels"`` (:class:`~ragnb.judge.QrelsJudge`: the labels themselves) or
        ``"openai"`` (:class:`~ragnb.judge.OpenAIJudge`; the key comes from ``$OPENAI_API_KEY``)
        or ``"local"``: SmolLM2-135M-Instruct (Q4_1 GGUF served as float32, a 135M-parameter local
        stand-in, not a judge to trust) served on this machine by llama.cpp
        (:class:`~ragnb.llm.server.LocalLLMServer`, started once per pipeline, needs
        ``pip install "ragnb[local-llm]"``), judging through :class:`~ragnb.judge.OpenAIJudge`
        with constrained output and token log-probabilities (``expected_grade``); ``model``
        and ``base_url`` are not used, ``prompt`` is.
    model : str
        The LLM of the ``openai`` judge.
    prompt : str
        Grading prompt of the ``openai`` judge (a shipped name or a YAML path).
    base_url : str
        OpenAI-compatible server root (empty: ``$OPENAI_BASE_URL`` or OpenAI). Must not hold
        credentials.
    rpm : float
        Requests per minute the ``openai`` judge sends at most to its endpoint (0: no budget of
        its own), one token bucket per endpoint shared by every stage
        (:func:`ragnb.llm.transport.rate_limiter`); a 429 slows it down and drops no item. The
        ledger records the seconds each request waited (``wait_s``).
    tpm : float
        Prompt tokens per minute the ``openai`` judge sends at most (0: no budget of its own),
        each request charged its counted prompt tokens.
    judge_sd : float
        Noise of the ``noisy`` judge, in grade units.
    seed : int
        Seed of the noisy judge, the refinement and the simulation.
    min_pool : int
        Minimum pool size per query after pruning (S5).
    keep_grade : int
        Grades kept whatever the pool size (S5); -1: above the middle of the judge's scale.
    top_n : int
        Length of the refined top list (S6).
    refine_batch : int
        Passages per listwise judge call (S6; the paper's m, 5).
    refine_max_iterations : int
        Judge calls per query at most (S6; also the per-query bound of the cost estimate).
    budget_usd : float
        US dollars the run may spend (S1 rewrite, S4 and the S6 upper bound, priced before any
        call).
    max_failed_share : float
        Share in [0, 1] of S4 judgements that may fail (no answer after every retry) before the
        run stops ahead of S5 with :class:`~ragnb.errors.JudgeFailures` (0: any failure stops
        it). A stage with failures is never marked done: rerunning re-sends only the failed
        judgements, the others come from the cache.
    grade_map : str
        Dataset labels onto the judge's scale (``"auto"``, ``"none"``, a name of
        :data:`ragnb.measures.GRADE_MAPS` or a mapping such as ``"{2: 5, 1: 4, 0: 1}"``): what
        offline judges read and what calibration compares with.
    cutoffs : list of int
        Cutoffs K of Judged@K.
    new_systems : list of str
        Systems judged incrementally after the golden set is built: only their unjudged top
        ``incremental_k`` (names as ``retrievers``).
    incremental_k : int
        Depth of incremental judging.
    calibrate : bool
        Compare the judge with human labels: the ``human_labels`` file, else the dataset's
        labels standing in for people.
    calibration_measure : str
        Measure whose system ranking is compared under human and judge labels.
    human_labels : str
        A TREC qrels file of human labels on the judge's scale (relative to the project root), e.g.
        written by the labelling widget (:class:`~ragnb.studies.golden.labelling.LabelStore`); its
        ``<file>.sample.jsonl``, when present, gives the inclusion probabilities of the sample the
        labels were drawn by (:func:`~ragnb.studies.golden.labelling.calibration_sample`). Grades
        off the judge's scale are mapped by ``grade_map`` (binary 0/1 labels onto a 1-5 judge by the
        ``binary`` map). Empty: the dataset's labels, if it has any.
    ppi_labels : int
        Without a ``human_labels`` file: the size of the calibration sample of judged pairs
        whose dataset labels stand in for a person's in the prediction-powered estimates (0:
        no such estimates).
    ppi_measures : list of str
        Measures estimated per system by PPI (:func:`ragnb.ppi.ppi_system_estimates`, per
        pair): ``P@K`` counts grades from ``keep_grade`` as relevant, ``nDCG@K`` is
        normalised by the judge's ideal DCG (a fixed normaliser, linear in the labels); a
        measure that is not a per-query mean of per-pair labels (``RA-nWG@K``: its rarity
        weights depend on every label) is listed with the reason.
    ppi_target_width : float
        The total width of a 95% PPI interval (in the measure's units, e.g. 0.1 for nDCG@10
        known to +-0.05) for which the PPI table says how many more human labels each system
        and measure needs (``labels for width``). 0: not shown.
    checks : str
        The judge checks run after the golden set is built, each calling the judge again
        (:data:`CHECKS`): ``consistency`` (``consistency_samples`` answers per S4 pair),
        ``audit`` (bias slopes and the listwise position test), ``drift`` (re-grading under
        ``drift_prompt``), ``nuggets`` (``nugget_max`` nuggets per query, NuggetRecall@K).
        ``"auto"``: all of them, except with the ``local`` judge, a 135M-parameter stand-in whose
        numbers in them mean nothing: then none (the report and the console say so, and that
        ``"all"`` runs them); ``"all"``, ``"none"``, or names separated by commas
        (``"consistency,nuggets"``). A check also stays off when its own setting turns it off
        (no samples, no audit, no ``drift_prompt``, no nuggets).
    consistency_samples : int
        Self-consistency: answers per S4 pair, each at ``consistency_temperature`` and its own
        cache entry, combined by majority (:class:`~ragnb.judge.SelfConsistentJudge`); the
        samples' agreement with each other is shown beside their agreement with the human
        labels. 0: no self-consistency check (otherwise 2 or more).
    consistency_temperature : float
        Sampling temperature of the self-consistency samples of an LLM judge (> 0).
    judge_audit : bool
        Audit the judge's grades for bias: slopes against passage length and query-term overlap
        (of the grade, and of judge - human), and the listwise judge's position test on one
        batch per query in reversed and shuffled orders (:mod:`ragnb.judge.bias`).
    drift_prompt : str
        Judge drift: the golden set's LLM judge re-grades the human-labelled sample (and every
        judged pair when there are PPI labels) with this prompt, a shipped name or a YAML file on
        the same grade scale, through its cache; both prompts' kappa, bias per human grade and PPI
        estimates are compared (:func:`~ragnb.studies.golden.judge_checks.drift_for`). Empty: no
        drift check; an offline judge has no prompt and skips it.
    drift_kappa_min : float
        The drift gate's minimum Cohen's kappa of the candidate against the human labels, in
        [-1, 1] (0.4: Landis and Koch's "moderate" agreement); the candidate must also stay
        above the lower end of the reference judge's interval.
    nugget_max : int
        Nugget evaluation of retrieved contexts: the golden set's LLM creates up to this many
        nuggets (atomic facts, vital or okay) per query from the refined top and assigns them to the
        pool systems' top ``nugget_k``, for NuggetRecall@K (AutoNuggetizer, Pradeep et al. 2024;
        :mod:`ragnb.studies.golden.nugget_stage`). 0: no nuggets; an offline judge skips them.
    nugget_k : int
        The cutoff K of the nugget assignment and of NuggetRecall@K.
    export_dir : str
        The run folder (stages, markers, qrels, manifest); empty: nothing written and no stage
        reused.
    simulate : bool
        Run the refinement-vs-one-shot simulation (:mod:`.simulation`) on the golden grades.
    sim_queries : int
        Queries simulated (the first ones; 0: all).
    sim_pool_size : int
        Pool size per simulated query.
    sim_noise_levels : list of float
        Noise levels of the simulated listwise judge, in grade units.
    sim_budgets : list of float
        Token budgets, in sliding-window passes.
    sim_replicates : int
        Replicates per query and noise level.
    """

    dataset: str = SAMPLE_DATASET
    split: str = "test"
    queries: str = ""
    traces: str = ""
    max_queries: int = 2
    retrievers: list[str] = field(default_factory=lambda: ["bm25", "dense"])
    embedder: str = STUDY_MODEL
    depth: int = 5
    rrf_k: int = 60
    rewrite: bool = False
    judge: str = "local"
    model: str = DEFAULT_JUDGE_MODEL
    prompt: str = "utility-rubric"
    base_url: str = ""
    rpm: float = 0.0
    tpm: float = 0.0
    judge_sd: float = 1.0
    seed: int = 0
    min_pool: int = 5
    keep_grade: int = -1
    top_n: int = 3
    refine_batch: int = 5
    refine_max_iterations: int = 1
    budget_usd: float = 2.0
    max_failed_share: float = 0.0  # S4 judgements that may fail before the run stops (0: any)
    grade_map: str = "auto"
    cutoffs: list[int] = field(default_factory=lambda: [5, 10])
    new_systems: list[str] = field(default_factory=lambda: ["bm25-plain"])
    incremental_k: int = 5
    calibrate: bool = True
    calibration_measure: str = "nDCG@10"
    human_labels: str = ""
    ppi_labels: int = 12
    ppi_measures: list[str] = field(default_factory=lambda: ["nDCG@10", "P@10", "RA-nWG@10"])
    ppi_target_width: float = 0.1
    checks: str = "auto"
    consistency_samples: int = 3
    consistency_temperature: float = 0.7
    judge_audit: bool = True
    drift_prompt: str = "utility-terse"
    drift_kappa_min: float = 0.4
    nugget_max: int = 5
    nugget_k: int = 3
    cache_dir: str = ""
    export_dir: str = ""
    simulate: bool = True
    sim_queries: int = 20
    sim_pool_size: int = 30
    sim_noise_levels: list[float] = field(default_factory=lambda: [0.5, 1.0, 2.0])
    sim_budgets: list[float] = field(default_factory=lambda: [0.5, 1.0, 2.0, 4.0])
    sim_replicates: int = 1

    def __post_init__(self) -> None:
        self._check_ints_at_least(
            1,
            "depth",
            "min_pool",
            "top_n",
            "refine_max_iterations",
            "incremental_k",
            "sim_replicates",
            "nugget_k",
        )
        self._check_ints_at_least(
            0,
            "rrf_k",
            "max_queries",
            "sim_queries",
            "ppi_labels",
            "consistency_samples",
            "nugget_max",
        )
        self._check_ints_at_least(2, "refine_batch", "sim_pool_size")
        check_among(self.retrievers, "retrievers", POOL_RETRIEVERS)
        check_among(self.new_systems, "new_systems", POOL_RETRIEVERS, allow_empty=True)
        if len(set(self.retrievers)) != len(self.retrievers):
            raise InputError(f"retrievers repeat a name: {self.retrievers}", column="retrievers")
        check_choice(self.judge, "judge", JUDGES)
        self.checks_on(local=False)  # an unknown name is an error now, not after the build
        if self.traces and self.queries:
            raise InputError(
                "give either traces or queries as the query source, not both", column="traces"
            )
        if self.consistency_samples == 1:
            raise InputError(
                "consistency_samples must be 0 (off) or 2 or more: one sample cannot agree with "
                "another",
                column="consistency_samples",
            )
        check_number_in(self.consistency_temperature, "consistency_temperature", 0)
        if self.consistency_temperature == 0:
            raise InputError(
                f"consistency_temperature must be > 0, got {self.consistency_temperature!r}",
                column="consistency_temperature",
            )
        check_number_in(self.drift_kappa_min, "drift_kappa_min", -1.0, 1.0)
        if self.rewrite and self.judge not in ("openai", "local"):
            raise InputError(
                "rewrite=True needs an LLM: set judge='openai' or 'local'", column="rewrite"
            )
        for name in ("judge_sd", "budget_usd", "rpm", "tpm", "ppi_target_width"):
            check_number_in(getattr(self, name), name, 0)
        check_positive_ints(self.cutoffs, "cutoffs")
        from ragnb.measures import parse_measure

        for name in self.ppi_measures:
            try:
                parse_measure(name)
            except (InputError, ValueError) as e:
                raise InputError(f"ppi_measures: {e}", column="ppi_measures") from None
        if self.base_url and has_credentials(self.base_url):
            raise InputError(
                "base_url must not hold credentials (user info, query string or fragment); the "
                "key is read from $OPENAI_API_KEY only",
                column="base_url",
            )

    def checks_on(self, local: bool) -> tuple[str, ...]:
        """The names of :data:`CHECKS` that ``checks`` turns on, in their order, for a judge
        that is (``local=True``) or is not the local stand-in model.

        Raises
        ------
        InputError
            On a name that is neither a check nor one of :data:`CHECK_WORDS`.

        Examples
        --------
        >>> GoldenSetConfig(checks="auto").checks_on(local=True)
        ()
        >>> GoldenSetConfig(checks="nuggets, drift").checks_on(local=True)
        ('drift', 'nuggets')
        """
        words = [w.strip() for w in str(self.checks).split(",") if w.strip()]
        unknown = [w for w in words if w not in CHECKS and w not in CHECK_WORDS]
        if unknown or not words or (len(words) > 1 and set(words) & set(CHECK_WORDS)):
            raise InputError(
                f"checks must be one of {', '.join(CHECK_WORDS)} or names of checks separated "
                f"by commas ({', '.join(CHECKS)}), got {self.checks!r}",
                column="checks",
            )
        if words == ["auto"]:
            return () if local else tuple(CHECKS)
        if words == ["all"]:
            return tuple(CHECKS)
        return tuple(name for name in CHECKS if name in words)
