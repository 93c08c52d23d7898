"""Helpers that several studies share: the two rule sets of the denoiser, the ablated runs of the
name ablations, and the line chart, small multiples and value tooltip of ragnb.report.charts."""

from __future__ import annotations

import pandas as pd
import pytest
from test_diagnostics import NAMES, small_table

from ragnb.errors import InputError
from ragnb.report.charts import line_chart, panels, value_tooltip
from ragnb.rewrite import RULES, denoise_query
from ragnb.studies.diagnostics import ABLATIONS, add_noise, denoise, make_bundles
from ragnb.studies.diagnostics.ablations import ablated_runs

NOISY = "Hi! Quick question: Can forests regulate the climate? Thanks! 🙏"


def test_denoise_rules_trim_keeps_case_and_punctuation_normalise_does_not():
    assert denoise_query(NOISY, rules="trim") == "Can forests regulate the climate?"
    assert denoise_query(NOISY) == "can forests regulate the climate"
    fr = add_noise("Les forêts régulent-elles le climat ?", 4, "fr", seed=1)
    assert denoise(fr, "fr") == denoise_query(fr, "fr", rules="trim")
    assert denoise(fr, "fr") == "Les forêts régulent-elles le climat ?"


def test_denoise_rules_are_checked():
    assert RULES == ("normalise", "trim")
    with pytest.raises(InputError, match="rules must be one of") as caught:
        denoise_query("x", rules="llm")
    assert caught.value.column == "rules"
    # the diagnostics denoiser keeps its own language message and str() conversion
    with pytest.raises(InputError, match=r"^language must be one of"):
        denoise("x", "de")
    assert denoise(12345) == "12345"


def test_ablated_runs_draw_each_run_once_under_every_condition():
    table = small_table(4)
    chosen = ["hard_name_mask", "initials_form"]
    runs = list(ablated_runs(table, chosen, 2, names=NAMES, language="fr", seed=3))
    assert len(runs) == 2
    for r, conditions in enumerate(runs):
        assert list(conditions) == ["base", *chosen]
        base = make_bundles(table, language="fr", seed=3, run=r, names=NAMES)
        assert conditions["base"] == base
        for name in chosen:
            assert [b.ablation for b in conditions[name]] == [name] * len(base)
            assert [b.texts for b in conditions[name]] == [ABLATIONS[name](b).texts for b in base]
    with pytest.raises(InputError, match="unknown ablation"):
        next(ablated_runs(table, ["no_such_ablation"], 1, names=NAMES))


def test_line_chart_draws_lines_with_points_and_the_given_channels():
    frame = pd.DataFrame({"k": [1, 2, 1, 2], "value": [0.1, 0.2, 0.3, 0.4], "s": list("aabb")})
    spec = line_chart(frame, x="k:Q", y="value:Q", color="s:N", width=120, height=80).to_dict()
    assert spec["mark"] == {"type": "line", "point": True}
    assert (spec["width"], spec["height"]) == (120, 80)
    assert {c: spec["encoding"][c]["field"] for c in ("x", "y", "color")} == {
        "x": "k",
        "y": "value",
        "color": "s",
    }


def test_value_tooltip_lists_the_fields_then_the_formatted_value():
    entries = value_tooltip("retriever:N", "k:Q", value="share", fmt=".1%")
    assert entries[:2] == ["retriever:N", "k:Q"]
    assert entries[2].to_dict() == {"field": "share", "format": ".1%", "type": "quantitative"}
    assert value_tooltip()[0].to_dict()["format"] == ".4f"


def test_panels_facet_in_the_given_order_each_with_its_own_y_scale():
    frame = pd.DataFrame({"k": [1, 2, 1, 2], "value": [0.1, 0.2, 3.0, 4.0], "f": list("PPRR")})
    one = line_chart(frame, x="k:Q", y="value:Q", width=120, height=80)
    spec = panels(one, "f:N", columns=2, sort=["R", "P"]).to_dict()
    assert spec["facet"] == {"field": "f", "type": "nominal", "title": None, "sort": ["R", "P"]}
    assert spec["columns"] == 2
    assert spec["resolve"] == {"scale": {"y": "independent"}}
    assert (spec["spec"]["width"], spec["spec"]["height"]) == (120, 80)
    assert "sort" not in panels(one, "f:N", columns=1).to_dict()["facet"]
