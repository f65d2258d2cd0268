"""The words an artist meets in the panels: labels that name one setting each, tooltips that start in plain words.

Every panel's ``draw`` runs against settings holding the property definitions' defaults, for each state the
panels branch on (engine, soft contact, output, sleeping, role, shape, friction model, structure source), with a
layout that records what it draws. The reference for "a label names one setting" is the property definitions
themselves: two different settings drawn under the same label anywhere in the Physics and Scene tabs are a
failure. The tooltip rules read every property's, enum item's and operator's description.
"""

import itertools
import json
import re
import types

import pytest
from contact_lab import registration
from contact_lab.addon import properties
from contact_lab.panels import physics


class Settings(types.SimpleNamespace):
    """A property group's values; ``group`` is the PropertyGroup class whose annotations define them."""


def _defaults(group) -> Settings:
    """Settings holding each property's default (an enum without one: its first item, as Blender does)."""
    values = {}
    for name, marker in group.__annotations__.items():
        kw = marker.keywords
        if "default" in kw:
            values[name] = kw["default"]
        elif marker.kind == "EnumProperty":
            values[name] = kw["items"][0][0]
        elif marker.kind in ("StringProperty",):
            values[name] = ""
        elif marker.kind in ("IntProperty", "FloatProperty"):
            values[name] = 1
        else:
            values[name] = None
    settings = Settings(**values)
    settings.group = group
    return settings


class RecordingLayout:
    """Records every property row (the setting and the label it shows) and every label; any other layout call
    returns a sub-layout recording into the same lists."""

    def __init__(self, root=None):
        self.root = root or self
        if root is None:
            self.rows = []  # (group name, property name, shown label)
            self.labels = []

    def _row(self, data, prop, text):
        group = getattr(data, "group", None)
        if group is None:  # a Blender datablock (vertex groups, attributes): not one of ours
            return
        name = group.__annotations__[prop].keywords.get("name", prop)
        self.root.rows.append((group.__name__, prop, name if text is None else text))

    def prop(self, data, prop, text=None, index=-1, **_kw):
        label = text
        if label is None and index >= 0:
            label = f"{prop}[{index}]"
        self._row(data, prop, label)

    def prop_search(self, data, prop, _search_data, _search_prop, text=None, **_kw):
        self._row(data, prop, text)

    def template_ID(self, data, prop, **_kw):
        self._row(data, prop, None)

    def label(self, *, text="", icon="NONE"):
        assert isinstance(text, str)
        self.root.labels.append(text)

    def operator(self, _idname, text=None, **_kw):
        if text:
            self.root.labels.append(text)
        return types.SimpleNamespace()

    def __getattr__(self, _name):
        return lambda *a, **k: RecordingLayout(self.root)


def _scene_states():
    for engine, contact, output in itertools.product(
        ("RIGID", "SOFT", "IPC"), ("IMPLICIT", "DUAL"), ("SHAPE_KEYS", "PC2")
    ):
        settings = _defaults(properties.CONTACT_LAB_SceneSettings)
        settings.engine, settings.soft_contact, settings.soft_output = engine, contact, output
        settings.sleeping = True
        settings.frame_start, settings.frame_end = 1, 250
        yield settings


def _object(scene_settings, **values):
    settings = _defaults(properties.CONTACT_LAB_ObjectSettings)
    for key, value in values.items():
        setattr(settings, key, value)
    obj = types.SimpleNamespace(
        name="Cube",
        type="MESH",
        parent=None,
        children=[],
        contact_lab=settings,
        vertex_groups={},
        data=types.SimpleNamespace(attributes=[], uv_layers=[], shape_keys=None),
        modifiers={},
    )
    scene = types.SimpleNamespace(contact_lab=scene_settings, rigidbody_world=None, objects=())
    return types.SimpleNamespace(object=obj, scene=scene, view_layer=None)


