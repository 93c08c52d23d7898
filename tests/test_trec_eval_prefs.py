"""Preference judgements: ``ragnb trec-eval -R prefs`` / ``-R qrels_prefs`` against trec_eval
10.0's own test lines and outputs, the ``prefs_*`` measures by hand and against their definition,
their reader, and the measures in ``evaluate``."""

from __future__ import annotations

import gzip
import itertools
import random
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ragnb.cli.main import main as cli_main
from ragnb.errors import InputError
from ragnb.evaluation.evaluate import evaluate
from ragnb.evaluation.trec_eval import parse_options, run_trec_eval
from ragnb.frames.schema import PREFS_COLUMNS
from ragnb.io.prefs import read_prefs, read_qrels_prefs
from ragnb.io.readers import read_qrels, read_run
from ragnb.measures import Measure, parse_measure, prepare
from ragnb.measures.prefs import PREFS_MEASURES, prepare_prefs
from ragnb.measures.trec_names import (
    MEASURE_SETS,
    expand_measure_names,
    print_kind,
    trec_eval_printed,
)

DATA = Path(__file__).parent / "data" / "trec_eval"
#: trec_eval's quicktest lines of the preference formats (its Makefile) and expected output.
QUICKTEST = [
    ("-m all_prefs -q -R prefs prefs.test prefs.results.test", "out.test.prefs"),
    ("-m all_prefs -q -R prefs prefs.comment.test prefs.results.test", "out.test.prefs"),
    ("-m all_prefs -q -R qrels_prefs qrels.test results.test", "out.test.qrels_prefs"),
]
#: trec_eval 10.0's output on seeded random judgements (tests/data/trec_eval/make_oracle_outputs.py)
RANDOM = [
    ("-q -m all_prefs -R prefs prefs.random prefs.random.run", "out.prefs.random.q"),
    ("-q -c -M6 -m all_prefs -R prefs prefs.random prefs.random.trunc", "out.prefs.random.qcM"),
    (
        "-q -m all_prefs -R qrels_prefs qrels_prefs.random prefs.random.run",
        "out.qrels_prefs.random.q",
    ),
]


def _argv(line: str) -> list[str]:
    return [str(DATA / a) if (DATA / a).exists() else a for a in line.split()]


@pytest.mark.parametrize(("line", "expected"), QUICKTEST, ids=[line for line, _ in QUICKTEST])
def test_quicktest_line_gives_trec_evals_output_byte_for_byte(line, expected, capsys):
    assert cli_main(["trec-eval", *_argv(line)]) == 0
    assert capsys.readouterr().out == (DATA / expected).read_text()


@pytest.mark.parametrize(("line", "expected"), RANDOM, ids=[e for _, e in RANDOM])
def test_random_judgements_give_trec_evals_output_byte_for_byte(line, expected):
    """Groups of one and of several subgroups, ties, ``-c`` (a query missing), ``-M``."""
    out, _ = run_trec_eval(_argv(line))
    assert len(out.splitlines()) == 128
    assert out == (DATA / expected).read_text()


# ----------------------------------------------------------------------------- by hand


def _frame(text: str) -> pd.DataFrame:
    """``qid jg jsg docno rel_level`` lines as a preference judgements frame."""
    frame = pd.DataFrame([line.split() for line in text.splitlines()], columns=PREFS_COLUMNS)
    frame["rel_level"] = frame["rel_level"].astype(float)
    return frame


def _values(text: str, ranked: list[str]) -> dict[str, float]:
    run = {"q": {d: float(len(ranked) - i) for i, d in enumerate(ranked)}}
    arrays = prepare_prefs(_frame(text), run)
    return dict(zip(PREFS_MEASURES, arrays.prefs_values[0].tolist(), strict=True))


def test_one_group_by_hand():
    """a (2) > b (1) > c (0), the run b, a: a > b both retrieved and failed; a > c and b > c
    implied (c not retrieved) and fulfilled."""
    v = _values("q u s a 2\nq u s b 1\nq u s c 0", ["b", "a"])
    assert (v["prefs_num_prefs_poss"], v["prefs_num_prefs_ful"], v["prefs_num_prefs_ful_ret"]) == (
        3,
        2,
        0,
    )
    assert v["prefs_simp"] == v["prefs_simp_imp"] == v["prefs_avgjg"] == pytest.approx(2 / 3)
    assert v["prefs_simp_ret"] == v["prefs_pair_ret"] == v["prefs_avgjg_ret"] == 0.0
    # pairs (b, a) 0/1, (b, c) 1/1, (a, c) 1/1
    assert v["prefs_pair"] == v["prefs_pair_imp"] == pytest.approx(2 / 3)
    # R = 2 relevant, N = 1 non-relevant: R - N = 1 non-relevant added under each relevant one,
    # fulfilled where the relevant one is retrieved: (2 + 2 * 1) / (3 + 2 * 1)
    assert v["prefs_avgjg_Rnonrel"] == pytest.approx(4 / 5)
    # retrieved only: R = 2, N = 0: (0 + 2 * 2) / (1 + 2 * 2)
    assert v["prefs_avgjg_Rnonrel_ret"] == pytest.approx(4 / 5)


