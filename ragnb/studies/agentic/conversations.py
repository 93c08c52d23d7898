"""Questions for the agent from a BEIR dataset: single questions, or conversations of 2 to 4
turns with per-turn qrels in the TREC CAsT layout.

:func:`sample_questions` draws judged queries of a dataset as they are. :func:`build_conversations`
chains them into conversations whose later turns only make sense after the earlier ones, as the
turns of TREC CAsT and iKAT do:

``open`` (turn 1)
    A topic's query as the dataset has it; its qrels are the topic's.
``drill``
    A follow-up on the current topic about one of its relevant passages, named by the last part
    of its title and nothing else: ``"What does dumps do there?"`` (``json.dumps`` on the
    ``json`` topic; ``pickle.dumps`` exists too, so the turn needs the conversation). That
    passage is graded 2, the topic's other relevant passages 1, its judged non-relevant ones 0.
``switch``
    A move to a related topic (``"How does it compare with this one: <its query>"``); its
    qrels are that topic's. Topic B is related to topic A when B's relevant passages are among
    A's judged non-relevant ones (how the shipped sample dataset draws its negatives).

Query ids follow CAsT: ``<conversation>_<turn>``, conversations numbered from 1, turns from 1.
Everything is drawn from one seeded generator: a seed gives the same conversations.

References
----------
.. [1] Dalton, Xiong, Callan, "CAsT 2019: The Conversational Assistance Track Overview", TREC
   2019: topics of about ten turns, turn ids ``<topic>_<turn>``, graded qrels per turn.
.. [2] Aliannejadi et al., "TREC iKAT 2023: The Interactive Knowledge Assistance Track
   Overview", TREC 2023: per-turn qrels in the same layout.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ragnb.core.validation import check_int_at_least, check_positive_int
from ragnb.errors import InputError
from ragnb.studies.agentic.agent import Question

if TYPE_CHECKING:
    from ragnb.io.files import BeirDataset

__all__ = [
    "DRILL_TEMPLATES",
    "SWITCH_TEMPLATE",
    "TURN_KINDS",
    "Questions",
    "build_conversations",
    "related_topics",
    "sample_questions",
    "turn_ids",
]

#: The kinds of turn, in the order they are described.
TURN_KINDS = ("open", "drill", "switch")
#: How a ``drill`` turn asks about a passage of the current topic (``{name}``: the last part of
#: its title).
DRILL_TEMPLATES = (
    "What does {name} do there?",
    "And {name}, what is it for?",
    "How do I use its {name}?",
)
#: How a ``switch`` turn moves to a related topic (``{text}``: that topic's query).
SWITCH_TEMPLATE = "How does it compare with this one: {text}"


@dataclass(frozen=True, eq=False)
class Questions:
    """Questions for the agent and their qrels.

    Attributes
    ----------
    questions : tuple of Question
        In the order asked (a conversation's turns in order).
    qrels : DataFrame
        ``query_id``, ``doc_id``, ``relevance`` (int64) of every question.
    kinds : tuple of str
        Per question: ``"question"`` for a question on its own, else its kind of turn
        (:data:`TURN_KINDS`).
    topics : tuple of str
        Per question, the dataset query whose judgements its qrels come from.
    """

    questions: tuple[Question, ...]
    qrels: pd.DataFrame
    kinds: tuple[str, ...]
    topics: tuple[str, ...]

    def frame(self) -> pd.DataFrame:
        """One row per question.

        Returns
        -------
        DataFrame
            ``query_id``, ``conversation_id``, ``turn``, ``kind``, ``topic``, ``text``,
            ``context`` (list of the earlier turns' texts).
        """
        return pd.DataFrame(
            {
                "query_id": [q.query_id for q in self.questions],
                "conversation_id": [q.conversation_id for q in self.questions],
                "turn": [q.turn for q in self.questions],
                "kind": list(self.kinds),
                "topic": list(self.topics),
                "text": [q.text for q in self.questions],
                "context": [list(q.context) for q in self.questions],
            }
        )

    def records(self) -> list[dict[str, object]]:
        """BEIR query records (``_id``, ``text``) with ``conversation_id``, ``turn``,
        ``context``, ``kind`` and ``topic`` (what ``<stem>.queries.jsonl`` holds)."""
        return [
            {
                "_id": q.query_id,
                "text": q.text,
                "conversation_id": q.conversation_id,
                "turn": q.turn,
                "context": list(q.context),
                "kind": kind,
                "topic": topic,
            }
            for q, kind, topic in zip(self.questions, self.kinds, self.topics, strict=True)
        ]


def sample_questions(dataset: BeirDataset, n: int, *, seed: int = 0) -> Questions:
    """``n`` judged queries of ``dataset`` drawn without replacement, with their qrels.

    Parameters
    ----------
    dataset : BeirDataset
    n : int >= 1
        At most the number of judged queries.
    seed : int, default 0

    Returns
    -------
    Questions
        Ids and texts as the dataset has them, kind ``"question"``.

    Raises
    ------
    InputError
        ``n`` below 1 or above the judged queries.
    """
    n = check_positive_int(n, "questions")
    judged = dataset.judged_queries
    if n > len(judged):
        raise InputError(f"asked for {n} questions; the dataset has {len(judged)} judged queries")
    rows = judged.iloc[np.random.default_rng(seed).permutation(len(judged))[:n]]
    pairs = zip(rows["query_id"], rows["text"], strict=True)
    questions = tuple(Question(str(q), str(t)) for q, t in pairs)
    ids = {q.query_id for q in questions}
    qrels = dataset.qrels[dataset.qrels["query_id"].isin(ids)].reset_index(drop=True)
    qrels = qrels[["query_id", "doc_id", "relevance"]].astype({"relevance": np.int64})
    return Questions(questions, qrels, ("question",) * n, tuple(q.query_id for q in questions))


def related_topics(qrels: pd.DataFrame) -> dict[str, list[str]]:
    """Topic -> the topics whose relevant documents it judged non-relevant, most shared first.

    Parameters
    ----------
    qrels : DataFrame
        ``query_id``, ``doc_id``, ``relevance``.

    Returns
    -------
    dict of str to list of str
        Only topics with at least one related topic; ties in the number of shared documents
        broken by topic id.

    Examples
    --------
    >>> q = pd.DataFrame({"query_id": ["a", "a", "b", "b"], "doc_id": ["a1", "b1", "b1", "a1"],
    ...                   "relevance": [1, 0, 1, 0]})
    >>> related_topics(q)
    {'a': ['b'], 'b': ['a']}
    """
    relevant = qrels[qrels["relevance"] > 0]
    negative = qrels[qrels["relevance"] <= 0]
    owners: dict[str, set[str]] = {}
    for qid, doc in zip(
        relevant["query_id"].astype(str), relevant["doc_id"].astype(str), strict=True
    ):
        owners.setdefault(doc, set()).add(qid)
    shared: dict[str, dict[str, int]] = {}
    for qid, doc in zip(
        negative["query_id"].astype(str), negative["doc_id"].astype(str), strict=True
    ):
        for other in owners.get(doc, ()):
            if other != qid:
                counts = shared.setdefault(qid, {})
                counts[other] = counts.get(other, 0) + 1
    return {
        qid: sorted(counts, key=lambda o: (-counts[o], o)) for qid, counts in sorted(shared.items())
    }


@dataclass
class _Topics:
    """What conversations are built from: each topic's text, graded documents and relations."""

    texts: dict[str, str]
    relevant: dict[str, list[str]]
    qrels: dict[str, list[tuple[str, int]]]
    related: dict[str, list[str]]
    titles: dict[str, str]


def _topics(dataset: BeirDataset) -> _Topics:
    qrels = dataset.qrels
    by_topic: dict[str, list[tuple[str, int]]] = {}
    for qid, doc, rel in zip(qrels["query_id"], qrels["doc_id"], qrels["relevance"], strict=True):
        by_topic.setdefault(str(qid), []).append((str(doc), int(rel)))
    corpus, queries = dataset.corpus, dataset.queries
    titles = dict(
        zip(corpus["doc_id"].astype(str), corpus["title"].fillna("").astype(str), strict=True)
    )
    return _Topics(
        texts=dict(zip(queries["query_id"].astype(str), queries["text"].astype(str), strict=True)),
        relevant={t: sorted(d for d, r in docs if r > 0) for t, docs in by_topic.items()},
        qrels=by_topic,
        related=related_topics(qrels),
        titles=titles,
    )


def _short_name(title: str, doc_id: str) -> str:
    """The last dotted part of a passage's title (``json.dumps`` -> ``dumps``)."""
    return (title or doc_id).rstrip(".").rsplit(".", 1)[-1]


def _turns(
    topics: _Topics, start: str, n_turns: int, rng: np.random.Generator
) -> list[tuple[str, str, str, list[tuple[str, int]]]]:
    """``(kind, topic, text, qrels)`` of one conversation's turns."""
    turns = [("open", start, topics.texts[start], list(topics.qrels[start]))]
    current, visited, drilled = start, {start}, set()
    while len(turns) < n_turns:
        can_drill = [d for d in topics.relevant.get(current, []) if d not in drilled]
        can_switch = [t for t in topics.related.get(current, []) if t not in visited]
        choices = (["drill"] if can_drill else []) + (["switch"] if can_switch else [])
        if not choices:
            break
        if choices[int(rng.integers(len(choices)))] == "drill":
            doc = can_drill[int(rng.integers(len(can_drill)))]
            drilled.add(doc)
            name = _short_name(topics.titles.get(doc, ""), doc)
            text = DRILL_TEMPLATES[int(rng.integers(len(DRILL_TEMPLATES)))].format(name=name)
            graded = [(d, 2 if d == doc else r) for d, r in topics.qrels[current]]
            turns.append(("drill", current, text, graded))
        else:
            current = can_switch[0]
            visited.add(current)
            text = SWITCH_TEMPLATE.format(text=topics.texts[current])
            turns.append(("switch", current, text, list(topics.qrels[current])))
    return turns


def build_conversations(
    dataset: BeirDataset,
    n: int,
    *,
    seed: int = 0,
    min_turns: int = 2,
    max_turns: int = 4,
) -> Questions:
    """``n`` conversations of ``min_turns`` to ``max_turns`` turns built from ``dataset``.

    Parameters
    ----------
    dataset : BeirDataset
        Its qrels must judge some topics' relevant documents non-relevant for others (see
        :func:`related_topics`), as the shipped sample dataset's do.
    n : int >= 1
        Conversations, each opening on a different topic.
    seed : int, default 0
        Seed of the opening topics, the turn counts, the kinds of turn and the passages asked
        about.
    min_turns, max_turns : int, default 2 and 4
        Turns per conversation (drawn uniformly); a conversation stops early only when its
        topic has nothing left to ask.

    Returns
    -------
    Questions
        Ids ``<conversation>_<turn>`` (CAsT), ``conversation_id`` ``"1"``, ``"2"``, ...; each
        turn's ``context`` holds the earlier turns' texts.

    Raises
    ------
    InputError
        Bad counts, or fewer than ``n`` topics that can open a conversation.
    """
    n = check_positive_int(n, "conversations")
    min_turns = check_int_at_least(min_turns, "min_turns", 1)
    max_turns = check_int_at_least(max_turns, "max_turns", min_turns)
    topics = _topics(dataset)
    starts = sorted(
        t for t in topics.related if t in topics.texts and len(topics.relevant.get(t, [])) >= 2
    )
    if len(starts) < n:
        raise InputError(
            f"asked for {n} conversations; {len(starts)} topics can open one (a topic needs two "
            "relevant documents and a related topic: one whose relevant documents it judged 0)"
        )
    rng = np.random.default_rng(seed)
    opening = [starts[i] for i in rng.permutation(len(starts))[:n]]
    questions: list[Question] = []
    kinds: list[str] = []
    turn_topics: list[str] = []
    rows: list[tuple[str, str, int]] = []
    for c, start in enumerate(opening, start=1):
        n_turns = int(rng.integers(min_turns, max_turns + 1))
        context: list[str] = []
        for t, (kind, topic, text, graded) in enumerate(_turns(topics, start, n_turns, rng), 1):
            qid = f"{c}_{t}"
            questions.append(Question(qid, text, str(c), t, tuple(context)))
            kinds.append(kind)
            turn_topics.append(topic)
            rows.extend((qid, d, r) for d, r in graded)
            context.append(text)
    qrels = pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"])
    qrels = qrels.astype({"query_id": object, "doc_id": object, "relevance": np.int64})
    return Questions(tuple(questions), qrels, tuple(kinds), tuple(turn_topics))


def turn_ids(questions: Sequence[Question]) -> list[tuple[str, int]]:
    """``(conversation_id, turn)`` read back from CAsT ids ``<conversation>_<turn>``.

    Raises
    ------
    InputError
        An id that is not ``<conversation>_<turn>`` with a turn number from 1.

    Examples
    --------
    >>> turn_ids([Question("3_2", "x")])
    [('3', 2)]
    """
    out = []
    for q in questions:
        conversation, sep, turn = q.query_id.rpartition("_")
        if not sep or not conversation or not turn.isdigit() or int(turn) < 1:
            raise InputError(f"query id {q.query_id!r} is not <conversation>_<turn>")
        out.append((conversation, int(turn)))
    return out
