"""MESH contacts (collision/mesh_contacts.py, sdf_contacts.py, mesh_manifold.py) against closed forms, the other
shape kernels and brute force, then through the simulation: objects in a concave bowl, Suzanne on a plane, a mesh
cube against a BOX."""

import math

import mesh_reference as mr
import numpy as np
import pytest
import reference_geometry as ref
from contact_lab.core import BodyKind, ModelBuilder, simulate
from contact_lab.core.rigid.collision.narrow_phase import FEATURE_MAX, generate_contacts
from contact_lab.core.rigid.collision.sdf_contacts import field_distance, field_view
from contact_lab.core.rigid.hull import convex_hull, empty_hull_arrays, pack_hulls
from contact_lab.core.rigid.mass_properties import mesh_mass_properties
from contact_lab.core.rigid.mesh import mesh_bounding_radius, pack_meshes, surface_samples, validated_mesh

SPHERE, BOX, CAPSULE, PLANE, CYLINDER, CONE, CONVEX, MESH = 1, 2, 3, 4, 5, 6, 7, 8
MARGIN = 0.01
I3 = np.eye(3)
UP = np.array([0.0, 0.0, 1.0])


class Scene:
    """Shape arrays for ``generate_contacts``; shapes are added in order (index = call order)."""

    def __init__(self):
        self.types, self.params, self.pos, self.rot, self.hull, self.mesh = [], [], [], [], [], []
        self._hulls, self._meshes = [], []

    def add(self, kind, params=(0, 0, 0), pos=(0, 0, 0), rot=I3, *, points=None, mesh=None, active=False):
        """Add a shape; ``points`` for a hull, ``mesh = (vertices, triangles)`` for a mesh; returns its index."""
        params = np.array(params, float).reshape(3)
        self.hull.append(-1)
        self.mesh.append(-1)
        if points is not None:
            h = convex_hull(points)
            self.hull[-1] = len(self._hulls)
            self._hulls.append(h)
            params = np.array([np.max(np.linalg.norm(h.vertices, axis=1)), 0, 0])
        if mesh is not None:
            m = validated_mesh(*mesh, solid=active)
            self.mesh[-1] = len(self._meshes)
            self._meshes.append(m)
            params = np.array([mesh_bounding_radius(m), 0, 0])
        self.types.append(kind)
        self.params.append(params)
        self.pos.append(np.array(pos, float))
        self.rot.append(np.array(rot, float))
        return len(self.types) - 1

    def collide(self, pairs, margin=MARGIN):
        """Contacts of the pairs: (pair, point, normal, gap, feature) arrays, checked for overflow."""
        hulls = pack_hulls(self._hulls) if self._hulls else empty_hull_arrays()
        meshes = pack_meshes(self._meshes, margin)
        pairs = np.asarray(pairs, np.int32).reshape(-1, 2)
        cap = 16 * len(pairs) + 16
        out = (np.zeros(cap, np.int32), np.zeros((cap, 3)), np.zeros((cap, 3)), np.zeros(cap), np.zeros(cap, np.int32))
        counts = np.zeros(2, np.int64)
        generate_contacts(np.array(self.types, np.int32), np.array(self.params), np.array(self.pos),
                          np.array(self.rot), hulls, np.array(self.hull, np.int32), meshes,
                          np.array(self.mesh, np.int32), pairs, len(pairs), margin, np.zeros(len(self.types)), *out,
                          counts)  # fmt: skip
        assert counts[1] == 0
        return tuple(o[: counts[0]] for o in out)


def contacts_of(scene, a, b, margin=MARGIN):
    """(point, normal, gap, feature) of pair (a, b), checked against (b, a): same ids, points, gaps; negated
    normals; unique ids in range; unit normals; at most 8 contacts."""
    pair, point, normal, gap, feature = scene.collide([[a, b], [b, a]], margin)
    ab, ba = pair == 0, pair == 1
    assert ab.sum() == ba.sum() <= 8
    oa, ob = np.argsort(feature[ab]), np.argsort(feature[ba])
    np.testing.assert_array_equal(feature[ab][oa], feature[ba][ob])
    assert len(set(feature[ab].tolist())) == ab.sum()
    assert np.all((feature >= 0) & (feature < FEATURE_MAX))
    np.testing.assert_allclose(gap[ab][oa], gap[ba][ob], atol=1e-12)
    np.testing.assert_allclose(normal[ab][oa], -normal[ba][ob], atol=1e-12)
    np.testing.assert_allclose(point[ab][oa], point[ba][ob], atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(normal, axis=1), 1.0, atol=1e-12)
    return point[ab], normal[ab], gap[ab], feature[ab]


