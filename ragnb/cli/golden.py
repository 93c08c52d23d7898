"""``ragnb golden`` and ``ragnb golden audit``: a golden set built from the command line, and its
judge gated against human labels.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragnb.cli.options import add_param_option, params_of
from ragnb.core.paths import from_working_dir
from ragnb.errors import InputError

if TYPE_CHECKING:
    from ragnb.studies.golden import GoldenSetConfig

__all__ = ["add_parser", "audit_parser"]


#: Options of ``ragnb golden`` that are no :class:`~ragnb.studies.golden.GoldenSetConfig` field of
#: the same name (:func:`_golden_config` sets what they stand for; a test checks the rest).
_GOLDEN_OPTIONS_NOT_FIELDS = ("retriever", "out", "quiet", "param")


def _golden_config(args: argparse.Namespace) -> GoldenSetConfig:
    """The config of ``ragnb golden``: every option named as a config field (``--top-n`` ->
    ``top_n``) passes through as parsed, so an option is written in the parser and the
    dataclass only; here the paths become absolute, the options of
    :data:`_GOLDEN_OPTIONS_NOT_FIELDS` are translated and the command's fixed settings (no
    incremental systems, no simulation, calibration and PPI only with ``--human-labels``) are
    set. ``-p NAME=VALUE`` sets the option of that name (``-p depth=20`` is ``--depth 20``) or
    any other config field (``-p nugget_max=3``), after the fixed settings."""
    from dataclasses import fields

    from ragnb.report.params import paths_from_working_dir
    from ragnb.studies.golden import GoldenSetConfig
    from ragnb.studies.golden.config import command_sizes
    from ragnb.studies.registry import study

    extra = paths_from_working_dir(study("golden").coerce(params_of(args)))
    given = vars(args) | {k: v for k, v in extra.items() if k in vars(args)}  # -p depth=20
    sizes = command_sizes(given["judge"])
    given |= {k: sizes[k] for k in sizes if given[k] is None}
    values = {f.name: given[f.name] for f in fields(GoldenSetConfig) if f.name in given}
    for name in ("queries", "traces", "human_labels"):
        values[name] = from_working_dir(given[name]) if given[name] else ""
    values.update(
        dataset=from_working_dir(given["dataset"]),
        retrievers=given["retriever"] or ["bm25", "dense"],
        min_pool=given["min_pool"] if given["min_pool"] else given["depth"],
        new_systems=[],
        simulate=False,
        calibrate=bool(given["human_labels"]),
        ppi_labels=0,
        export_dir=from_working_dir(given["out"]),
    )
    values.update({k: v for k, v in extra.items() if k not in given})
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
    nuggets = result.nuggets
    if nuggets is not None:
        c = nuggets.counts
        print(
            f"nuggets: {c['nuggets']} for {c['queries']} of {nuggets.n_queries} queries; "
            f"NuggetRecall@{nuggets.k} averages over those {c['queries']}: "
            f"{out / 'nugget_recall.csv'}"
        )
        _print_judge_checks(nuggets.findings, "the nuggets state no facts", "nuggets.csv")
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


def _print_judge_checks(
    findings: Sequence[Any],
    headline: str = "the judge's grades may say nothing",
    where: str = "also in manifest.json",
) -> None:
    """The degenerate-judge findings on stderr, with what to do; nothing when there is none."""
    if not findings:
        return
    n = len(findings)
    lines = [
        f"ragnb: warning: {headline} ({n} finding{'s' if n > 1 else ''} of the degenerate-judge "
        f"checks; {where}):",
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


def add_parser(sub: Any) -> None:
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
    p.add_argument(
        "--depth", type=int, default=None, help="documents per pool system (10; local judge: 5)"
    )
    p.add_argument("--min-pool", type=int, default=0, help="pool size after pruning (--depth)")
    p.add_argument(
        "--top-n", type=int, default=None, help="length of the refined top (5; local judge: 3)"
    )
    p.add_argument(
        "--refine-max-iterations",
        type=int,
        default=None,
        help="listwise calls per query (5; local judge: 1)",
    )
    p.add_argument("--budget-usd", type=float, default=2.0, help="spending limit, US dollars")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--human-labels", default="", help="TREC qrels of human labels: calibrate, PPI")
    p.add_argument(
        "--checks",
        default="auto",
        metavar="CHECKS",
        help="judge checks after the build, each calling the judge again: all, none, or some of "
        "consistency,audit,drift,nuggets (default auto: all, none with the local judge)",
    )
    p.add_argument("--cache-dir", default="", help="cache of embeddings and LLM answers")
    p.add_argument("--out", required=True, help="run folder to write")
    p.add_argument("--quiet", action="store_true", help="no line per stage")
    add_param_option(p, "a field of the golden set's config (notebook 02's parameters)")
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

    folder = Path(from_working_dir(args.folder))
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
        print(f"tables: {drift.export(from_working_dir(args.out))}")
    print(report.message())
    return report.exit_status


#: Path parameters of a golden set's config: ``manifest.json`` shows them for people (the last
#: component of a path outside the project), so ``ragnb golden audit`` takes them as options.
_AUDIT_PATHS = ("dataset", "queries", "human_labels", "cache_dir")


def _audit_paths(config: GoldenSetConfig, args: argparse.Namespace, manifest: Path) -> Any:
    """``config`` with the path options given, taken from the working folder, and the manifest's
    relative paths taken from the working folder, else from the project root; every path must
    exist (else an error naming the manifest and the option to pass)."""
    import dataclasses

    from ragnb.core.paths import resolve_path

    given = {
        k: from_working_dir(v) if v else v
        for k in _AUDIT_PATHS
        if (v := getattr(args, k)) is not None
    }
    found: dict[str, Any] = {}
    for name in _AUDIT_PATHS:
        value = given.get(name, getattr(config, name))
        if not value:
            continue
        here = Path(value).resolve()  # a relative path: the working folder first
        if not here.exists() and not Path(value).is_absolute():
            here = resolve_path(value)  # then the project (a manifest names its data so)
        if not here.exists():
            option = "--" + name.replace("_", "-")
            where = "is not found" if name in given else "of the manifest is not found"
            raise InputError(
                f"{manifest}: {name} {value!r} {where} from the working folder or the project "
                f"root: pass {option}"
            )
        found[name] = str(here)
    return dataclasses.replace(config, **found)


def audit_parser() -> argparse.ArgumentParser:
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
