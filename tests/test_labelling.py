"""ragnb.studies.golden.labelling: the calibration sample, the crash-safe label store, the labelling
widget in-process, a kernel killed mid-labelling, and both the labelling widget and notebook 06's
what-if widget driven in a real JupyterLab in headless Chromium."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from browser import CHROMEDRIVER, CHROMIUM, open_chromium

from ragnb.errors import InputError
from ragnb.io.files import read_beir, read_records
from ragnb.io.readers import read_qrels
from ragnb.studies.golden.labelling import LabelStore, calibration_sample
from ragnb.studies.golden.labelling_view import LabellingWidget, label_pairs

REPO = Path(__file__).resolve().parents[1]


# ----------------------------------------------------------------------------- the sample


def _pool(seed: int = 0, n: int = 300) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "query_id": [f"q{i // 10}" for i in range(n)],
            "doc_id": [f"d{i}" for i in range(n)],
            "grade": rng.choice([0, 1, 2], size=n, p=[0.7, 0.2, 0.1]),
            "systems": rng.choice(["bm25", "dense", "bm25,dense", "dense,bm25"], size=n),
        }
    )


def test_sample_by_hand():
    # 4 pairs of grade 0 and 2 of grade 2, one system: n=3 proportional gives 2 and 1
    j = pd.DataFrame(
        {
            "query_id": list("aabbcc"),
            "doc_id": list("xyxyxy"),
            "grade": [0, 0, 0, 0, 2, 2],
            "system": ["bm25"] * 6,
        }
    )
    s = calibration_sample(j, n=3, seed=0, min_per_stratum=1)
    assert list(s.columns) == [
        "query_id",
        "doc_id",
        "stratum",
        "inclusion_probability",
        "grade",
        "systems",
    ]
    assert sorted(s["stratum"]) == ["grade=0|system=bm25"] * 2 + ["grade=2|system=bm25"]
    np.testing.assert_allclose(s["inclusion_probability"], [0.5, 0.5, 0.5])
    # at least 2 per stratum takes both grade-2 pairs (probability 1), the rest by proportion
    s2 = calibration_sample(j, n=4, seed=0)
    p = s2.groupby("stratum")["inclusion_probability"].first().to_dict()
    assert p == {"grade=0|system=bm25": 0.5, "grade=2|system=bm25": 1.0}
    # n at or above the population takes everything with probability 1
    s3 = calibration_sample(j, n=10, seed=0)
    assert len(s3) == 6 and (s3["inclusion_probability"] == 1.0).all()


def test_sample_strata_probabilities_and_determinism():
    pool = _pool()
    s = calibration_sample(pool, n=60, seed=7)
    assert len(s) == 60 and not s.duplicated(["query_id", "doc_id"]).any()
    # systems are a set: "bm25,dense" and "dense,bm25" are one stratum
    assert set(s["systems"]) == {"bm25", "dense", "bm25+dense"}
    pop = pool.assign(
        systems=[("+".join(sorted(v.split(",")))) for v in pool["systems"]],
    )
    pop["stratum"] = "grade=" + pop["grade"].astype(str) + "|system=" + pop["systems"]
    sizes = pop["stratum"].value_counts()
    taken = s["stratum"].value_counts()
    assert set(taken.index) == set(sizes.index)  # every non-empty stratum is sampled
    for h, n_h in taken.items():
        assert n_h >= min(2, sizes[h])
        assert abs(n_h - 60 * sizes[h] / len(pool)) < 2 + 1e-9  # proportional, up to the floor
        got = s.loc[s["stratum"] == h, "inclusion_probability"].unique()
        np.testing.assert_allclose(got, [n_h / sizes[h]])
    # Horvitz-Thompson: the weights add up to the population size, per stratum and overall
    assert (1 / s["inclusion_probability"]).sum() == pytest.approx(len(pool))
    # judge grades come along unchanged
    merged = s.merge(pool, on=["query_id", "doc_id"], suffixes=("", "_pool"))
    assert (merged["grade"] == merged["grade_pool"]).all()
    # same seed, same sample and order; another seed, another sample
    pd.testing.assert_frame_equal(s, calibration_sample(pool, n=60, seed=7))
    assert set(s["doc_id"]) != set(calibration_sample(pool, n=60, seed=8)["doc_id"])
    # the order mixes the strata (not sorted by stratum)
    assert list(s["stratum"]) != sorted(s["stratum"])


def test_sample_with_provenance_and_by_options():
    pool = _pool().drop(columns="systems")
    prov = pd.DataFrame(
        {
            "query_id": list(pool["query_id"]) + list(pool["query_id"][:50]),
            "doc_id": list(pool["doc_id"]) + list(pool["doc_id"][:50]),
            "system": ["bm25"] * len(pool) + ["dense"] * 50,
            "rank": 1,
        }
    )
    s = calibration_sample(pool, n=40, seed=1, provenance=prov)
    assert set(s["systems"]) == {"bm25", "bm25+dense"}
    g = calibration_sample(pool, n=40, seed=1, by=("grade",), provenance=prov)
    assert set(g["stratum"]) == {"grade=0", "grade=1", "grade=2"}
    srs = calibration_sample(pool, n=30, seed=1, by=())
    assert set(srs["stratum"]) == {"all"}
    np.testing.assert_allclose(srs["inclusion_probability"], 30 / len(pool))


def test_sample_errors():
    pool = _pool(n=40)
    with pytest.raises(InputError, match="lack columns"):
        calibration_sample(pool.drop(columns="grade"), n=5, seed=0)
    with pytest.raises(InputError, match="system"):
        calibration_sample(pool.drop(columns="systems"), n=5, seed=0)
    with pytest.raises(InputError, match="unknown strata"):
        calibration_sample(pool, n=5, seed=0, by=("query",))
    with pytest.raises(InputError, match="too small"):
        calibration_sample(pool, n=3, seed=0)
    with pytest.raises(InputError, match="positive integer"):
        calibration_sample(pool, n=0, seed=0)
    with pytest.raises(InputError, match="twice"):
        calibration_sample(pd.concat([pool, pool.iloc[:1]]), n=20, seed=0)


# ----------------------------------------------------------------------------- the store


def test_store_appends_resumes_and_latest_label_wins(tmp_path):
    path = tmp_path / "labels.qrels"
    store = LabelStore(path)
    assert len(store) == 0 and store.labelled().empty and store.skipped() == []
    store.label("q1", "d1", 2)
    store.label("q1", "d2", 0)
    store.skip("q2", "d3")
    assert path.read_text() == "q1 0 d1 2\nq1 0 d2 0\n"
    store.label("q1", "d1", 1)  # a new grade for a labelled pair: rewritten, moved to the end
    assert path.read_text() == "q1 0 d2 0\nq1 0 d1 1\n"
    store.label("q3", "d4", 2)  # appends still go to the (renamed) file
    assert store.retract("q1", "d2") == 0 and store.retract("q9", "d9") is None
    assert path.read_text() == "q1 0 d1 1\nq3 0 d4 2\n"
    store.close()
    again = LabelStore(path)
    assert again.labelled().values.tolist() == [["q1", "d1", 1], ["q3", "d4", 2]]
    assert again.skipped() == [("q2", "d3")] and again.grade_of("q3", "d4") == 2
    pd.testing.assert_frame_equal(again.labelled(), read_qrels(path))
    again.unskip([("q2", "d3")])
    again.skip("q5", "d5")
    assert LabelStore(path).skipped() == [("q5", "d5")]
    with pytest.raises(InputError, match="white space"):
        again.label("q 1", "d1", 1)
    with pytest.raises(InputError, match="integer"):
        again.label("q1", "d1", "2")  # type: ignore[arg-type]
    # the sample is kept beside the labels as JSON lines: ids keep their leading zeros
    sample = pd.DataFrame({"query_id": ["007"], "doc_id": ["0042"], "inclusion_probability": 1.0})
    again.write_sample(sample)
    back = again.read_sample()
    assert back is not None and back[["query_id", "doc_id"]].values.tolist() == [["007", "0042"]]


def test_store_isolates_a_torn_last_line(tmp_path):
    path = tmp_path / "labels.qrels"
    path.write_text("q1 0 d1 2\nq1 0 d2 1\nq2 0 d")  # the last write was cut short
    store = LabelStore(path)
    assert store.torn == 1
    assert store.labelled().values.tolist() == [["q1", "d1", 2], ["q1", "d2", 1]]
    assert (tmp_path / "labels.qrels.torn").read_text() == "q2 0 d\n"
    store.label("q2", "d3", 0)
    assert path.read_text() == "q1 0 d1 2\nq1 0 d2 1\nq2 0 d3 0\n"


# ----------------------------------------------------------------------------- the widget


def _items(n: int = 5) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "query_id": [f"q{i}" for i in range(n)],
            "doc_id": [f"d{i}" for i in range(n)],
            "query": [f"question {i}" for i in range(n)],
            "passage": [f"passage <b>{i}</b>" for i in range(n)],
            "judge_grade": [i % 3 for i in range(n)],
        }
    )


def test_widget_buttons_keys_skip_undo_and_hidden_judge(tmp_path):
    store = LabelStore(tmp_path / "l.qrels")
    w = LabellingWidget(_items(), store, scale=(0, 2))
    assert sorted(w.buttons) == [0, 1, 2]
    assert "ragnb-grade-2" in w.buttons[2]._dom_classes
    assert w.current == ("q0", "d0") and "question 0" in w.query.value
    assert "&lt;b&gt;0" in w.passage.value  # passage text is escaped
    assert w.judge.value == "" and "0 of 5 labelled" in w.progress.value
    w.buttons[1].click()  # the button's handler, as a click in the page calls it
    assert store.grade_of("q0", "d0") == 1 and w.current == ("q1", "d1")
    # the judge's grade of the pair just answered is revealed; nothing of the current pair
    assert "d0" in w.judge.value and "judge gave <b class='ragnb-judge-grade'>0" in w.judge.value
    assert "d1" not in w.judge.value
    w.skip_button.click()
    assert store.skipped() == [("q1", "d1")] and w.current == ("q2", "d2") and w.judge.value == ""
    w.keys.value = "2"  # the key box: a digit grades, s skips, u undoes
    assert store.grade_of("q2", "d2") == 2 and w.keys.value == ""
    w.keys.value = "u"
    assert store.grade_of("q2", "d2") is None and w.current == ("q2", "d2")
    w.undo_button.click()  # then the skip is undone: back to q1
    assert store.skipped() == [] and w.current == ("q1", "d1")
    w.keys.value = "0"
    w.keys.value = "s"
    w.keys.value = "9"  # not a grade: ignored
    assert w.counts() == {"labelled": 2, "skipped": 1, "remaining": 2, "total": 5}
    assert "2 of 5 labelled" in w.progress.value
    assert read_qrels(store.path).values.tolist() == [["q0", "d0", 1], ["q1", "d1", 0]]
    # reopening resumes where the person stopped, and can undo the last saved label
    w2 = LabellingWidget(_items(), LabelStore(tmp_path / "l.qrels"))
    assert w2.current == ("q3", "d3") and w2.counts()["labelled"] == 2
    w2.undo()
    assert w2.store.grade_of("q1", "d1") is None and w2.current == ("q1", "d1")
    for g in (2, 2, 1):  # q1, q3, q4
        w2.answer(g)
    assert w2.current is None and "All pairs done" in w2.query.value
    assert "revisit_skipped" in w2.query.value
    assert all(b.disabled for b in w2.buttons.values())
    w2.revisit_skipped()  # the skipped q2 comes back
    assert w2.current == ("q2", "d2")
    w2.answer(0)
    assert w2.counts() == {"labelled": 5, "skipped": 0, "remaining": 0, "total": 5}
    with pytest.raises(InputError, match="scale"):
        LabellingWidget(_items(), store, scale=(2, 2))


def _beir_items(tmp_path: Path, scifact: Path, n_queries: int = 6) -> tuple:
    ds = read_beir(scifact)
    q = ds.qrels.drop_duplicates("query_id").head(n_queries).reset_index(drop=True)
    neg = q.assign(doc_id=list(q["doc_id"].iloc[1:]) + [q["doc_id"].iloc[0]], relevance=0)
    j = pd.concat([q, neg], ignore_index=True).rename(columns={"relevance": "grade"})
    j["grade"] = j["grade"] * 2
    j["system"] = ["bm25", "dense"] * (len(j) // 2)
    return ds, j


def test_label_pairs_from_frames_resumes_on_the_same_sample(tmp_path, scifact_path):
    ds, j = _beir_items(tmp_path, scifact_path)
    labels = tmp_path / "human.qrels"
    w = label_pairs(j, labels, queries=ds.queries, corpus=ds.corpus, n=8, seed=3)
    assert w.counts()["total"] == 8 and w.grades == [0, 1, 2]
    sample = read_records(w.store.sample_path)
    assert {"stratum", "inclusion_probability"} <= set(sample.columns)
    first = w.current
    w.answer(2)
    w2 = label_pairs(j, labels, queries=ds.queries, corpus=ds.corpus, n=4, seed=99)
    assert w2.counts() == {**w.counts()}  # the sample on disk is reused, not redrawn
    assert w2.store.grade_of(*first) == 2 and w2.current == w.current


def test_label_pairs_from_a_run_folder(tmp_path):
    ds = read_beir(REPO / "data" / "pydocs")
    qrels = ds.qrels.head(12)
    run = tmp_path / "run"
    run.mkdir()
    qrels.rename(columns={"relevance": "grade"}).assign(source="pool", systems="bm25,dense").to_csv(
        run / "judgements.csv", index=False
    )
    manifest = {
        "dataset": {"path": str(REPO / "data" / "pydocs"), "split": "test"},
        "judge": {"scale": [0, 3]},
    }
    (run / "manifest.json").write_text(json.dumps(manifest))
    w = label_pairs(run, n=5, seed=0, min_per_stratum=1)
    assert w.store.path == run / "human.qrels" and w.grades == [0, 1, 2, 3]
    assert w.counts()["total"] == 5
    w.answer(3)
    assert read_qrels(run / "human.qrels")["relevance"].tolist() == [3]


# ----------------------------------------------------------------------------- a killed kernel

WRITER = """
import sys
from ragnb.studies.golden.labelling import LabelStore
store = LabelStore(sys.argv[1])
for i in range(1_000_000):
    store.label(f"q{i // 7}", f"d{i}", i % 3)
    if i % 50 == 0:
        print(i, flush=True)