def floor_mesh(half=1.0, n=4):
    """Flat square [-half, half]^2 at z = 0 split into n x n quads (2 n^2 triangles, normals up): open."""
    x = np.linspace(-half, half, n + 1)
    v = np.array([(a, b, 0.0) for a in x for b in x])
    return v, mr.grid_triangles(n)


# ---------------------------------------------------------------------------------------------------------------
# Passive meshes (BVH)
# ---------------------------------------------------------------------------------------------------------------


def test_sphere_on_passive_mesh_box_equals_sphere_on_box():
    """Give a sphere near a tessellated mesh box (faces, inner edges, box edges and corners, shallow overlap or
    within the margin) the single contact of sphere vs BOX: point, normal and gap to 1e-12."""
    rng = np.random.default_rng(10)
    half, r = np.array([0.5, 0.3, 0.2]), 0.1
    mesh = mr.box_mesh(half, subdivisions=3)
    checked = 0
    for _ in range(300):
        rot = ref.random_rotation(rng)
        centre = rng.uniform(-half - r - MARGIN, half + r + MARGIN)
        if np.all(np.abs(centre) < half):
            continue  # centre inside the box: BOX's deep case, not the mesh's
        world = rot @ centre + [0.3, -0.2, 1.0]
        s = Scene()
        sphere = s.add(SPHERE, (r, 0, 0), world)
        box = s.add(BOX, half, (0.3, -0.2, 1.0), rot)
        m = s.add(MESH, pos=(0.3, -0.2, 1.0), rot=rot, mesh=mesh)
        expected = contacts_of(s, sphere, box)
        got = contacts_of(s, sphere, m)
        assert len(got[2]) == len(expected[2])
        for e, g in zip(expected[:3], got[:3], strict=True):
            np.testing.assert_allclose(g, e, atol=1e-12)
        checked += len(got[2])
    assert checked > 100


def test_sphere_rolling_across_inner_edges_sees_the_face_normal():
    """Keep one contact with the normal up and the same gap for a sphere sinking 2 mm into a tessellated floor,
    whatever triangle, inner edge or inner vertex lies under it (an unrestricted edge normal would tilt)."""
    s = Scene()
    floor = s.add(MESH, mesh=floor_mesh())
    r = 0.3
    for x in np.linspace(-0.6, 0.6, 97):  # steps of 1.25 cm: every inner edge and vertex is passed near or on
        for y in (0.0, 0.13, 0.5):
            ball = s.add(SPHERE, (r, 0, 0), (x, y, r - 0.002))
            point, normal, gap, _ = contacts_of(s, floor, ball)
            assert len(gap) == 1
            np.testing.assert_allclose(normal, [UP], atol=1e-12)
            np.testing.assert_allclose(gap, [-0.002], atol=1e-12)
            np.testing.assert_allclose(point, [[x, y, -0.001]], atol=1e-12)


def polygon_area(points):
    """Area of the convex hull of 2D points (monotone chain, then the shoelace formula)."""
    pts = sorted(map(tuple, np.round(points, 12)))
    if len(pts) < 3:
        return 0.0

    def half(seq):
        out = []
        for p in seq:
            while (
                len(out) >= 2
                and (out[-1][0] - out[-2][0]) * (p[1] - out[-2][1]) - (out[-1][1] - out[-2][1]) * (p[0] - out[-2][0])
                <= 0
            ):
                out.pop()
            out.append(p)
        return out[:-1]

    hull = np.array(half(pts) + half(pts[::-1]))
    x, y = hull[:, 0], hull[:, 1]
    return 0.5 * abs(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1)))


