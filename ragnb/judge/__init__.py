"""Relevance judges behind one interface: an LLM through the ``openai`` client, and offline ones.

A :class:`Judge` has two verbs, each with a batch form that takes and returns a DataFrame:

- ``grade(query, passages)`` / ``grade_many(items)``: a grade per passage on the judge's scale;
- ``rank(query, passages)`` / ``rank_many(items)``: a permutation of a small batch, best first.

Every item gets a result row, valid or not, with the raw answer beside it, the reason it is
invalid, the attempts, the usage tokens and whether it came from the cache.

Judges
------
:class:`OpenAIJudge`
    Any OpenAI-compatible chat endpoint (``base_url``) through a :class:`ragnb.llm.ChatClient`;
    editable prompt templates (:mod:`ragnb.llm.prompts`), strict parsing with one reminder,
    bounded concurrency, retries honouring ``Retry-After``, the project cache, a cost ledger
    (:mod:`ragnb.llm.ledger`).
:class:`QrelsJudge`, :class:`NoisyJudge`
    Offline: existing labels (:mod:`ragnb.judge.offline`); the simulated judge, labels or
    latent utilities seen through noise (:mod:`ragnb.judge.simulated`).
:class:`EnsembleJudge`, :class:`SelfConsistentJudge`
    Several judges, or several samples of one judge (:mod:`ragnb.judge.consistency`), combined
    by a vote; :func:`self_agreement` measures how far the samples agree.

Checking a judge
----------------
Every check of a judge lives here; a study gives it its pairs and labels.

- :func:`bias_audit` (slopes of grades and errors against passage length and query-term
  overlap) and :func:`position_audit` (listwise answers in reversed and shuffled orders), in
  :mod:`ragnb.judge.bias`;
- :func:`calibrate`: the judge against human labels (confusion matrix, kappas, alphas with
  bootstrap intervals, bias per grade, systems ranked under both), :mod:`ragnb.judge.calibration`
  (the statistics on arrays: :mod:`ragnb.judge.agreement`);
- :func:`self_agreement` and :func:`consistency_table` (a judge against itself,
  :mod:`ragnb.judge.consistency`), :func:`ensemble_agreement` (the members of an ensemble against
  human labels and each other, :mod:`ragnb.judge.ensemble`);
- :class:`JudgeDrift` and :func:`drift_gates`: two judges against the same human labels, and the
  kappa gate (:mod:`ragnb.judge.drift`);
- the degenerate-judge checks (one grade for nearly every pair, no variation within queries, no
  association with the pooled rank, invalid answers), :mod:`ragnb.judge.degenerate`;
- :func:`check_nuggets`: nuggets that carry no content (empty, numbered placeholders, copies of
  the question), :mod:`ragnb.judge.nugget_checks`.

Examples
--------
>>> from ragnb.judge import QrelsJudge
>>> judge = QrelsJudge({"q1": {"d1": 2, "d2": 0}})
>>> [r.grade for r in judge.grade("query", ["text 1", "text 2"], query_id="q1",
...                                doc_ids=["d1", "d2"])]
[2, 0]
>>> judge.rank("query", ["text 2", "text 1"], query_id="q1", doc_ids=["d2", "d1"]).order
('d1', 'd2')
"""

from ragnb.judge.base import (
    GRADE_COLUMNS,
    RANK_COLUMNS,
    GradeRequest,
    GradeResult,
    Judge,
    RankRequest,
    RankResult,
)
from ragnb.judge.bias import PositionAudit, bias_audit, passage_features, position_audit
from ragnb.judge.calibration import Calibration, calibrate
from ragnb.judge.consistency import SelfConsistentJudge, consistency_table, self_agreement
from ragnb.judge.drift import JudgeDrift, drift_gates
from ragnb.judge.ensemble import (
    EnsembleAgreement,
    EnsembleGrades,
    EnsembleJudge,
    combine_grades,
    ensemble_agreement,
)
from ragnb.judge.llm import DEFAULT_JUDGE_MODEL, OpenAIJudge
from ragnb.judge.nugget_checks import check_nuggets
from ragnb.judge.offline import QrelsJudge
from ragnb.judge.simulated import NoisyJudge

__all__ = [
    "Calibration",
    "DEFAULT_JUDGE_MODEL",
    "GRADE_COLUMNS",
    "RANK_COLUMNS",
    "EnsembleAgreement",
    "EnsembleGrades",
    "EnsembleJudge",
    "GradeRequest",
    "GradeResult",
    "Judge",
    "JudgeDrift",
    "NoisyJudge",
    "OpenAIJudge",
    "PositionAudit",
    "QrelsJudge",
    "RankRequest",
    "RankResult",
    "SelfConsistentJudge",
    "bias_audit",
    "calibrate",
    "check_nuggets",
    "combine_grades",
    "consistency_table",
    "drift_gates",
    "ensemble_agreement",
    "passage_features",
    "position_audit",
    "self_agreement",
]