"""


def test_killing_the_labeller_loses_no_saved_label(tmp_path):
    path = tmp_path / "labels.qrels"
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if int(line) >= 2000:
                break
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait(10)
    store = LabelStore(path)
    got = store.labelled()
    # every label saved before the kill is there, in order, each whole; nothing else
    assert len(got) > 2000
    expect = [[f"q{i // 7}", f"d{i}", i % 3] for i in range(len(got))]
    assert got.values.tolist() == expect
    assert path.read_text().endswith("\n")
    store.label("qn", "dn", 1)  # and labelling goes on
    assert read_qrels(path).shape[0] == len(got) + 1


UNDOER = """
import sys
from ragnb.studies.golden.labelling import LabelStore
store = LabelStore(sys.argv[1])
for i in range(1_000_000):
    store.label("q", f"d{i}", i % 3)
    if i % 3 == 2:
        store.retract("q", f"d{i - 1}")  # an undo: the file is rewritten and renamed
    print(i, flush=True)
"""


def _states():
    """``(last step completed, {doc: grade})`` after each write of UNDOER, in file order."""
    labels: dict[str, int] = {}
    for i in range(1_000_000):
        labels[f"d{i}"] = i % 3
        yield (i - 1 if i % 3 == 2 else i), dict(labels)
        if i % 3 == 2:
            del labels[f"d{i - 1}"]
            yield i, dict(labels)


def test_killing_the_labeller_mid_undo_corrupts_nothing(tmp_path):
    path = tmp_path / "labels.qrels"
    proc = subprocess.Popen(
        [sys.executable, "-c", UNDOER, str(path)], stdout=subprocess.PIPE, text=True
    )
    done = -1
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            done = int(line)
            if done >= 600:
                break
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait(10)
    store = LabelStore(path)
    assert store.torn == 0
    got = store.labelled()
    saved = dict(zip(got["doc_id"], got["relevance"], strict=True))
    # the file is one whole state the writer went through, at or after the last step it reported
    for step, state in _states():
        assert len(state) <= len(saved) + 2, f"no state of the writer has {len(saved)} labels"
        if list(state.items()) == list(saved.items()):
            assert step >= done
            break
    store.retract("q", got["doc_id"].iloc[-1])  # a temporary file left by the kill is no harm
    store.label("q", "new", 1)
    assert read_qrels(path).shape[0] == len(got)
    assert not list(tmp_path.glob(".labels.qrels.*.tmp"))


# ----------------------------------------------------------------------------- real JupyterLab


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str, method: str = "GET") -> bytes:
    import urllib.request

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(urllib.request.Request(url, method=method), timeout=5) as r:
        return r.read()


class Lab:
    """A ``jupyter lab`` on 127.0.0.1 serving ``root``, and a headless Chromium on it."""

    def __init__(self, root: Path, port: int, token: str, proc: subprocess.Popen) -> None:
        self.root, self.port, self.token, self.proc = root, port, token, proc

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}/{path}?token={self.token}"

    def open(self, notebook: str) -> str:
        """The URL opening ``notebook`` alone (``reset``: no tab of an earlier test restored)."""
        return self.url(f"lab/tree/{notebook}") + "&reset"

    def shutdown_kernels(self) -> None:
        for k in json.loads(_get(self.url("api/kernels"))):
            _get(self.url(f"api/kernels/{k['id']}"), method="DELETE")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(
                "Debian chromium and chromium-driver are required (make test installs them)"
            )
        pytest.skip("Debian chromium and chromium-driver are not installed")
    root = tmp_path_factory.mktemp("lab-root")
    state = tmp_path_factory.mktemp("lab-state")
    env = dict(os.environ)
    for var, sub in (
        ("JUPYTER_CONFIG_DIR", "config"),
        ("JUPYTER_DATA_DIR", "data"),
        ("JUPYTER_RUNTIME_DIR", "runtime"),
        ("JUPYTERLAB_SETTINGS_DIR", "settings"),
        ("JUPYTERLAB_WORKSPACES_DIR", "workspaces"),
        ("IPYTHONDIR", "ipython"),
    ):
        env[var] = str(state / sub)
    news = state / "settings" / "@jupyterlab" / "apputils-extension"
    news.mkdir(parents=True)  # no "get notified about Jupyter news?" toast over the page
    (news / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    port, token = _free_port(), os.urandom(16).hex()
    log = (state / "lab.log").open("w")
    proc = subprocess.Popen(
        [
            str(Path(sys.executable).with_name("jupyter")),
            "lab",
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={root}",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--LabApp.news_url=",
            "--LabApp.extension_manager=readonly",
            "--allow-root",  # CI containers run as root
        ],
        env=env,
        cwd=root,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    lab = Lab(root, port, token, proc)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                _get(lab.url("api/status"))
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        "jupyter lab did not start:\n" + (state / "lab.log").read_text()
                    ) from None
                time.sleep(0.3)
        yield lab
    finally:
        try:
            lab.shutdown_kernels()
        except OSError:
            pass
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        try:  # kernels the server started, if any outlived it (same session as the server)
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        log.close()


def _write_notebook(path: Path, cells: list[str]) -> None:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nbformat.write(nb, str(path))


def _run_all(driver, name: str) -> None:
    """Wait for notebook ``name`` (the current tab) and its kernel, then Run > Run All Cells,
    by the menus' text."""
    from selenium.common.exceptions import (
        ElementClickInterceptedException,
        StaleElementReferenceException,
        TimeoutException,
    )
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    # JupyterLab re-renders cells and menus while they load: an element read a moment after it
    # was found may be gone; the wait then looks again
    stale = (StaleElementReferenceException,)
    wait = WebDriverWait(driver, 90, ignored_exceptions=stale)
    current = "#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current"
    wait.until(lambda d: [e for e in d.find_elements("css selector", current) if name in e.text])
    wait.until(lambda d: d.find_elements("css selector", ".jp-Notebook .jp-Cell"))
    idle = ".jp-Notebook-ExecutionIndicator[data-status='idle']"
    wait.until(lambda d: d.find_elements("css selector", idle))  # the kernel is up

    def menu(d, css: str, text: str):
        hits = [e for e in d.find_elements("css selector", css) if e.text.strip() == text]
        return hits[0] if hits else False

    def started(d) -> bool:  # the first code cell's prompt shows [*] or [n]
        prompts = d.find_elements("css selector", ".jp-Notebook .jp-CodeCell .jp-InputPrompt")
        return bool(prompts) and any(c in prompts[0].text for c in "*0123456789")

    for _ in range(6):  # a click that lands before the notebook takes focus runs nothing
        try:
            # focus the notebook first: Run All Cells acts on the notebook that has it
            driver.find_elements("css selector", ".jp-Notebook .jp-Cell")[0].click()
            wait.until(lambda d: menu(d, ".lm-MenuBar-item", "Run")).click()
            wait.until(lambda d: menu(d, ".lm-Menu-item", "Run All Cells")).click()
        except (ElementClickInterceptedException, StaleElementReferenceException):
            # a dialog or notification JupyterLab opened over the menu bar (seen on a loaded
            # machine): Escape closes it, then the menu is tried again
            ActionChains(driver).send_keys(Keys.ESCAPE).perform()
            continue
        try:
            WebDriverWait(driver, 20, ignored_exceptions=stale).until(started)
            return
        except TimeoutException:
            ActionChains(driver).send_keys(Keys.ESCAPE).perform()  # an open menu or dialog
            continue
    overlays = [
        e.text.strip()[:200]
        for e in driver.find_elements("css selector", ".jp-Dialog, .Toastify__toast, .lm-Menu")
    ]
    raise AssertionError(
        f"Run > Run All Cells did not start the notebook; open over it: {overlays}"
    )