def test_groups_that_disagree_by_hand():
    """User u1: a > b, a > c; user u2: b > a; the run a, b, c. Preferences: 2 of 3 fulfilled;
    pairs: (a, b) 1 of 2, (a, c) 1 of 1, mean 0.75; groups: u1 1, u2 0, mean 0.5."""
    text = "q u1 s a 1\nq u1 s b 0\nq u1 s c 0\nq u2 s b 1\nq u2 s a 0"
    v = _values(text, ["a", "b", "c"])
    assert v["prefs_simp"] == pytest.approx(2 / 3)
    assert v["prefs_pair"] == pytest.approx(0.75)
    assert v["prefs_avgjg"] == pytest.approx(0.5)
    # u1: R = 1 < N = 2: only the first non-relevant kept, b; trec_eval also pairs the kept b
    # with the non-relevant level (b, c): a > b fulfilled, b > b and c > b not: 1 / 3. u2: R =
    # N = 1, b > a failed: 0 / 1. Mean (1/3 + 0) / 2.
    assert v["prefs_avgjg_Rnonrel"] == pytest.approx(1 / 6)


def test_subgroups_are_closed_under_transitivity():
    """get_prefs.c's example: sub1 1 > 2 > 3, sub2 4 > 1 > 2. Its comment counts 5 preferences;
    the group's closure adds 4 > 3, and trec_eval 10.0 counts 6."""
    text = "q u s1 d1 3\nq u s1 d2 2\nq u s1 d3 1\nq u s2 d1 2\nq u s2 d2 1\nq u s2 d4 3"
    assert _values(text, ["x"])["prefs_num_prefs_poss"] == 6
    # a > b in one subgroup, b > c in another: a > c too; the run a, c, b fulfils a > b, a > c
    v = _values("q u s1 a 2\nq u s1 b 1\nq u s2 b 2\nq u s2 c 1", ["a", "c", "b"])
    assert (v["prefs_num_prefs_poss"], v["prefs_num_prefs_ful"]) == (3, 2)
    # three relevant, no non-relevant: (2 + 3 * 3) / (3 + 3 * 3)
    assert v["prefs_avgjg_Rnonrel"] == pytest.approx(11 / 12)


def test_rnonrel_keeps_the_first_r_non_relevant_documents_as_trec_eval():
    """a (1) and three non-relevant, the run a, n1, n2: R = 1 < N = 3, so n1 alone is kept;
    trec_eval 10.0 pairs every document of a level with it, the non-relevant level too: a > n1
    fulfilled, n1 > n1, n2 > n1, n3 > n1 not, 1 / 4. Retrieved only: n1, n2; 1 / 3."""
    v = _values("q u s a 1\nq u s n1 0\nq u s n2 0\nq u s n3 0", ["a", "n1", "n2"])
    assert v["prefs_avgjg_Rnonrel"] == pytest.approx(1 / 4)
    assert v["prefs_avgjg_Rnonrel_ret"] == pytest.approx(1 / 3)
    assert v["prefs_simp"] == 1.0


def test_rnonrel_is_0_for_a_query_with_a_group_of_non_relevant_documents_only():
    """u2 holds only non-relevant documents: R = 0 keeps none, 0 / 0, and trec_eval's sum of
    the groups' ratios is then NaN, so the query scores 0 whatever u1 does (prefs_avgjg: 0.5)."""
    v = _values("q u1 s a 1\nq u1 s b 0\nq u2 s c 0\nq u2 s d 0", ["a", "b"])
    assert v["prefs_avgjg"] == 0.5
    assert v["prefs_avgjg_Rnonrel"] == v["prefs_avgjg_Rnonrel_ret"] == 0.0


def test_ties_are_broken_by_doc_id_ascending():
    """form_prefs_counts.c orders a run's ties by doc id ascending (the other measures of
    trec_eval, descending): b and c tied, b is above c, so b > c is fulfilled."""
    prefs = _frame("q u s b 2\nq u s c 1")
    tied = pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["c", "b"], "score": [1.0, 1.0]})
    assert prepare_prefs(prefs, tied).prefs_values[0, PREFS_MEASURES.index("prefs_simp")] == 1.0
    in_file = prepare_prefs(prefs, tied, order="file")  # c first, as the frame lists it
    assert in_file.prefs_values[0, PREFS_MEASURES.index("prefs_simp")] == 0.0
    assert prepare_prefs(prefs, tied, depth=1).prefs_values[0, 1] == 1  # b only: implied


