"""Rolling down a 20° slope at the default settings (PROX, 4 substeps at 24 fps, as the add-on's): a level-5
icosphere hull and a cylinder accelerate at ``g sin θ / (1 + I / (m r²))`` within 3 %, on a plane, a box and a
triangle-mesh slope (one quad, as a Plane object gives it; a finely tessellated slope is slower, see the engine's
known limits).

Reference: the analytic rolling acceleration, ``5/7 g sin θ`` for the ball the icosphere approximates and
``2/3 g sin θ`` for the cylinder. A polyhedron rolls a little slower than its ball, losing energy as each facet
lands; the icosphere's contacts used to take in the far corners of the facet under it as speculative contacts, which
stopped the roll at every step: 5 % slow on each slope.
"""

import math

import numpy as np
import pytest
from contact_lab.core import BodyKind, ModelBuilder, simulate
from contact_lab.core.fem.primitives import icosphere

SLOPE = math.radians(20.0)
RADIUS = 0.1
"""Radius of the rolling bodies [m]."""
SECONDS = 2.0


def _slope(b: ModelBuilder, ground: str) -> None:
    """A passive slope through the origin, tilted by ``SLOPE`` about y (downhill is +x): a plane, a box or a
    triangle mesh."""
    tilt = (math.cos(SLOPE / 2), 0.0, math.sin(SLOPE / 2), 0.0)
    normal = np.array([math.sin(SLOPE), 0.0, math.cos(SLOPE)])
    if ground == "plane":
        b.add_shape_plane(b.add_body(kind=BodyKind.KINEMATIC, quat=tilt), mu=0.8)
    elif ground == "box":
        slab = b.add_body(kind=BodyKind.KINEMATIC, quat=tilt, pos=tuple(-0.5 * normal))
        b.add_shape_box(slab, (40.0, 5.0, 0.5), mu=0.8)
    else:  # as a Plane object makes it: one quad of two triangles
        corners = np.array([[-40.0, -5.0, 0.0], [40.0, -5.0, 0.0], [40.0, 5.0, 0.0], [-40.0, 5.0, 0.0]])
        triangles = np.array([[0, 1, 2], [0, 2, 3]])
        b.add_shape_mesh(b.add_body(kind=BodyKind.KINEMATIC, quat=tilt), corners, triangles, mu=0.8)


def rolling_acceleration(body: str, ground: str) -> float:
    """The body's acceleration down the slope [m/s²]: the slope of a line fitted to its downhill speed per frame."""
    b = ModelBuilder()
    _slope(b, ground)
    normal = np.array([math.sin(SLOPE), 0.0, math.cos(SLOPE)])
    roller = b.add_body(pos=tuple(RADIUS * normal), mass=1.0)
    if body == "hull":
        b.add_shape_convex(roller, icosphere(RADIUS, 5)[0], mu=0.8)
    else:  # its axis along y, across the slope
        b.add_shape_cylinder(roller, RADIUS, 0.3 * RADIUS, quat=(math.cos(math.pi / 4), math.sin(math.pi / 4), 0, 0),
                             mu=0.8)  # fmt: skip
    frames = round(24 * SECONDS) + 1
    trajectory = simulate(b.finalize(), frame_count=frames, fps=24)
    downhill = np.array([math.cos(SLOPE), 0.0, -math.sin(SLOPE)])
    speed = trajectory.body_vel[:, roller] @ downhill
    return float(np.polyfit(np.arange(frames) / 24.0, speed, 1)[0])


@pytest.mark.parametrize("ground", ["plane", "box", "mesh"])
@pytest.mark.parametrize(("body", "inertia"), [("hull", 2.0 / 5.0), ("cylinder", 1.0 / 2.0)])
def test_a_hull_and_a_cylinder_roll_down_a_slope_at_their_analytic_acceleration(body, inertia, ground):
    analytic = 9.81 * math.sin(SLOPE) / (1.0 + inertia)
    measured = rolling_acceleration(body, ground)
    assert abs(measured / analytic - 1.0) < 0.03, (measured, analytic)