@pytest.mark.parametrize("kind", [BOX, CYLINDER, CONVEX])
def test_shapes_lying_on_a_tessellated_floor_match_the_plane(kind):
    """A box, cylinder or hull lying flat 1 mm deep on a tessellated floor, across its inner edges: every normal
    up, every gap -1 mm, at most 8 contacts spanning at least 75 % of the bottom face (the box: its 4 corners)."""
    rng = np.random.default_rng(11)
    ang = np.arange(6) * np.pi / 3
    for _ in range(20):
        yaw = rng.uniform(0, 2 * np.pi)
        rot = ref.rotation_about((0, 0, 1), yaw)
        pos = np.r_[rng.uniform(-0.4, 0.4, 2), 0.0]
        s = Scene()
        if kind == BOX:
            shape = s.add(BOX, (0.2, 0.15, 0.1), pos + [0, 0, 0.099], rot)
            face = 0.4 * 0.3
        elif kind == CYLINDER:
            shape = s.add(CYLINDER, (0.2, 0.1, 0), pos + [0, 0, 0.099], rot)
            face = np.pi * 0.04
        else:
            pts = np.concatenate([np.c_[0.2 * np.cos(ang), 0.2 * np.sin(ang), np.full(6, z)] for z in (-0.1, 0.1)])
            shape = s.add(CONVEX, pos=pos + [0, 0, 0.099], rot=rot, points=pts)
            face = 1.5 * np.sqrt(3) * 0.04
        floor = s.add(MESH, mesh=floor_mesh())
        plane = s.add(PLANE)
        point, normal, gap, _ = contacts_of(s, floor, shape)
        p_plane = contacts_of(s, plane, shape)[0]
        np.testing.assert_allclose(normal, np.tile(UP, (len(gap), 1)), atol=1e-9)
        np.testing.assert_allclose(gap, -0.001, atol=1e-9)
        assert polygon_area(point[:, :2]) > 0.75 * face
        if kind == BOX:
            for p in p_plane:
                assert np.min(np.linalg.norm(point - p, axis=1)) < 1e-9


def test_box_edge_on_passive_mesh_box_edge_matches_box_box():
    """Match the box-box (SAT) contact of a box resting crosswise on another box's edge with the mesh version."""
    rng = np.random.default_rng(12)
    for _ in range(20):
        tilt = ref.rotation_about((0, 1, 0), np.pi / 4) @ ref.rotation_about((1, 0, 0), rng.uniform(-0.3, 0.3))
        top = ref.rotation_about((1, 0, 0), np.pi / 4)  # edge along x at the top
        lower_pos = np.array([0.0, 0.0, 0.0])
        upper_pos = np.array([rng.uniform(-0.1, 0.1), 0.0, 0.2 * np.sqrt(2) * 2 - rng.uniform(0.0, 0.003)])
        s = Scene()
        upper = s.add(BOX, (0.2, 0.2, 0.2), upper_pos, tilt)
        lower = s.add(BOX, (0.2, 0.2, 0.2), lower_pos, top)
        mesh = s.add(MESH, pos=lower_pos, rot=top, mesh=mr.box_mesh([0.2, 0.2, 0.2]))
        _, n_box, g_box, _ = contacts_of(s, lower, upper)
        _, n_mesh, g_mesh, _ = contacts_of(s, mesh, upper)
        deepest = np.argmin(g_box)
        assert g_mesh.min() == pytest.approx(g_box[deepest], abs=1e-9)
        np.testing.assert_allclose(n_mesh[np.argmin(g_mesh)], n_box[deepest], atol=1e-6)


def test_open_sheet_collides_on_both_sides_and_a_closed_slab_only_from_outside():
    """An open sheet pushes a sphere away on whichever side its centre is; a thin closed slab's bottom face never
    pulls a sphere resting on its top down through it."""
    s = Scene()
    sheet = s.add(MESH, mesh=floor_mesh(1.0, 1))
    above = s.add(SPHERE, (0.1, 0, 0), (0.1, 0.2, 0.099))
    below = s.add(SPHERE, (0.1, 0, 0), (0.1, 0.2, -0.099))
    _, n_above, g_above, _ = contacts_of(s, sheet, above)
    _, n_below, g_below, _ = contacts_of(s, sheet, below)
    np.testing.assert_allclose(n_above, [UP], atol=1e-12)
    np.testing.assert_allclose(n_below, [-UP], atol=1e-12)
    np.testing.assert_allclose([g_above[0], g_below[0]], [-0.001, -0.001], atol=1e-12)
    slab = Scene()
    box = slab.add(MESH, mesh=mr.box_mesh([1.0, 1.0, 0.002]))
    ball = slab.add(SPHERE, (0.05, 0, 0), (0.2, 0.1, 0.002 + 0.0495))
    _, normal, gap, _ = contacts_of(slab, box, ball)
    np.testing.assert_allclose(normal, np.tile(UP, (len(gap), 1)), atol=1e-12)
    np.testing.assert_allclose(gap.min(), -0.0005, atol=1e-12)


