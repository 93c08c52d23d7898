"""``ragnb evaluate``, ``ragnb evaluate-samples`` and ``ragnb compare``: a run's rank measures
with the build gates, ragas-style samples' context measures with the same gates, and systems
compared with intervals, tests and rank intervals. Files are read as :mod:`ragnb.io.dispatch`
chooses.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ragnb.errors import DuplicateEntry, InputError

if TYPE_CHECKING:
    from ragnb.stats.gates import Threshold

__all__ = ["add_parsers"]


def add_parsers(sub: Any) -> None:
    """The ``evaluate``, ``evaluate-samples`` and ``compare`` subcommands' arguments."""
    _add_evaluate_parser(sub)
    _add_evaluate_samples_parser(sub)
    _add_compare_parser(sub)


def _cmd_evaluate(args: argparse.Namespace) -> int:
    """``ragnb evaluate QRELS RUN``: the rank measures of a run, then the build gates."""
    if args.run is None:  # one file: say where ragas samples go instead of guessing
        raise InputError(
            f"evaluate needs two files, QRELS and RUN, and got one ({args.qrels}); to score a "
            f"ragas-style samples file use: ragnb evaluate-samples {args.qrels}"
        )
    thresholds = _thresholds(args)
    result, base = _evaluate_run(args, [t.measure for t in thresholds])
    return _print_and_gate(result, base, thresholds, args)


def _cmd_evaluate_samples(args: argparse.Namespace) -> int:
    """``ragnb evaluate-samples SAMPLES``: the context measures of ragas-style samples, then the
    build gates."""
    thresholds = _thresholds(args)
    result, base = _evaluate_samples(args, [t.measure for t in thresholds])
    return _print_and_gate(result, base, thresholds, args)


def _run_specs(specs: Sequence[str]) -> dict[str, list[str]]:
    """``--run NAME=FILE[,FILE...]`` (repeatable; a repeated NAME adds runs) as ``{name: files}``
    in the order given."""
    systems: dict[str, list[str]] = {}
    for spec in specs:
        name, sep, files = spec.partition("=")
        paths = [f for f in files.split(",") if f]
        if not sep or not name or not paths:
            raise InputError(f"--run {spec!r}: expected NAME=FILE or NAME=FILE1,FILE2,...")
        systems.setdefault(name, []).extend(paths)
    return systems


