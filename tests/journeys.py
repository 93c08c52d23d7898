"""What the journey tests share: the installed command, run as a user runs it, and a small BEIR
folder cut from the shipped sample dataset."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

RAGNB = Path(sys.executable).parent / "ragnb"
SAMPLE = Path(__file__).resolve().parents[1] / "data" / "pydocs"


def ragnb(*args: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``ragnb ARGS`` run from ``cwd`` as a user runs it."""
    return subprocess.run(
        [str(RAGNB), *args], cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


def write_dataset(folder: Path, n_queries: int, n_docs: int) -> Path:
    """A BEIR folder of the first ``n_queries`` queries of the sample dataset, the documents
    judged for them and others up to ``n_docs``."""
    (folder / "qrels").mkdir(parents=True)
    lines = (SAMPLE / "queries.jsonl").read_text(encoding="utf-8").splitlines()[:n_queries]
    qids = {json.loads(line)["_id"] for line in lines}
    (folder / "queries.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    header, *rows = (SAMPLE / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()
    rows = [r for r in rows if r.split("\t")[0] in qids]
    (folder / "qrels" / "test.tsv").write_text("\n".join([header, *rows]) + "\n")
    judged = {r.split("\t")[1] for r in rows}
    docs = (SAMPLE / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    keep = [d for d in docs if json.loads(d)["_id"] in judged]
    keep += [d for d in docs if json.loads(d)["_id"] not in judged][: n_docs - len(keep)]
    (folder / "corpus.jsonl").write_text("\n".join(keep) + "\n", encoding="utf-8")
    return folder
