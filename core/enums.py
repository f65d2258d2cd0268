"""Closed sets used by kernels (``IntEnum``: ``NONE = 0`` first, values append-only)."""

from enum import IntEnum


class ShapeType(IntEnum):
    """Collision shape kind; the kernel switch in the narrow phase reads ``int(ShapeType.X)``."""

    NONE = 0
    SPHERE = 1
    """``shape_params = (radius, 0, 0)`` [m]."""
    BOX = 2
    """``shape_params = (half_x, half_y, half_z)`` [m], axes of the shape frame."""
    CAPSULE = 3
    """``shape_params = (radius, half_height, 0)`` [m]; segment along the shape's local z axis."""
    PLANE = 4
    """Infinite half-space below the shape frame's xy plane; outward normal = local +z. Never dynamic."""
    CYLINDER = 5
    """``shape_params = (radius, half_height, 0)`` [m]; axis along the shape's local z, centred on the origin."""
    CONE = 6
    """``shape_params = (radius, half_height, 0)`` [m]; base disc at local z = -half_height, apex at +half_height
    (Blender's Cone collision shape); the origin is the middle of the axis, not the centroid (z = -half_height/2)."""
    CONVEX = 7
    """Convex hull: ``Model.shape_hull`` indexes :class:`~.rigid.hull.HullArrays`; ``shape_params = (r, 0, 0)``
    with r the largest distance of a hull vertex from the shape origin [m]."""
    MESH = 8
    """Triangle mesh (passive: a BVH over its triangles; active: a signed distance field plus surface samples)."""


class BodyKind(IntEnum):
    """How a body moves."""

    NONE = 0
    DYNAMIC = 1
    """Integrated from forces and contact impulses."""
    KINEMATIC = 2
    """Follows a prescribed pose track (animated or static passive object); infinite mass."""


class FrictionSet(IntEnum):
    """Shape of a contact's friction limit surface ``F(lambda_n)`` (course ch. 6, Table 5)."""

    NONE = 0
    BOX = 1
    """Four directional bounds ``-mu_-t lambda_n <= lambda_t <= mu_+t lambda_n`` (same for b): the BLCP of
    course §1.7 and texture friction (eq. 337–338). PGS enforces every set as this box."""
    CONE = 2
    """Isotropic Coulomb disk ``||(lambda_t, lambda_b)|| <= mu lambda_n`` (course eq. 23)."""
    ELLIPSE = 3
    """Elliptic cone ``(lambda_t / mu_t)^2 + (lambda_b / mu_b)^2 <= lambda_n^2`` on a fixed frame (eq. 308, 310)."""


class CombineMode(IntEnum):
    """How two surfaces' coefficients (friction or restitution) combine into the pair's value."""

    NONE = 0
    GEOMETRIC = 1
    """``sqrt(a b)``; equal values give that value (friction default)."""
    AVERAGE = 2
    MINIMUM = 3
    MAXIMUM = 4
    """``max(a, b)`` (restitution default)."""
    PRODUCT = 5
    """``a b`` (Bullet's friction rule)."""


class RFactorStrategy(IntEnum):
    """PROX r-factor strategy (course §3.4.4, seed 001 §1.4)."""

    NONE = 0
    GLOBAL = 1
    """One scalar ``r`` for every row, initialised from the Delassus spectral radius."""
    LOCAL = 2
    """``r_i = s / A_ii`` per row; with ``s = 1`` and a box set this is PGS."""
    BLOCKED = 3
    """Per contact ``1 / A_nn`` for the normal and the inverse of the 2 × 2 friction block (seed 001 §1.4); the dense
    study kernels only (:mod:`.contact_solvers.dense`)."""


class SolverStatus(IntEnum):
    """Why a contact solve stopped."""

    NONE = 0
    ABSOLUTE = 1
    RELATIVE = 2
    MAX_ITERATIONS = 3
    NO_CONTACTS = 4


__all__ = ["ShapeType", "BodyKind", "FrictionSet", "CombineMode", "RFactorStrategy", "SolverStatus"]
