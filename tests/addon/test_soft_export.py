"""Soft-scene export against stand-in objects (mocked bpy): validation messages, lattice placement, pins."""

import os
import re
import types

import numpy as np
import pytest
from contact_lab.addon import properties, units
from contact_lab.addon.bake import driver as bake
from contact_lab.addon.errors import BakeError
from contact_lab.addon.output import caches
from contact_lab.addon.soft import build as soft_build
from contact_lab.addon.soft import gather as soft_export
from fakes import rigid_object

CUBE_VERTICES = np.array([[x, y, z] for x in (-1.0, 1.0) for y in (-1.0, 1.0) for z in (-1.0, 1.0)])
CUBE_QUADS = [[0, 1, 3, 2], [4, 6, 7, 5], [0, 4, 5, 1], [2, 3, 7, 6], [0, 2, 6, 4], [1, 5, 7, 3]]
CUBE_TRIANGLES = np.array([[q[0], q[1], q[2]] for q in CUBE_QUADS] + [[q[0], q[2], q[3]] for q in CUBE_QUADS])


class Coll(list):
    """A bpy collection: iterable, ``get(name)``."""

    def get(self, name, default=None):
        return next((x for x in self if x.name == name), default)


class Buffer:
    """``foreach_get`` over a fixed flat array (vertices 'co', loop triangles 'vertices')."""

    def __init__(self, rows, items=()):
        self.rows = np.asarray(rows)
        self.items = list(items)

    def __len__(self):
        return self.rows.shape[0]

    def __iter__(self):
        return iter(self.items)

    def foreach_get(self, name, out):
        out[:] = self.rows.ravel()


def soft_settings(**overrides):
    """Object settings with the property defaults (the Flesh preset) and the given overrides."""
    annotations = properties.CONTACT_LAB_ObjectSettings.__annotations__
    values = {n: m.keywords["default"] for n, m in annotations.items() if "default" in m.keywords}
    values.update(role="SOFT", shape="BOX")
    values.update(overrides)
    return types.SimpleNamespace(**values)


def fake_mesh_object(name, vertices=CUBE_VERTICES, triangles=CUBE_TRIANGLES, *, groups=None, **settings):
    """A mesh object; ``groups = {group name: weights (V,)}`` become vertex groups with per-vertex elements."""
    groups = groups or {}
    vertex_groups = Coll(types.SimpleNamespace(name=g, index=i) for i, g in enumerate(groups))
    items = []
    for v in range(len(vertices)):
        elements = [
            types.SimpleNamespace(group=i, weight=float(w[v])) for i, w in enumerate(groups.values()) if w[v] > 0.0
        ]
        items.append(types.SimpleNamespace(groups=elements))
    mesh = types.SimpleNamespace(
        vertices=Buffer(np.asarray(vertices, np.float32), items), loop_triangles=Buffer(np.asarray(triangles, np.int32))
    )
    return types.SimpleNamespace(
        name=name,
        type="MESH",
        data=mesh,
        vertex_groups=vertex_groups,
        contact_lab=soft_settings(**settings),
        delta_location=(0.0, 0.0, 0.0),
        delta_scale=(1.0, 1.0, 1.0),
        **TRANSFORM,
    )


TRANSFORM = dict(location=(0.0, 0.0, 0.0), rotation_mode="XYZ", rotation_euler=(0.0, 0.0, 0.0), scale=(1.0, 1.0, 1.0))
"""An object's own transform: the identity (what the pre-bake validation reads)."""


def fake_rigid(name, role="PASSIVE", shape="BOX"):
    return rigid_object(name, role, shape, type="MESH", **TRANSFORM)


def fake_scene(objects, **settings):
    values = dict(
        engine="SOFT",
        frame_start=1,
        frame_end=10,
        soft_output="SHAPE_KEYS",
        soft_contact="IMPLICIT",
        soft_integrator="BE",
        soft_substeps=2,
        soft_contact_thickness=0.0,
        soft_cache_dir="//contact_lab_cache/",
        friction_combine="GEOMETRIC",
        ipc_dhat=0.0,
        ipc_kappa=0.0,
        ipc_eps_v=1.0e-3,
        ipc_tolerance=1.0e-3,
        ipc_max_iterations=100,
    )
    values.update(settings)
    return types.SimpleNamespace(
        name="Scene",
        objects=objects,
        contact_lab=types.SimpleNamespace(**values),
        render=types.SimpleNamespace(fps=24, fps_base=1.0),
        unit_settings=types.SimpleNamespace(scale_length=1.0),
        gravity=(0.0, 0.0, -9.81),
        use_gravity=True,
    )


