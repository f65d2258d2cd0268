"""IPC's promise at any speed: soft bodies thrown at each other never pass through each other (issue 13).

Reference: ipctk (the IPC Toolkit, a test dependency): every solver step's straight-line motion of the whole surface,
halved steps included, is checked by its continuous collision detection (``is_step_collision_free`` with Tight
Inclusion CCD), independently of our CCD, and every frame's surface by its ``has_intersections``. The audit asks for
crossings: ``conservative_rescaling`` 1. ipctk's default (0.8) reports a "collision" wherever a pair comes within
20 % of its starting distance, the safety margin a line search wants; barrier contacts do that legitimately (a pair
at 0.34 mm closing to 0.013 mm).

The per-frame checker cannot see the failure this guards against: at 20 m/s two 5 cm bodies move more than their size
per step, and the Newton solve used to walk them around each other to their ballistic targets, each
iterate collision-free, so that they ended on each other's side without ever intersecting at a frame. So every
scene also asserts where the bodies are at every frame ("each on its own side"), from the geometry of the throw.

The sweep: cubes (a 2-cell tet box, its boundary colliding) and balls (a 42-vertex icosphere embedded in a
4-cell lattice, its triangles colliding, as the add-on builds them), head-on and offset, 5 to 50 m/s; and a soft
strip whose free half is swung over its pinned half (self-contact only), 5 to 50 m/s at the tip.
"""

import numpy as np
import pytest
from contact_lab.core.fem.lattice import tetrahedralize_lattice
from contact_lab.core.fem.primitives import box_tet_mesh, icosphere
from contact_lab.core.fem.world import SoftWorldBuilder
from contact_lab.core.ipc.frame_loop import iter_simulate_ipc
from contact_lab.core.ipc.ipc_solver import IpcSettings
from contact_lab.core.ipc.ipc_world import IpcWorld

ipctk = pytest.importorskip("ipctk")

CROSSING_CCD = ipctk.TightInclusionCCD(1e-6, 10_000_000, 1.0)
"""Tight Inclusion CCD that reports contact only (tolerance 1e-6, no conservative margin)."""

SIZE = 0.05
"""Cube edge and ball diameter [m]."""

RUBBER = dict(youngs_modulus=2.0e6, poisson_ratio=0.47, density=1100.0, damping=0.002, friction=0.0)
"""The add-on's Rubber preset, frictionless (a glancing blow then deflects by the normal force alone)."""


def _pair_world(shape, offset):
    """Two 5 cm bodies 30 cm apart along x (centres), the second shifted by ``offset`` [m] in y; no gravity.

    ``shape`` "cube": a rubber-like cube (E 1 MPa, 2 cells a side, its tet boundary collides); "ball": a Rubber
    icosphere (42 vertices) in a 4-cell lattice, its own triangles colliding (the add-on's embedding)."""
    b = SoftWorldBuilder(gravity=(0.0, 0.0, 0.0))
    V, F = icosphere(SIZE / 2, 1)
    ball = tetrahedralize_lattice(V, F, resolution=4)
    for x, dy in ((-0.15, 0.0), (0.15, offset)):
        if shape == "cube":
            lo = np.array([x - SIZE / 2, dy - SIZE / 2, -SIZE / 2])
            V, T = box_tet_mesh((2, 2, 2), lo, lo + SIZE)
            b.add_soft_body(V, T, youngs_modulus=1e6, poisson_ratio=0.45, density=1100, friction=0.0)
        else:
            b.add_soft_body(ball.tet_vertices + [x, dy, 0.0], ball.tet_indices, **RUBBER, contact_triangles=F,
                            contact_points=(ball.embed_tet, ball.embed_weights),
                            tet_volume_fraction=ball.tet_volume_fraction)  # fmt: skip
    return IpcWorld(b.finalize())


def _audited_run(world, start, frames):
    """IPC at 24 fps, 2 substeps, dhat 1 mm, every step audited; (positions per frame (F, N, 3), audit counts)."""
    mesh = ipctk.CollisionMesh(world.surface_positions(start.x), world.edges, world.faces)
    audit = {"steps": 0, "crossing": 0, "intersecting_frames": 0}

    def on_step(x0, x1):
        audit["steps"] += 1
        xs0, xs1 = world.surface_positions(x0), world.surface_positions(x1)
        if not ipctk.is_step_collision_free(mesh, xs0, xs1, narrow_phase_ccd=CROSSING_CCD):
            audit["crossing"] += 1

    out = []
    settings = IpcSettings(dhat=1e-3, substeps=2, check_intersections=True)
    for _, state in iter_simulate_ipc(world, frame_count=frames, fps=24, settings=settings, state=start,
                                      on_step=on_step):  # fmt: skip
        assert state.stats.intersections == 0 and state.stats.inverted == 0  # our checker
        audit["intersecting_frames"] += ipctk.has_intersections(mesh, world.surface_positions(state.x))  # ipctk's
        out.append(state.x.copy())
    return np.array(out), audit


