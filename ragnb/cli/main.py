"""The ``ragnb`` command line: the same functions the notebooks call.

::

    ragnb report NOTEBOOK [-p NAME VALUE]... [--dataset PATH]
    ragnb report --all [--dataset PATH]
    ragnb retrieve --dataset PATH --retriever bm25|dense|hybrid [--model M] [-k 100] --out RUN
    ragnb evaluate QRELS RUN -m nDCG@10 -m P@5 ... [--per-query] [--format table|csv|json]
                   [--fail-under nDCG@10=0.60]... [--baseline BASE.trec [--max-drop D]]
    ragnb evaluate-samples SAMPLES.jsonl|.csv [-m id_based_context_recall@5]... [--per-query]
                   [--format ...] [--fail-under ...]... [--baseline BASE.jsonl [--max-drop D]]
    ragnb compare QRELS --run NAME=RUN[,RUN...]... [-m nDCG@10]... [--baseline NAME]...
                  [--target-effect 0.02] [--format table|csv|json]
    ragnb data build-sample [--out data/pydocs]
    ragnb llm serve [--model NAME] [--port N] [--n-ctx 2048] [--threads N]
    ragnb trec-eval [-q] [-c] [-n] [-J] [-l L] [-M M] [-m MEASURE[.PARAMS]]... QRELS RUN
    ragnb golden --dataset PATH [--queries FILE | --traces FILE] --out DIR
                 [--judge local|openai|noisy|qrels] [--max-queries N] [--depth 5]
                 [--human-labels QRELS] ...
    ragnb golden audit DIR [--judge-kappa-min 0.4] [--judge J --model M --prompt P ...]
    ragnb run STUDY [-p NAME=VALUE]... [--export DIR]
    ragnb params [--check | --write] [--only STUDY]... [--notebooks DIR]
    ragnb traces import TRACES --out DIR [--retriever-attribute NAME]
    ragnb traces example OUT [--dataset data/pydocs] [--spans 200] [--retrievers bm25 dense]

Bad input ends with ``ragnb: error: ...`` naming the file, line, query or parameter, and exit
status 2. ``ragnb evaluate`` and ``ragnb evaluate-samples`` exit with 1 when a build gate
(``--fail-under``, ``--baseline``) fails, after printing the table; ``ragnb golden audit`` exits
with 1 when the judge's kappa against the human labels falls below ``--judge-kappa-min`` or
below the calibration the golden set was accepted with; ``ragnb params --check``
exits with 1 when a notebook's parameters cell differs from its config.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragnb.core.lazylibs import MissingExtra
from ragnb.errors import InputError

if TYPE_CHECKING:
    from ragnb.stats.gates import Threshold
    from ragnb.studies.golden import GoldenSetConfig

__all__ = ["main"]


def _cmd_report(args: argparse.Namespace) -> int:
    from ragnb.report import render as report

    params = dict(args.param or [])
    if args.dataset:
        params["dataset"] = str(Path(args.dataset).resolve())
    if args.all:
        if args.notebook:
            raise InputError("give either a NOTEBOOK or --all, not both")
        names = [p.stem for p in report.list_notebooks()]
    elif args.notebook:
        names = [args.notebook]
    else:
        raise InputError("name a NOTEBOOK or use --all")
    plans = []
    for name in names:  # check every notebook's parameters before running any
        path = report.resolve_notebook(name)
        mine = params
        if args.all:  # a shared --dataset goes to the notebooks that take one
            declared = report.notebook_parameters(path)
            mine = {k: v for k, v in params.items() if k in declared or k != "dataset"}
        report.check_parameters(path, mine)
        plans.append((path, mine))
    for path, mine in plans:
        result = report.render_report(path, mine, update_index=False)
        print(f"{result.notebook}: {result.html} ({result.seconds:.1f} s)")
    index = report.build_index()
    print(f"index: {index}")
    return 0


def _cmd_retrieve(args: argparse.Namespace) -> int:
    from ragnb.io.files import read_beir, write_run
    from ragnb.retrievers.retrieve import make_retriever

    dataset = read_beir(args.dataset, split=args.split)
    queries = dataset.judged_queries
    retriever = make_retriever(
        args.retriever,
        model=args.model,
        rrf_k=args.rrf_k,
        depth=max(args.k, 100),
        cache_dir=args.cache_dir or None,
    )
    retriever.index(dataset.corpus)
    run = retriever.retrieve(queries, k=args.k)
    write_run(run, args.out, tag=args.tag or args.retriever)
    print(
        f"{args.out}: {run['query_id'].nunique()} queries x top {args.k} "
        f"({args.retriever} on {dataset.name}/{args.split})",
        file=sys.stderr,
    )
    return 0


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
    if len(systems) < 2:
        raise InputError(
            f"compare needs at least two systems (--run NAME=FILE), got {len(systems)}"
        )
    return systems


def _cmd_compare(args: argparse.Namespace) -> int:
    """``ragnb compare QRELS --run NAME=RUN[,RUN...]...``: the comparison table with rank
    intervals and tie groups, the pairs, and with ``--target-effect`` the power of each pair."""
    from ragnb import stats

    qrels = _read_trec_file(args.qrels, "qrels")
    if qrels.empty:
        raise InputError("the qrels file holds no judgements; nothing to compare", path=args.qrels)
    systems = {
        name: [_read_trec_file(path, "run") for path in paths]
        for name, paths in _run_specs(args.run).items()
    }
    result = stats.compare(
        systems,
        args.measure or ["nDCG@10", "R@100"],
        qrels=qrels,
        baselines=args.baseline or None,
        n_resamples=args.resamples,
        alpha=args.alpha,
        correction=args.correction,
        seed=args.seed,
    )
    first = result.measures[0]
    ranking = result.ranking(first)
    power = None
    if args.target_effect is not None:
        power = result.power(first, target_effect=args.target_effect, power=args.power)
    if args.format == "json":
        payload = {
            "means": result.means.to_dict(orient="records"),
            "pairs": result.pairs.to_dict(orient="records"),
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
    return 0


def _print_comparison(result: Any, ranking: Any, power: Any) -> None:
    """The tables of ``ragnb compare`` as text."""
    fmt = "{:.4f}".format
    print(result.table(ranks=result.measures[0]).to_string(index=False))
    print()
    shown = result.pairs.drop(columns=["system_a", "system_b", "mean_a", "mean_b"])
    print(shown.to_string(index=False, float_format=fmt))
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


def _add_compare_parser(sub: Any) -> None:
    """The ``compare`` subcommand's arguments."""
    p = sub.add_parser(
        "compare",
        help="compare systems' runs (several runs per system: seeds, folds) with intervals, "
        "tests, rank intervals and tie groups",
        usage="%(prog)s QRELS --run NAME=RUN[,RUN...]... [options]",
    )
    p.add_argument("qrels", metavar="QRELS", help="TREC qrels, BEIR qrels .tsv, or ranx qrels")
    p.add_argument(
        "--run",
        action="append",
        required=True,
        metavar="NAME=RUN[,RUN...]",
        help="a system and its run file; several comma-separated files (seeds, folds) are "
        "averaged per query, the two-level interval resampling them (repeatable)",
    )
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
        "--correction", choices=["holm", "bonferroni", "none"], default="holm", help="(holm)"
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


