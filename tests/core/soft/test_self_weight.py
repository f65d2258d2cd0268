"""A soft cube settling under its own weight shortens by about linear elasticity's ρgH²/(2E), not a cell less.

Reference: a column of height H under its own weight, free to spread sideways, shortens by ``ρ g H² / (2 E)``
(1.96 mm for a 0.2 m cube of E = 1e5 Pa and 1 000 kg/m³). The fitted lattice ends at the cube's faces; the padded
one of older files adds a layer of cells beyond them, which the mass leaves out but the stiffness does not. Linear
tets at 8 cells across are stiffer than the material: here (frictionless ground) the fitted lattice gives 0.86 of
the elastic value, the padded one 0.52.
"""

from collections import deque

import numpy as np
import pytest
from contact_lab.core.enums import ShapeType
from contact_lab.core.fem.lattice import tetrahedralize_lattice
from contact_lab.core.fem.world import SoftWorldBuilder
from contact_lab.core.soft.frame_loop import SoftSettings, iter_simulate_soft

SIZE, E, NU, RHO, G = 0.2, 1.0e5, 0.3, 1000.0, 9.81
ELASTIC = RHO * G * SIZE**2 / (2.0 * E)


def _cube():
    v = np.array([[x, y, z] for z in (0, 1) for y in (0, 1) for x in (0, 1)], float) * SIZE
    v[:, :2] -= 0.5 * SIZE
    quads = [(0, 2, 3, 1), (4, 5, 7, 6), (0, 1, 5, 4), (2, 6, 7, 3), (0, 4, 6, 2), (1, 3, 7, 5)]
    return v, np.array([t for a, b, c, d in quads for t in ((a, b, c), (a, c, d))], np.int64)


def _settled_height(fitted: bool) -> float:
    """The cube's height [m] after a second on a frictionless plane, from its embedded corners."""
    v, f = _cube()
    lattice = tetrahedralize_lattice(v, f, resolution=8, fitted=fitted)
    b = SoftWorldBuilder(gravity=(0.0, 0.0, -G))
    b.add_soft_body(lattice.tet_vertices, lattice.tet_indices, density=RHO, youngs_modulus=E, poisson_ratio=NU,
                    damping=0.02, friction=0.0, tet_volume_fraction=lattice.tet_volume_fraction)  # fmt: skip
    b.add_collider(ShapeType.PLANE, friction=0.0)
    world = b.finalize()
    frames = iter_simulate_soft(world, frame_count=25, fps=24, settings=SoftSettings())
    state = deque(frames, maxlen=1)[0][1]
    corners = np.einsum("vk,vki->vi", lattice.embed_weights, state.x[lattice.tet_indices[lattice.embed_tet]])
    return float(np.ptp(corners[:, 2]))


def test_a_fitted_cube_shortens_by_most_of_the_elastic_value_and_the_padded_one_by_half():
    fitted = (SIZE - _settled_height(True)) / ELASTIC
    padded = (SIZE - _settled_height(False)) / ELASTIC
    assert 0.78 < fitted < 1.0
    assert padded == pytest.approx(0.5, abs=0.08)
