"""ragnb.core.machine: the cores a process may use, as its CPU affinity limits them."""

from __future__ import annotations

import os
import subprocess
import sys

from ragnb.core.machine import usable_cores


def test_usable_cores_is_the_affinity_set():
    assert usable_cores() == len(os.sched_getaffinity(0)) >= 1


def test_a_process_limited_to_one_core_sees_one():
    # taskset: util-linux, essential on Debian
    code = "from ragnb.core.machine import usable_cores; print(usable_cores())"
    out = subprocess.run(
        ["taskset", "-c", "0", sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "1"
