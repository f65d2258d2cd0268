"""The bake's soft bodies weigh their mesh (issue 13): ``build_soft_body`` hands the lattice's volume fractions to the
core, so Blender's default cube (2 m, Flesh 1050 kg/m³) weighs 8 m³ × 1050 kg/m³ at any lattice resolution, however
it is rotated, scaled or mirrored. Before, it weighed 1.59 (resolution 12) to 1.95 (resolution 8) times that.

Reference: the mesh's volume in the world, |det M| times its local volume (divergence theorem).
"""

import numpy as np
import pytest
from contact_lab.addon import units
from contact_lab.addon.soft import build as soft_export
from contact_lab.core.fem.world import SoftWorldBuilder

CUBE_VERTICES = np.array([[x, y, z] for x in (-1.0, 1.0) for y in (-1.0, 1.0) for z in (-1.0, 1.0)])
CUBE_QUADS = [[0, 1, 3, 2], [4, 6, 7, 5], [0, 4, 5, 1], [2, 3, 7, 6], [0, 2, 6, 4], [1, 5, 7, 3]]
CUBE_TRIANGLES = np.array([[q[0], q[1], q[2]] for q in CUBE_QUADS] + [[q[0], q[2], q[3]] for q in CUBE_QUADS])
DENSITY = 1050.0


def _matrix(rotation_quat, scale, translation):
    m = np.eye(4)
    q = np.asarray(rotation_quat, float)
    m[:3, :3] = units.quat_to_matrix(q / np.linalg.norm(q)) @ np.diag(scale)
    m[:3, 3] = translation
    return m


def _body(matrix, resolution, metres=1.0, fitted=True):
    inp = soft_export.SoftBodyInput(
        object_name="Cube",
        vertices=CUBE_VERTICES,
        triangles=CUBE_TRIANGLES,
        world_matrices=np.stack([matrix, matrix]),
        pinned_render=np.zeros(8, dtype=bool),
        lattice_resolution=resolution,
        material=dict(density=DENSITY, youngs_modulus=1e5, poisson_ratio=0.45, damping=0.02, friction=0.5, name="Cube"),
        lattice_fitted=fitted,
    )
    kwargs, record = soft_export.build_soft_body(inp, metres)
    builder = SoftWorldBuilder()
    builder.add_soft_body(record.rest_world, record.tet_indices, **kwargs)
    return builder.finalize(), record


def test_cube_volume_reference():
    a, b, c = (CUBE_VERTICES[CUBE_TRIANGLES[:, k]] for k in range(3))
    assert np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6.0 == pytest.approx(8.0, rel=1e-12)


@pytest.mark.parametrize("resolution", [4, 8, 12, 16])
@pytest.mark.parametrize(
    "scale",
    [(1.0, 1.0, 1.0), (1.7, 0.6, 0.35), (-1.0, 0.8, 1.2)],
    ids=["default", "non-uniform", "mirrored"],
)
def test_default_cube_weighs_its_volume_times_density(scale, resolution):
    """Within 2 % (the lattice alone: 1.42-3.4 times); the centre of mass is the cube's centre."""
    m = _matrix((0.9, 0.1, -0.3, 0.2), scale, (0.5, -2.0, 3.0))
    world, record = _body(m, resolution)
    volume = 8.0 * abs(np.linalg.det(m[:3, :3]))
    assert world.node_mass.sum() == pytest.approx(DENSITY * volume, rel=0.02)
    com = world.node_mass @ world.node_rest / world.node_mass.sum()
    cell = record.lattice.cell_size * float(np.abs(scale).max())
    assert np.linalg.norm(com - m[:3, 3]) < 0.05 * cell


def test_mass_follows_the_length_unit():
    """Centimetre scenes: lengths in metres, the mass is the volume in m³ times the density."""
    world, _ = _body(_matrix((1, 0, 0, 0), (1, 1, 1), (0, 0, 0)), 12, metres=0.01)
    assert world.node_mass.sum() == pytest.approx(DENSITY * 8.0e-6, rel=0.02)


def test_without_the_fractions_the_lattice_over_weighs():
    """The failure this fixes, reproduced by dropping the fractions of the padded lattice (Lattice Fit Padded): 1.59
    times at resolution 12; the fitted lattice of the same cube is the cube."""
    _, fitted = _body(np.eye(4), 12)
    builder = SoftWorldBuilder()
    builder.add_soft_body(fitted.rest_world, fitted.tet_indices, density=DENSITY)
    assert builder.finalize().node_mass.sum() / (DENSITY * 8.0) == pytest.approx(1.0, rel=1e-9)
    _, record = _body(np.eye(4), 12, fitted=False)
    builder = SoftWorldBuilder()
    builder.add_soft_body(record.rest_world, record.tet_indices, density=DENSITY)
    assert builder.finalize().node_mass.sum() / (DENSITY * 8.0) == pytest.approx((14 / 12) ** 3, rel=1e-9)
