"""``ragnb report``, ``ragnb run`` and ``ragnb params``: notebooks executed into reports, studies
run from their configs, and the notebooks' parameters cells checked against the configs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ragnb.cli.options import add_param_option, params_of
from ragnb.core.paths import from_working_dir, notebooks_folder
from ragnb.errors import InputError

__all__ = ["add_report_parser", "add_study_parsers"]


def _cmd_report(args: argparse.Namespace) -> int:
    """Render notebooks into ``--out``; paths on the command line are taken from the working
    folder, and every notebook's parameters are checked before any runs."""
    from ragnb.report import render as report
    from ragnb.report.params import paths_from_working_dir
    from ragnb.studies.registry import STUDIES

    params: dict[str, Any] = params_of(args)
    if args.dataset:
        params["dataset"] = args.dataset
    if args.all:
        if args.notebook:
            raise InputError("give either a NOTEBOOK or --all, not both")
        names = [p.stem for p in report.list_notebooks()]
    elif args.notebook:
        names = [args.notebook]
    else:
        raise InputError("name a NOTEBOOK or use --all")
    out = Path(from_working_dir(args.out))
    studies = {s.notebook: s for s in STUDIES}
    plans = []
    for name in names:  # check every notebook's parameters before running any
        path = report.resolve_notebook(name)
        mine = params
        if args.all:  # a shared --dataset goes to the notebooks that take one
            declared = report.notebook_parameters(path)
            mine = {k: v for k, v in params.items() if k in declared or k != "dataset"}
        checked = paths_from_working_dir(report.check_parameters(path, mine))
        if path.stem in studies:  # the config's own checks, before the kernel starts
            studies[path.stem].configure(checked)
        plans.append((path, checked))
    for path, mine in plans:
        result = report.render_report(
            path, mine, reports_dir=out, update_index=False, progress=not args.quiet
        )
        print(f"{result.notebook}: {result.html} ({result.seconds:.1f} s)", flush=True)
    index = report.build_index(out)
    print(f"index: {index}")
    return 0


def add_report_parser(sub: Any) -> None:
    """The ``report`` subcommand's arguments."""
    p = sub.add_parser(
        "report",
        help="execute notebooks into HTML reports",
        description="Execute a notebook of ragnb (or every one with --all) with papermill and "
        "write OUT/<notebook>.html, its data (runs, tables, provenance) under "
        "OUT/<notebook>/, the executed notebook under OUT/_executed/ and OUT/index.html. "
        "Paths given here are taken from the working folder.",
    )
    p.add_argument("notebook", nargs="?", help="notebook name (01_retrieval_evaluation, ...)")
    p.add_argument("--all", action="store_true", help="every notebook, one after the other")
    add_param_option(p, "a notebook parameter")
    p.add_argument("--dataset", help="BEIR folder; sets the notebook parameter 'dataset'")
    p.add_argument(
        "--out",
        default="reports",
        metavar="DIR",
        help="folder of the reports (default: reports/ in the working folder)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar over the cells")
    p.set_defaults(func=_cmd_report)


def _cmd_run(args: argparse.Namespace) -> int:
    """Run one study from its config's defaults and ``-p`` overrides; print its banner."""
    from ragnb.report.params import paths_from_working_dir
    from ragnb.studies.registry import study

    chosen = study(args.study)
    values = paths_from_working_dir(chosen.coerce(params_of(args)))
    result = chosen.run(chosen.config_class().from_params(**values))  # type: ignore[attr-defined]
    print(result.banner())
    if args.export:
        for path in result.export(from_working_dir(args.export)):
            print(path)
    return 0


def _cmd_params(args: argparse.Namespace) -> int:
    """Compare (``--check``) or rewrite (``--write``) the notebooks' parameters cells."""
    from ragnb.studies.registry import sync_parameters

    folder = notebooks_folder(args.notebooks)
    differ = sync_parameters(folder, write=args.write, only=args.only)
    for name in differ:
        print(f"{name}: {'rewritten' if args.write else 'differs from its config'}")
    if differ and not args.write:
        print("run `ragnb params --write` to regenerate them", file=sys.stderr)
        return 1
    return 0


def add_study_parsers(sub: Any) -> None:
    """The ``run`` and ``params`` subcommands' arguments."""
    from ragnb.studies.registry import STUDIES

    names = ", ".join(s.name for s in STUDIES)
    p = sub.add_parser(
        "run",
        help="run a study (a notebook's analysis) and print its first screen",
        description=f"Run one study ({names}, or a notebook name or number) with its config's "
        "defaults and the -p overrides, print its banner (Markdown) and, with --export, the "
        "files written. Paths given here are taken from the working folder.",
    )
    p.add_argument("study", help=f"study name ({names}), notebook name or number")
    add_param_option(p, "a config field, read as the field's type")
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
