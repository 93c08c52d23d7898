"""Notebook parameters bind to their config in one call that cannot drift from the cell."""

from __future__ import annotations

from dataclasses import fields

import pytest

from ragnb.errors import InputError
from ragnb.report.render import notebook_parameters, resolve_notebook
from ragnb.studies.retrieval import RetrievalEvaluationConfig


def test_from_namespace_takes_exactly_the_fields():
    namespace = {
        f.name: getattr(RetrievalEvaluationConfig(), f.name)
        for f in fields(RetrievalEvaluationConfig)
    }
    namespace.update(depth=200, display=print, __name__="__main__")  # other globals are ignored
    config = RetrievalEvaluationConfig.from_namespace(namespace)
    assert config.depth == 200


def test_from_namespace_names_a_parameter_the_cell_lacks():
    namespace = {
        f.name: getattr(RetrievalEvaluationConfig(), f.name)
        for f in fields(RetrievalEvaluationConfig)
    }
    del namespace["rrf_k"]
    with pytest.raises(InputError, match=r"lacks parameter\(s\) \['rrf_k'\]"):
        RetrievalEvaluationConfig.from_namespace(namespace)


@pytest.mark.parametrize(
    "notebook",
    [
        "01_retrieval_evaluation",
        "02_golden_set",
        "03_embedder_diagnostics",
        "04_clq_tradeoffs",
        "05_measure_correlation",
        "06_what_if",
    ],
)
def test_every_notebook_binds_its_parameters_with_from_namespace(notebook):
    path = resolve_notebook(notebook)
    assert notebook_parameters(path)  # a tagged parameters cell
    text = path.read_text(encoding="utf-8")
    assert text.count(".from_namespace(globals())") == 1 and ".from_params(" not in text