def _wait_for_output(driver, css: str, timeout: float = 90) -> None:
    """Wait for ``css`` in the page; fail with the traceback if a cell raised meanwhile."""
    from selenium.webdriver.support.ui import WebDriverWait

    error = "[data-mime-type='application/vnd.jupyter.error']"

    def ready(d):
        return d.find_elements("css selector", css) or d.find_elements("css selector", error)

    WebDriverWait(driver, timeout).until(ready)
    raised = driver.find_elements("css selector", error)
    assert not raised, "a cell raised:\n" + raised[0].text


def _wait_text(driver, css: str, needle: str, timeout: float = 30) -> str:
    from selenium.webdriver.support.ui import WebDriverWait

    def found(d):
        texts = [e.text for e in d.find_elements("css selector", css)]
        return next((t for t in texts if needle in t), False)

    return WebDriverWait(driver, timeout).until(found)


LABEL_CELLS = [
    textwrap.dedent(
        """
        import os
        import pandas as pd
        from ragnb.io.files import read_beir
        open("kernel.pid", "w").write(str(os.getpid()))
        from ragnb.studies.golden.labelling_view import label_pairs
        ds = read_beir({dataset!r})
        q = ds.qrels.drop_duplicates("query_id").head(6).reset_index(drop=True)
        neg = q.assign(doc_id=list(q["doc_id"].iloc[1:]) + [q["doc_id"].iloc[0]], relevance=0)
        judge = pd.concat([q, neg], ignore_index=True).rename(columns={{"relevance": "grade"}})
        judge["grade"] = judge["grade"] * 2  # a fake judge: the qrels on a 0-2 scale
        judge["system"] = ["bm25", "dense"] * (len(judge) // 2)
        """
    ),
    "widget = label_pairs(judge, 'labels.qrels', queries=ds.queries, corpus=ds.corpus,\n"
    "                     n=8, seed=0, scale=(0, 2))\nwidget",
]


