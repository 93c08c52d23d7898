"""The local LLM server's thread count follows how busy the machine is now."""

import os
import subprocess
import sys
import time

import pytest

from ragnb.errors import InputError
from ragnb.llm.server import THREADS_ENV, LocalLLMServer, _busy_cores, _thread_count

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="reads /proc/stat")


def test_busy_cores_is_within_the_machine():
    n = sum(1 for line in open("/proc/stat") if line.startswith("cpu") and line[3:4].isdigit())
    busy = _busy_cores(0.2)
    assert busy is not None
    assert 0.0 <= busy <= n


def test_the_thread_count_follows_the_machine_or_the_environment(monkeypatch):
    monkeypatch.delenv(THREADS_ENV, raising=False)
    assert 1 <= _thread_count() <= len(os.sched_getaffinity(0))
    monkeypatch.setenv(THREADS_ENV, "3")
    assert _thread_count() == 3 and LocalLLMServer().n_threads == 3
    assert LocalLLMServer(n_threads=2).n_threads == 2  # an explicit count wins
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv(THREADS_ENV, bad)
        with pytest.raises(InputError, match="RAGNB_LLM_THREADS must be a positive integer"):
            LocalLLMServer()


def test_a_spinning_process_counts_as_busy():
    spin = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)
        busy = _busy_cores(0.5)
    finally:
        spin.kill()
        spin.wait()
    assert busy is not None
    assert busy >= 0.8  # the spinning process alone keeps one core busy