def _cmd_compare(args: argparse.Namespace) -> int:
    """``ragnb compare QRELS --run NAME=RUN[,RUN...]...``: the comparison table with rank
    intervals and tie groups, the pairs, and with ``--target-effect`` the power of each pair."""
    from ragnb import stats

    qrels = _read_qrels(args.qrels)
    files = {
        name: [(path, _read_run(path)) for path in paths]
        for name, paths in _run_specs(args.run or []).items()
    }
    notes = _coverage_notes(qrels, files)
    systems = {name: [frame for _, frame in runs] for name, runs in files.items()}
    systems.update(_kit_runs(args, qrels, set(systems)))
    if len(systems) < 2:
        raise InputError(
            "compare needs at least two systems (--run NAME=FILE, --retriever NAME), got "
            f"{len(systems)}"
        )
    try:
        result = stats.compare(
            systems,
            args.measure or ["nDCG@10", "R@100"],
            qrels=qrels,
            baselines=args.baseline or None,
            n_resamples=args.resamples,
            alpha=args.alpha,
            correction=args.correction,
            seed=args.seed,
            test=args.test,
        )
    except DuplicateEntry as e:
        raise _located(e, files) from None
    _print_notes(notes)
    first = result.measures[0]
    ranking = result.ranking(first)
    power = None
    if args.target_effect is not None:
        power = result.power(first, target_effect=args.target_effect, power=args.power)
    if args.format == "json":
        payload = {
            "means": result.means.to_dict(orient="records"),
            "pairs": result.pairs.to_dict(orient="records"),
            "omnibus": result.omnibus.to_dict(orient="records"),
            "letters": result.letters().reset_index().to_dict(orient="records"),
            "ranking": ranking.to_dict(orient="records"),
            "tie_groups": [list(g) for g in stats.tie_groups(result, first)],
            "settings": result.settings,
        }
        if power is not None:
            payload["power"] = power.to_dict(orient="records")
        json.dump(payload, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    elif args.format == "csv":
        result.pairs.to_csv(sys.stdout, index=False)
    else:
        _print_comparison(result, ranking, power)
        _print_legend(result, args, power)
    return 0


def _kit_runs(args: argparse.Namespace, qrels: Any, taken: set[str]) -> dict[str, list[Any]]:
    """``--retriever NAME``: the kit's retrievers ranking the qrels' queries (their text from
    ``--queries``, else ``--dataset``'s queries.jsonl) over ``--dataset``'s corpus, one run
    each, named by the retriever; a note on stderr counts the qrels' queries without a text."""
    if not args.retriever:
        return {}
    if not args.dataset:
        raise InputError("--retriever needs --dataset DIR: the corpus the kit's retrievers rank")
    from dataclasses import replace
    from pathlib import Path

    from ragnb.io.files import read_beir
    from ragnb.io.readers import read_query_file
    from ragnb.retrievers.retrieve import check_retrievers, compute_runs

    check_retrievers(args.retriever, column="--retriever")
    named = sorted(taken.intersection(args.retriever))
    if named:
        raise InputError(f"{named} named twice: by --run and by --retriever; rename the --run")
    data = read_beir(args.dataset, qrels="optional")
    source = args.queries or str(Path(args.dataset) / "queries.jsonl")
    queries = read_query_file(args.queries) if args.queries else data.queries
    wanted = set(qrels["query_id"])
    found = queries[queries["query_id"].isin(wanted)].reset_index(drop=True)
    if found.empty:
        raise InputError(
            f"none of the {len(wanted)} queries of the qrels {args.qrels} is in this file (no "
            "shared query id): give the queries the qrels judge with --queries",
            path=source,
        )
    missing = len(wanted) - found["query_id"].nunique()
    if missing:
        print(
            f"note: {missing} of the {len(wanted)} queries of the qrels have no text in {source}: "
            "the kit's retrievers return nothing for them",
            file=sys.stderr,
        )
    data = replace(data, queries=found, qrels=qrels)
    runs, _, _ = compute_runs(
        data, args.retriever, depth=args.depth, cache_dir=args.cache_dir, progress=True
    )
    return {name: [run] for name, run in runs.items()}


def _coverage_notes(qrels: Any, files: dict[str, list[tuple[str, Any]]]) -> list[str]:
    """What each run file lacks and adds against the qrels, as notes: queries of the qrels absent
    from the run (scored 0, as ``ragnb evaluate`` scores them) and run queries without qrels
    (left out). A run that shares no query with the qrels is an error naming it."""
    import pandas as pd

    from ragnb.evaluation.evaluate import no_shared_query

    qids = pd.unique(qrels["query_id"].astype(str))
    judged = set(qids.tolist())
    notes = []
    for name, runs in files.items():
        for path, frame in runs:
            ids = pd.unique(frame["query_id"].astype(str))
            shared = sum(q in judged for q in ids.tolist())
            if not shared:
                raise no_shared_query(qids, ids, path=path)
            if shared < len(judged):
                notes.append(
                    f"{name} ({path}): {len(judged) - shared} of the qrels' {len(judged)} queries "
                    "absent from the run, scored 0"
                )
            if shared < len(ids):
                notes.append(
                    f"{name} ({path}): {len(ids) - shared} run queries without qrels left out"
                )
    return notes


def _located(error: DuplicateEntry, files: dict[str, list[tuple[str, Any]]]) -> InputError:
    """The run file that gives a (query, document) pair twice, and the line."""
    from ragnb.io.dispatch import locate_duplicate

    for runs in files.values():
        for path, frame in runs:
            pair = (frame["query_id"].astype(str) == error.query_id) & (
                frame["doc_id"].astype(str) == error.doc_id
            )
            if int(pair.sum()) > 1:
                return locate_duplicate(path, error)
    return error


#: ``--test`` and ``--correction`` of ``ragnb compare``: :data:`ragnb.stats.TESTS` and
#: :data:`ragnb.stats.corrections.CORRECTIONS`, spelt out so that building the parser imports
#: no statistics (a test checks they agree).
COMPARE_TESTS = ("randomization", "t", "anova", "tukey", "randomized-tukey")
COMPARE_CORRECTIONS = ("holm", "bonferroni", "bh", "none")

#: What every mark and column of ``ragnb compare``'s tables means.
COMPARE_LEGEND = """legend:
  #                the system's letter; a superscript letter after a mean (e.g. 0.8770ᵃ) names
                   a system this one is significantly better than on that measure (adjusted
                   p <= alpha and a positive difference)
  rank             the system's rank on {first} with its bootstrap interval (1-2: it ranked 1st
                   or 2nd in 95% of the resamples)
  tie_group        systems sharing a letter are not separable on {first}; tied_with names them
  difference       mean of the first system minus the second, over the queries both have
  ci_low, ci_high  bootstrap confidence interval of the difference
  p_value          {test}
  p_adjusted       p_value after the {correction} correction over every pair and measure
  significant      p_adjusted <= {alpha}
  cohens_dz        mean of the per-query differences over their standard deviation (paired
                   Cohen's d_z); dz_low, dz_high: its {confidence:.0%} interval (noncentral t);
                   hedges_gz, gz_low, gz_high: the same with Hedges' small-sample correction
  n_queries        queries compared; n_dropped: queries left out (a NaN value in either run)
  all systems      the ANOVA of every system at once: F, its degrees of freedom and p-value
                   (design repeated-measures: queries as blocks; two-way: with runs nested in
                   systems); letters: systems sharing a letter are not separated by the tests"""

_POWER_LEGEND = """
  sd               standard deviation of the per-query differences
  mde_t            minimum detectable effect: the smallest true difference a paired t-test on
                   n_queries detects with power {power} (same unit as the measure)
  mde_simulated    the same, found by simulating experiments from the observed differences
  queries_needed_t, queries_needed_simulated
                   queries needed to detect the --target-effect {target} with power {power}"""


def _print_comparison(result: Any, ranking: Any, power: Any) -> None:
    """The tables of ``ragnb compare`` as text."""
    fmt = "{:.4f}".format
    print(result.table(ranks=result.measures[0]).to_string(index=False))
    print()
    shown = result.pairs.drop(columns=["system_a", "system_b", "mean_a", "mean_b"])
    print(shown.to_string(index=False, float_format=fmt))
    print()
    print("all systems:")
    print(result.omnibus.to_string(index=False, float_format=fmt))
    print()
    print("letters:")
    print(result.letters().to_string())
    if "n_runs" in result.means.columns:
        print()
        print(result.means.to_string(index=False, float_format=fmt))
    print()
    print(f"ranks on {result.measures[0]}:")
    print(ranking.to_string(index=False, float_format=fmt))
    if power is not None:
        print()
        print(f"power on {result.measures[0]}:")
        print(power.to_string(index=False, float_format=fmt))


def _print_legend(result: Any, args: argparse.Namespace, power: Any) -> None:
    """The legend under the tables of ``ragnb compare``."""
    from ragnb.stats.procedures import TEST_NAMES

    print()
    settings = result.settings
    print(
        COMPARE_LEGEND.format(
            first=result.measures[0],
            test=TEST_NAMES[settings["test"]],
            correction=settings["correction"],
            alpha=settings["alpha"],
            confidence=settings["confidence"],
        )
    )
    if power is not None:
        print(_POWER_LEGEND.format(power=args.power, target=args.target_effect).lstrip("\n"))


def _add_compare_parser(sub: Any) -> None:
    """The ``compare`` subcommand's arguments."""
    p = sub.add_parser(
        "compare",
        help="compare systems' runs (several runs per system: seeds, folds) with intervals, "
        "tests, rank intervals and tie groups",
        usage="%(prog)s QRELS --run NAME=RUN[,RUN...]... [--retriever NAME... --dataset DIR] "
        "[options]",
    )
    p.add_argument("qrels", metavar="QRELS", help="TREC qrels, BEIR qrels .tsv, or ranx qrels")
    p.add_argument(
        "--run",
        action="append",
        metavar="NAME=RUN[,RUN...]",
        help="a system and its run file; several comma-separated files (seeds, folds) are "
        "averaged per query, the two-level interval resampling them (repeatable)",
    )
    k = p.add_argument_group("the kit's retrievers as systems")
    k.add_argument(
        "--retriever",
        action="append",
        metavar="NAME",
        help="a kit retriever (bm25, bm25-plain, dense, hybrid, dense:MODEL) ranking the qrels' "
        "queries over --dataset's corpus, a system named NAME (repeatable)",
    )
    k.add_argument("--dataset", default="", help="BEIR folder: the corpus --retriever ranks")
    k.add_argument(
        "--queries",
        default="",
        help="the queries' text (.jsonl, .csv, .txt; default --dataset's queries.jsonl), e.g. "
        "the queries.jsonl of `ragnb traces import`",
    )
    k.add_argument("--depth", type=int, default=100, help="documents per query (default 100)")
    k.add_argument("--cache-dir", default="", help="embedding cache folder")
    p.add_argument(
        "-m", "--measure", action="append", help="measure (repeatable; default nDCG@10 R@100)"
    )
    p.add_argument(
        "--baseline",
        action="append",
        metavar="NAME",
        help="compare every other system with this one (repeatable: one correction over all "
        "baselines' tests); default all pairs",
    )
    p.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    p.add_argument(
        "--test",
        choices=COMPARE_TESTS,
        default="randomization",
        help="the test of each pair: paired randomization (two-level with several runs), "
        "paired t, anova (t on the ANOVA's error, protected), tukey (Tukey's HSD), "
        "randomized-tukey (Carterette's randomised Tukey HSD); default randomization",
    )
    p.add_argument(
        "--correction",
        choices=COMPARE_CORRECTIONS,
        default="holm",
        help="over every pair and measure: holm, bonferroni, bh (Benjamini-Hochberg, false "
        "discovery rate) or none (holm)",
    )
    p.add_argument("--resamples", type=int, default=10_000, help="bootstrap B (default 10000)")
    p.add_argument("--seed", type=int, default=0, help="seed of the resampling (default 0)")
    p.add_argument(
        "--target-effect",
        type=float,
        default=None,
        help="also print each pair's minimum detectable effect and the queries needed to "
        "detect this difference of the first measure",
    )
    p.add_argument("--power", type=float, default=0.8, help="power of --target-effect (0.8)")
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")
    p.set_defaults(func=_cmd_compare)


def _thresholds(args: argparse.Namespace) -> list[Threshold]:
    """The ``--fail-under`` gates, parsed before any file is read."""
    from ragnb.stats.gates import parse_threshold

    return [parse_threshold(spec) for spec in args.fail_under or ()]


def _print_and_gate(
    result: Any, base: Any, thresholds: list[Threshold], args: argparse.Namespace
) -> int:
    """Print the evaluation, then check the gates (stderr); the exit status."""
    from ragnb.stats.gates import check_gates

    report = None
    if thresholds or base is not None:
        report = check_gates(
            result,
            thresholds,
            baseline=base,
            alpha=args.alpha,
            max_drop=args.max_drop,
            n_resamples=args.resamples,
            seed=args.seed,
        )
    _print_evaluation(result, args, report)
    if report is None:
        return 0
    shown = report.table.drop(columns=["ci_low", "ci_high"]).dropna(axis=1, how="all")
    text = shown.to_string(index=False, float_format="{:.4f}".format, na_rep="-")
    print(text, file=sys.stderr)
    print(report.message(), file=sys.stderr)
    return report.exit_status


def _evaluate_run(args: argparse.Namespace, gated: list[str]) -> tuple[Any, Any]:
    """``QRELS RUN``: the evaluation, and the baseline run's (or None)."""
    from ragnb.evaluation.runfiles import evaluate_run_file
    from ragnb.io.dispatch import open_run

    grade_map = _grade_map(args.grade_map)
    # the run before the qrels: its parser's buffers come and go before the rest is loaded
    run = open_run(args.run, stream=args.stream)
    _print_notes(run.notes)
    qrels = _read_qrels(args.qrels, diversity=args.qrels_format == "diversity")
    nuggets = _read_nuggets(args.nuggets, args.queries)
    if qrels.empty:
        raise InputError("the qrels file holds no judgements; nothing to evaluate", path=args.qrels)
    from ragnb.evaluation.trec_eval import expand_measure_names

    measures = [
        *expand_measure_names(args.measure or ["P@5", "P@10", "R@100", "nDCG@10", "RR"]),
        *gated,
    ]
    options = {"order": args.order, "grade_map": grade_map, "ignore_self": args.ignore_self}
    options["nuggets"] = nuggets
    with warnings.catch_warnings():  # the command says it once, in its notes (both paths)
        warnings.filterwarnings("ignore", message=r"[0-9]+ queries have a rank column")
        result = evaluate_run_file(qrels, run, measures, **options)
        del run
        base = None
        if args.baseline:
            baseline = open_run(args.baseline, stream=args.stream)
            _print_notes(baseline.notes)
            base = evaluate_run_file(qrels, baseline, measures, **options)
    return result, base


def _print_notes(notes: Sequence[str]) -> None:
    """What a reader counted and ignored, on stderr."""
    for note in notes:
        print(f"note: {note}", file=sys.stderr)


def _read_run(path: str) -> Any:
    """A run file in memory, read as :func:`ragnb.io.dispatch.read_run_file` chooses."""
    from ragnb.io.dispatch import read_run_file

    run = read_run_file(path)
    _print_notes(run.notes)
    return run.frame


def _read_qrels(path: str, *, diversity: bool = False) -> Any:
    """A qrels file in memory, read as :func:`ragnb.io.dispatch.read_qrels_file` chooses."""
    from ragnb.io.dispatch import read_qrels_file

    qrels = read_qrels_file(path, diversity=diversity)
    _print_notes(qrels.notes)
    return qrels.frame


def _read_nuggets(folder: str | None, queries: str | None) -> Any:
    """``--nuggets DIR``: the folder's nugget qrels, the nugget checks' warning on stderr."""
    if folder is None:
        if queries is not None:
            raise InputError("--queries is read with --nuggets DIR (to check the nuggets)")
        return None
    from pathlib import Path

    from ragnb.io.nuggets import NUGGET_FILES, nugget_qrels, read_nugget_folder
    from ragnb.io.readers import read_query_file
    from ragnb.judge.nugget_checks import check_nuggets, nugget_warning

    nuggets, assignments = read_nugget_folder(folder)
    path = Path(folder) / NUGGET_FILES["nuggets"]
    texts = None if queries is None else read_query_file(queries)
    warning = nugget_warning(check_nuggets(nuggets, texts, source=str(path)))
    if warning:
        print(warning, file=sys.stderr, flush=True)
    return nugget_qrels(nuggets, assignments, path=path)


def _evaluate_samples(args: argparse.Namespace, gated: list[str]) -> tuple[Any, Any]:
    """One ragas-style ``SAMPLES`` file: the context measures, and the baseline file's."""
    from ragnb.context.ragas import default_context_measures, evaluate_samples, read_samples

    frame = read_samples(args.samples)
    measures = None
    if args.measure or gated:
        measures = [*(args.measure or default_context_measures(frame)), *gated]
    options = {"similarity": args.similarity, "tau": args.tau, "compare": args.compare}
    result = evaluate_samples(frame, measures, **options)
    base = None
    if args.baseline:
        base = evaluate_samples(read_samples(args.baseline), result.measures, **options)
    return result, base


def _as_asked(result: Any) -> Any:
    """``result``'s tables with each measure under the name it was asked for (``-m map``
    prints ``map``, ``-m AP`` prints ``AP``)."""
    labels = dict(zip([m.name for m in result.measures], result.names, strict=True))
    if all(k == v for k, v in labels.items()):
        return result
    from dataclasses import replace

    aggregate = result.aggregate.assign(measure=result.aggregate["measure"].map(labels))
    renamed = replace(result, aggregate=aggregate)
    renamed.__dict__["per_query"] = result.per_query.assign(
        measure=result.per_query["measure"].map(labels)
    )
    return renamed


def _print_evaluation(result: Any, args: argparse.Namespace, report: Any) -> None:
    """The table (or CSV, or JSON with the gates) on stdout, notes on stderr; each measure
    under the name it was asked for."""
    if hasattr(result, "labels"):
        result = _as_asked(result)
    if args.per_query:
        frame = result.per_query_wide().reset_index()
        frame.columns = ["query_id", *result.aggregate["measure"]]
        all_row = {"query_id": "all", **result.aggregate_to_dict()}
        import pandas as pd

        frame = pd.concat([frame, pd.DataFrame([all_row])], ignore_index=True)
    else:
        frame = result.aggregate
    if args.format == "csv":
        frame.to_csv(sys.stdout, index=False)
    elif args.format == "json":
        payload = {
            "aggregate": result.aggregate.to_dict(orient="records"),
            "counts": result.counts,
        }
        if args.per_query:
            payload["per_query"] = result.per_query.to_dict(orient="records")
        if report is not None:
            payload["gates"] = {
                "passed": report.passed,
                "exit_status": report.exit_status,
                "table": report.table.to_dict(orient="records"),
                "settings": report.settings,
            }
        json.dump(payload, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        if args.per_query:
            long = result.per_query
            for qid, measure, value in zip(
                long["query_id"], long["measure"], long["value"], strict=True
            ):
                print(f"{measure:<24}\t{qid}\t{value:.4f}")
        for row in result.aggregate.itertuples(index=False):
            print(f"{row.measure:<24}\tall\t{row.value:.4f}\t(n_valid={row.n_valid})")
    counts = result.counts
    notes = []
    if counts.get("queries_missing_from_run"):
        notes.append(
            f"{counts['queries_missing_from_run']} qrels queries absent from the run scored 0"
        )
    if counts.get("run_queries_without_qrels"):
        notes.append(f"{counts['run_queries_without_qrels']} run queries without qrels left out")
    if counts.get("rank_disagreements"):
        notes.append(f"{counts['rank_disagreements']} queries ordered by score, not file rank")
    if "queries_with_nuggets" in counts and any(
        m.family == "NuggetRecall" for m in result.measures
    ):
        notes.append(
            f"{counts['queries_with_nuggets']} of {counts['queries_in_qrels']} queries have "
            f"nuggets; NuggetRecall leaves the other {counts['queries_without_nuggets']} out of "
            "its mean (n_valid)"
        )
    if counts.get("nugget_queries_without_qrels"):
        notes.append(
            f"{counts['nugget_queries_without_qrels']} queries with nuggets but no qrels left out"
        )
    if "self_retrieved_dropped" in counts:
        notes.append(
            f"{counts['self_retrieved_dropped']} retrieved documents with the query's own id "
            "dropped (--ignore-self)"
        )
    for note in notes:
        print(f"note: {note}", file=sys.stderr)


def _grade_map(spec: str | None) -> str | dict[int, int] | None:
    """``--grade-map``: a name of ``ragnb.measures.GRADE_MAPS`` or a YAML/JSON file."""
    from ragnb.evaluation.evaluate import ON_RUBRIC
    from ragnb.io.files import read_grade_map
    from ragnb.measures import GRADE_MAPS

    if spec is None or spec in GRADE_MAPS or spec == ON_RUBRIC:
        return spec
    if os.path.exists(spec):
        return read_grade_map(spec)
    raise InputError(
        f"--grade-map takes one of {[*sorted(GRADE_MAPS), ON_RUBRIC]} or a YAML/JSON file, "
        f"got {spec!r}"
    )


_GATES_EPILOG = """\
build gates:
  --fail-under {gate}
      fails when the mean is below the threshold (repeatable)
  --baseline {base}
      fails when a measure drops significantly against {base}: a paired randomization
      test per measure, Holm across the measures, and a drop larger than --max-drop
  The table is printed whatever the gates say; the gates go to stderr (and into --format json).

exit status:
  0  evaluated, every gate passed (or none given)
  1  a gate failed (each failed gate is listed: measure, value, threshold)
  2  bad input (the message names the file, line, query or column)
"""


_EVALUATE_EPILOG = """\
inputs:
  QRELS RUN   TREC or BEIR qrels and a TREC run: the rank measures (-m nDCG@10 ...); for one
              ragas-style samples file use ragnb evaluate-samples

""" + _GATES_EPILOG.format(gate="nDCG@10=0.60", base="BASE.trec")


_SAMPLES_EPILOG = """\
input:
  SAMPLES   one ragas-style file, as ragas' EvaluationDataset.to_jsonl or .to_csv writes it
            (.jsonl/.json/.csv, each optionally .gz) with ragas' field names:
              retrieved_contexts, reference_contexts         the non-LLM measures
              retrieved_context_ids, reference_context_ids   the ID-based measures
              user_input (kept), query_id (names the sample; default its line)

measures (-m, each optionally @K: only the first K retrieved contexts):
  non_llm_context_precision_with_reference, non_llm_context_recall   (string similarity)
  id_based_context_precision, id_based_context_recall                 (exact id match)
  default: the measures the file's fields allow; ragas' class names (IDBasedContextRecall, ...)
  are accepted too

""" + _GATES_EPILOG.format(gate="id_based_context_recall=0.8", base="BASE.jsonl")


def _add_output_options(p: argparse.ArgumentParser, measure_help: str) -> None:
    """The measures and the output of ``evaluate`` and ``evaluate-samples``."""
    p.add_argument("-m", "--measure", action="append", help=measure_help)
    p.add_argument("--per-query", action="store_true", help="also print per-query values")
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")


def _add_gate_options(p: argparse.ArgumentParser, baseline_help: str) -> None:
    """The build gates of ``evaluate`` and ``evaluate-samples``."""
    g = p.add_argument_group("build gates")
    g.add_argument(
        "--fail-under",
        action="append",
        metavar="MEASURE=MIN",
        help="fail (exit 1) when the measure's mean is below MIN (repeatable)",
    )
    g.add_argument("--baseline", metavar="BASE", help=baseline_help)
    g.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    g.add_argument(
        "--max-drop",
        type=float,
        default=0.0,
        help="a significant drop fails only when larger than this (default 0)",
    )
    g.add_argument(
        "--resamples", type=int, default=10_000, help="randomization/bootstrap B (default 10000)"
    )
    g.add_argument("--seed", type=int, default=0, help="seed of the resampling (default 0)")


def _add_evaluate_parser(sub: Any) -> None:
    """The ``evaluate`` subcommand's arguments (rank measures of a run, gates)."""
    p = sub.add_parser(
        "evaluate",
        help="evaluate a TREC run against qrels; build gates",
        usage="%(prog)s QRELS RUN [-m MEASURE]... [options]",
        epilog=_EVALUATE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "qrels",
        metavar="QRELS",
        help="TREC qrels, BEIR qrels .tsv, or ranx qrels .json/.json.gz/.lz4",
    )
    # optional to argparse only so that one file gets an error naming evaluate-samples
    p.add_argument(
        "run",
        metavar="RUN",
        nargs="?",
        help="TREC run file, parquet run, or ranx run .json/.json.gz/.lz4",
    )
    _add_output_options(
        p,
        "measure name, e.g. nDCG@10, P(rel=2)@5, ndcg_cut_10 (repeatable; default P@5 P@10 "
        "R@100 nDCG@10 RR)",
    )
    p.add_argument(
        "--stream",
        action="store_true",
        help="read the run in blocks of whole queries with bounded memory (always for parquet "
        "runs and runs above 1 GiB)",
    )
    p.add_argument(
        "--order",
        choices=["score", "file"],
        default="score",
        help="score: trec_eval order (default); file: the run's own order",
    )
    p.add_argument(
        "--grade-map",
        metavar="trec-dl|dbpedia-entity|binary|1-5|FILE",
        help="map the qrels' grades onto the 1-5 rubric of RA-nWG, N-Recall4+, Harm (graded "
        "measures on other scales are refused without one)",
    )
    p.add_argument(
        "--ignore-self",
        action="store_true",
        help="drop retrieved documents whose id is the query id (BEIR ArguAna, Quora); counted",
    )
    _add_judgement_options(p)
    _add_gate_options(p, "baseline run: fail on a significant drop against it")
    p.set_defaults(func=_cmd_evaluate)


def _add_judgement_options(p: argparse.ArgumentParser) -> None:
    """Subtopic and nugget judgements: alpha-nDCG's diversity qrels, NuggetRecall's nuggets."""
    g = p.add_argument_group("subtopics and nuggets")
    g.add_argument(
        "--qrels-format",
        choices=["auto", "diversity"],
        default="auto",
        help="auto: TREC, BEIR or ranx qrels by the file name (default); diversity: TREC "
        "diversity qrels 'qid subtopic docid rel' (alpha-nDCG@K; the other measures read each "
        "document's largest grade)",
    )
    g.add_argument(
        "--nuggets",
        metavar="DIR",
        help="a folder holding nuggets.csv and nugget_assignments.csv (ragnb golden's run "
        "folder): NuggetRecall@K reads them; queries without nuggets are left out of its mean",
    )
    g.add_argument(
        "--queries",
        metavar="FILE",
        help="with --nuggets: the query texts (.txt/.csv/.jsonl), to flag nuggets that repeat "
        "their question",
    )


def _add_evaluate_samples_parser(sub: Any) -> None:
    """The ``evaluate-samples`` subcommand's arguments (context measures of ragas samples,
    gates): the same engine as :func:`ragnb.context.ragas.evaluate_samples`."""
    p = sub.add_parser(
        "evaluate-samples",
        help="evaluate a ragas-style samples file (non-LLM and ID-based context precision and "
        "recall); build gates",
        description="Score ragas-style samples on the non-LLM and ID-based context precision\n"
        "and recall, averaged over the samples (ragnb.context.ragas.evaluate_samples).",
        epilog=_SAMPLES_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("samples", metavar="SAMPLES", help="ragas-style .jsonl/.json/.csv file")
    _add_output_options(
        p,
        "context measure, e.g. id_based_context_recall@5, non_llm_context_recall "
        "(repeatable; default: those the file's fields allow)",
    )
    g = p.add_argument_group("similarity (the non-LLM measures)")
    g.add_argument(
        "--similarity",
        choices=["levenshtein", "sequence_matcher"],
        default="levenshtein",
        help="string similarity (default levenshtein, as ragas)",
    )
    g.add_argument("--tau", type=float, default=0.5, help="similarity threshold (default 0.5)")
    g.add_argument(
        "--compare",
        choices=[">=", ">"],
        default=">=",
        help="relevant when similarity >= tau (default) or > tau (ragas' recall)",
    )
    _add_gate_options(p, "baseline samples file: fail on a significant drop against it")
    p.set_defaults(func=_cmd_evaluate_samples)
