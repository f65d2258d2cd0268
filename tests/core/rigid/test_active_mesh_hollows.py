"""An active Mesh body keeps its holes and hollows: shapes fall through the hole of a torus, a ball stays in a bowl.

Reference: geometry. A torus of tube radius 0.15 m around a 0.5 m circle leaves a hole of radius 0.35 m; a ball,
a box and a hull 0.2 m across dropped down its axis meet no triangle and land on the ground at their resting
heights. Before the fix they came to rest on top of the hole, as on the torus's convex hull: above the grid of
the torus's distance field the field is only a lower bound of the distance (the distance to the grid's box), and
when no triangle lay within that bound it was taken as the distance.
"""

import numpy as np
import pytest
from contact_lab.core import BodyKind, ModelBuilder, simulate

G = 9.81


def torus(major=0.5, minor=0.15, sections=48, tube_sections=24):
    """Closed, outward-wound torus around z through the origin: (vertices (V, 3) [m], triangles (T, 3))."""
    u = 2 * np.pi * np.arange(sections) / sections
    v = 2 * np.pi * np.arange(tube_sections) / tube_sections
    uu, vv = np.meshgrid(u, v, indexing="ij")
    ring = major + minor * np.cos(vv)
    verts = np.stack([ring * np.cos(uu), ring * np.sin(uu), minor * np.sin(vv)], axis=-1).reshape(-1, 3)
    i, j = np.meshgrid(np.arange(sections), np.arange(tube_sections), indexing="ij")
    a = i * tube_sections + j
    b = ((i + 1) % sections) * tube_sections + j
    c = ((i + 1) % sections) * tube_sections + (j + 1) % tube_sections
    d = i * tube_sections + (j + 1) % tube_sections
    tris = np.concatenate([np.stack([a, b, c], -1).reshape(-1, 3), np.stack([a, c, d], -1).reshape(-1, 3)])
    return verts, tris


def bowl(outer=0.5, inner=0.45, rings=12, sections=32):
    """Closed, outward-wound hemispherical shell opening up (rim at z = 0): (vertices, triangles)."""
    phi = 0.5 * np.pi * np.arange(1, rings + 1) / rings  # from near the bottom pole to the rim
    theta = 2 * np.pi * np.arange(sections) / sections
    verts = [(0.0, 0.0, -outer), (0.0, 0.0, -inner)]
    for radius in (outer, inner):
        for p in phi:
            verts += [
                (radius * np.sin(p) * np.cos(t), radius * np.sin(p) * np.sin(t), -radius * np.cos(p)) for t in theta
            ]
    verts = np.array(verts)

    def at(layer, r, s):  # layer 0 outer, 1 inner; ring r in [0, rings)
        return 2 + (layer * rings + r) * sections + s % sections

    tris = []
    for layer, pole in ((0, 0), (1, 1)):
        flip = layer == 1  # the inner surface faces the bowl's hollow
        for s in range(sections):
            t = (pole, at(layer, 0, s + 1), at(layer, 0, s))
            tris.append(t[::-1] if flip else t)
        for r in range(rings - 1):
            for s in range(sections):
                q = (at(layer, r, s), at(layer, r, s + 1), at(layer, r + 1, s + 1), at(layer, r + 1, s))
                for t in ((q[0], q[1], q[2]), (q[0], q[2], q[3])):
                    tris.append(t[::-1] if flip else t)
    for s in range(sections):  # the rim joins the two surfaces
        q = (at(0, rings - 1, s), at(0, rings - 1, s + 1), at(1, rings - 1, s + 1), at(1, rings - 1, s))
        tris += [(q[0], q[1], q[2]), (q[0], q[2], q[3])]
    return verts, np.array(tris)


def _signed_volume(verts, tris):
    a, b, c = verts[tris[:, 0]], verts[tris[:, 1]], verts[tris[:, 2]]
    return np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6.0


def test_the_test_meshes_are_closed_and_outward():
    """Their signed volumes are the analytic ones within the faceting (positive: wound outward)."""
    v, t = torus()
    assert _signed_volume(v, t) == pytest.approx(2 * np.pi**2 * 0.5 * 0.15**2, rel=0.02)
    v, t = bowl()
    assert _signed_volume(v, t) == pytest.approx(2 / 3 * np.pi * (0.5**3 - 0.45**3), rel=0.03)


PRISM = np.array([[0.1 * np.cos(a), 0.1 * np.sin(a), z] for a in 2 * np.pi * np.arange(6) / 6 for z in (-0.06, 0.06)])
"""A hexagonal prism 0.2 m across and 0.12 m tall, as a hull."""


@pytest.mark.parametrize(
    "shape, rest_height",
    [("sphere", 0.1), ("box", 0.08), ("hull", 0.06)],
)
def test_shapes_fall_through_the_hole_of_an_active_torus(shape, rest_height):
    """Dropped down the axis of an active torus lying on the ground, each lands on the ground inside the hole."""
    b = ModelBuilder(gravity=(0, 0, -G))
    ground = b.add_body(kind=BodyKind.KINEMATIC)
    b.add_shape_plane(ground, mu=0.5)
    ring = b.add_body(pos=(0.0, 0.0, 0.15), mass=5.0)
    b.add_shape_mesh(ring, *torus(), mu=0.5)
    body = b.add_body(pos=(0.0, 0.0, 0.8), mass=0.2)
    if shape == "sphere":
        b.add_shape_sphere(body, 0.1, mu=0.5)
    elif shape == "box":
        b.add_shape_box(body, (0.08, 0.08, 0.08), mu=0.5)
    else:
        b.add_shape_convex(body, PRISM, mu=0.5)
    traj = simulate(b.finalize(), frame_count=37, fps=24, substeps=4)
    end = traj.body_pos[-1, 2]
    assert np.hypot(end[0], end[1]) < 0.35 - 0.1  # inside the hole
    assert end[2] == pytest.approx(rest_height, abs=2e-3)  # on the ground, not on the torus (top at 0.3 m)
    assert traj.body_pos[-1, 1, 2] == pytest.approx(0.15, abs=2e-3)  # the torus lies still


def test_a_ball_rolled_into_an_active_bowl_stays_inside():
    """A ball set rolling inside an active bowl resting on the ground stays in its hollow, below the rim."""
    b = ModelBuilder(gravity=(0, 0, -G))
    ground = b.add_body(kind=BodyKind.KINEMATIC)
    b.add_shape_plane(ground, mu=0.5)
    dish = b.add_body(pos=(0.0, 0.0, 0.5), mass=5.0)
    b.add_shape_mesh(dish, *bowl(), mu=0.5)
    ball = b.add_body(pos=(0.25, 0.0, 0.5 - np.sqrt(0.35**2 - 0.25**2)), vel=(0.0, 1.0, 0.0), mass=0.2)
    b.add_shape_sphere(ball, 0.1, mu=0.5)
    traj = simulate(b.finalize(), frame_count=49, fps=24, substeps=4)
    rel = traj.body_pos[:, 2] - traj.body_pos[:, 1]  # the ball from the bowl's rim centre
    assert np.all(np.linalg.norm(rel, axis=1) < 0.45 - 0.1 + 2e-3)  # never into the shell
    assert np.all(rel[:, 2] < 0.0)  # below the rim
