"""The soft engine's static friction speed ε_v is a scene setting (issue 13): defined with a default that, with the
anchored friction, keeps a resting contact from creeping, drawn in the Soft section of the Bake panel (IMPLICIT
contact only), read by the export into the core's settings and written into the bake report. The physics of the
default is tested on the core (tests/core/test_soft_anchored_friction.py: seed 003's block stops and stays still)."""

import types

from contact_lab.addon import properties
from contact_lab.addon.soft import build as soft_export
from contact_lab.addon.soft.job import SoftBakeJob

DEFAULT = 1.0e-2
"""[m/s]; with the anchored friction (on by default) a resting contact does not creep whatever ε
(tests/core/test_soft_anchored_friction.py), and a large ε keeps Newton short (the default cube's bake)."""


class RecordingLayout:
    """Records the property names a panel draws (any layout call returns the same recorder)."""

    def __init__(self):
        self.props = []

    def prop(self, _data, name, **_kw):
        self.props.append(name)

    def __getattr__(self, _name):
        return lambda *a, **k: self


def _drawn(engine, contact):
    from contact_lab.panels import physics

    layout = RecordingLayout()
    settings = types.SimpleNamespace(
        engine=engine, use_scene_frame_range=True, soft_output="SHAPE_KEYS", soft_contact=contact, is_baking=False,
        last_report="", soft_cache_dir="//c/",
    )  # fmt: skip
    panel = physics.CONTACT_LAB_PT_scene.__new__(physics.CONTACT_LAB_PT_scene)
    panel.layout = layout
    panel.draw(types.SimpleNamespace(scene=types.SimpleNamespace(contact_lab=settings, objects=())))
    return set(layout.props)


def test_property_default_range_and_units():
    p = properties.CONTACT_LAB_SceneSettings.__annotations__["soft_friction_velocity"]
    assert p.kind == "FloatProperty"
    assert p.keywords["default"] == DEFAULT and p.keywords["min"] > 0.0
    assert "[m/s]" in p.keywords["description"] and p.keywords["precision"] >= 5  # 0.00005 must show
    assert soft_export.SoftBakeSettings().friction_velocity == DEFAULT  # one default for scripts and the UI
    assert soft_export.SoftBakeSettings().solver_settings().friction_anchor  # the default that makes it safe


def test_drawn_for_implicit_soft_contact_only():
    """IMPLICIT contact has the smoothed friction; DUAL's Coulomb friction sticks exactly; IPC has its own ε_v."""
    assert "soft_friction_velocity" in _drawn("SOFT", "IMPLICIT")
    assert "soft_friction_velocity" not in _drawn("SOFT", "DUAL")
    assert "soft_friction_velocity" not in _drawn("IPC", "IMPLICIT")
    assert "ipc_eps_v" in _drawn("IPC", "IMPLICIT")


def test_reaches_the_core_settings_and_the_report():
    record = soft_export.SoftBakeSettings(friction_velocity=2.0e-5, substeps=3)
    assert record.solver_settings().friction_velocity == 2.0e-5 and record.solver_settings().substeps == 3
    job = SoftBakeJob.__new__(SoftBakeJob)  # the report of a job whose world is not built yet
    job.export, job.input = None, record
    assert job._settings_report()["friction_velocity"] == 2.0e-5