def test_large_box_on_fine_terrain_keeps_a_bounded_manifold():
    """Reduce the contacts of a big box pressed 1 cm into a bumpy 3200-triangle terrain to at most 8, the deepest
    (the highest terrain vertex under the box, pushing into its bottom face) among them."""
    v, t = floor_mesh(2.0, 40)
    v[:, 2] = 0.02 * np.sin(7 * v[:, 0]) * np.cos(5 * v[:, 1])
    s = Scene()
    terrain = s.add(MESH, mesh=(v, t))
    rot = ref.rotation_about((0, 0, 1), 0.3)
    box = s.add(BOX, (0.8, 0.6, 0.2), (0.1, -0.2, 0.2 + 0.01), rot)
    point, normal, gap, _ = contacts_of(s, terrain, box)
    assert 4 <= len(gap) <= 8
    local = (v - [0.1, -0.2, 0.0]) @ rot  # terrain vertices in the box frame
    under = (np.abs(local[:, 0]) < 0.8) & (np.abs(local[:, 1]) < 0.6)
    assert gap.min() == pytest.approx(0.01 - v[under, 2].max(), abs=1e-9)
    np.testing.assert_allclose(normal[np.argmin(gap)], UP, atol=1e-9)
    assert np.sum(gap < 0) >= 4


# ---------------------------------------------------------------------------------------------------------------
# Active meshes (signed distance field)
# ---------------------------------------------------------------------------------------------------------------


def centred_suzanne(scale=0.3):
    """Suzanne scaled, with her centroid at the origin."""
    v, t = mr.suzanne()
    v = v * scale
    return v - mesh_mass_properties(v, t).centroid, t


@pytest.mark.parametrize("name", ["box", "torus", "suzanne"])
def test_field_distance_is_exact_near_the_surface(name):
    """Equal the brute-force signed distance (1e-12) and its direction within the margin band of the surface."""
    v, t = {"box": lambda: mr.box_mesh([0.5, 0.3, 0.2]), "torus": lambda: mr.torus_mesh(0.4, 0.15),
            "suzanne": mr.suzanne}[name]()  # fmt: skip
    meshes = pack_meshes([validated_mesh(v, t, solid=True)], MARGIN)
    rng = np.random.default_rng(13)
    tri = rng.integers(0, len(t), 600)
    w = rng.dirichlet(np.ones(3), 600)
    surface = np.einsum("ij,ijk->ik", w, v[t[tri]])
    points = surface + rng.normal(size=(600, 3)) * 0.01
    expected = mr.signed_distances(points, v, t)
    stack = np.zeros(128, np.int32)
    view = field_view(meshes, np.int64(0))
    view = (*view[:-1], np.int32(view[-1]))  # the BVH root back to the engine's int32 (returning it made it an int)
    got = [field_distance(view, tuple(p), MARGIN, stack) for p in points]
    phi = np.array([g[0] for g in got])
    grad = np.array([g[1] for g in got])
    decided = np.abs(expected) > 1e-6
    np.testing.assert_allclose(phi[decided], expected[decided], atol=1e-12)
    nearest = points - phi[:, None] * grad  # the closest surface point
    np.testing.assert_allclose(mr.point_triangle_distances(nearest[decided], v, t), 0.0, atol=1e-12)


