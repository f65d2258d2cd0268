"""Mass properties (core/rigid/mass_properties.py) against trimesh, closed forms and the builder's inertia."""

import math
from pathlib import Path

import numpy as np
import pytest
from contact_lab.core import ModelBuilder, ModelError, ShapeType
from contact_lab.core.rigid.hull import convex_hull
from contact_lab.core.rigid.mass_properties import (
    MassProperties,
    combine_mass_properties,
    hull_triangles,
    is_closed_mesh,
    mesh_mass_properties,
    primitive_mass_properties,
    shape_inertia,
    shape_volume,
)
from reference_geometry import rotation_from_vector

trimesh = pytest.importorskip("trimesh")

DATA = Path(__file__).resolve().parents[2] / "data"
REL = 1e-6
"""Agreement with trimesh (relative to the largest entry of each quantity)."""


def posed(vertices, rotvec=(0.4, -0.3, 0.8), shift=(1.5, -2.0, 0.7)) -> np.ndarray:
    """Vertices turned and moved off the origin, so every inertia entry and the centroid are non-trivial."""
    return np.asarray(vertices, np.float64) @ rotation_from_vector(rotvec).T + shift


def suzanne() -> tuple[np.ndarray, np.ndarray]:
    """Blender's Suzanne, holes filled and triangulated (made once by tests/data/make_suzanne.py)."""
    data = np.load(DATA / "suzanne.npz")
    return data["vertices"], data["triangles"]


def random_hull() -> tuple[np.ndarray, np.ndarray]:
    """Fan-triangulated convex hull of 400 random points."""
    hull = convex_hull(np.random.default_rng(7).normal(size=(400, 3)) * [1.0, 0.6, 0.3])
    return hull.vertices, hull_triangles(hull)


MESHES = {
    "box": lambda: (trimesh.creation.box((0.4, 1.0, 2.2)).vertices, trimesh.creation.box((0.4, 1.0, 2.2)).faces),
    "icosphere": lambda: (trimesh.creation.icosphere(3, 0.8).vertices, trimesh.creation.icosphere(3, 0.8).faces),
    "torus": lambda: (trimesh.creation.torus(1.0, 0.3).vertices, trimesh.creation.torus(1.0, 0.3).faces),
    "suzanne": suzanne,
    "random-hull": random_hull,
}


def assert_close(actual, expected, rel=REL):
    """Entry-wise agreement within ``rel`` of the largest entry of ``expected``."""
    expected = np.asarray(expected, np.float64)
    scale = np.max(np.abs(expected))
    assert np.max(np.abs(np.asarray(actual) - expected)) <= rel * scale, (actual, expected)


@pytest.mark.parametrize("name", list(MESHES))
def test_mesh_mass_properties_match_trimesh(name):
    """Agree with trimesh's volume, centroid and inertia (density 1) within 1e-6 for a posed closed mesh."""
    vertices, triangles = MESHES[name]()
    vertices = posed(vertices)
    assert is_closed_mesh(triangles)
    reference = trimesh.Trimesh(vertices, triangles, process=False)
    assert reference.is_watertight and reference.is_winding_consistent
    props = mesh_mass_properties(vertices, triangles)
    assert props.volume == pytest.approx(reference.volume, rel=REL)
    assert_close(props.centroid, reference.center_mass)
    assert_close(props.inertia, reference.moment_inertia)
    assert np.array_equal(props.inertia, props.inertia.T)


def test_box_mesh_matches_closed_form_exactly():
    """Give a box mesh the box's volume, centre and diagonal inertia to rounding (1e-12)."""
    half = np.array([0.2, 0.5, 1.1])
    box = trimesh.creation.box(2 * half)
    props = mesh_mass_properties(box.vertices, box.faces)
    closed = primitive_mass_properties(ShapeType.BOX, half)
    assert props.volume == pytest.approx(closed.volume, rel=1e-12)
    assert_close(props.centroid + 1.0, closed.centroid + 1.0, rel=1e-12)
    assert_close(props.inertia, closed.inertia, rel=1e-12)


