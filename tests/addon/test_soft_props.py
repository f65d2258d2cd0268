"""Soft-body settings and material presets against the mocked bpy (no Blender)."""

import re
import types
from pathlib import Path

import pytest
from contact_lab.addon import properties

SOFT_PAGE = Path(__file__).resolve().parents[2] / "docs" / "soft-and-ipc.md"
"""The user page with the material presets' table."""

DOCUMENTED_PRESETS = {
    # preset: (E [Pa], nu, density [kg/m³], damping beta [s], friction mu), as in docs/soft-and-ipc.md and the tooltips
    "RUBBER": (2.0e6, 0.47, 1100.0, 0.002, 0.8),
    "GEL": (1.0e4, 0.45, 1000.0, 0.01, 0.3),
    "FLESH": (1.0e5, 0.45, 1050.0, 0.02, 0.5),
    "FOAM": (1.0e5, 0.2, 75.0, 0.05, 0.6),
}


def _props(cls):
    return cls.__annotations__


def _items(marker):
    return [item[0] for item in marker.keywords["items"]]


class FakeSettings:
    """Stands in for ``obj.contact_lab``: assigning a property runs its ``update`` callback, like Blender."""

    def __init__(self):
        annotations = _props(properties.CONTACT_LAB_ObjectSettings)
        object.__setattr__(self, "_updates", {})
        for name, marker in annotations.items():
            if "default" in marker.keywords:
                object.__setattr__(self, name, marker.keywords["default"])
            if "update" in marker.keywords:
                self._updates[name] = marker.keywords["update"]

    def __setattr__(self, name, value):
        object.__setattr__(self, name, value)
        if name in self._updates:
            self._updates[name](self, None)


def _material(settings):
    return tuple(getattr(settings, name) for name in properties.SOFT_MATERIAL_FIELDS)


def test_scene_soft_settings_names_and_defaults():
    """Scene settings of the soft engine: names, choices and documented defaults."""
    p = _props(properties.CONTACT_LAB_SceneSettings)
    assert _items(p["engine"]) == ["RIGID", "SOFT", "IPC"] and p["engine"].keywords["default"] == "RIGID"
    assert _items(p["soft_output"]) == ["SHAPE_KEYS", "PC2"] and p["soft_output"].keywords["default"] == "SHAPE_KEYS"
    assert set(_items(p["soft_contact"])) == {"DUAL", "IMPLICIT"}
    assert p["soft_contact"].keywords["default"] == "IMPLICIT"
    assert p["soft_substeps"].kind == "IntProperty" and p["soft_substeps"].keywords["default"] == 2
    assert p["soft_substeps"].keywords["min"] == 1
    thickness = p["soft_contact_thickness"]
    assert thickness.keywords["default"] == 0.0 and thickness.keywords["unit"] == "LENGTH"
    assert "automatic" in thickness.keywords["description"]
    assert p["soft_cache_dir"].keywords["default"] == "//contact_lab_cache/"
    assert p["soft_cache_dir"].keywords["subtype"] == "DIR_PATH"
    for name in ("engine", "soft_output", "soft_contact", "soft_substeps", "soft_contact_thickness", "soft_cache_dir"):
        assert len(p[name].keywords["description"]) > 25, name


def test_scene_ipc_settings_names_and_defaults():
    """Scene settings of the IPC engine: automatic dhat and kappa (0), the solver's defaults, the checker off."""
    p = _props(properties.CONTACT_LAB_SceneSettings)
    dhat = p["ipc_dhat"]
    assert dhat.kind == "FloatProperty" and dhat.keywords["default"] == 0.0 and dhat.keywords["min"] == 0.0
    assert dhat.keywords["subtype"] == "DISTANCE" and dhat.keywords["unit"] == "LENGTH"
    assert "automatic" in dhat.keywords["description"] and "scene units" in dhat.keywords["description"]
    kappa = p["ipc_kappa"]
    assert kappa.keywords["default"] == 0.0 and kappa.keywords["min"] == 0.0
    assert "[Pa/m]" in kappa.keywords["description"] and "automatic" in kappa.keywords["description"]
    assert p["ipc_eps_v"].keywords["default"] == 1e-3 and p["ipc_eps_v"].keywords["min"] > 0.0
    assert "[m/s]" in p["ipc_eps_v"].keywords["description"]
    assert p["ipc_tolerance"].keywords["default"] == 1e-3 and p["ipc_tolerance"].keywords["min"] > 0.0
    iterations = p["ipc_max_iterations"]
    assert (
        iterations.kind == "IntProperty" and iterations.keywords["default"] == 100 and iterations.keywords["min"] == 1
    )
    check = p["check_intersections"]
    assert check.kind == "BoolProperty" and check.keywords["default"] is False
    assert "intersection" in check.keywords["description"]
    # the IPC defaults are the core's (IpcSettings is plain Python: no numba compile here)
    ipc_solver = pytest.importorskip("contact_lab.core.ipc.ipc_solver")
    core = ipc_solver.IpcSettings()
    assert (core.dhat, core.kappa, core.eps_v, core.tolerance, core.max_iterations, core.check_intersections) == (
        0.0, 0.0, 1e-3, 1e-3, 100, False
    )  # fmt: skip