def _click(driver, element) -> None:
    """Scroll ``element`` to the middle of its notebook, then click it."""
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
    element.click()


def _restarted(driver) -> bool:
    """True once the kernel is back after a crash, the "kernel restarting" dialog dismissed."""
    for button in driver.find_elements("css selector", ".jp-Dialog .jp-mod-accept"):
        button.click()
    idle = ".jp-Notebook-ExecutionIndicator[data-status='idle']"
    return not driver.find_elements("css selector", ".jp-Dialog") and bool(
        driver.find_elements("css selector", idle)
    )


def _pair(driver) -> tuple[str, str]:
    query = driver.find_element("css selector", ".ragnb-query").text.split("\n")[0]
    passage = driver.find_element("css selector", ".ragnb-passage").text.split("\n")[0]
    return query.removeprefix("query ").strip(), passage.removeprefix("passage ").strip()


def _answered(driver, n: int, before: tuple[str, str]) -> tuple[str, str]:
    """Wait until the progress says ``n of 8 labelled`` and the pair shown is not ``before``."""
    from selenium.webdriver.support.ui import WebDriverWait

    _wait_text(driver, ".ragnb-progress", f"{n} of 8 labelled")
    WebDriverWait(driver, 30).until(lambda d: _pair(d) != before)
    return _pair(driver)