def _object_states():
    for engine in ("RIGID", "SOFT", "IPC"):
        scene = _defaults(properties.CONTACT_LAB_SceneSettings)
        scene.engine = engine
        for role, shape in (("NONE", "BOX"), ("ACTIVE", "BOX"), ("PASSIVE", "COMPOUND"), ("SOFT", "BOX")):
            for model in [item[0] for item in properties.FRICTION_MODEL_ITEMS]:
                for source in [item[0] for item in properties.STRUCTURE_SOURCE_ITEMS]:
                    yield _object(scene, role=role, shape=shape, friction_model=model, structure_source=source)


@pytest.fixture
def drawn(mock_bpy, monkeypatch):
    """Every panel drawn in every state: {panel class name: [(group, property, label), ...]} and all labels."""
    from contact_lab.addon.friction import export as friction_export
    from contact_lab.addon.output import deform

    monkeypatch.setattr(mock_bpy.data, "filepath", "", raising=False)
    monkeypatch.setattr(friction_export, "friction_warnings", lambda obj, depsgraph=None: [])
    monkeypatch.setattr(friction_export, "find_normal_map", lambda obj: None)
    monkeypatch.setattr(deform, "deform_output_kind", lambda obj: None)
    rows: dict[str, list] = {}
    labels: list[str] = []
    contexts = [
        types.SimpleNamespace(scene=types.SimpleNamespace(contact_lab=s, objects=()), object=None)
        for s in _scene_states()
    ]
    for panel in physics.CLASSES:
        states = list(_object_states()) if panel is physics.CONTACT_LAB_PT_object else contexts
        for context in states:
            layout = RecordingLayout()
            instance = panel()
            instance.layout = layout
            instance.draw(context)
            rows.setdefault(panel.__name__, []).extend(layout.rows)
            labels.extend(layout.labels)
    return rows, labels


def _settings_per_label(rows) -> dict[str, set]:
    out: dict[str, set] = {}
    for group, prop, label in rows:
        if label:  # text="" draws no label
            out.setdefault(label, set()).add(f"{group}.{prop}")
    return out


def test_every_panel_draws_some_settings(drawn):
    """The reference for the label checks: each panel with settings drew rows (a draw that raised or drew nothing
    would make the duplicate check pass vacuously)."""
    rows, _labels = drawn
    assert len(_settings_per_label(rows["CONTACT_LAB_PT_scene"])) > 20
    assert len(_settings_per_label(rows["CONTACT_LAB_PT_object"])) > 25


def test_no_label_names_two_settings_within_a_panel(drawn):
    """Within one panel, over all its states, a label shows one setting only (two "Substeps" were two settings)."""
    rows, _labels = drawn
    clashes = {
        panel: {label: sorted(props) for label, props in _settings_per_label(panel_rows).items() if len(props) > 1}
        for panel, panel_rows in rows.items()
    }
    assert not any(clashes.values()), clashes


def test_no_label_names_two_settings_across_panels(drawn):
    """The scene's and the object's panels sit side by side in an artist's mind: "Friction" must not be a
    coefficient in one and a combine rule in the other."""
    rows, _labels = drawn
    every = _settings_per_label([row for panel_rows in rows.values() for row in panel_rows])
    clashes = {label: sorted(props) for label, props in every.items() if len(props) > 1}
    assert not clashes, clashes


# panel visibility --------------------------------------------------------------------------------------------

TABS_WITHOUT_AN_OBJECT = frozenset({"tool", "render", "output", "view_layer", "scene", "world", "collection"})
"""Properties editor tabs Blender shows with no active object (Object, Modifiers, Physics... need one)."""


@pytest.mark.parametrize("panel", ["CONTACT_LAB_PT_scene", "CONTACT_LAB_PT_check"])
def test_the_bake_panels_show_without_an_active_object(panel):
    """The bake settings belong to the scene: with nothing selected they are still reachable (the Physics tab,
    where they were, is hidden by Blender until an object is active)."""
    cls = getattr(physics, panel)
    context = types.SimpleNamespace(scene=types.SimpleNamespace(contact_lab=object()), object=None)
    assert cls.poll(context) is True
    assert cls.bl_context in TABS_WITHOUT_AN_OBJECT


