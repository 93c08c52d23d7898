"""What ragnb reads of the machine it runs on: the cores this process may use."""

from __future__ import annotations

import os

__all__ = ["usable_cores"]


def usable_cores() -> int:
    """The cores this process may run on.

    Returns
    -------
    int
        At least 1: the CPU affinity set's size where the system has one (Linux: a container's
        or ``taskset``'s limit), else ``os.cpu_count()``.
    """
    affinity = getattr(os, "sched_getaffinity", None)
    if affinity is not None:
        return max(1, len(affinity(0)))
    return max(1, os.cpu_count() or 1)