def test_labelling_widget_in_jupyterlab(lab, tmp_path, scifact_path):
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    cells = [LABEL_CELLS[0].format(dataset=str(scifact_path)), LABEL_CELLS[1]]
    _write_notebook(lab.root / "label.ipynb", cells)
    driver = open_chromium(lab.open("label.ipynb"), tmp_path / "profile", offline=False)
    try:
        _run_all(driver, "label.ipynb")
        _wait_for_output(driver, ".ragnb-grade-2")
        sample = read_records(lab.root / "labels.qrels.sample.jsonl")
        pairs = zip(sample["query_id"].astype(str), sample["doc_id"].astype(str), strict=True)
        judge_of = dict(zip(pairs, sample["grade"], strict=True))
        _wait_text(driver, ".ragnb-progress", "0 of 8 labelled")
        judge = driver.find_element("css selector", ".ragnb-judge")
        a = _pair(driver)
        assert judge.text.strip() == ""  # hidden before the person answers
        click = {
            name: driver.find_element("css selector", f".ragnb-{name}")
            for name in ("grade-0", "grade-1", "grade-2", "skip", "undo")
        }
        _click(driver, click["grade-2"])
        b = _answered(driver, 1, a)
        text = _wait_text(driver, ".ragnb-judge", "judge gave")
        assert a[1] in text and f"the judge gave {judge_of[a]}" in text and judge.is_displayed()
        assert b[1] not in text  # the next pair's judge grade is not on the page
        _click(driver, click["skip"])
        WebDriverWait(driver, 30).until(lambda d: _pair(d) != b)
        _wait_text(driver, ".ragnb-progress", "1 skipped")
        c = _pair(driver)
        assert driver.find_element("css selector", ".ragnb-judge").text.strip() == ""
        _click(driver, click["grade-0"])
        d = _answered(driver, 2, c)
        _click(driver, click["undo"])  # back to c, unlabelled
        WebDriverWait(driver, 30).until(lambda dr: _pair(dr) == c)
        _wait_text(driver, ".ragnb-progress", "1 of 8 labelled")
        keys = driver.find_element("css selector", ".ragnb-keys input")
        _click(driver, keys)
        keys.send_keys("1")  # the key box: 1 grades c
        assert _answered(driver, 2, c) == d
        keys.send_keys("2")
        e = _answered(driver, 3, d)
        WebDriverWait(driver, 10).until(lambda dr: keys.get_attribute("value") == "")
        labels = read_qrels(lab.root / "labels.qrels")
        assert labels.values.tolist() == [[*a, 2], [*c, 1], [*d, 2]]
        assert LabelStore(lab.root / "labels.qrels").skipped() == [b]
        # kill the kernel (SIGKILL) mid-labelling: every saved label stays, the file parses,
        # and the view built again resumes on the pair where the person stopped
        old_pid = (lab.root / "kernel.pid").read_text()
        os.kill(int(old_pid), signal.SIGKILL)
        assert read_qrels(lab.root / "labels.qrels").values.tolist() == labels.values.tolist()
        # JupyterLab restarts the kernel and says so in a dialog; then run everything again
        WebDriverWait(driver, 60).until(lambda dr: dr.find_elements("css selector", ".jp-Dialog"))
        WebDriverWait(driver, 60).until(_restarted)
        for _ in range(3):
            _run_all(driver, "label.ipynb")
            try:
                WebDriverWait(driver, 30).until(
                    lambda dr: (lab.root / "kernel.pid").read_text() != old_pid
                )
                break
            except TimeoutException:
                continue
        _wait_text(driver, ".ragnb-progress", "3 of 8 labelled, 1 skipped", timeout=90)
        WebDriverWait(driver, 30).until(lambda dr: _pair(dr) == e)
    except Exception:
        driver.save_screenshot(str(tmp_path / "failure.png"))
        raise
    finally:
        driver.quit()