def test_unjudged_documents_change_nothing():
    """Only the order of the judged documents counts: unjudged ones inserted anywhere leave
    every value of every query unchanged."""
    prefs = read_prefs(DATA / "prefs.test")
    run = read_run(DATA / "prefs.results.test")
    base = prepare_prefs(prefs, run).prefs_values
    rng = np.random.default_rng(3)
    extra = pd.DataFrame(
        {
            "query_id": rng.choice(run["query_id"].unique(), 200),
            "doc_id": [f"UNJUDGED-{i}" for i in range(200)],
            "score": rng.uniform(run["score"].min() - 1, run["score"].max() + 1, 200),
        }
    )
    padded = pd.concat([run[["query_id", "doc_id", "score"]], extra], ignore_index=True)
    assert np.array_equal(prepare_prefs(prefs, padded).prefs_values, base)


# ----------------------------------------------------------------------------- definition


def _random_judgements(rng: random.Random) -> tuple[list[tuple[str, str, str, float]], list[str]]:
    """Groups without contradiction (each subgroup a few documents of one hidden order) and
    without repeated lines; a run of some of the documents and unjudged ones."""
    pool = [f"d{i}" for i in range(rng.randint(2, 9))]
    lines = []
    for g in range(rng.randint(1, 3)):
        docs = rng.sample(pool, rng.randint(2, len(pool)))
        hidden = {d: rng.choice([0, 0, 1, 2, 3]) for d in docs}
        n_sub = rng.choice([1, 1, 2, 3])
        for s in range(n_sub):
            sub = docs if n_sub == 1 else rng.sample(docs, rng.randint(2, len(docs)))
            lines += [(f"u{g}", f"s{s}", d, float(hidden[d])) for d in sub]
    ranked = rng.sample(pool + ["x1", "x2"], rng.randint(0, len(pool) + 2))
    return lines, ranked


def _by_definition(lines: list[tuple[str, str, str, float]], ranked: list[str]) -> dict:
    """The counts and ratios as the measures' help texts define them: a group's preferences
    are its subgroups' (higher level over lower), closed under transitivity; A > B is
    fulfilled when A is retrieved and B is not, or both are and A is above B."""
    at = {d: i for i, d in enumerate(ranked)}

    def fulfilled(a, b):
        return a in at and (b not in at or at[a] < at[b])

    per_group, per_pair = [], Counter()
    for jg in sorted({line[0] for line in lines}):
        prefs = set()
        for jsg in {line[1] for line in lines if line[0] == jg}:
            sub = [(d, lv) for g, s, d, lv in lines if (g, s) == (jg, jsg)]
            prefs |= {(a, b) for (a, la), (b, lb) in itertools.product(sub, sub) if la > lb}
        while True:
            more = {(a, d) for a, b in prefs for c, d in prefs if b == c and a != d}
            if more <= prefs:
                break
            prefs |= more
        kinds = Counter()
        for a, b in prefs:
            kind = (
                "ret" if a in at and b in at else "none" if a not in at and b not in at else "imp"
            )
            kinds[kind, fulfilled(a, b)] += 1
            per_pair[frozenset((a, b)), fulfilled(a, b), kind] += 1
        per_group.append(kinds)
    total = sum(per_group, Counter())
    ful_ret, ful_imp = total["ret", True], total["imp", True]
    poss_ret = ful_ret + total["ret", False]
    poss_imp = poss_ret + ful_imp + total["imp", False]
    poss = poss_imp + total["none", False]

    def ratio(a, b):
        return a / b if b else 0.0

    def pair(kinds):
        shares = {}
        for (pair_, ful, kind), n in per_pair.items():
            if kind in kinds:
                done, all_ = shares.get(pair_, (0, 0))
                shares[pair_] = (done + n * ful, all_ + n)
        return ratio(sum(ratio(d, a) for d, a in shares.values()), len(shares))

    def avgjg(ful_of, poss_of):
        return np.mean([ratio(ful_of(k), poss_of(k)) for k in per_group])

    return {
        "prefs_num_prefs_poss": poss,
        "prefs_num_prefs_ful": ful_ret + ful_imp,
        "prefs_num_prefs_ful_ret": ful_ret,
        "prefs_simp": ratio(ful_ret + ful_imp, poss),
        "prefs_simp_ret": ratio(ful_ret, poss_ret),
        "prefs_simp_imp": ratio(ful_ret + ful_imp, poss_imp),
        "prefs_pair": pair(("ret", "imp", "none")),
        "prefs_pair_ret": pair(("ret",)),
        "prefs_pair_imp": pair(("ret", "imp")),
        "prefs_avgjg": avgjg(lambda k: k["ret", True] + k["imp", True], lambda k: sum(k.values())),
        "prefs_avgjg_ret": avgjg(
            lambda k: k["ret", True], lambda k: k["ret", True] + k["ret", False]
        ),
    }