def test_object_soft_settings_names_and_defaults():
    """The Soft role and its settings; the defaults are the Flesh preset's values."""
    p = _props(properties.CONTACT_LAB_ObjectSettings)
    assert _items(p["role"]) == ["NONE", "ACTIVE", "PASSIVE", "SOFT"]
    assert _items(p["soft_preset"]) == ["RUBBER", "GEL", "FLESH", "FOAM", "CUSTOM"]
    assert p["soft_preset"].keywords["default"] == "FLESH"
    defaults = tuple(p[name].keywords["default"] for name in properties.SOFT_MATERIAL_FIELDS)
    assert defaults == DOCUMENTED_PRESETS["FLESH"]
    assert p["pin_group"].kind == "StringProperty" and p["pin_group"].keywords["default"] == ""
    assert p["lattice_resolution"].kind == "IntProperty" and p["lattice_resolution"].keywords["default"] == 8
    assert p["lattice_resolution"].keywords["min"] == 1
    # invalid materials can be typed (no hard limits) and are reported at bake time, like the rigid mass
    for name in ("youngs_modulus", "poisson_ratio", "density"):
        assert "min" not in p[name].keywords and "max" not in p[name].keywords, name
    assert "[Pa]" in p["youngs_modulus"].keywords["description"]
    assert "[kg/m³]" in p["density"].keywords["description"]
    assert "[s]" in p["damping"].keywords["description"]
    assert "mass" in p and "density" in p  # rigid boxes keep their mass; soft bodies use a density


@pytest.mark.parametrize("preset", sorted(DOCUMENTED_PRESETS))
def test_preset_sets_the_documented_values(preset):
    """Choosing a preset sets E, nu, density, damping and friction to the documented values and stays chosen."""
    settings = FakeSettings()
    settings.soft_preset = "CUSTOM"
    for name in properties.SOFT_MATERIAL_FIELDS:
        setattr(settings, name, 123.0)
    settings.soft_preset = preset
    assert _material(settings) == pytest.approx(DOCUMENTED_PRESETS[preset], rel=1e-12)
    assert settings.soft_preset == preset  # setting its own values does not flip it to Custom


@pytest.mark.parametrize("preset", sorted(DOCUMENTED_PRESETS))
def test_presets_are_physically_sensible(preset):
    """nu < 0.5 (no locking blow-up), positive E and density, non-negative damping, usual friction range."""
    E, nu, rho, beta, mu = properties.SOFT_PRESETS[preset].values()
    assert 1e3 <= E <= 1e7 and 0.0 <= nu < 0.5 and 10.0 <= rho <= 2000.0 and 0.0 <= beta < 0.1 and 0.1 <= mu <= 1.2


def test_editing_a_value_switches_to_custom_and_custom_keeps_values():
    """A hand-edited material value turns the preset into Custom; Custom never overwrites anything."""
    settings = FakeSettings()
    settings.soft_preset = "RUBBER"
    settings.youngs_modulus = 3.0e6
    assert settings.soft_preset == "CUSTOM"
    before = _material(settings)
    settings.soft_preset = "CUSTOM"
    assert _material(settings) == before
    settings.soft_preset = "GEL"
    settings.friction = 0.9
    assert settings.soft_preset == "CUSTOM"
    # float32 storage round-off of a preset value does not count as an edit
    settings.soft_preset = "RUBBER"
    settings.poisson_ratio = 0.4699999988079071  # float32(0.47)
    assert settings.soft_preset == "RUBBER"


def test_preset_tooltips_and_the_soft_page_state_the_values():
    """Each preset's tooltip and the preset table of docs/soft-and-ipc.md give the same numbers as the code."""
    tips = {key: tip for key, _label, tip in properties.SOFT_PRESET_ITEMS}
    text = SOFT_PAGE.read_text(encoding="utf-8")
    for preset, (E, nu, rho, beta, mu) in DOCUMENTED_PRESETS.items():
        tip = tips[preset]
        assert f"ν {nu:g}" in tip and f"{rho:g} kg/m³" in tip and f"μ {mu:g}" in tip, tip
        row = re.search(rf"^\| {preset.title()} \|(.*)$", text, flags=re.MULTILINE)
        assert row is not None, f"docs/soft-and-ipc.md has no row for {preset}"
        cells = [c.strip() for c in row.group(1).split("|")]
        assert [float(c) for c in cells[:5]] == pytest.approx([E, nu, rho, beta, mu]), cells


def _drawn_scene_panel(engines, **settings):
    """The property names the scene panel draws for each engine in ``engines``, with ``settings`` on the scene."""
    from contact_lab.panels import physics

    drawn = {}
    for engine in engines:
        layout = RecordingLayout()
        scene_settings = types.SimpleNamespace(
            engine=engine, use_scene_frame_range=True, is_baking=False, last_report="", **settings
        )
        panel = physics.CONTACT_LAB_PT_scene.__new__(physics.CONTACT_LAB_PT_scene)
        panel.layout = layout
        panel.draw(types.SimpleNamespace(scene=types.SimpleNamespace(contact_lab=scene_settings, objects=())))
        drawn[engine] = set(layout.props)
    return drawn


