"""Small analytic scenes shared by the core physics tests (built with the public API only)."""

import math

import numpy as np
from contact_lab.core import BodyKind, ModelBuilder
from contact_lab.core.rigid.joints import JointKind, JointSpec

G = 9.81


def quat_about_y(angle):
    """Quaternion (wxyz) of a rotation by ``angle`` [rad] about +y."""
    return np.array([math.cos(angle / 2), 0.0, math.sin(angle / 2), 0.0])


def incline_box(theta, mu, *, half=0.25, mass=2.0, vel_along=0.0):
    """A box resting on a plane tilted by ``theta`` about +y; returns (model, downhill unit vector).

    The plane's normal is R_y(theta) z; downhill is R_y(theta) (-x) rotated... computed explicitly.
    """
    q = quat_about_y(theta)
    normal = np.array([math.sin(theta), 0.0, math.cos(theta)])
    downhill = np.array([math.cos(theta), 0.0, -math.sin(theta)])
    b = ModelBuilder(gravity=(0, 0, -G))
    ground = b.add_body(kind=BodyKind.KINEMATIC, quat=q, label="incline")
    b.add_shape_plane(ground, mu=mu)
    box = b.add_body(pos=normal * half, quat=q, vel=downhill * vel_along, mass=mass, label="box")
    b.add_shape_box(box, (half, half, half), mu=mu)
    return b.finalize(), downhill


def floor_box(v0, mu, *, half=0.25, mass=2.0):
    """A box on a horizontal floor sliding along +x at ``v0`` [m/s]."""
    b = ModelBuilder(gravity=(0, 0, -G))
    ground = b.add_body(kind=BodyKind.KINEMATIC, label="floor")
    b.add_shape_plane(ground, mu=mu)
    box = b.add_body(pos=(0, 0, half), vel=(v0, 0, 0), mass=mass, label="box")
    b.add_shape_box(box, (half, half, half), mu=mu)
    return b.finalize()


def floor_sphere(v0, mu, *, radius=0.3, mass=1.5):
    """A sphere on a floor sliding along +x at ``v0`` [m/s] without spin."""
    b = ModelBuilder(gravity=(0, 0, -G))
    ground = b.add_body(kind=BodyKind.KINEMATIC, label="floor")
    b.add_shape_plane(ground, mu=mu)
    ball = b.add_body(pos=(0, 0, radius), vel=(v0, 0, 0), mass=mass, label="ball")
    b.add_shape_sphere(ball, radius, mu=mu)
    return b.finalize()


def box_stack(count, *, half=0.25, mass=1.0, mu=0.6):
    """``count`` equal boxes stacked exactly touching on a floor."""
    b = ModelBuilder(gravity=(0, 0, -G))
    ground = b.add_body(kind=BodyKind.KINEMATIC, label="floor")
    b.add_shape_plane(ground, mu=mu)
    for i in range(count):
        body = b.add_body(pos=(0, 0, half + 2 * half * i), mass=mass, label=f"box{i}")
        b.add_shape_box(body, (half, half, half), mu=mu)
    return b.finalize()


def head_on_spheres(speed, restitution, *, radius=0.5, gap=0.3, masses=(1.0, 1.0)):
    """Two spheres approaching along x with ``±speed`` [m/s], no gravity, no friction."""
    b = ModelBuilder(gravity=(0, 0, 0))
    x = radius + gap / 2
    s0 = b.add_body(pos=(-x, 0, 0), vel=(speed, 0, 0), mass=masses[0], label="left")
    b.add_shape_sphere(s0, radius, mu=0.0, restitution=restitution)
    s1 = b.add_body(pos=(x, 0, 0), vel=(-speed, 0, 0), mass=masses[1], label="right")
    b.add_shape_sphere(s1, radius, mu=0.0, restitution=restitution)
    return b.finalize()


PIECE = 0.2
"""Edge of a glued wall's cubic piece [m] (1 kg each)."""


def glued_wall(columns: int, rows: int, drop: bool = False, lift: float = 0.0, spin: float = 0.0):
    """``columns`` × ``rows`` pieces on a passive floor, each glued to its side, upper and both diagonal neighbours;
    with ``drop`` the joints break at 0.5 N·s and a 40 kg box falls from 0.15 m above onto the wall's left corner.
    ``lift`` [m] raises the wall off the floor and ``spin`` [rad/s] turns it as one body about its centre's y axis
    (the joints then hold the pieces against their centripetal pull)."""
    b = ModelBuilder()
    floor = b.add_body(pos=(0.0, 0.0, -0.1), kind=BodyKind.KINEMATIC)
    b.add_shape_box(floor, (6.0, 3.0, 0.1))
    piece = {}
    centre = np.array([0.0, 0.0, lift + rows * PIECE / 2])
    omega = np.array([0.0, spin, 0.0])
    for i in range(columns):
        for k in range(rows):
            at = np.array([(i - (columns - 1) / 2) * PIECE, 0.0, lift + (k + 0.5) * PIECE])
            vel = tuple(np.cross(omega, at - centre))
            piece[i, k] = b.add_body(pos=tuple(at), vel=vel, omega=tuple(omega), mass=1.0)
            b.add_shape_box(piece[i, k], (PIECE / 2,) * 3)
    for (i, k), body in piece.items():
        for di, dk in ((1, 0), (0, 1), (1, 1), (-1, 1)):
            other = piece.get((i + di, k + dk))
            if other is not None:
                mid = ((i + di / 2 - (columns - 1) / 2) * PIECE, 0.0, lift + (k + dk / 2 + 0.5) * PIECE)
                threshold = 0.5 if drop else math.inf
                b.add_joint(JointSpec(JointKind.FIXED, body, other, mid, (1.0, 0.0, 0.0, 0.0),
                                      breaking_threshold=threshold))  # fmt: skip
    if drop:
        box = b.add_body(pos=(-(columns - 1) / 2 * PIECE, 0.0, rows * PIECE + 0.25), mass=40.0)
        b.add_shape_box(box, (0.15, 0.15, 0.1))
    return b.finalize()
