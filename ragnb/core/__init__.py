"""The floor every layer stands on: paths, provenance and secret redaction, lazy imports of
optional libraries, shared docstring entries, input checks and the content-addressed cache.

:mod:`ragnb.core.paths`, :mod:`ragnb.core.provenance`, :mod:`ragnb.core.lazylibs`,
:mod:`ragnb.core.docstrings`, :mod:`ragnb.core.validation`, :mod:`ragnb.core.cache`.
"""