def test_scene_panel_draws_soft_settings_only_for_the_soft_engine():
    """The scene panel shows the engine and, for Soft, the soft settings instead of the rigid solver's."""
    drawn = _drawn_scene_panel(
        ("RIGID", "SOFT"), soft_output="PC2", soft_cache_dir="/tmp/cache/", soft_contact="IMPLICIT", sleeping=True
    )
    assert "engine" in drawn["RIGID"] and "engine" in drawn["SOFT"]
    soft = {
        "soft_output",
        "soft_cache_dir",
        "soft_contact",
        "soft_integrator",
        "soft_substeps",
        "soft_contact_thickness",
    }
    assert soft <= drawn["SOFT"] and not soft & drawn["RIGID"]
    assert "solver" in drawn["RIGID"] and "solver" not in drawn["SOFT"]  # Implicit contact: no rigid solver
    sleeping = {"sleeping", "sleep_time", "sleep_linear_speed", "sleep_angular_speed"}
    assert sleeping <= drawn["RIGID"] and not sleeping & drawn["SOFT"]


def test_scene_panel_draws_ipc_settings_only_for_the_ipc_engine():
    """The IPC engine shows its own settings and the shared soft output / substeps, not the soft contact's."""
    drawn = _drawn_scene_panel(("SOFT", "IPC"), soft_output="SHAPE_KEYS", soft_contact="IMPLICIT")
    ipc = {"ipc_dhat", "ipc_kappa", "ipc_eps_v", "ipc_tolerance", "ipc_max_iterations", "check_intersections"}
    assert ipc | {"soft_output", "soft_substeps"} <= drawn["IPC"] and not ipc & drawn["SOFT"]
    assert not {"soft_contact", "soft_integrator", "soft_contact_thickness"} & drawn["IPC"]


def test_ipc_report_lines():
    """An IPC report shows the closest distance against dhat and the checker's totals."""
    import json

    from contact_lab.panels import physics

    report = {
        "status": "FINISHED",
        "engine": "IPC",
        "frames": {"start": 1, "end": 12, "simulated": 12},
        "settings": {"dhat": 3.5e-4, "dhat_automatic": True},
        "stats": {"tets": 320, "min_distance": 1.25e-4, "intersections": 0, "inverted": 0, "checked_frames": 12},
        "timings": {"total": 1.0},
    }
    layout = RecordingLayout()
    physics._draw_report(layout, json.dumps(report))
    assert "Closest distance: 0.125 mm, barrier distance 0.35 mm (automatic)" in layout.labels
    assert "Intersection check: 0 surfaces passing through, 0 tets turned inside out, in 12 frames" in layout.labels
    report["stats"]["min_distance"] = None
    layout = RecordingLayout()
    physics._draw_report(layout, json.dumps(report))
    assert "Closest distance: no contact, barrier distance 0.35 mm (automatic)" in layout.labels


def test_object_panel_draws_the_soft_role():
    """The Soft role shows preset, raw values, a pin-group search over the vertex groups and the resolution."""
    from contact_lab.panels import physics

    settings = FakeSettings()
    settings.role = "SOFT"
    groups = types.SimpleNamespace(get=lambda name: None)
    obj = types.SimpleNamespace(
        type="MESH",
        contact_lab=settings,
        vertex_groups=groups,
        data=types.SimpleNamespace(shape_keys=None),
        modifiers=types.SimpleNamespace(get=lambda name: None),
    )
    layout = RecordingLayout()
    panel = physics.CONTACT_LAB_PT_object.__new__(physics.CONTACT_LAB_PT_object)
    panel.layout = layout
    scene = types.SimpleNamespace(contact_lab=types.SimpleNamespace(engine="SOFT"))
    panel.draw(types.SimpleNamespace(object=obj, scene=scene))
    expected = {"role", "soft_preset", "youngs_modulus", "poisson_ratio", "density", "damping", "friction"}
    assert expected | {"lattice_resolution"} <= set(layout.props)
    assert ("pin_group", "vertex_groups") in layout.searches
    assert "shape" not in layout.props and "restitution" not in layout.props


class RecordingLayout:
    """Records what a panel draws (``prop`` names, ``prop_search`` pairs, labels)."""

    def __init__(self, root=None):
        self.root = root or self
        if root is None:
            self.props, self.searches, self.labels = [], [], []
        self.use_property_split = self.use_property_decorate = False
        self.active = self.enabled = True
        self.scale_y = 1.0

    def _child(self, *args, **kwargs):
        return RecordingLayout(self.root)

    column = row = box = _child

    def prop(self, data, name, **kwargs):
        self.root.props.append(name)

    def prop_search(self, data, name, search_data, search_name, **kwargs):
        self.root.searches.append((name, search_name))

    def label(self, text="", **kwargs):
        self.root.labels.append(text)

    def operator(self, *args, **kwargs):
        return types.SimpleNamespace()

    def separator(self, *args, **kwargs):
        pass

    def progress(self, **kwargs):
        pass