def test_the_body_panel_needs_an_active_object():
    """The reference for the test above: the object's panel is hidden without one."""
    context = types.SimpleNamespace(scene=types.SimpleNamespace(contact_lab=object()), object=None)
    assert not physics.CONTACT_LAB_PT_object.poll(context)


def test_messages_and_hints_name_the_panels_where_they_are():
    """The panel paths that Check Scene's messages and the body panel's hint give are the panels' own tab and
    header (a message that says "Physics ▸ Contact Lab Bake" sends the artist to a tab without it)."""
    from contact_lab.addon.checks import ranges

    def where(panel):
        return f"{panel.bl_context.title()} ▸ {panel.bl_label}"

    assert ranges.BAKE == where(physics.CONTACT_LAB_PT_scene)
    assert ranges.BODY == where(physics.CONTACT_LAB_PT_object)
    assert physics.BAKE_HINT.endswith(where(physics.CONTACT_LAB_PT_scene))


# report lines -------------------------------------------------------------------------------------------------

REPORT_JARGON = re.compile(r"overflow|κ|residual|Newton|unconverged|Checker|\bMax\b|penetration", re.IGNORECASE)
"""Words of the solver, not of the artist, in the bake report's lines."""

FULL_STATS = {
    "RIGID": {"max_contacts": 40, "contact_overflow": 3, "max_iterations": 100, "max_residual": 1e-7,
              "max_penetration": 0.001, "sleeping_at_end": 2},
    "SOFT": {"tets": 6000, "vertices": 1500, "render_vertices": 8, "max_newton_iterations": 4,
             "mean_newton_iterations": 2.5, "max_penetration": 0.001, "seconds_per_frame": 0.1},
    "IPC": {"tets": 6000, "vertices": 1500, "render_vertices": 8, "max_newton_iterations": 9,
            "mean_newton_iterations": 4.0, "unconverged_frames": 1, "min_distance": 1e-4, "max_contacts": 12,
            "max_kappa": 1e8, "intersections": 0, "inverted": 0, "checked_frames": 24, "seconds_per_frame": 0.5},
}  # fmt: skip


@pytest.mark.parametrize("engine", sorted(FULL_STATS))
def test_the_report_lines_are_plain_words(engine):
    """Every line a bake report draws, with every statistic present, reads without solver jargon; the kernels a
    first bake compiled are drawn (the docs name that line)."""
    report = {
        "status": "FINISHED",
        "engine": engine,
        "frames": {"start": 1, "end": 25, "simulated": 24},
        "stats": FULL_STATS[engine],
        "settings": {"dhat": 1e-3, "dhat_automatic": True},
        "timings": {"total": 2.0},
        "compiled_kernels": 7,
        "warnings": [],
    }
    layout = RecordingLayout()
    physics._draw_report(layout, json.dumps(report))
    assert len(layout.labels) >= 6, layout.labels
    assert not [line for line in layout.labels if REPORT_JARGON.search(line)], layout.labels
    assert any("kernels compiled: 7" in line for line in layout.labels), layout.labels


# tooltips --------------------------------------------------------------------------------------------------

SYMBOL_START = re.compile(r"^(?![A-Za-z])|^(dhat|eps|kappa|mu|sqrt|min|max)\b", re.IGNORECASE)
"""A tooltip must start with an ASCII letter, and not with a symbol's name or a formula's function."""

FORBIDDEN_WORDS = re.compile(r"\b(seed|issue|errata|erratum)\b", re.IGNORECASE)
"""Team history a user cannot look up."""

JARGON = re.compile(r"Delassus|Fischer|Burmeister|BLCP|LCP|dhat|ε|κ|μ|β|Δ|ν")
"""Solver vocabulary and symbols: allowed after the first sentence, never in it."""


def _first_sentence(text: str) -> str:
    return re.split(r"(?<=[.;:])\s|\(", text, maxsplit=1)[0]