WHATIF_CELL = "retrievers = ['bm25']\nwidgets = 'on'\nks = [1, 5, 10, 20]\nalphas = [0.0, 0.5, 1.0]"


def test_whatif_widget_in_jupyterlab(lab, tmp_path):
    """A copy of notebook 06 (BM25 only, widgets on) in JupyterLab: the K slider, moved with
    the keyboard, changes the table."""
    import nbformat
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    nb = nbformat.read(str(REPO / "notebooks" / "06_what_if.ipynb"), as_version=4)
    at = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", []))
    nb.cells.insert(at + 1, nbformat.v4.new_code_cell(WHATIF_CELL))
    nbformat.write(nb, str(lab.root / "whatif.ipynb"))
    driver = open_chromium(lab.open("whatif.ipynb"), tmp_path / "profile", offline=False)
    try:
        _run_all(driver, "whatif.ipynb")
        _wait_for_output(driver, ".widget-output table", timeout=120)
        wait = WebDriverWait(driver, 30, ignored_exceptions=(StaleElementReferenceException,))

        def table(d) -> str:
            return "\n".join(
                e.text for e in d.find_elements("css selector", ".widget-output table")
            )

        before = table(driver)
        assert "P@10" in before and "P@20" not in before
        handle = driver.find_element("css selector", ".widget-slider .noUi-handle")
        handle.click()
        handle.send_keys(Keys.ARROW_RIGHT)
        wait.until(lambda d: "P@20" in table(d))
        after = table(driver)
        assert after != before and "P@10" not in after
    finally:
        driver.quit()