# validation ------------------------------------------------------------------------------------------------------


FLAT = np.array([[x, y, 0.0] for x in (-1.0, 1.0) for y in (-1.0, 1.0)])
FLAT_TRIANGLES = np.array([[0, 1, 3], [0, 3, 2]])
TILTED = FLAT @ np.array([[1.0, 0.0, 0.0], [0.0, 0.6, 0.8], [0.0, -0.8, 0.6]]).T  # a flat mesh, not axis-aligned


@pytest.mark.parametrize(
    ("objects", "fragment", "culprit"),
    [
        ([], "no soft bodies", None),
        ([fake_mesh_object("Jelly", pin_group="Pins")], "pin group 'pins' does not exist", "Jelly"),
        ([fake_mesh_object("Jelly", FLAT, FLAT_TRIANGLES)], "no volume", "Jelly"),
        ([fake_mesh_object("Jelly", TILTED, FLAT_TRIANGLES)], "no volume", "Jelly"),
        ([fake_mesh_object("Jelly", CUBE_VERTICES, np.zeros((0, 3)))], "needs a mesh with faces", "Jelly"),
        ([fake_mesh_object("Jelly", poisson_ratio=0.5)], "poisson ratio must be in [0, 0.5)", "Jelly"),
        ([fake_mesh_object("Jelly", youngs_modulus=0.0)], "young's modulus must be positive", "Jelly"),
        ([fake_mesh_object("Jelly", density=-1.0)], "density must be positive", "Jelly"),
        ([fake_mesh_object("Jelly", damping=-0.1)], "damping must be zero or positive", "Jelly"),
        ([fake_mesh_object("Jelly", lattice_resolution=0)], "lattice resolution must be at least 1", "Jelly"),
        ([fake_mesh_object("Jelly", volume_compressibility=-1.0)], "volume compressibility must be zero", "Jelly"),
    ],
)
def test_soft_validation_names_the_object(objects, fragment, culprit):
    """Invalid soft bodies raise BakeError naming the object, before anything is sampled or simulated."""
    with pytest.raises(BakeError) as info:
        soft_export.export_soft_scene(fake_scene(objects))
    assert fragment in str(info.value).lower()
    assert info.value.object_name == culprit


def test_non_mesh_soft_object_is_refused():
    """A soft object must be a mesh (curves, empties... are refused with their type)."""
    curve = types.SimpleNamespace(name="Rope", type="CURVE", contact_lab=soft_settings())
    with pytest.raises(BakeError, match="'Rope': a soft body must be a mesh object, not curve"):
        soft_export.export_soft_scene(fake_scene([curve]))


@pytest.mark.parametrize("shape", ["SPHERE", "CAPSULE"])
def test_active_non_box_collider_is_refused(shape):
    """Active rigid bodies in a soft scene must be boxes: other shapes are an unsupported collider."""
    objects = [fake_mesh_object("Jelly"), fake_rigid("Ball", role="ACTIVE", shape=shape)]
    with pytest.raises(BakeError) as info:
        soft_export.export_soft_scene(fake_scene(objects))
    assert f"only as boxes, not as a {shape.lower()}" in str(info.value)
    assert info.value.object_name == "Ball"


def test_all_problems_are_listed_together():
    """Several problems are reported in one message (fix everything in one go)."""
    objects = [fake_mesh_object("A", density=0.0), fake_mesh_object("B", pin_group="Nope")]
    with pytest.raises(BakeError) as info:
        soft_export.export_soft_scene(fake_scene(objects))
    message = str(info.value)
    assert "'A': density" in message and "'B': pin group 'Nope'" in message


