"""One package per notebook, each ``Config -> run(config) -> Result``:
:mod:`~ragnb.studies.retrieval` (01), :mod:`~ragnb.studies.golden` (02),
:mod:`~ragnb.studies.diagnostics` (03), :mod:`~ragnb.studies.clq` (04),
:mod:`~ragnb.studies.correlation` (05), :mod:`~ragnb.studies.whatif` (06), and
:mod:`~ragnb.studies.agentic` (a search agent traced with OpenTelemetry); no study imports
another. :mod:`ragnb.studies.registry` names them for the command line.
"""

from __future__ import annotations

from ragnb.core.lazylibs import lazy_exports

__getattr__, __dir__ = lazy_exports(
    __name__,
    [
        "ragnb.studies.registry",
    ],
)