def test_active_mesh_on_a_plane_touches_at_its_lowest_vertex():
    """Give Suzanne above a plane its lowest vertex's height as the deepest gap, the plane normal, and as many
    contacts as surface samples within the margin, at most 8."""
    v, t = centred_suzanne()
    samples = surface_samples(v, t)
    rng = np.random.default_rng(14)
    for _ in range(20):
        rot = ref.random_rotation(rng)
        low = (v @ rot.T)[:, 2].min()
        s = Scene()
        plane = s.add(PLANE)
        monkey = s.add(MESH, pos=(0.1, 0.2, -low - 0.002), rot=rot, mesh=(v, t), active=True)
        point, normal, gap, _ = contacts_of(s, plane, monkey)
        assert gap.min() == pytest.approx(-0.002, abs=1e-12)
        np.testing.assert_allclose(normal, np.tile(UP, (len(gap), 1)), atol=1e-12)
        heights = (samples @ rot.T)[:, 2] - low - 0.002
        assert len(gap) == min(8, int(np.sum(heights <= MARGIN)))


def test_sphere_on_active_mesh_box_equals_sphere_on_box():
    """Give a sphere near an active mesh box the contact of sphere vs BOX (the deepest one, to 1e-12)."""
    rng = np.random.default_rng(15)
    half, r = np.array([0.5, 0.3, 0.2]), 0.1
    mesh = mr.box_mesh(half)
    checked = 0
    for _ in range(150):
        rot = ref.random_rotation(rng)
        centre = rng.uniform(-half - r - MARGIN, half + r + MARGIN)
        if np.all(np.abs(centre) < half):
            continue
        s = Scene()
        sphere = s.add(SPHERE, (r, 0, 0), rot @ centre)
        box = s.add(BOX, half, rot=rot)
        m = s.add(MESH, rot=rot, mesh=mesh, active=True)
        expected = contacts_of(s, sphere, box)
        got = contacts_of(s, sphere, m)
        if len(expected[2]) == 0:
            assert np.all(got[2] > -1e-12)
            continue
        k = np.argmin(got[2])
        np.testing.assert_allclose(got[2][k], expected[2][0], atol=1e-12)
        np.testing.assert_allclose(got[1][k], expected[1][0], atol=1e-9)
        np.testing.assert_allclose(got[0][k], expected[0][0], atol=1e-9)
        checked += 1
    assert checked > 60


def test_box_on_active_mesh_box_and_stacked_mesh_cubes_rest_on_their_corners():
    """A box, and an active mesh cube, lying 1 mm deep on an active mesh cube: the upper corners among <= 8
    contacts, every normal up, every supporting gap -1 mm."""
    s = Scene()
    base = s.add(MESH, mesh=mr.box_mesh([0.5, 0.5, 0.5]), active=True)
    box = s.add(BOX, (0.2, 0.2, 0.2), (0.1, 0.2, 0.699))
    cube = s.add(MESH, pos=(-0.1, 0.05, 0.699), mesh=mr.box_mesh([0.2, 0.2, 0.2]), active=True)
    for upper in (box, cube):
        point, normal, gap, _ = contacts_of(s, base, upper)
        support = gap < 0
        np.testing.assert_allclose(normal[support], np.tile(UP, (support.sum(), 1)), atol=1e-12)
        np.testing.assert_allclose(gap[support], -0.001, atol=1e-12)
        corners = np.array([[x, y, 0.4995] for x in (-0.2, 0.2) for y in (-0.2, 0.2)]) + [*s.pos[upper][:2], 0]
        for c in corners:
            assert np.min(np.linalg.norm(point[support] - c, axis=1)) < 1e-9


def test_active_mesh_on_passive_mesh_floor():
    """An active mesh cube tilted on a tessellated passive floor: deepest gap = its lowest corner's height."""
    rng = np.random.default_rng(16)
    for _ in range(10):
        rot = ref.random_rotation(rng)
        v, t = mr.box_mesh([0.15, 0.15, 0.15])
        low = (v @ rot.T)[:, 2].min()
        s = Scene()
        floor = s.add(MESH, mesh=floor_mesh())
        cube = s.add(MESH, pos=(rng.uniform(-0.3, 0.3), rng.uniform(-0.3, 0.3), -low - 0.003), rot=rot, mesh=(v, t),
                     active=True)  # fmt: skip
        point, normal, gap, _ = contacts_of(s, cube, floor)
        assert gap.min() == pytest.approx(-0.003, abs=1e-12)
        np.testing.assert_allclose(normal[np.argmin(gap)], -UP, atol=1e-12)