def test_measures_equal_their_definition_on_random_judgements():
    rng = random.Random(7)
    for case in range(40):
        lines, ranked = _random_judgements(rng)
        text = "\n".join(f"q {g} {s} {d} {lv}" for g, s, d, lv in lines)
        got = _values(text, ranked) if ranked else _values(text, ["none-retrieved"])
        for name, value in _by_definition(lines, ranked).items():
            assert got[name] == pytest.approx(value, abs=1e-12), (case, name)


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("q u s1 a 2\nq u s1 b 1\nq u s2 b 2\nq u s2 a 1", "'a' and 'b' are each preferred"),
        ("q u s1 a 0\nq u s1 b 1\nq u s2 a 1\nq u s2 c 0", "'a' has both 0 and non-0"),
        ("q u s a 2\nq u s a 1\nq u s b 0", "'a' has two rel_levels in judgment group 'u'"),
        ("q u s a 2\nq u s b 2\nq u s c 0\nq u s d 0\nq u s e -1", "reads past the group"),
    ],
    ids=["cycle", "zero-and-not", "two-levels", "undefined-in-trec-eval"],
)
def test_contradictions_are_errors_naming_the_query(text, match):
    with pytest.raises(InputError, match=match) as info:
        prepare_prefs(_frame(text), {"q": {"a": 2.0, "b": 1.0, "c": 0.5, "d": 0.4, "e": 0.3}})
    assert info.value.query_id == "q"


def test_a_document_twice_in_the_run_names_its_line(tmp_path, capsys):
    run = tmp_path / "run.txt"
    run.write_text("1.EC.AB Q0 FBIS4-39881 1 2 t\n1.EC.AB Q0 FBIS4-39881 2 1 t\n")
    prefs = tmp_path / "prefs.txt"
    prefs.write_text("1.EC.AB u s FBIS4-39881 1\n1.EC.AB u s other 0\n")
    assert cli_main(["trec-eval", "-m", "all_prefs", "-R", "prefs", str(prefs), str(run)]) == 2
    err = capsys.readouterr().err
    assert "run.txt" in err and "line 2" in err and "FBIS4-39881" in err


def test_a_query_missing_from_the_run_stops_without_c(tmp_path):
    run = tmp_path / "run.txt"
    run.write_text("1.EC.AB Q0 FBIS4-39881 1 2 t\n")
    argv = ["-m", "prefs", "-R", "prefs", str(DATA / "prefs.test"), str(run)]
    with pytest.raises(InputError, match="query '11.PA=1' of the preference judgements"):
        run_trec_eval(argv)
    out, _ = run_trec_eval(["-c", *argv])
    assert "num_q                 \tall\t24\n" in out


def test_options_pair_the_preference_formats_with_their_measures():
    opts = parse_options(["-R", "qrels_prefs", "-m", "prefs", "q", "r"])
    assert opts.preferences == "qrels_prefs" and opts.measures == MEASURE_SETS["prefs"]
    assert parse_options(["-R", "prefs", "-m", "all_prefs", "q", "r"]).measures[-1] == (
        "prefs_avgjg_imp"
    )
    with pytest.raises(InputError, match="num_ret reads qrels, not preference judgements"):
        parse_options(["-R", "prefs", "q", "r"])  # the default measures read qrels
    with pytest.raises(InputError, match="prefs_simp reads preference judgements: -R prefs"):
        parse_options(["-m", "prefs_simp", "q", "r"])
    with pytest.raises(InputError, match="'prefs_x' is not read"):
        parse_options(["-R", "prefs_x", "q", "r"])


# ----------------------------------------------------------------------------- reader