#: Run files above this size are evaluated streamed
#: (:func:`ragnb.evaluation.streaming.evaluate_file`).
STREAM_ABOVE_BYTES = 1 << 30


def _evaluate_run(args: argparse.Namespace, gated: list[str]) -> tuple[Any, Any]:
    """``QRELS RUN``: the evaluation, and the baseline run's (or None)."""
    from ragnb.evaluation.evaluate import evaluate
    from ragnb.io.files import PARQUET_SUFFIXES

    def streamed(path: str) -> bool:
        return bool(
            args.stream
            or path.lower().endswith(PARQUET_SUFFIXES)
            or (os.path.isfile(path) and os.path.getsize(path) > STREAM_ABOVE_BYTES)
        )

    grade_map = _grade_map(args.grade_map)
    # the run before the qrels: its parser's buffers come and go before the rest is loaded
    first_run = None if streamed(args.run) else _read_trec_file(args.run, "run")
    qrels = _read_trec_file(args.qrels, "qrels")
    if qrels.empty:
        raise InputError("the qrels file holds no judgements; nothing to evaluate", path=args.qrels)
    from ragnb.evaluation.trec_eval import expand_measure_names

    measures = [
        *expand_measure_names(args.measure or ["P@5", "P@10", "R@100", "nDCG@10", "RR"]),
        *gated,
    ]

    def run_of(path: str, frame: Any = None) -> Any:
        """Evaluate one run file: streamed when large, parquet or ``--stream``."""
        if streamed(path):
            from ragnb.evaluation.streaming import evaluate_file

            return evaluate_file(
                qrels,
                path,
                measures,
                order=args.order,
                grade_map=grade_map,
                ignore_self=args.ignore_self,
            )
        return evaluate(
            qrels,
            _read_trec_file(path, "run") if frame is None else frame,
            measures,
            order=args.order,
            grade_map=grade_map,
            ignore_self=args.ignore_self,
        )

    with warnings.catch_warnings():  # the command says it once, in its notes (both paths)
        warnings.filterwarnings("ignore", message=r"[0-9]+ queries have a rank column")
        result = run_of(args.run, first_run)
        del first_run
        base = run_of(args.baseline) if args.baseline else None
    return result, base


