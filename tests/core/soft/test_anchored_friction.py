"""Anchored friction on the soft world engine (``SoftSettings.friction_anchor``, the add-on's default, issue 13):
seed 003's block slide with the add-on's static friction speed eps_v = 1 cm/s stops where Coulomb friction stops it
and then holds still, where the lagged smoothed friction with the same eps_v creeps at 0.94 eps_v forever.

Setup and analytic reference as in test_friction_stop.py (1-cell 0.1 m block, 10° slope, mu = 0.177, v0 =
0.1 m/s; t* = 15.38 s, d* = 0.769 m). A sticking contact is a spring to the point where it stuck, capped at the
Coulomb force, so at rest nothing drives the creep the lagged friction needs to produce its static force.
"""

import numpy as np
import pytest
from contact_lab.addon.soft.build import SoftBakeSettings
from soft.test_friction_stop import STILL, creep_speed, slide, stops_like_coulomb

ADDON_EPS = SoftBakeSettings().friction_velocity
"""The add-on's default eps_v [m/s] (1e-2, tests/addon/test_soft_friction_setting.py)."""


def _anchored(monkeypatch, anchor: bool):
    import soft.test_friction_stop as base

    class Settings(base.SoftSettings):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.friction_anchor = anchor

    monkeypatch.setattr(base, "SoftSettings", Settings)


def test_the_addon_default_is_anchored():
    assert SoftBakeSettings().solver_settings().friction_anchor


@pytest.mark.parametrize("fps, substeps", [(25.0, 1), (24.0, 2)], ids=["h=0.04 s (seed)", "h=1/48 s (Blender)"])
def test_anchored_block_stops_at_the_coulomb_time_and_distance_and_holds_still(monkeypatch, fps, substeps):
    _anchored(monkeypatch, True)
    speed, position, converged, newton = slide(ADDON_EPS, fps, substeps)
    assert converged
    later = stops_like_coulomb(speed, position, fps)
    after = speed[later:]
    assert after.size and after.max() < 1.0e-3 * STILL  # measured below 2e-7 m/s: it holds, it does not creep
    assert np.ptp(position[later:]) < 1.0e-5  # and stays where it stopped
    assert newton.mean() < 2.0 * substeps


def test_lagged_friction_with_the_same_eps_creeps(monkeypatch):
    """The reference the anchor is measured against: without it, eps_v = 1 cm/s creeps at 0.94 eps_v."""
    _anchored(monkeypatch, False)
    speed, _, converged, _ = slide(ADDON_EPS, 25.0, 1, t_end=20.0)
    assert converged
    assert speed[-1] == pytest.approx(creep_speed(ADDON_EPS), rel=0.05)
