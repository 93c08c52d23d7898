"""Write trec_eval 10.0's output on the two carried runs of ``tests/data/oracle/dl-like``.

``tests/test_trec_eval.py`` checks that ``ragnb trec-eval -q -c -m all_trec`` prints the same
bytes (``out.dl-like.*.aqc``) and that ``ragnb evaluate`` gives every per-query value to 1e-9
(``out17.dl-like.*.aqc``). The files were made with trec_eval built by ``make`` from commit
f4253652c8efd0d86ddffd0d163cc0a0f813111a of https://github.com/usnistgov/trec_eval (17 June
2026, "Updating CHANGELOG for version 10.0"), once unpatched and once with ``%.17g`` in place
of ``%6.4f`` in ``meas_print_single.c`` and ``meas_print_final.c`` (every digit of each
double; ``sed -i 's/%6.4f/%.17g/g'`` on the two files), with::

    python tests/data/trec_eval/make_oracle_outputs.py --trec-eval /path/to/trec_eval \
        --trec-eval-17 /path/to/widened/trec_eval

``-c`` because each run lacks a few queries of the qrels (trec_eval 10.0 stops otherwise).
The case has grades 1-3 and no grade-0 line, as the shared ``msmarco-dl-subset``.
"""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
CASE = HERE.parent / "oracle" / "dl-like"
ARGS = ["-q", "-c", "-m", "all_trec"]
#: carried run -> the output file written here (``out17.`` in place of ``out.`` for the
#: widened build)
OUTPUTS = {"bm25.run": "out.dl-like.bm25.aqc", "dense.run": "out.dl-like.dense.aqc"}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--trec-eval", type=Path, required=True, help="the trec_eval binary")
    p.add_argument("--trec-eval-17", type=Path, required=True, help="the widened build")
    args = p.parse_args(argv)
    for binary, prefix in ((args.trec_eval, "out."), (args.trec_eval_17, "out17.")):
        for run, name in OUTPUTS.items():
            out = subprocess.run(
                [str(binary), *ARGS, "qrels.txt", run], cwd=CASE, check=True, capture_output=True
            )
            name = name.replace("out.", prefix, 1)
            (HERE / name).write_bytes(out.stdout)
            print(f"{name}: {len(out.stdout.splitlines())} lines")


if __name__ == "__main__":
    main()