# ---------------------------------------------------------------------------------------------------------------
# Simulation
# ---------------------------------------------------------------------------------------------------------------

BOWL_RADIUS = 0.5


def surface_height(vertices, triangles, xy):
    """z of the bowl's surface above each point xy (vertical ray, brute force over the triangles)."""
    corners = vertices[triangles]
    out = np.full(len(xy), np.nan)
    for k, p in enumerate(xy):
        a, b, c = corners[:, 0], corners[:, 1], corners[:, 2]
        det = (b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (c[:, 0] - a[:, 0]) * (b[:, 1] - a[:, 1])
        u = ((p[0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (c[:, 0] - a[:, 0]) * (p[1] - a[:, 1])) / det
        w = ((b[:, 0] - a[:, 0]) * (p[1] - a[:, 1]) - (p[0] - a[:, 0]) * (b[:, 1] - a[:, 1])) / det
        hit = (u >= -1e-12) & (w >= -1e-12) & (u + w <= 1 + 1e-12)
        out[k] = np.max((a[:, 2] + u * (b[:, 2] - a[:, 2]) + w * (c[:, 2] - a[:, 2]))[hit])
    return out


def sphere_rest_height(vertices, triangles, r):
    """Centre height of a sphere of radius r resting on the bowl's axis: the lowest z whose distance to the
    polyhedral bowl is r (bisection on the brute-force distance)."""
    lo, hi = -BOWL_RADIUS, 0.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        d = mr.point_triangle_distances(np.array([[0.0, 0.0, mid]]), vertices, triangles)[0]
        lo, hi = (mid, hi) if d < r else (lo, mid)
    return hi


@pytest.mark.parametrize("kind", ["sphere", "box", "hull"])
def test_shapes_dropped_into_an_open_bowl_rest_at_its_bottom(kind):
    """Drop a sphere, a box and a hull off-centre into an open hemispherical bowl mesh (5 s, little friction):
    they stay inside it and come to rest at its bottom (within 1 cm of the axis), at the height where they touch
    the polyhedral bowl: the sphere within 1 mm, the box and the hull (their bottom corners on the facets) within
    1 mm of the height of the surface under those corners."""
    bv, bt = mr.bowl_mesh(BOWL_RADIUS, 48, 16)
    b = ModelBuilder()
    bowl = b.add_body(kind=BodyKind.KINEMATIC, label="bowl")
    mu = 0.05 if kind == "sphere" else 0.005  # a sphere rolls to the bottom; a box or hull must slide there
    b.add_shape_mesh(bowl, bv, bt, mu=mu)
    body = b.add_body(pos=(0.2, 0.08, 0.05), mass=1.0, label=kind, linear_damping=0.9, angular_damping=0.9)
    ang = np.arange(6) * np.pi / 3
    if kind == "sphere":
        b.add_shape_sphere(body, 0.1, mu=mu)
    elif kind == "box":
        b.add_shape_box(body, (0.08, 0.08, 0.05), mu=mu)
    else:
        pts = np.concatenate([np.c_[0.09 * np.cos(ang), 0.09 * np.sin(ang), np.full(6, z)] for z in (-0.05, 0.05)])
        b.add_shape_convex(body, pts, mu=mu)
    traj = simulate(b.finalize(), frame_count=301, fps=60, substeps=4, solver="PGS")
    pos = traj.body_pos[:, 1]
    assert np.all(np.linalg.norm(pos[:, :2], axis=1) < BOWL_RADIUS) and np.all(pos[:, 2] < 0.06)
    assert np.all(pos[:, 2] > -BOWL_RADIUS)
    assert np.linalg.norm(traj.body_vel[-1, 1]) < 1e-2
    assert np.linalg.norm(pos[-1, :2]) < 0.01
    if kind == "sphere":
        assert pos[-1, 2] == pytest.approx(sphere_rest_height(bv, bt, 0.1), abs=1e-3)
        return
    rot = ref.quat_matrix(traj.body_quat[-1, 1])
    assert rot[2, 2] > np.cos(np.radians(2))  # upright
    local = (np.array([[x, y, -0.05] for x in (-0.08, 0.08) for y in (-0.08, 0.08)]) if kind == "box"
             else np.c_[0.09 * np.cos(ang), 0.09 * np.sin(ang), np.full(6, -0.05)])  # fmt: skip
    bottom = pos[-1] + local @ rot.T
    rest = np.max(surface_height(bv, bt, bottom[:, :2]) - bottom[:, 2]) + pos[-1, 2]
    assert pos[-1, 2] == pytest.approx(rest, abs=1e-3)


def test_suzanne_dropped_on_a_plane_rests_on_its_lowest_vertex():
    """Drop an active Suzanne mesh, tumbling, on a plane (5 s): at rest its lowest vertex is within 1 mm of it."""
    v, t = centred_suzanne()
    b = ModelBuilder()
    ground = b.add_body(kind=BodyKind.KINEMATIC)
    b.add_shape_plane(ground, mu=0.6)
    q = np.r_[np.cos(0.35), np.sin(0.35) * np.array([1.0, 0.3, 0.2]) / np.linalg.norm([1.0, 0.3, 0.2])]
    monkey = b.add_body(pos=(0, 0, 0.6), quat=q, mass=1.0, label="Suzanne", angular_damping=0.5)
    b.add_shape_mesh(monkey, v, t, mu=0.6)
    traj = simulate(b.finalize(), frame_count=301, fps=60, substeps=4, solver="PGS")
    lowest = [(traj.body_pos[f, 1] + v @ ref.quat_matrix(traj.body_quat[f, 1]).T)[:, 2].min() for f in range(301)]
    assert min(lowest) > -1e-3  # never sinks in
    assert abs(lowest[-1]) < 1e-3
    assert np.linalg.norm(traj.body_vel[-1, 1]) < 1e-2 and np.linalg.norm(traj.body_omega[-1, 1]) < 5e-2


def cube_scene(shape, *, pos, quat=(1, 0, 0, 0), vel=(0, 0, 0), omega=(0, 0, 0), mu=0.5):
    """A 0.4 m cube (BOX or active MESH) of 2 kg above a plane."""
    b = ModelBuilder()
    b.add_shape_plane(b.add_body(kind=BodyKind.KINEMATIC), mu=mu)
    body = b.add_body(pos=pos, quat=quat, vel=vel, omega=omega, mass=2.0)
    if shape == "box":
        b.add_shape_box(body, (0.2, 0.2, 0.2), mu=mu)
    else:
        b.add_shape_mesh(body, *mr.box_mesh([0.2, 0.2, 0.2]), mu=mu)
    return b.finalize()


def test_mesh_cube_falls_and_slides_like_a_box():
    """Drop a tilted, spinning mesh cube on a plane: its trajectory stays within 1 cm of the BOX's (2 s); slide
    one at v0: it stops after v0^2 / (2 mu g) like the box (within 1 %)."""
    axis = np.array([1.0, 1.0, 0.0]) / np.sqrt(2)
    q = np.r_[np.cos(0.15), np.sin(0.15) * axis]
    runs = {s: simulate(cube_scene(s, pos=(0, 0, 0.5), quat=q, vel=(1, 0, 0), omega=(0, 0, 2)), frame_count=121,
                        fps=60, substeps=4, solver="PGS") for s in ("box", "mesh")}  # fmt: skip
    gap = np.linalg.norm(runs["box"].body_pos[:, 1] - runs["mesh"].body_pos[:, 1], axis=1)
    assert gap.max() < 0.01
    assert runs["mesh"].body_pos[-1, 1, 2] == pytest.approx(0.2, abs=1e-3)
    v0, mu = 3.0, 0.4
    slides = {s: simulate(cube_scene(s, pos=(0, 0, 0.2), vel=(v0, 0, 0), mu=mu), frame_count=121, fps=60,
                          substeps=4, solver="PGS") for s in ("box", "mesh")}  # fmt: skip
    distance = slides["mesh"].body_pos[-1, 1, 0]
    assert abs(slides["mesh"].body_vel[-1, 1, 0]) < 1e-3
    assert distance == pytest.approx(v0 * v0 / (2 * mu * 9.81), rel=0.01)
    assert distance == pytest.approx(slides["box"].body_pos[-1, 1, 0], rel=0.005)
    assert math.isfinite(distance)