def test_inward_or_open_mesh_is_reported():
    """Refuse an inward-wound mesh (negative volume) and flag open, duplicated or flipped meshes as not closed."""
    box = trimesh.creation.box((1.0, 1.0, 1.0))
    faces = np.asarray(box.faces)
    with pytest.raises(ValueError, match="wound outward"):
        mesh_mass_properties(box.vertices, faces[:, ::-1])
    assert is_closed_mesh(faces)
    assert not is_closed_mesh(faces[1:])
    assert not is_closed_mesh(np.concatenate([faces, faces[:1]]))
    assert not is_closed_mesh(np.concatenate([faces[:1, ::-1], faces[1:]]))
    assert not is_closed_mesh(np.zeros((0, 3), np.int64))


# primitives ---------------------------------------------------------------------------------------------
def cone_mesh(radius, half_height, segments):
    """A cone as a triangle mesh: base polygon at z = -half_height, apex at +half_height (outward winding)."""
    theta = np.linspace(0.0, 2.0 * np.pi, segments, endpoint=False)
    ring = np.c_[radius * np.cos(theta), radius * np.sin(theta), np.full(segments, -half_height)]
    vertices = np.concatenate([ring, [[0.0, 0.0, half_height], [0.0, 0.0, -half_height]]])
    i, j = np.arange(segments), (np.arange(segments) + 1) % segments
    sides = np.c_[i, j, np.full(segments, segments)]
    base = np.c_[j, i, np.full(segments, segments + 1)]
    return vertices, np.concatenate([sides, base])


def cylinder_mesh(radius, half_height, segments):
    """A cylinder as a triangle mesh along z (outward winding)."""
    return trimesh.creation.cylinder(radius=radius, height=2 * half_height, sections=segments)


def polygon_factor(segments) -> float:
    """Area of a regular polygon over its circumscribed circle's: the meshes' exact volume ratio."""
    return segments / (2.0 * np.pi) * np.sin(2.0 * np.pi / segments)


def test_cone_closed_form_matches_a_fine_mesh():
    """Match a 4096-segment cone mesh (centroid at -h/2, inertia 3r²/10 and 3r²/20 + 3H²/80 per unit mass)."""
    r, h, n = 0.7, 0.9, 4096
    closed = primitive_mass_properties(ShapeType.CONE, (r, h, 0.0))
    props = mesh_mass_properties(*cone_mesh(r, h, n))
    assert closed.volume == pytest.approx(math.pi * r * r * 2 * h / 3)
    assert props.volume == pytest.approx(closed.volume * polygon_factor(n), rel=1e-12)
    assert np.allclose(closed.centroid, [0.0, 0.0, -h / 2]) and np.allclose(props.centroid, closed.centroid)
    assert_close(props.inertia, closed.inertia, rel=1e-5)


def test_cylinder_closed_form_matches_a_fine_mesh():
    """Match a 4096-segment cylinder mesh (axial r²/2, transverse r²/4 + H²/12 per unit mass)."""
    r, h = 0.4, 1.3
    closed = primitive_mass_properties(ShapeType.CYLINDER, (r, h, 0.0))
    mesh = cylinder_mesh(r, h, 4096)
    props = mesh_mass_properties(mesh.vertices, mesh.faces)
    assert closed.volume == pytest.approx(math.pi * r * r * 2 * h)
    assert_close(props.inertia, closed.inertia, rel=1e-5)
    assert np.allclose(props.centroid, 0.0, atol=1e-12)


@pytest.mark.parametrize(
    ("shape_type", "params", "mesh"),
    [
        (ShapeType.SPHERE, (0.8, 0, 0), lambda: trimesh.creation.icosphere(6, 0.8)),
        (ShapeType.BOX, (0.2, 0.5, 1.1), lambda: trimesh.creation.box((0.4, 1.0, 2.2))),
        (ShapeType.CAPSULE, (0.3, 0.6, 0), lambda: trimesh.creation.capsule(height=1.2, radius=0.3, count=[256, 256])),
    ],
    ids=["sphere", "box", "capsule"],
)
def test_centred_primitives_match_meshes(shape_type, params, mesh):
    """Match sphere, box and capsule closed forms against fine meshes within their tessellation error."""
    mesh = mesh()
    props = mesh_mass_properties(mesh.vertices, mesh.faces)
    closed = primitive_mass_properties(shape_type, params)
    assert closed.volume == pytest.approx(props.volume, rel=2e-3)
    assert_close(closed.inertia / closed.volume, props.inertia / props.volume, rel=2e-3)
    assert np.allclose(closed.centroid, 0.0)


