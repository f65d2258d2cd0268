"""Transform math and validation of the scene export, with stand-in objects (no Blender)."""

import types

import numpy as np
import pytest
from contact_lab.addon import units
from contact_lab.addon.errors import BakeError
from contact_lab.addon.scene import validate_objects
from fakes import rigid_object


def random_quats(n, seed=0):
    q = np.random.default_rng(seed).normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    q[q[:, 0] < 0] *= -1
    return q


def test_matrix_quat_round_trip():
    """matrix_to_quat inverts quat_to_matrix (w >= 0), including 180° turns."""
    q = np.concatenate([random_quats(200), [[0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 0.0]]])
    np.testing.assert_allclose(units.matrix_to_quat(units.quat_to_matrix(q)), q, atol=1e-12)


def test_decompose_scale_sign_and_shear():
    """decompose_matrices returns translation, rotation, scale; a mirror gives a negative scale."""
    rot = units.quat_to_matrix(random_quats(1, seed=3))[0]
    m = np.eye(4)
    m[:3, :3] = rot @ np.diag([1.0, 2.0, 3.0])
    m[:3, 3] = (4.0, 5.0, 6.0)
    t, r, s, shear = units.decompose_matrices(m[None])
    np.testing.assert_allclose(t[0], (4, 5, 6))
    np.testing.assert_allclose(r[0], rot, atol=1e-12)
    np.testing.assert_allclose(s[0], (1, 2, 3))
    assert shear[0] < 1e-12
    m[:3, :3] = rot @ np.diag([1.0, -2.0, 3.0])
    assert units.decompose_matrices(m[None])[2][0].min() < 0


def test_object_location_from_body_pose():
    """location = com − R·(scale ∘ centre): the bbox centre of the keyed object lands on the com."""
    q = random_quats(5, seed=1)
    com = np.random.default_rng(2).normal(size=(5, 3))
    centre, scale = np.array([0.1, -0.2, 0.3]), np.array([2.0, 1.0, 0.5])
    loc = units.body_to_object_location(com, q, centre, scale)
    rebuilt = loc + np.einsum("fij,j->fi", units.quat_to_matrix(q), scale * centre)
    np.testing.assert_allclose(rebuilt, com, atol=1e-12)


def test_quaternion_track_is_made_continuous():
    """Sign flips along time are removed; every consecutive pair has a non-negative dot product."""
    q = random_quats(50, seed=4)
    q[::3] *= -1
    c = units.make_quat_continuous(q)
    assert np.all(np.einsum("fi,fi->f", c[1:], c[:-1]) >= 0)
    np.testing.assert_allclose(np.abs(np.einsum("fi,fi->f", c, q)), 1.0)


def fake_object(name, role="ACTIVE", shape="BOX", mass=1.0, size=1.0):
    return rigid_object(name, role, shape, mass, size)


SCENE = types.SimpleNamespace(
    render=types.SimpleNamespace(fps=24, fps_base=1.0), unit_settings=types.SimpleNamespace(scale_length=1.0)
)


@pytest.mark.parametrize(
    ("objects", "fragment", "culprit"),
    [
        ([fake_object("Cube", mass=0.0)], "mass must be positive", "Cube"),
        ([fake_object("Cube", mass=-2.0)], "mass must be positive", "Cube"),
        ([fake_object("Floor", shape="PLANE")], "only be passive", "Floor"),
        ([fake_object("Flat", size=0.0)], "zero size", "Flat"),
        ([], "no active bodies", None),
    ],
)
def test_validation_names_the_object(objects, fragment, culprit):
    """Invalid settings raise BakeError naming the object before anything is sampled."""
    with pytest.raises(BakeError) as info:
        validate_objects(SCENE, objects, [], 1, 24)
    assert fragment in str(info.value).lower()
    assert info.value.object_name == culprit


def test_validation_rejects_empty_frame_range():
    """End must come after Start."""
    with pytest.raises(BakeError, match="(?i)frame range"):
        validate_objects(SCENE, [fake_object("Cube")], [], 10, 10)
