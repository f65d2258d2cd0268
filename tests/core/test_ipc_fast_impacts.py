"""IPC's promise at any speed: soft bodies thrown at each other never pass through each other (issue 13).

Reference: ipctk (the IPC Toolkit, a test dependency): every solver step's straight-line motion of the whole surface,
halved steps included, is checked by its continuous collision detection (``is_step_collision_free`` with Tight
Inclusion CCD), independently of our CCD. The audit asks for crossings: ``conservative_rescaling`` 1. ipctk's default
(0.8) reports a "collision" wherever a pair comes within 20 % of its starting distance, the safety margin a line
search wants; barrier contacts do that legitimately (a pair at 0.34 mm closing to 0.013 mm).

The per-frame checker cannot see the failure this guards against: at 20 m/s two 5 cm bodies move more than their size
per step, and the Newton solve used to walk them around each other to their ballistic targets, each
iterate collision-free, so that they ended on each other's side without ever intersecting at a frame.
"""

import numpy as np
import pytest
from contact_lab.core.ipc.frame_loop import iter_simulate_ipc
from contact_lab.core.ipc.ipc_solver import IpcSettings
from contact_lab.core.ipc.ipc_world import IpcWorld
from contact_lab.core.soft.primitives import box_tet_mesh
from contact_lab.core.soft.world import SoftWorldBuilder

ipctk = pytest.importorskip("ipctk")

CROSSING_CCD = ipctk.TightInclusionCCD(1e-6, 10_000_000, 1.0)
"""Tight Inclusion CCD that reports contact only (tolerance 1e-6, no conservative margin)."""

SIZE = 0.05
"""Cube edge [m]."""


def _pair_world(offset):
    """Two 5 cm rubber cubes 30 cm apart along x (centres), the second shifted by ``offset`` [m] in y; no gravity."""
    b = SoftWorldBuilder(gravity=(0.0, 0.0, 0.0))
    for x, dy in ((-0.15, 0.0), (0.15, offset)):
        lo = np.array([x - SIZE / 2, dy - SIZE / 2, -SIZE / 2])
        V, T = box_tet_mesh((2, 2, 2), lo, lo + SIZE)
        b.add_soft_body(V, T, youngs_modulus=1e6, poisson_ratio=0.45, density=1100, friction=0.0)
    return IpcWorld(b.finalize())


def _throw(speed, offset, frames=3):
    """Cubes thrown at each other at ``speed`` [m/s] each; (centres per frame (F, 2, 3), steps, failed audits)."""
    world = _pair_world(offset)
    start = world.state()
    n = world.soft.node_count
    half = n // 2
    start.v[:half, 0], start.v[half:n, 0] = speed, -speed
    mesh = ipctk.CollisionMesh(world.surface_positions(start.x), world.edges, world.faces)
    audit = {"steps": 0, "crossing": 0}

    def on_step(x0, x1):
        audit["steps"] += 1
        xs0, xs1 = world.surface_positions(x0), world.surface_positions(x1)
        if not ipctk.is_step_collision_free(mesh, xs0, xs1, narrow_phase_ccd=CROSSING_CCD):
            audit["crossing"] += 1

    centres = []
    settings = IpcSettings(dhat=1e-3, substeps=2, check_intersections=True)
    for _, state in iter_simulate_ipc(world, frame_count=frames, fps=24, settings=settings, state=start,
                                      on_step=on_step):  # fmt: skip
        assert state.stats.intersections == 0 and state.stats.inverted == 0
        centres.append([state.x[:half].mean(axis=0), state.x[half:n].mean(axis=0)])
    return np.array(centres), audit


@pytest.mark.parametrize("speed", [5.0, 20.0, 50.0])
def test_head_on_cubes_bounce_back_with_every_step_collision_free(speed):
    centres, audit = _throw(speed, offset=0.0)
    assert audit["crossing"] == 0 and audit["steps"] > 4  # halved: 2 substeps x 2 frames is 4
    assert (centres[:, 0, 0] < centres[:, 1, 0]).all()  # each on its own side at every frame
    assert centres[-1, 0, 0] < -SIZE / 2 < SIZE / 2 < centres[-1, 1, 0]  # and moving apart again


@pytest.mark.parametrize("speed", [20.0])
def test_offset_cubes_glance_off_with_every_step_collision_free(speed):
    """Half a cube's width off centre: they deflect sideways; whatever the path, no step's motion may cross."""
    centres, audit = _throw(speed, offset=0.5 * SIZE)
    assert audit["crossing"] == 0