def test_convex_primitive_integrates_its_hull():
    """Give a CONVEX shape the hull's mesh integrals; shape_volume and shape_inertia agree with them."""
    points = np.random.default_rng(8).normal(size=(300, 3)) + [0.3, 0.0, -0.2]
    hull = convex_hull(points)
    props = primitive_mass_properties(ShapeType.CONVEX, (1.0, 0, 0), hull)
    reference = trimesh.Trimesh(hull.vertices, hull_triangles(hull), process=False)
    assert props.volume == pytest.approx(reference.volume, rel=REL)
    assert_close(props.centroid, reference.center_mass)
    assert shape_volume(ShapeType.CONVEX, (1.0, 0, 0), hull) == pytest.approx(props.volume)
    assert_close(shape_inertia(ShapeType.CONVEX, (1.0, 0, 0), 2.0, hull), props.inertia * 2.0 / props.volume)
    with pytest.raises(ValueError, match="hull"):
        primitive_mass_properties(ShapeType.CONVEX, (1.0, 0, 0))
    with pytest.raises(ValueError, match="PLANE"):
        primitive_mass_properties(ShapeType.PLANE, (0, 0, 0))


# unions --------------------------------------------------------------------------------------------------
def test_two_half_boxes_combine_into_the_whole_box():
    """Combine two posed halves of a box into the box's volume, centroid and inertia (1e-12)."""
    half = primitive_mass_properties(ShapeType.BOX, (0.25, 0.5, 0.75))
    whole = primitive_mass_properties(ShapeType.BOX, (0.5, 0.5, 0.75))
    R = rotation_from_vector([0.2, 0.9, -0.4])
    centre = np.array([1.0, -2.0, 0.5])
    flip = rotation_from_vector([0.0, 0.0, np.pi])  # a half box turned about z is still a half box
    parts = [
        (half, centre + R @ [-0.25, 0.0, 0.0], R),
        (half, centre + R @ [0.25, 0.0, 0.0], R @ flip),
    ]
    union = combine_mass_properties(parts)
    assert union.volume == pytest.approx(whole.volume, rel=1e-12)
    assert_close(union.centroid, centre, rel=1e-12)
    assert_close(union.inertia, R @ whole.inertia @ R.T, rel=1e-12)


def test_union_of_mesh_parts_matches_trimesh_of_the_joined_mesh():
    """Combine a posed torus and a posed icosphere like trimesh does for the two meshes joined (1e-6)."""
    torus, ball = trimesh.creation.torus(1.0, 0.3), trimesh.creation.icosphere(3, 0.5)
    R, pos = rotation_from_vector([0.5, 0.1, 0.3]), np.array([2.5, 0.0, 1.0])
    parts = [(mesh_mass_properties(torus.vertices, torus.faces), np.zeros(3), np.eye(3))]
    parts.append((mesh_mass_properties(ball.vertices, ball.faces), pos, R))
    union = combine_mass_properties(parts)
    moved = ball.vertices @ R.T + pos
    joined = trimesh.Trimesh(
        np.concatenate([torus.vertices, moved]), np.concatenate([torus.faces, ball.faces + len(torus.vertices)])
    )
    assert union.volume == pytest.approx(joined.volume, rel=REL)
    assert_close(union.centroid, joined.center_mass)
    assert_close(union.inertia, joined.moment_inertia)
    bare = [MassProperties(p.volume, r @ p.centroid + x, r @ p.inertia @ r.T) for p, x, r in parts]
    assert_close(combine_mass_properties(bare).inertia, union.inertia, rel=1e-12)


# the builder's derived inertia -----------------------------------------------------------------------------
def parallel_axis(inertia_c, mass, d):
    """Inertia about a point at -d from the centroid: I_c + m (|d|² E - d dᵀ)."""
    d = np.asarray(d, np.float64)
    return inertia_c + mass * (d @ d * np.eye(3) - np.outer(d, d))


def quat_of(rotvec) -> np.ndarray:
    """(w, x, y, z) of a rotation vector."""
    rotvec = np.asarray(rotvec, np.float64)
    angle = np.linalg.norm(rotvec)
    return np.r_[np.cos(angle / 2), np.sin(angle / 2) * rotvec / angle]