def _read_trec_file(path: str, kind: str) -> Any:
    """A ``"run"`` or ``"qrels"`` file in memory: TREC text by the columnar readers of
    :mod:`ragnb.evaluation.streaming` into arrow columns (faster and several times leaner than
    Python objects; ``benchmarks/trec_eval.py``), any other form (and standard input, or without the
    ``fast`` extra) by ``read_run`` / ``read_qrels``."""
    from ragnb.io.readers import STDIN, ranx_file_kind, read_qrels, read_run

    read, columns = (read_run, "sixth") if kind == "run" else (read_qrels, "fourth")
    if path == STDIN or ranx_file_kind(path) != "trec":
        return read(path)
    try:
        from ragnb.evaluation.streaming import read_qrels_columnar, read_run_columnar
    except MissingExtra:
        return read(path)
    if kind == "run":
        frame, info = read_run_columnar(path)
        extra = info["extra_text_lines"]
    else:
        frame, extra = read_qrels_columnar(path)
    if extra:
        print(
            f"note: {path}: {extra} line(s) carry text after the {columns} column; it is "
            "ignored, as trec_eval ignores it",
            file=sys.stderr,
        )
    return frame


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


def _print_evaluation(result: Any, args: argparse.Namespace, report: Any) -> None:
    """The table (or CSV, or JSON with the gates) on stdout, notes on stderr."""
    if args.per_query:
        frame = result.per_query_wide().reset_index()
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


def _cmd_data(args: argparse.Namespace) -> int:
    from ragnb.io.sample_data import build_sample

    summary = build_sample(args.out)
    print(
        json.dumps(
            {k: v for k, v in summary.items() if not isinstance(v, dict | list)},
            indent=2,
            default=str,
        )
    )
    return 0


def _cmd_traces_import(args: argparse.Namespace) -> int:
    from ragnb.io.traces import read_traces, write_traces_folder

    traces = read_traces(args.traces, retriever_attribute=args.retriever_attribute)
    written = write_traces_folder(traces, args.out)
    print(traces.describe())
    for row in traces.bad.head(args.show_bad).itertuples(index=False):
        print(f"  bad span line {row.line} id {row.span_id or '-'} ({row.name}): {row.cause}")
    print(f"wrote {len(written)} files to {args.out}")
    return 0


def _cmd_traces_example(args: argparse.Namespace) -> int:
    from ragnb.io.files import read_beir
    from ragnb.io.traces import write_example_traces
    from ragnb.retrievers.retrieve import compute_runs

    dataset = read_beir(args.dataset, qrels="optional")
    runs, _, _ = compute_runs(
        dataset, args.retrievers, depth=args.depth, cache_dir=args.cache_dir, progress=False
    )
    queries = dataset.judged_queries if dataset.has_qrels else dataset.queries
    path = write_example_traces(
        args.out,
        queries,
        runs,
        dataset.corpus,
        n_spans=args.spans,
        depth=args.depth,
        seed=args.seed,
    )
    print(f"wrote {path}: {args.spans // len(runs) * len(runs)} retriever spans of {list(runs)}")
    return 0


def _add_traces_parser(sub: Any) -> None:
    p = sub.add_parser("traces", help="production traces: retriever spans -> queries, runs")
    tsub = p.add_subparsers(dest="traces_command", required=True)
    t = tsub.add_parser(
        "import",
        help="read OpenInference retriever spans (OTLP JSON, Phoenix JSONL or parquet) into a "
        "BEIR folder (queries with counts, corpus seen) and one TREC run per retriever",
    )
    t.add_argument("traces", help="trace file (.jsonl, .json, .gz or .parquet)")
    t.add_argument("--out", required=True, help="folder to write")
    t.add_argument(
        "--retriever-attribute",
        default="",
        help="span (or resource) attribute naming the run of a span (default: the span name)",
    )
    t.add_argument("--show-bad", type=int, default=20, help="bad spans listed (default 20)")
    t.set_defaults(func=_cmd_traces_import)
    e = tsub.add_parser(
        "example",
        help="write an OTLP JSON trace file: the dataset's queries answered by retrievers",
    )
    e.add_argument("out", help="trace file to write (.jsonl)")
    e.add_argument("--dataset", default="data/pydocs", help="BEIR folder (default data/pydocs)")
    e.add_argument("--spans", type=int, default=200, help="retriever spans (default 200)")
    e.add_argument("--retrievers", nargs="+", default=["bm25", "dense"], help="runs answering")
    e.add_argument("--depth", type=int, default=5, help="documents per span (default 5)")
    e.add_argument("--seed", type=int, default=0, help="seed (default 0)")
    e.add_argument("--cache-dir", default="", help="embedding cache folder")
    e.set_defaults(func=_cmd_traces_example)