def test_reader_follows_trec_evals_comment_and_field_rules(tmp_path):
    path = tmp_path / "p.txt"
    path.write_text("# one\n#two u s d 1\nq u s a 2abc\r\n  q u s b x\t\nq u s c 1e0")
    with pytest.warns(UserWarning) as caught:
        frame = read_prefs(path)
    assert frame["query_id"].tolist() == ["#two", "q", "q", "q"]
    assert frame["rel_level"].tolist() == [1.0, 2.0, 0.0, 1.0]  # C's atof
    notes = " ".join(str(w.message) for w in caught)
    assert "2 rel_level(s) are not plain numbers (first on line 3)" in notes
    assert "1 line(s) starting with '#' right after a comment line (first on line 2)" in notes


@pytest.mark.parametrize(
    ("text", "line", "match"),
    [
        ("q u s a 1\n\nq u s b 0\n", 2, "expected 5 fields .* found 0"),
        ("q u s a 1 extra\n", 1, "found 6"),
        ("q u s a nan\n", 1, "is NaN"),
        ("q u s a 1\n# last\n", 2, "a comment as the last line"),
    ],
    ids=["blank", "extra-field", "nan", "comment-last"],
)
def test_reader_errors_name_the_file_and_line(tmp_path, text, line, match):
    path = tmp_path / "p.txt"
    path.write_text(text)
    with pytest.raises(InputError, match=match) as info:
        read_prefs(path)
    assert info.value.line == line and str(path) in str(info.value)


def test_qrels_read_as_preferences(tmp_path):
    path = tmp_path / "qrels.gz"
    with gzip.open(path, "wt") as f:
        f.write("q 0 a 1.5\nq 7 b 0\n")
    frame = read_qrels_prefs(path)
    assert frame.values.tolist() == [["q", "0", "0", "a", 1.5], ["q", "7", "0", "b", 0.0]]
    with pytest.raises(InputError, match="expected 4 fields"):
        read_qrels_prefs(DATA / "prefs.test")


# ----------------------------------------------------------------------------- evaluate


def _expected(name: str) -> pd.DataFrame:
    rows = [line.split("\t") for line in (DATA / name).read_text().splitlines()]
    frame = pd.DataFrame(rows, columns=["name", "query_id", "value"])
    frame["name"] = frame["name"].str.strip()
    return frame[frame["query_id"] != "all"]


def test_evaluate_on_preference_judgements_prints_as_trec_eval():
    names = expand_measure_names(["all_prefs"])
    res = evaluate(read_prefs(DATA / "prefs.test"), read_run(DATA / "prefs.results.test"), names)
    assert [m.name for m in res.measures] == list(PREFS_MEASURES)
    wide = res.per_query_wide()
    for name, qid, value in _expected("out.test.prefs").itertuples(index=False):
        got = wide.loc[qid, name]
        assert (str(int(got)) if print_kind(name) == "long" else f"{got:6.4f}") == value
    counts = res.aggregate.set_index("measure")["value"]
    assert counts["prefs_num_prefs_poss"] == 326  # summed, as trec_eval's all line


def test_evaluate_reads_qrels_as_one_judgment_group_per_query():
    names = ["prefs_simp", "prefs_pair_imp", "prefs_avgjg_Rnonrel", "P@10"]
    run = read_run(DATA / "results.test")
    plain = evaluate(read_qrels(DATA / "qrels.test"), run, names).per_query_wide()
    as_prefs = evaluate(read_qrels_prefs(DATA / "qrels.test"), run, names[:3]).per_query_wide()
    assert np.array_equal(plain[names[:3]].to_numpy(), as_prefs.to_numpy())
    expected = _expected("out.test.qrels_prefs").set_index(["query_id", "name"])["value"]
    assert f"{plain.loc['302', 'prefs_simp']:6.4f}" == expected["302", "prefs_simp"]


def test_evaluate_refuses_other_measures_on_preference_judgements():
    with pytest.raises(InputError, match="'P@10' reads graded qrels; preference judgements"):
        evaluate(read_prefs(DATA / "prefs.test"), {"1.EC.AB": {"x": 1.0}}, ["P@10"])
    arrays = prepare({"q": {"a": 1}}, {"q": {"a": 1.0}})
    with pytest.raises(InputError, match="prefs_simp reads preference judgements"):
        Measure("prefs_simp").compute(arrays)


def test_names_are_trec_evals_and_round_trip():
    for name in PREFS_MEASURES:
        m = parse_measure(name)
        assert m.name == name == trec_eval_printed(m) and parse_measure(m.name) == m
    assert [str(m) for m in expand_measure_names(["prefs"])] == list(PREFS_MEASURES[:6])
    assert [print_kind(n) for n in PREFS_MEASURES[:4]] == ["long", "long", "long", "float"]


def test_docstring_examples():
    import doctest

    from ragnb.io import prefs as prefs_io
    from ragnb.measures import prefs as prefs_measures

    for module in (prefs_io, prefs_measures):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0, module.__name__