def _tooltips():
    """(where, text) of every description a user can hover: properties, enum items, operators."""
    for cls in registration.classes():
        if issubclass(cls, (properties.bpy.types.Operator, properties.bpy.types.Panel)):
            yield f"{cls.__name__} (description)", (getattr(cls, "bl_description", None) or cls.__doc__ or "").strip()
        for name, marker in getattr(cls, "__annotations__", {}).items():
            keywords = getattr(marker, "keywords", None)
            if keywords is None or "HIDDEN" in keywords.get("options", set()):
                continue
            yield f"{cls.__name__}.{name}", keywords.get("description", "")
            for item in keywords.get("items", ()) if isinstance(keywords.get("items"), tuple) else ():
                yield f"{cls.__name__}.{name}[{item[0]}]", item[2]


def test_the_tooltip_reader_sees_every_description():
    """The reference: as many tooltips as the property groups and operators define (none is skipped silently)."""
    found = dict(_tooltips())
    assert "CONTACT_LAB_SceneSettings.tolerance" in found
    assert "CONTACT_LAB_ObjectSettings.volume_law[QUADRATIC]" in found
    assert "CONTACT_LAB_OT_bake (description)" in found
    assert len(found) >= 140  # 143 when written: every property, enum item and operator of the add-on


def test_every_tooltip_starts_in_plain_words():
    """No tooltip starts with a formula, a symbol or a digit, nor says "seed", "issue" or "errata"; its first
    sentence carries no solver vocabulary or Greek symbol (the math comes after it)."""
    bad = {}
    for where, text in _tooltips():
        if not text:
            bad[where] = "(no description)"
        elif SYMBOL_START.search(text) or FORBIDDEN_WORDS.search(text) or JARGON.search(_first_sentence(text)):
            bad[where] = text
    assert not bad, json.dumps(bad, indent=1, ensure_ascii=False)


# figures in Check Scene's messages ------------------------------------------------------------------------------

BENCHMARK_SECONDS_PER_FRAME = [
    ("SOFT", 6000, 0.195),  # bench_default_cube.py, best warm run, idle 2-core machine
    ("SOFT", 34992, 2.426),  # ... --resolution 16
    ("SOFT", 105456, 12.084),  # ... --resolution 24 --frames 8
    ("IPC", 6000, 0.074),  # ... --engines ipc --cuts 7
    ("IPC", 34992, 0.318),  # ... --engines ipc --cuts 7 --resolution 16
]
"""Seconds per frame (2 substeps) that ``tests/benchmarks/bench_default_cube.py`` printed for the default cube."""


@pytest.mark.parametrize(("engine", "tets", "measured"), BENCHMARK_SECONDS_PER_FRAME)
def test_the_lattice_estimate_agrees_with_the_benchmark(engine, tets, measured):
    """Check Scene's time per frame of a lattice is within 20 % of what the benchmark measured for it (the
    reference), so the figure a message gives is the one the benchmark prints."""
    from contact_lab.addon.checks import physics as checks

    estimate = checks.seconds_per_frame(tets, tets, 2, engine)
    assert estimate == pytest.approx(measured, rel=0.2)


def test_the_volume_compressibility_tooltip_compares_rightly():
    """The tooltip's comparisons, computed: 0.01/atm against water (bulk modulus 2.2 GPa) and the Flesh preset's own
    bulk stiffness E / (3 (1 - 2ν)), both in 1/atm (1 atm = 101,325 Pa)."""
    text = properties.CONTACT_LAB_ObjectSettings.__annotations__["volume_compressibility"].keywords["description"]
    atm = 101325.0
    water = atm / 2.2e9  # compressibility [1/atm]
    assert 0.01 / water == pytest.approx(200.0, rel=0.1) and "about 200 times more compressible than water" in text
    assert water == pytest.approx(4.6e-5, rel=0.01) and "water (4.6e-5)" in text
    flesh = properties.SOFT_PRESETS["FLESH"]
    bulk = flesh["youngs_modulus"] / (3.0 * (1.0 - 2.0 * flesh["poisson_ratio"]))
    assert atm / bulk == pytest.approx(0.3, rel=0.05) and "Flesh preset's own bulk stiffness is about 0.3" in text
    assert "100 atm (10 MPa)" in text and 1.0 / 0.01 * atm == pytest.approx(10e6, rel=0.02)