def _throw(shape, speed, offset, frames=3):
    """Bodies thrown at each other at ``speed`` [m/s] each; (centres per frame (F, 2, 3), audit counts)."""
    world = _pair_world(shape, offset)
    start = world.state()
    s = world.soft.body_node_start
    start.v[s[0] : s[1], 0], start.v[s[1] : s[2], 0] = speed, -speed
    x, audit = _audited_run(world, start, frames)
    return np.stack([x[:, s[0] : s[1]].mean(axis=1), x[:, s[1] : s[2]].mean(axis=1)], axis=1), audit


def _assert_clean(audit, at_least):
    assert audit["crossing"] == 0 and audit["intersecting_frames"] == 0
    assert audit["steps"] >= at_least  # 2 substeps a frame, more where a step's motion was halved


@pytest.mark.parametrize("shape", ["cube", "ball"])
@pytest.mark.parametrize("speed", [5.0, 20.0, 50.0])
def test_head_on_bodies_bounce_back_with_every_step_collision_free(shape, speed):
    """Head-on: both stay on their own side of the midplane at every frame and end moving apart."""
    centres, audit = _throw(shape, speed, offset=0.0)
    _assert_clean(audit, at_least=5)  # halved: 2 substeps x 2 frames is 4
    assert (centres[:, 0, 0] < 0.0).all() and (centres[:, 1, 0] > 0.0).all()  # each on its own side, every frame
    gap = centres[:, 1, 0] - centres[:, 0, 0]
    assert gap[-1] > gap[-2] and gap[-1] > SIZE  # and moving apart again


@pytest.mark.parametrize(
    "shape, speed", [("cube", 5.0), ("cube", 20.0), ("cube", 50.0), ("ball", 20.0), ("ball", 50.0)]
)
def test_offset_bodies_glance_off_with_every_step_collision_free(shape, speed):
    """Half a body's width off centre: they deflect sideways, and may pass each other in x only once they are
    side by side (the second at least a body's width to the +y side of the first); whatever the path, no step's
    motion may cross. A tunnelling pair passes with its 2.5 cm offset."""
    centres, audit = _throw(shape, speed, offset=0.5 * SIZE)
    _assert_clean(audit, at_least=4)
    d = centres[:, 1] - centres[:, 0]
    assert ((d[:, 0] > 0.0) | (d[:, 1] > SIZE)).all()  # on its own side, or gone round the other on its +y side
    assert (d[:, 1] >= 0.5 * SIZE - 1e-9).all()  # never pushed towards -y


STRIP = (0.2, 0.04, 0.01)
"""Soft strip [m] (x, y, z) on z = 0, centred on x = y = 0; 10 x 2 x 1 cells."""


@pytest.mark.parametrize("tip_speed", [5.0, 20.0, 50.0])
def test_strip_folding_onto_itself_never_passes_through(tip_speed):
    """Self-contact only: a soft strip (E 10 kPa, no gravity, no collider) whose left part (x < -3 cm) is pinned,
    its right half swung up about the middle (tip ``tip_speed`` [m/s]): the flap folds over and lands on the pinned
    part. Every right-half node over the pinned slab's footprint is above the slab's mid-plane at every frame (a
    tunnelling flap swings through it and ends below); the flap does reach the slab."""
    length, width, height = STRIP
    V, T = box_tet_mesh((10, 2, 1), (-length / 2, -width / 2, 0.0), (length / 2, width / 2, height))
    b = SoftWorldBuilder(gravity=(0.0, 0.0, 0.0))
    b.add_soft_body(V, T, youngs_modulus=1e4, poisson_ratio=0.4, density=1000.0, friction=0.0,
                    pinned=V[:, 0] < -0.03)  # fmt: skip
    world = IpcWorld(b.finalize())
    start = world.state()
    start.v[:, 2] = tip_speed / (length / 2) * np.maximum(V[:, 0], 0.0)  # rotation about the y axis, right half
    x, audit = _audited_run(world, start, frames=7)
    _assert_clean(audit, at_least=12)
    flap = x[:, V[:, 0] > 0.0]  # (F, n, 3)
    over = (flap[..., 0] > -length / 2) & (flap[..., 0] < -0.03) & (np.abs(flap[..., 1]) < width / 2)
    assert over.any()  # it folded over the pinned part
    assert (flap[..., 2][over] > height / 2).all()  # and stayed on top of it