def test_relative_pc2_folder_needs_a_saved_file(mock_bpy, monkeypatch):
    """PC2 output into a '//' folder of an unsaved .blend is refused; an absolute folder is accepted."""
    monkeypatch.setattr(mock_bpy.data, "filepath", "", raising=False)
    monkeypatch.setattr(mock_bpy, "path", types.SimpleNamespace(abspath=lambda p: p), raising=False)
    scene = fake_scene([fake_mesh_object("Jelly")], soft_output="PC2")
    with pytest.raises(BakeError, match="not saved yet"):
        soft_export.export_soft_scene(scene)
    scene.contact_lab.soft_cache_dir = "/tmp/contact_lab_cache/"
    assert caches.resolve_cache_dir(scene) == "/tmp/contact_lab_cache"
    scene.contact_lab.soft_cache_dir = "  "
    with pytest.raises(BakeError, match="Cache Folder is empty"):
        caches.resolve_cache_dir(scene)


def test_rigid_engine_refuses_soft_objects(mock_bpy):
    """With the Rigid engine a Soft object is an error that tells the user to switch the engine."""
    scene = fake_scene([fake_mesh_object("Jelly")], engine="RIGID")
    with pytest.raises(BakeError, match="Engine is Rigid") as info:
        bake.start_bake(scene)
    assert info.value.object_name == "Jelly"


@pytest.mark.parametrize("role", ["PASSIVE", "ACTIVE"])
def test_mesh_shape_is_refused_by_the_soft_engine(mock_bpy, role):
    """The Soft engine refuses the Mesh shape (the Rigid and IPC engines take it), naming the object and the fix."""
    objects = [fake_rigid("Bowl", role=role, shape="MESH"), fake_mesh_object("Jelly")]
    with pytest.raises(BakeError) as info:
        bake.start_bake(fake_scene(objects, engine="SOFT"))
    message = str(info.value)
    assert "'Bowl'" in message and info.value.object_name == "Bowl"
    if role == "PASSIVE":
        assert "a collider of the Rigid and IPC engines, the Soft engine cannot use it" in message
        assert "Engine to IPC" in message
    else:  # the soft engine's active bodies are boxes
        assert "only as boxes, not as a mesh" in message


def test_cache_file_names_are_safe():
    """PC2 file names: <owner>_<scene>_<object>_<hash>.pc2 with path separators and odd characters replaced."""
    name = caches.cache_file_name("/x/shot 01.blend", "Scene", "Cube.001")
    assert re.fullmatch(r"shot_01_Scene_Cube\.001_[0-9a-f]{10}\.pc2", name), name
    name = caches.cache_file_name("", "S/1", "a\\b:c")
    assert re.fullmatch(r"untitled_S_1_a_b_c_[0-9a-f]{10}\.pc2", name), name


def test_cache_file_names_that_clean_or_fold_alike_differ():
    """Owners, scenes and objects whose names clean to the same text, or differ only in case, get different caches
    even on a file system that ignores case; the same owner, scene and object always get the same one."""
    names = [
        caches.cache_file_name("/x/shot 1.blend", "Scene", "Cube"),
        caches.cache_file_name("/x/shot_1.blend", "Scene", "Cube"),
        caches.cache_file_name("/x/shot_1.blend", "Scene", "a/b"),
        caches.cache_file_name("/x/shot_1.blend", "Scene", "a_b"),
        caches.cache_file_name("/x/shot_1.blend", "Scene", "cube"),
        caches.cache_file_name("/x/shot_1.blend", "Scene 1", "Cube"),
        caches.cache_file_name("/x/shot_1.blend", "Scene_1", "Cube"),
        caches.cache_file_name("/y/shot_1.blend", "Scene", "Cube"),
    ]
    assert len({n.casefold() for n in names}) == len(names)
    assert caches.cache_file_name("/x/shot 1.blend", "Scene", "Cube") == names[0]


def test_cache_paths_collide_ignoring_case():
    """Two objects whose cache paths are equal, or equal ignoring case, are reported naming both."""
    problems = caches.collision_problems(["A", "B", "C"], ["/c/x_1.pc2", "/c/y.pc2", "/c/X_1.pc2"])
    assert [(name, fix) for name, _, fix in problems] == [("C", "rename one of them")]
    assert "'A' and 'C' would write the same PC2 cache" in problems[0][1]
    assert caches.collision_problems(["A", "B"], ["/c/x.pc2", "/c/y.pc2"]) == []