@pytest.mark.parametrize("kind", ["cylinder", "cone"])
def test_cylinder_and_cone_bodies_get_the_analytic_inertia(kind):
    """Derive a cylinder's or cone's body inertia as the textbook tensor, turned and shifted by the shape pose."""
    r, h, mass = 0.3, 0.5, 4.0
    pos, rotvec = np.array([0.1, -0.2, 0.3]), np.array([0.3, 0.7, -0.2])
    b = ModelBuilder()
    body = b.add_body(mass=mass, label=kind)
    add = b.add_shape_cylinder if kind == "cylinder" else b.add_shape_cone
    add(body, r, h, pos=pos, quat=quat_of(rotvec))
    model = b.finalize()
    H = 2 * h
    if kind == "cylinder":
        axial, transverse, centroid = mass * r * r / 2, mass * (r * r / 4 + H * H / 12), 0.0
    else:
        axial, transverse, centroid = 3 * mass * r * r / 10, mass * (3 * r * r / 20 + 3 * H * H / 80), -H / 4
    R = rotation_from_vector(rotvec)
    expected = parallel_axis(R @ np.diag([transverse, transverse, axial]) @ R.T, mass, pos + R @ [0, 0, centroid])
    assert_close(model.body_inertia_local[0], expected, rel=1e-12)


def test_convex_body_inertia_uses_the_hull_centroid():
    """Derive a convex body's inertia from its hull's integrals shifted to the body origin (vs trimesh)."""
    points = np.random.default_rng(9).normal(size=(200, 3)) * [0.5, 0.3, 0.2] + [0.2, 0.0, 0.1]
    mass, pos, rotvec = 3.0, np.array([0.0, 0.1, -0.1]), np.array([0.1, 0.2, 0.3])
    b = ModelBuilder()
    body = b.add_body(mass=mass, label="rock")
    shape = b.add_shape_convex(body, points, pos=pos, quat=quat_of(rotvec))
    model = b.finalize()
    hull = convex_hull(points)
    reference = trimesh.Trimesh(posed(hull.vertices, rotvec, pos), hull_triangles(hull), process=False)
    expected = parallel_axis(reference.moment_inertia * mass / reference.volume, mass, reference.center_mass)
    assert_close(model.body_inertia_local[0], expected)
    assert model.shape_type[shape] == ShapeType.CONVEX and model.shape_hull[shape] == 0
    assert model.shape_params[shape, 0] == pytest.approx(np.max(np.linalg.norm(hull.vertices, axis=1)))
    assert model.hulls.hull_vert_start.tolist() == [0, len(hull.vertices)]


def test_shape_hull_indexes_convex_shapes_in_model_order():
    """Number hulls in model shape order (body by body) and mark every other shape -1."""
    cube = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], np.float64)
    b = ModelBuilder()
    first, second = b.add_body(label="a"), b.add_body(label="b")
    b.add_shape_convex(second, cube * 0.5)
    b.add_shape_sphere(first, 0.2)
    b.add_shape_convex(first, cube * [0.1, 0.2, 0.3])
    model = b.finalize()
    assert model.shape_hull.tolist() == [-1, 0, 1]
    assert model.hulls.hull_vert_start.tolist() == [0, 8, 16]
    assert np.allclose(model.hulls.hull_verts[:8].max(axis=0), [0.1, 0.2, 0.3])
    assert model.shape_params[2, 0] == pytest.approx(math.sqrt(3) * 0.5)


@pytest.mark.parametrize(
    ("add", "message"),
    [
        (lambda b, body: b.add_shape_cylinder(body, 0.0, 0.5), "size must be positive"),
        (lambda b, body: b.add_shape_cylinder(body, 0.2, -0.5), "size must be positive"),
        (lambda b, body: b.add_shape_cone(body, -1.0, 0.5), "size must be positive"),
        (lambda b, body: b.add_shape_cone(body, 0.2, 0.0), "size must be positive"),
        (lambda b, body: b.add_shape_convex(body, np.eye(3)), "at least 4 points"),
        (lambda b, body: b.add_shape_convex(body, [[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]]), "one plane"),
        (lambda b, body: b.add_shape_convex(body, np.r_[np.eye(3), [[np.nan] * 3]]), "NaN"),
    ],
)
def test_bad_new_shapes_raise_model_error_naming_the_body(add, message):
    """Reject non-positive cylinder/cone sizes and flat, tiny or non-finite hulls with the body's label."""
    b = ModelBuilder()
    body = b.add_body(label="Gizmo")
    with pytest.raises(ModelError, match=f"Gizmo.*{message}"):
        add(b, body)
        b.finalize()
