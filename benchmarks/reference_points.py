"""nDCG@10 on SciFact's 300 test queries against the published reference points.

Usage (from the repository root)::

    .venv/bin/python benchmarks/reference_points.py
    .venv/bin/python benchmarks/reference_points.py --model minilm-l6-int8-onnx

Renders notebook 01 (``ragnb report 01_retrieval_evaluation``) on ``../shared/datasets/scifact``
with BM25, dense retrieval by ``--model`` (default the float sentence-transformers
``all-MiniLM-L6-v2``, the model of the MTEB reference point) and their RRF hybrid, then holds
its exported ``aggregate.csv`` against:

- BM25: BEIR (Thakur et al., NeurIPS 2021 Datasets and Benchmarks, Table 2) reports 0.665;
  accepted in [0.655, 0.695] (Lucene BM25 settings differ between implementations);
- all-MiniLM-L6-v2: MTEB (Muennighoff et al., EACL 2023) reports 0.645; accepted within 0.01;
- the hybrid above both BM25 and 0.6.

Embedding the 5,183 abstracts with the float model takes about 8 minutes on two cores, which is
why this check lives here and not in the test suite (the suite checks BM25 on SciFact alone, in
``tests/test_retrieve.py``). Exit status 1 when a value is outside its bounds.
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
SCIFACT = REPO.parent / "shared" / "datasets" / "scifact"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, default=SCIFACT, help="the SciFact BEIR folder")
    parser.add_argument("--model", default="all-MiniLM-L6-v2", help="the dense retriever's model")
    args = parser.parse_args(argv)

    from ragnb.report.render import render_report

    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        render_report(
            "01_retrieval_evaluation",
            {"dataset": str(args.dataset), "model": args.model, "export_dir": f"{tmp}/export"},
            reports_dir=Path(tmp),
            update_index=False,
        )
        seconds = time.perf_counter() - start
        agg = pd.read_csv(Path(tmp) / "export" / "aggregate.csv")
    at10 = agg[agg["measure"] == "nDCG@10"].set_index("retriever")
    bm25, dense, hybrid = (float(at10.loc[name, "value"]) for name in ("bm25", "dense", "hybrid"))
    checks = [
        ("queries", int(at10["n_valid"].min()), "300 valid", (at10["n_valid"] == 300).all()),
        ("BM25 nDCG@10", bm25, "BEIR 0.665, accepted [0.655, 0.695]", 0.655 <= bm25 <= 0.695),
        (f"{args.model} nDCG@10", dense, "MTEB 0.645 +- 0.01", abs(dense - 0.645) <= 0.01),
        ("hybrid nDCG@10", hybrid, "> max(BM25, 0.6)", hybrid > max(bm25, 0.6)),
    ]
    print(f"{platform.node()} {platform.machine()} {date.today()}; render {seconds:.0f} s")
    for name, value, reference, ok in checks:
        shown = f"{value:.4f}" if isinstance(value, float) else str(value)
        print(f"{'ok  ' if ok else 'FAIL'} {name:<34} {shown:>8}   {reference}")
    return 0 if all(ok for *_, ok in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