def test_relative_cache_folder_follows_the_owner(mock_bpy, monkeypatch):
    """A '//' Cache Folder is relative to the .blend that owns the bake (the CLI's -o file), not the open one."""
    monkeypatch.setattr(mock_bpy.data, "filepath", "/in/shot.blend", raising=False)
    scene = fake_scene([fake_mesh_object("Jelly")], soft_output="PC2")
    scene.contact_lab.soft_cache_dir = "//cache/"
    assert caches.resolve_cache_dir(scene) == os.path.normpath("/in/cache")
    assert caches.resolve_cache_dir(scene, "/out/b/v2.blend") == os.path.normpath("/out/b/cache")


# lattice placement, embedding, pins ---------------------------------------------------------------------------------


def _matrix(rotation_quat, scale, translation):
    m = np.eye(4)
    m[:3, :3] = units.quat_to_matrix(np.asarray(rotation_quat, float)) @ np.diag(scale)
    m[:3, 3] = translation
    return m


def _read_and_build(obj, matrices, metres):
    """What the bake does for one soft object: read it (main thread), then build its lattice (worker thread)."""
    return soft_build.build_soft_body(soft_export.read_soft_body(obj, matrices, metres), metres)


def _signed_volumes(x, tets):
    e = x[tets[:, 1:]] - x[tets[:, :1]]
    return np.linalg.det(e)


@pytest.mark.parametrize(
    ("scale", "metres"),
    [((1.0, 1.0, 1.0), 1.0), ((2.0, 0.5, 1.5), 0.01), ((-1.0, 1.0, 1.0), 1.0)],
    ids=["unit", "non-uniform-cm", "mirrored"],
)
def test_lattice_is_placed_by_the_world_matrix_and_embeds_the_render_mesh(scale, metres):
    """Rest tets are positive, the embedding maps them onto M·v [m], and local_positions inverts M."""
    q = np.array([0.9, 0.1, -0.3, 0.2])
    q /= np.linalg.norm(q)
    m = _matrix(q, scale, (0.5, -2.0, 3.0))
    obj = fake_mesh_object("Jelly", lattice_resolution=3)
    kwargs, record = _read_and_build(obj, np.stack([m, m]), metres)
    assert np.all(_signed_volumes(record.rest_world, record.tet_indices) > 0.0)
    expected_world = (CUBE_VERTICES @ m[:3, :3].T + m[:3, 3]) * metres
    np.testing.assert_allclose(record.render_world(record.rest_world), expected_world, atol=1e-12 * max(1, metres))
    # cubic cells along the object's (scaled) axes: every lattice edge length is a multiple of one cell size
    local = record.lattice.tet_vertices
    step = record.lattice.cell_size
    np.testing.assert_allclose(np.round((local - local.min(axis=0)) / step), (local - local.min(axis=0)) / step)
    # the stored positions are object-local again: M⁻¹ · world / metres
    local_out = record.local_positions(np.stack([record.rest_world, record.rest_world]), metres)
    assert local_out.dtype == np.float32 and local_out.shape == (2, 8, 3)
    np.testing.assert_allclose(local_out, np.stack([CUBE_VERTICES] * 2), atol=1e-6)
    assert kwargs["name"] == "Jelly" and kwargs["density"] == 1050.0 and not kwargs["pinned"].any()


@pytest.mark.parametrize("kappa_atm, law", [(0.0, "QUADRATIC"), (0.01, "QUADRATIC"), (1.0, "GAS")])
def test_volume_penalty_settings_reach_the_soft_body(kappa_atm, law):
    """Volume κ [1/atm] is passed in 1/Pa (1 atm = 101325 Pa) with its law; 0 switches the penalty off."""
    m = _matrix((1.0, 0.0, 0.0, 0.0), (1.0, 1.0, 1.0), (0.0, 0.0, 0.0))
    obj = fake_mesh_object("Jelly", lattice_resolution=2, volume_compressibility=kappa_atm, volume_law=law)
    kwargs, _ = _read_and_build(obj, np.stack([m, m]), 1.0)
    assert kwargs["volume_kappa"] == pytest.approx(kappa_atm / 101325.0, rel=1e-12)
    assert kwargs["volume_model"] == soft_export.VOLUME_LAWS[law]


