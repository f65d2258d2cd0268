"""The scene panel's report and Check Scene sections against stored texts that are not what a bake writes.

A .blend can carry any text in ``last_report`` and ``last_validation`` (an older or newer add-on, a script, a
damaged file). The panel draws on every redraw, so it must draw something for each of them and never raise; the
reference for "drawn correctly" is the report a bake writes, whose lines (the warnings too, for every engine) appear.
"""

import json
import types

import pytest

NOT_AN_OBJECT = ["[1, 2]", "3", "null", '"text"', "true", "{garbage", "[" * 5000 + "]" * 5000]
"""Stored texts that are valid JSON but not an object, or not JSON at all (the last one nests too deep)."""

WRONG_FIELDS = [
    {"status": 5, "frames": [1, 2], "stats": "x", "timings": [], "warnings": "abc"},
    {"status": "FINISHED", "engine": "SOFT", "stats": {"tets": "many", "mean_newton_iterations": "x"}},
    {"status": "FINISHED", "engine": "IPC", "settings": [], "stats": {"min_distance": "far"}},
    {"status": None, "error": {"a": 1}, "warnings": [1, None, {"b": 2}]},
    {"status": "FINISHED", "engine": "RIGID", "joints": {"by_type": [1], "broken": [5, {"name": 3}], "count": None}},
    {"status": "FINISHED", "engine": "RIGID", "joints": {"max_error_linear": "far", "max_error_angular": None}},
    {"status": "FINISHED", "engine": "RIGID", "joints": "broken"},
]
"""JSON objects whose fields have the wrong types."""


class StrictLayout:
    """Records labels like Blender's UILayout, which raises TypeError for a label text that is not a str."""

    def __init__(self, root=None):
        self.root = root or self
        if root is None:
            self.labels = []
            self.icons = []

    def label(self, *, text="", icon="NONE"):
        if not isinstance(text, str):
            raise TypeError(f"UILayout.label(): text expected a str, not {type(text).__name__}")
        self.root.labels.append(text)
        self.root.icons.append(icon)

    def __getattr__(self, _name):
        return lambda *a, **k: StrictLayout(self.root)


@pytest.mark.parametrize("text", NOT_AN_OBJECT + [json.dumps(r) for r in WRONG_FIELDS])
def test_a_report_that_is_not_a_bake_report_draws_without_raising(text):
    from contact_lab.panels import physics

    layout = StrictLayout()
    physics._draw_report(layout, text)
    assert layout.labels, "nothing was drawn"
    if text in NOT_AN_OBJECT:
        assert layout.labels == ["Last report is unreadable: bake again to replace it"]


@pytest.mark.parametrize("text", NOT_AN_OBJECT + ['{"counts": [1], "findings": 3}', '{"findings": [1, 2]}'])
def test_a_check_that_is_not_a_check_draws_without_raising(text):
    from contact_lab.panels import physics

    layout = StrictLayout()
    physics.draw_check(layout, types.SimpleNamespace(last_validation=text, engine="RIGID"))
    assert layout.labels == ["The last check is unreadable: check again"]
    assert physics._check_counts(text) == {}
    assert isinstance(physics._check_engine(text), str)


def test_a_check_as_written_is_drawn():
    """The reference: a check the add-on wrote draws its counts and findings."""
    from contact_lab.addon.checks import validate
    from contact_lab.panels import physics

    finding = validate.Finding(
        level="WARNING", object_name="Cube", setting="scale", message="'Cube' is tiny", fix="Scale it up"
    )
    text = validate.to_json([finding], "RIGID")
    layout = StrictLayout()
    physics.draw_check(layout, types.SimpleNamespace(last_validation=text, engine="RIGID"))
    assert "'Cube' is tiny" in layout.labels and "Scale it up" in layout.labels
    assert physics._check_counts(text)["WARNING"] == 1


@pytest.mark.parametrize("engine", ["RIGID", "SOFT", "IPC"])
def test_every_engine_shows_the_report_warnings(engine):
    """A bake's warnings (e.g. frames that did not converge) show in the panel whatever the engine."""
    from contact_lab.panels import physics

    warnings = [f"warning {k} did not converge" for k in range(5)]
    report = {
        "status": "FINISHED",
        "engine": engine,
        "frames": {"start": 1, "end": 12, "simulated": 12},
        "stats": {},
        "timings": {"total": 1.0},
        "warnings": warnings,
    }
    layout = StrictLayout()
    physics._draw_report(layout, json.dumps(report))
    shown = [label for label in layout.labels if label.startswith("warning")]
    assert shown == warnings[: physics.MAX_REPORT_WARNINGS]
    assert f"and {5 - physics.MAX_REPORT_WARNINGS} more warning(s) in the report" in layout.labels
