"""ragnb: a Jupyter-first kit for evaluating the retrieval step of RAG systems."""

__version__ = "0.1.0"
