"""trec_eval's C binary against ``ragnb trec-eval`` and ``ragnb evaluate`` on one large run file.

Builds trec_eval from its source (``make`` with the system's C compiler), generates a TREC run
of ``--queries`` queries x ``--depth`` documents (default 100,000 x 100: 10 million lines,
about 290 MB) and qrels of ``--judged`` documents per query (1.5 million lines), then runs, each
in its own process, and prints the wall time and peak resident memory (``ru_maxrss`` of that
process, from ``os.wait4``):

* ``trec_eval -m ndcg_cut.10 -m P.10 -m recall.100`` and ``ragnb trec-eval`` with the same
  arguments (their outputs compared byte for byte);
* ``ragnb evaluate -m nDCG@10 -m P@10 -m R@100`` (the default path) and with ``--stream``;
* ``trec_eval -m all_trec`` and ``ragnb trec-eval -m all_trec`` (outputs compared).

Beside them, in the same run and right before each ``ragnb trec-eval`` (on a shared machine
the load moves between commands): ``ragnb trec-eval``'s start-up (best of three calls on a run
of three lines), pyarrow's parse of the run's three columns read (query, document, score: best
of three, in a process of its own, as each command runs), and the command's time beyond
start-up (its time minus the start-up) as a ratio to that parse; the same ratio of CPU times is
printed beside it. The goals: start-up at most 0.5 s, the ratio at most 3.0 for the three
measures and 4.0 for ``all_trec``, ragnb's peak memory at most the C binary's.

Usage::

    python benchmarks/trec_eval.py --trec-eval-src /path/to/trec_eval     # a checkout
    python benchmarks/trec_eval.py --queries 10000                        # 1 M lines

Without ``--trec-eval-src`` the source is cloned from https://github.com/usnistgov/trec_eval
into the work folder (needs ``git`` and the network).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

THREE_C = ["-m", "ndcg_cut.10", "-m", "P.10", "-m", "recall.100"]
THREE_RAGNB = ["-m", "nDCG@10", "-m", "P@10", "-m", "R@100"]
CHUNK = 10_000


def build_trec_eval(source: Path | None, work: Path) -> Path:
    """The path of a trec_eval binary built with ``make`` from ``source`` (cloned if None)."""
    if source is None:
        source = work / "trec_eval-src"
        if not source.exists():
            subprocess.run(
                ["git", "clone", "--depth", "1", "https://github.com/usnistgov/trec_eval", source],
                check=True,
            )
    build = work / "trec_eval-build"
    if build.exists():
        shutil.rmtree(build)
    shutil.copytree(source, build, ignore=shutil.ignore_patterns(".git", "test"))
    subprocess.run(["make", "-s"], cwd=build, check=True, stdout=subprocess.DEVNULL)
    return build / "trec_eval"


def generate(
    folder: Path, n_queries: int, depth: int, judged: int, seed: int = 0
) -> tuple[Path, Path]:
    """Write ``run.txt`` (``qid Q0 docid rank score tag``) and ``qrels.txt`` in chunks."""
    rng = np.random.default_rng(seed)
    run_path, qrels_path = folder / "run.txt", folder / "qrels.txt"
    with run_path.open("w") as run_f, qrels_path.open("w") as qrels_f:
        for start in range(0, n_queries, CHUNK):
            q = np.arange(start, min(start + CHUNK, n_queries))
            docs = (q[:, None] * 7919 + np.arange(depth)[None, :] * 13) % 100_000
            scores = -np.sort(-rng.random((len(q), depth)), axis=1)
            lines = [
                f"q{qi:08d} Q0 d{d:08d} {r + 1} {s:.6f} bench\n"
                for qi, row, srow in zip(q, docs, scores, strict=True)
                for r, (d, s) in enumerate(zip(row, srow, strict=True))
            ]
            run_f.write("".join(lines))
            # judged documents: some retrieved (every 7th rank), the rest outside the run
            qlines = []
            for qi, row in zip(q, docs, strict=True):
                picked = list(row[::7][: judged // 2]) + [
                    (qi * 31 + j * 17) % 100_000 + 100_000 for j in range(judged - judged // 2)
                ]
                grades = rng.integers(0, 3, len(picked))
                qlines += [
                    f"q{qi:08d} 0 d{d:08d} {g}\n" for d, g in zip(picked, grades, strict=True)
                ]
            qrels_f.write("".join(qlines))
    return qrels_path, run_path


def parse_seconds(run: Path, repeat: int = 3) -> tuple[float, float]:
    """Best wall time of pyarrow's CSV reader on the run's query, document and score columns (the
    other three skipped), and the CPU time of that call (all threads): measured in a process of
    its own (:func:`_parse_in_this_process`), so that this one stays small; a child forked from
    a large parent counts the parent's pages in its peak memory (``ru_maxrss``)."""
    out = subprocess.run(
        [sys.executable, __file__, "--parse-only", str(run), "--repeat", str(repeat)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return float(out[0]), float(out[1])


def _parse_in_this_process(run: Path, repeat: int) -> tuple[float, float]:
    """:func:`parse_seconds` in this process."""
    import pyarrow as pa
    from pyarrow import csv

    best = (float("inf"), float("inf"))
    for _ in range(repeat):
        start, cpu = time.perf_counter(), time.process_time()
        table = csv.read_csv(
            run,
            read_options=csv.ReadOptions(
                column_names=["query_id", "q0", "doc_id", "rank", "score", "tag"],
                block_size=1 << 22,
            ),
            parse_options=csv.ParseOptions(
                delimiter=" ", quote_char=False, double_quote=False, escape_char=False
            ),
            convert_options=csv.ConvertOptions(
                column_types={
                    "query_id": pa.string(),
                    "doc_id": pa.string(),
                    "score": pa.float64(),
                },
                include_columns=["query_id", "doc_id", "score"],
            ),
        )
        best = min(best, (time.perf_counter() - start, time.process_time() - cpu))
        del table
    return best


def startup_seconds(ragnb: list[str], work: Path, repeat: int = 3) -> tuple[float, float]:
    """Best wall time of ``ragnb trec-eval`` on a run of three lines (the command's start), and
    that call's CPU time."""
    tiny = work / "tiny"
    tiny.mkdir(exist_ok=True)
    (tiny / "run.txt").write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\nq2 Q0 d1 1 1.0 t\n")
    (tiny / "qrels.txt").write_text("q1 0 d2 1\nq2 0 d1 1\n")
    cmd = [*ragnb, "trec-eval", *THREE_C, str(tiny / "qrels.txt"), str(tiny / "run.txt")]
    return min(measure(cmd, tiny / "out")[:2] for _ in range(repeat))


def measure(cmd: list[str], out: Path) -> tuple[float, float, float]:
    """Run ``cmd`` with stdout to ``out``; (wall seconds, CPU seconds (user + system), peak
    resident memory in MB). On a shared machine the CPU time moves less than the wall time."""
    start = time.perf_counter()
    with out.open("w") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        err = proc.stderr.read().decode() if proc.stderr else ""
        raise SystemExit(f"{' '.join(cmd)} failed: {err}")
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--queries", type=int, default=100_000)
    p.add_argument("--depth", type=int, default=100)
    p.add_argument("--judged", type=int, default=15)
    p.add_argument("--trec-eval-src", type=Path, default=None, help="trec_eval source folder")
    p.add_argument("--work", type=Path, default=None, help="work folder (default: a temp one)")
    p.add_argument("--skip-all-trec", action="store_true", help="only the three measures")
    p.add_argument(
        "--skip-c",
        action="store_true",
        help="ragnb's commands only: trec_eval is neither built nor run (no output comparison)",
    )
    p.add_argument(
        "--skip-evaluate", action="store_true", help="no ragnb evaluate (with or without --stream)"
    )
    p.add_argument(
        "--reuse", action="store_true", help="keep run.txt and qrels.txt of --work if present"
    )
    p.add_argument("--parse-only", type=Path, help=argparse.SUPPRESS)  # parse_seconds' child
    p.add_argument("--repeat", type=int, default=3, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.parse_only:
        print(*_parse_in_this_process(args.parse_only, args.repeat))
        return
    work = args.work or Path(tempfile.mkdtemp(prefix="ragnb-trec-eval-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    binary = None if args.skip_c else build_trec_eval(args.trec_eval_src, work)
    t0 = time.perf_counter()
    reused = args.reuse and (work / "run.txt").exists() and (work / "qrels.txt").exists()
    if reused:
        qrels, run = work / "qrels.txt", work / "run.txt"
    else:
        qrels, run = generate(work, args.queries, args.depth, args.judged)
    size_mb = run.stat().st_size / 1e6
    made = "reused" if reused else f"generated in {time.perf_counter() - t0:.1f} s"
    print(
        f"run: {args.queries * args.depth:,} lines, {size_mb:.0f} MB; qrels: "
        f"{args.queries * args.judged:,} lines; {made}"
    )
    ragnb = [sys.executable, "-m", "ragnb.cli.main"]
    jobs = [
        ("trec_eval, 3 measures", [str(binary), *THREE_C, str(qrels), str(run)], "c3"),
        ("ragnb trec-eval, 3 measures",
         [*ragnb, "trec-eval", *THREE_C, str(qrels), str(run)], "r3"),
        ("ragnb evaluate", [*ragnb, "evaluate", str(qrels), str(run), *THREE_RAGNB], "e3"),
        ("ragnb evaluate --stream", [*ragnb, "evaluate", str(qrels), str(run), *THREE_RAGNB,
                                     "--stream"], "s3"),
    ]  # fmt: skip
    if not args.skip_all_trec:
        jobs += [
            ("trec_eval -m all_trec", [str(binary), "-m", "all_trec", str(qrels), str(run)], "ca"),
            ("ragnb trec-eval -m all_trec",
             [*ragnb, "trec-eval", "-m", "all_trec", str(qrels), str(run)], "ra"),
        ]  # fmt: skip
    skipped = ("c" if binary is None else "") + ("es" if args.skip_evaluate else "")
    jobs = [job for job in jobs if job[2][0] not in skipped]
    results: dict[str, tuple[float, float]] = {}
    peaks: dict[str, float] = {}
    print(f"load average at the start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    beside: dict[str, tuple[tuple[float, float], tuple[float, float]]] = {}
    print(
        f"{'command':<32} {'time s':>8} {'CPU s':>8} {'peak MB':>8} {'x C time':>9} {'x C CPU':>8}"
    )
    for label, cmd, key in jobs:
        if key in ("r3", "ra"):  # start-up and parse, right before the command
            beside[key] = startup_seconds(ragnb, work), parse_seconds(run)
            (up, up_cpu), (parse, parse_cpu) = beside[key]
            print(f"  start-up (3-line run, best of 3): {up:.3f} s, CPU {up_cpu:.2f} s "
                  f"(goal <= 0.5); pyarrow parse of query, doc, score (best of 3): {parse:.3f} s, "
                  f"CPU {parse_cpu:.2f} s")  # fmt: skip
        seconds, cpu, peak = measure(cmd, work / f"out.{key}")
        results[key] = (seconds, cpu)
        peaks[key] = peak
        base = results.get("c3" if key.endswith("3") else "ca")
        ratios = f"{seconds / base[0]:9.3f} {cpu / base[1]:8.3f}" if base else ""
        print(f"{label:<32} {seconds:8.1f} {cpu:8.1f} {peak:8.0f} {ratios}")
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for c, r, goal in (("c3", "r3", 3.0), ("ca", "ra", 4.0)):
        if r not in results:
            continue
        (up, up_cpu), (parse, parse_cpu) = beside[r]
        beyond, beyond_cpu = results[r][0] - up, results[r][1] - up_cpu
        print(f"{r}: beyond start-up {beyond:.2f} s = {beyond / parse:.2f} x pyarrow's parse "
              f"(goal <= {goal}); CPU {beyond_cpu:.2f} s = {beyond_cpu / parse_cpu:.2f} x the "
              f"parse's; peak {peaks[r]:.0f} MB")  # fmt: skip
        if c in results:
            same = (work / f"out.{c}").read_bytes() == (work / f"out.{r}").read_bytes()
            print(f"output of {r} equals trec_eval's byte for byte: {same}")
            print(f"{r}: peak against the C binary's {peaks[c]:.0f} MB: {peaks[r] / peaks[c]:.3f}")
    print(f"files in {work}")


if __name__ == "__main__":
    main()