def test_output_follows_the_world_matrix_of_each_frame():
    """local_positions maps frame f by that frame's inverse world matrix (the object's animation is kept)."""
    m0 = _matrix((1.0, 0.0, 0.0, 0.0), (1.0, 1.0, 1.0), (0.0, 0.0, 0.0))
    m1 = _matrix((0.0, 0.0, 0.0, 1.0), (2.0, 2.0, 2.0), (1.0, 2.0, 3.0))  # turned 180° about z, scaled, moved
    obj = fake_mesh_object("Jelly", lattice_resolution=2)
    _, record = _read_and_build(obj, np.stack([m0, m1]), 1.0)
    shifted = record.rest_world + (0.0, 0.0, -0.25)  # the simulation moved the body down by 0.25 m
    out = record.local_positions(np.stack([record.rest_world, shifted]), 1.0)
    world1 = CUBE_VERTICES + (0.0, 0.0, -0.25)
    np.testing.assert_allclose(out[1], (world1 - m1[:3, 3]) @ np.linalg.inv(m1[:3, :3]).T, atol=1e-6)


def test_pin_group_pins_the_four_corners_of_each_containing_tet():
    """Vertices with weight > 0.5 pin exactly the lattice vertices of their tets; 0.5 or less pins nothing."""
    weights = np.array([1.0, 0.6, 0.5, 0.2, 0.0, 0.0, 0.0, 0.0])
    obj = fake_mesh_object("Jelly", groups={"Other": np.ones(8), "Pins": weights}, pin_group="Pins")
    obj.contact_lab.lattice_resolution = 3
    kwargs, record = _read_and_build(obj, np.eye(4)[None], 1.0)
    np.testing.assert_array_equal(record.pinned_render, weights > 0.5)
    expected = np.zeros(record.tet_vertex_count, dtype=bool)
    for v in np.flatnonzero(weights > 0.5):
        expected[record.tet_indices[record.embed_tet[v]]] = True
    np.testing.assert_array_equal(record.pinned, expected)
    assert expected.sum() >= 4 and kwargs["pinned"] is record.pinned
    # a pinned render vertex is a combination of pinned lattice vertices only
    assert record.pinned[record.tet_indices[record.embed_tet[0]]].all()


def test_pin_group_without_pinned_vertices_is_refused():
    """A pin group whose weights are all 0.5 or less is an error (nothing would be pinned)."""
    obj = fake_mesh_object("Jelly", groups={"Pins": np.full(8, 0.5)}, pin_group="Pins")
    with pytest.raises(BakeError, match="'Jelly': pin group 'Pins' has no vertex with a weight above 0.5"):
        _read_and_build(obj, np.eye(4)[None], 1.0)


def test_singular_world_matrix_is_refused():
    """A zero scale cannot be inverted for the output: the error names the object."""
    m = np.diag([1.0, 0.0, 1.0, 1.0])
    with pytest.raises(BakeError, match="'Jelly': its world matrix is singular"):
        _read_and_build(fake_mesh_object("Jelly"), m[None], 1.0)


@pytest.mark.parametrize("engine", ["SOFT", "IPC"])
@pytest.mark.parametrize("shape", ["CYLINDER", "CONE", "CONVEX_HULL", "COMPOUND"])
def test_rigid_only_shapes_are_refused_by_the_soft_engines(mock_bpy, engine, shape):
    """Cylinder, Cone, Convex Hull and Compound Parent are Rigid-engine shapes: the Soft and IPC bakes refuse them
    before exporting, naming the object and the fix."""
    objects = [fake_rigid("Can", shape=shape), fake_mesh_object("Jelly")]
    with pytest.raises(BakeError) as info:
        bake.start_bake(fake_scene(objects, engine=engine))
    label = {"CONVEX_HULL": "Convex Hull", "COMPOUND": "Compound Parent"}.get(shape, shape.title())
    engine_label = {"SOFT": "Soft", "IPC": "IPC"}[engine]
    assert str(info.value).startswith(f"'Can': the {engine_label} engine cannot use the {label} shape")
    assert "Engine to Rigid" in str(info.value) and info.value.object_name == "Can"