def _cmd_llm_serve(args: argparse.Namespace) -> int:
    import signal
    import threading

    from ragnb.llm.server import LocalLLMServer

    server = LocalLLMServer(
        args.model, port=args.port, n_ctx=args.n_ctx, n_threads=args.threads or None
    )
    stop = threading.Event()

    def _on_signal(signum: int, frame: object) -> None:
        stop.set()

    previous = {s: signal.signal(s, _on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        try:
            server.start()
        except ValueError as e:  # an unknown model name or a missing .gguf file
            print(f"ragnb: error: {e}", file=sys.stderr)
            return 2
        except (ImportError, RuntimeError) as e:
            print(f"ragnb: error: {e}", file=sys.stderr)
            return 1
        print(server.base_url, flush=True)
        print(f"model: {server.model}", flush=True)
        print(
            f"serving {server.model} at {server.base_url} (pid {server.pid}, started in "
            f"{server.startup_s:.1f} s); Ctrl-C to stop",
            file=sys.stderr,
            flush=True,
        )
        while not stop.wait(0.5):
            if not server.running:
                print(f"ragnb: error: the server exited:\n{server.log_tail()}", file=sys.stderr)
                return 1
        return 0
    finally:
        server.stop()
        for s, handler in previous.items():
            signal.signal(s, handler)


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
    _add_gate_options(p, "baseline run: fail on a significant drop against it")
    p.set_defaults(func=_cmd_evaluate)


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


# ----------------------------------------------------------------------------- ragnb golden


#: Options of ``ragnb golden`` that are no :class:`~ragnb.studies.golden.GoldenSetConfig` field of
#: the same name (:func:`_golden_config` sets what they stand for; a test checks the rest).
_GOLDEN_OPTIONS_NOT_FIELDS = ("retriever", "out", "quiet")


def _golden_config(args: argparse.Namespace) -> GoldenSetConfig:
    """The config of ``ragnb golden``: every option named as a config field (``--top-n`` ->
    ``top_n``) passes through as parsed, so an option is written in the parser and the
    dataclass only; here the paths become absolute, the options of
    :data:`_GOLDEN_OPTIONS_NOT_FIELDS` are translated and the command's fixed settings (no
    incremental systems, no simulation, calibration and PPI only with ``--human-labels``) are
    set."""
    from dataclasses import fields

    from ragnb.studies.golden import GoldenSetConfig

    given = vars(args)
    values = {f.name: given[f.name] for f in fields(GoldenSetConfig) if f.name in given}
    for name in ("queries", "traces", "human_labels"):
        values[name] = str(Path(given[name]).resolve()) if given[name] else ""
    values.update(
        dataset=str(Path(args.dataset).resolve()),
        retrievers=args.retriever or ["bm25", "dense"],
        min_pool=args.min_pool if args.min_pool else args.depth,
        new_systems=[],
        simulate=False,
        calibrate=bool(given["human_labels"]),
        ppi_labels=0,
        export_dir=str(Path(args.out).resolve()),
    )
    return GoldenSetConfig(**values)


def _cmd_golden(args: argparse.Namespace) -> int:
    """Build a golden set (notebook 02's pipeline) and export it to ``--out``; say on stderr
    when the judge is the local stand-in (before it starts) and what the degenerate-judge
    checks found in its grades (after the run)."""
    from ragnb.studies.golden import run
    from ragnb.studies.golden.goldenset import QRELS_NOTE
    from ragnb.studies.golden.judging import LOCAL_JUDGE_WARNING

    config = _golden_config(args)
    if config.judge == "local":
        print(f"ragnb: warning: {LOCAL_JUDGE_WARNING}", file=sys.stderr, flush=True)
    result = run(config, progress=not args.quiet)
    gs = result.golden
    if gs is None:
        raise InputError(result.banner().replace("**", "").split("\n\n")[0])
    out = Path(config.export_dir)
    result.export(out)
    c = gs.manifest()["counts"]
    print(
        f"{out / 'golden.qrels'}: {c['qrels']} judgements of {c['queries']} queries "
        f"({c['valid']} valid of {c['graded']} graded, {c['refine_calls']} listwise calls); "
        f"which judge made it in {QRELS_NOTE}, provenance in judgements.csv and manifest.json"
    )
    _print_judge_checks(gs.judge_checks())
    cal = result.calibration
    if cal is not None:
        k = cal.agreement.set_index("statistic").loc["kappa (quadratic)"]
        print(
            f"calibration ({len(cal.pairs)} pairs): quadratic kappa {k['value']:.3f} "
            f"[{k['low']:.3f}, {k['high']:.3f}]; {out / 'calibration'}"
        )
    if not result.ppi.empty:
        print(f"PPI estimates: {out / 'ppi.csv'} ({len(result.ppi)} rows)")
    return 0


def _print_judge_checks(findings: Sequence[Any]) -> None:
    """The degenerate-judge findings on stderr, with what to do; nothing when there is none."""
    if not findings:
        return
    n = len(findings)
    lines = [
        f"ragnb: warning: the judge's grades may say nothing ({n} finding{'s' if n > 1 else ''} "
        "of the degenerate-judge checks; also in manifest.json):",
        *(f"  - {f}" for f in findings),
        "  what to do: " + " ".join(dict.fromkeys(f.advice for f in findings)),
    ]
    print("\n".join(lines), file=sys.stderr, flush=True)


class _ChoicesOf(Sequence[str]):
    """The choices of an option, read from ``module.name`` when first needed (a value to check,
    a help text to print), so that building the parser imports no study: ``ragnb evaluate``
    does not pay for importing the golden-set package. The option needs a ``metavar``, else
    argparse lists the choices while the parser is built."""

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name

    def _values(self) -> tuple[str, ...]:
        import importlib

        return tuple(getattr(importlib.import_module(self.module), self.name))

    def __getitem__(self, i: Any) -> Any:
        return self._values()[i]

    def __len__(self) -> int:
        return len(self._values())

    def __contains__(self, value: object) -> bool:
        return value in self._values()


_JUDGE_CHOICES = _ChoicesOf("ragnb.studies.golden.config", "JUDGES")
_POOL_CHOICES = _ChoicesOf("ragnb.studies.golden.config", "POOL_RETRIEVERS")


def _add_golden_parser(sub: Any) -> None:
    """``ragnb golden``: notebook 02's pipeline from the command line."""

    p = sub.add_parser(
        "golden",
        help="build a golden set (pool, judge, prune, refine) and export it as TREC qrels",
        description="Pool, judge, prune and refine (notebook 02's pipeline), then export the "
        "golden set to --out: golden.qrels (TREC), golden.qrels.README (which judge made it), "
        "judgements.csv (provenance), manifest.json. Warnings (a local stand-in judge, grades "
        "that say nothing) go to stderr. `ragnb golden audit DIR --judge-kappa-min 0.4` gates "
        "the judge of a built golden set against its human labels. "
        "A dataset with corpus.jsonl and queries.jsonl and no qrels is enough with an LLM judge.",
    )
    p.add_argument("--dataset", required=True, help="BEIR folder (qrels optional)")
    p.add_argument(
        "--queries",
        default="",
        help="query file: .txt (one a line), .csv (query_id,text) or .jsonl",
    )
    p.add_argument(
        "--traces",
        default="",
        help="trace file of retriever spans (OTLP JSON, Phoenix JSONL or parquet) as the query "
        "source; its retrievers join the pool as traces-<name>",
    )
    p.add_argument(
        "--judge",
        choices=_JUDGE_CHOICES,
        metavar="JUDGE",
        default="local",
        help="the judge: %(choices)s (default local)",
    )
    p.add_argument("--model", default="gpt-4o-mini", help="LLM of the openai judge")
    p.add_argument("--prompt", default="utility-rubric", help="grading prompt (name or YAML)")
    p.add_argument("--base-url", default="", help="OpenAI-compatible server (key: $OPENAI_API_KEY)")
    p.add_argument("--rpm", type=float, default=0.0, help="requests per minute at most (0: any)")
    p.add_argument("--tpm", type=float, default=0.0, help="prompt tokens per minute (0: any)")
    p.add_argument("--split", default="test", help="qrels split, if any (default test)")
    p.add_argument("--max-queries", type=int, default=0, help="first N queries (0: all)")
    p.add_argument(
        "--retriever",
        action="append",
        choices=_POOL_CHOICES,
        metavar="SYSTEM",
        help="pool system (repeatable): %(choices)s",
    )
    p.add_argument("--depth", type=int, default=10, help="documents per pool system (10)")
    p.add_argument("--min-pool", type=int, default=0, help="pool size after pruning (--depth)")
    p.add_argument("--top-n", type=int, default=5, help="length of the refined top (5)")
    p.add_argument(
        "--refine-max-iterations", type=int, default=5, help="listwise calls per query (5)"
    )
    p.add_argument("--budget-usd", type=float, default=2.0, help="spending limit, US dollars")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--human-labels", default="", help="TREC qrels of human labels: calibrate, PPI")
    p.add_argument("--cache-dir", default="", help="cache of embeddings and LLM answers")
    p.add_argument("--out", required=True, help="run folder to write")
    p.add_argument("--quiet", action="store_true", help="no line per stage")
    p.set_defaults(func=_cmd_golden)


#: Options of ``ragnb golden audit`` that replace the golden set's judge settings.
_AUDIT_JUDGE_OPTIONS = ("judge", "model", "prompt", "base_url", "rpm", "tpm", "judge_sd", "seed")


def _cmd_golden_audit(args: argparse.Namespace) -> int:
    """Re-grade a golden set's human-labelled sample with a judge (default the golden set's
    own, through its cache; an LLM's calls go to the run folder's ledger, stage ``drift``),
    compare it with the humans and gate its kappa; exit 1 when a gate fails."""
    import dataclasses

    from ragnb.core.cache import Cache
    from ragnb.io.files import read_json
    from ragnb.judge.drift import drift_gates
    from ragnb.llm.ledger import LEDGER_FILE, Ledger
    from ragnb.studies.golden import GoldenSetConfig
    from ragnb.studies.golden.judge_checks import accepted_calibration, judge_drift
    from ragnb.studies.golden.judging import make_judge, stop_local_server
    from ragnb.studies.golden.pipeline import build_pipeline

    folder = Path(args.folder)
    manifest = folder / "manifest.json"
    if not manifest.is_file():
        raise InputError(f"{manifest}: not found: give the run folder of a golden set")
    config = read_json(manifest).get("config")
    if not isinstance(config, dict):
        raise InputError(f"{manifest}: no 'config': the golden set was not built from parameters")
    config = _audit_paths(GoldenSetConfig(**{**config, "export_dir": str(folder)}), args, manifest)
    golden = build_pipeline(config).run()
    chosen = {k: getattr(args, k) for k in _AUDIT_JUDGE_OPTIONS if getattr(args, k) is not None}
    candidate = dataclasses.replace(config, **chosen)
    labels = golden.build.labels
    try:
        judge = make_judge(
            candidate,
            labels if labels is not None else golden.qrels.iloc[:0],
            cache=Cache(config.cache_dir or None),
            ledger=Ledger(folder / LEDGER_FILE) if candidate.judge == "openai" else None,
        )
        try:
            drift = judge_drift(golden, judge, ppi=not args.no_ppi, n_boot=args.n_boot)
        finally:
            stop_local_server(judge)
    finally:
        stop_local_server(golden.judge)
    accepted = accepted_calibration(folder, args.kappa)
    if accepted is None:
        print(
            f"ragnb: note: {folder / 'calibration'} holds no accepted calibration: only "
            "--judge-kappa-min is checked",
            file=sys.stderr,
        )
    report = drift_gates(drift, minimum=args.judge_kappa_min, accepted=accepted, weights=args.kappa)
    print(drift.banner().replace("**", ""))
    if args.out:
        print(f"tables: {drift.export(args.out)}")
    print(report.message())
    return report.exit_status


#: Path parameters of a golden set's config: ``manifest.json`` shows them for people (the last
#: component of a path outside the project), so ``ragnb golden audit`` takes them as options.
_AUDIT_PATHS = ("dataset", "queries", "human_labels", "cache_dir")


def _audit_paths(config: GoldenSetConfig, args: argparse.Namespace, manifest: Path) -> Any:
    """``config`` with the path options given; every path must exist (else an error naming the
    manifest and the option to pass)."""
    import dataclasses

    from ragnb.core.paths import resolve_path

    given = {k: getattr(args, k) for k in _AUDIT_PATHS if getattr(args, k) is not None}
    config = dataclasses.replace(config, **given)
    for name in _AUDIT_PATHS:
        value = getattr(config, name)
        if value and not resolve_path(value).exists():
            option = "--" + name.replace("_", "-")
            raise InputError(
                f"{manifest}: {name} {value!r} is not found from the project root: pass {option}"
            )
    return config


def _golden_audit_parser() -> argparse.ArgumentParser:
    """``ragnb golden audit``: the judge-drift gate of a built golden set."""
    from ragnb.judge.drift import KAPPA_STATISTICS

    p = argparse.ArgumentParser(
        prog="ragnb golden audit",
        description="Re-grade the human-labelled pairs of a golden set (run folder of ragnb "
        "golden) with a judge (default: its own, through the cache; --judge/--model/--prompt "
        "name another), compare both judges with the humans (kappa with intervals, bias per "
        "grade, PPI estimates) and exit 1 when the judge's kappa is below --judge-kappa-min or "
        "below the lower end of the interval of the calibration the golden set was accepted "
        "with (calibration/calibration.json).",
    )
    p.add_argument("folder", help="the golden set's run folder (with manifest.json)")
    p.add_argument("--judge-kappa-min", type=float, default=None, help="minimum kappa, e.g. 0.4")
    p.add_argument(
        "--kappa",
        choices=sorted(KAPPA_STATISTICS),
        default="none",
        help="gated kappa: Cohen's (none) or weighted (linear, quadratic)",
    )
    p.add_argument(
        "--judge",
        choices=_JUDGE_CHOICES,
        metavar="JUDGE",
        default=None,
        help="the judge to re-grade with: %(choices)s",
    )
    p.add_argument("--model", default=None, help="LLM of the openai judge")
    p.add_argument("--prompt", default=None, help="grading prompt (name or YAML)")
    p.add_argument("--base-url", default=None, help="OpenAI-compatible server")
    p.add_argument("--rpm", type=float, default=None, help="requests per minute at most")
    p.add_argument("--tpm", type=float, default=None, help="prompt tokens per minute at most")
    p.add_argument("--judge-sd", type=float, default=None, help="noise of the noisy judge")
    p.add_argument("--seed", type=int, default=None, help="seed of the noisy judge")
    p.add_argument("--dataset", default=None, help="BEIR folder (default: the manifest's)")
    p.add_argument("--queries", default=None, help="query file (default: the manifest's)")
    p.add_argument("--human-labels", default=None, help="human qrels (default: the manifest's)")
    p.add_argument("--cache-dir", default=None, help="the judge cache (default: the manifest's)")
    p.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples (1000)")
    p.add_argument("--no-ppi", action="store_true", help="re-grade the human sample only")
    p.add_argument("--out", default="", help="folder for the tables (CSV) and drift.json")
    p.set_defaults(func=_cmd_golden_audit)
    return p


def _cmd_run(args: argparse.Namespace) -> int:
    """Run one study from its config's defaults and ``-p`` overrides; print its banner."""
    from ragnb.studies.registry import study

    chosen = study(args.study)
    params = {}
    for item in args.param or []:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise InputError(f"-p takes NAME=VALUE, got {item!r}")
        params[name.strip()] = value
    result = chosen.run(chosen.configure(params))
    print(result.banner())
    if args.export:
        for path in result.export(Path(args.export).resolve()):
            print(path)
    return 0


def _cmd_params(args: argparse.Namespace) -> int:
    """Compare (``--check``) or rewrite (``--write``) the notebooks' parameters cells."""
    from ragnb.core.paths import project_root
    from ragnb.studies.registry import sync_parameters

    folder = Path(args.notebooks) if args.notebooks else project_root() / "notebooks"
    differ = sync_parameters(folder, write=args.write, only=args.only)
    for name in differ:
        print(f"{name}: {'rewritten' if args.write else 'differs from its config'}")
    if differ and not args.write:
        print("run `ragnb params --write` to regenerate them", file=sys.stderr)
        return 1
    return 0


def _add_study_parsers(sub: Any) -> None:
    from ragnb.studies.registry import STUDIES

    names = ", ".join(s.name for s in STUDIES)
    p = sub.add_parser(
        "run",
        help="run a study (a notebook's analysis) and print its first screen",
        description=f"Run one study ({names}, or a notebook name or number) with its config's "
        "defaults and the -p overrides, print its banner (Markdown) and, with --export, the "
        "files written.",
    )
    p.add_argument("study", help=f"study name ({names}), notebook name or number")
    p.add_argument(
        "-p",
        "--param",
        action="append",
        metavar="NAME=VALUE",
        help="a config field (repeatable), read as the field's type; unknown names are an error",
    )
    p.add_argument("--export", metavar="DIR", help="write the tables, provenance and files here")
    p.set_defaults(func=_cmd_run)

    p = sub.add_parser(
        "params",
        help="check or regenerate the notebooks' parameters cells from the study configs",
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument(
        "--check", action="store_true", help="exit 1 listing the cells that differ (default)"
    )
    mode.add_argument("--write", action="store_true", help="rewrite the cells that differ")
    p.add_argument("--notebooks", help="notebook folder (default: the project's notebooks/)")
    p.add_argument(
        "--only", action="append", metavar="STUDY", help="check this study only (repeatable)"
    )
    p.set_defaults(func=_cmd_params)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for documentation and tests)."""
    parser = argparse.ArgumentParser(
        prog="ragnb", description="Evaluate the retrieval step of RAG systems."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("report", help="execute notebooks into HTML reports")
    p.add_argument("notebook", nargs="?", help="notebook name in notebooks/ (or a path)")
    p.add_argument("--all", action="store_true", help="every notebook in notebooks/")
    p.add_argument(
        "-p",
        "--param",
        nargs=2,
        action="append",
        metavar=("NAME", "VALUE"),
        help="a notebook parameter (repeatable); unknown names are an error",
    )
    p.add_argument("--dataset", help="BEIR folder; sets the notebook parameter 'dataset'")
    p.set_defaults(func=_cmd_report)

    p = sub.add_parser("retrieve", help="write a TREC run for the queries of a qrels split")
    p.add_argument("--dataset", required=True, help="BEIR folder")
    p.add_argument("--retriever", required=True, choices=["bm25", "dense", "hybrid"])
    p.add_argument(
        "--model",
        default="all-MiniLM-L6-v2",
        help="sentence-transformers name or path, or openai:<model>",
    )
    p.add_argument("-k", type=int, default=100, help="documents per query (default 100)")
    p.add_argument("--split", default="test", help="qrels split (default test)")
    p.add_argument("--rrf-k", type=int, default=60, help="RRF constant for hybrid (default 60)")
    p.add_argument("--cache-dir", default="", help="embedding cache folder")
    p.add_argument("--tag", default="", help="run tag (default: the retriever)")
    p.add_argument("--out", required=True, help="TREC run file to write")
    p.set_defaults(func=_cmd_retrieve)

    _add_evaluate_parser(sub)
    _add_evaluate_samples_parser(sub)
    _add_compare_parser(sub)

    p = sub.add_parser("data", help="build the embedded sample dataset")
    dsub = p.add_subparsers(dest="data_command", required=True)
    b = dsub.add_parser("build-sample", help="build data/pydocs from the stdlib's docstrings")
    b.add_argument("--out", default="data/pydocs", help="output folder (default data/pydocs)")
    b.set_defaults(func=_cmd_data)

    p = sub.add_parser("llm", help="a local model server (llama.cpp) for the LLM judges")
    lsub = p.add_subparsers(dest="llm_command", required=True)
    s = lsub.add_parser(
        "serve",
        help="serve a packaged model on 127.0.0.1 (OpenAI API); prints base_url, then the model",
    )
    s.add_argument(
        "--model",
        default="smollm2-135m-instruct",
        help="packaged model name (ragnb.llm.server.local_models) or a .gguf path",
    )
    s.add_argument("--port", type=int, default=None, help="port on 127.0.0.1 (default: free)")
    s.add_argument("--n-ctx", type=int, default=2048, help="context size, tokens (default 2048)")
    s.add_argument("--threads", type=int, default=0, help="CPU threads (default: all cores)")
    s.set_defaults(func=_cmd_llm_serve)
    _add_golden_parser(sub)
    _add_study_parsers(sub)
    _add_traces_parser(sub)
    sub.add_parser(
        "trec-eval",
        help="trec_eval's command line and output: ragnb trec-eval [-q] [-c] [-m MEASURE]... "
        "QRELS RUN",
        add_help=False,
    )
    return parser


def _cmd_trec_eval(argv: Sequence[str]) -> int:
    from ragnb.evaluation.trec_eval import run_trec_eval

    text, notes = run_trec_eval(argv)
    for note in notes:
        print(f"ragnb trec-eval: note: {note}", file=sys.stderr)
    sys.stdout.write(text)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``ragnb`` command."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["trec-eval"]:  # trec_eval's own flags (GNU getopt), not argparse's
        try:
            return _cmd_trec_eval(argv[1:])
        except (InputError, FileNotFoundError) as e:
            print(f"ragnb: error: {e}", file=sys.stderr)
            return 2
    parser = _golden_audit_parser() if argv[:2] == ["golden", "audit"] else build_parser()
    args = parser.parse_args(argv[2:] if argv[:2] == ["golden", "audit"] else argv)
    try:
        return int(args.func(args))
    except (InputError, FileNotFoundError, MissingExtra) as e:
        print(f"ragnb: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
