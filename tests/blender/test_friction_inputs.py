"""Friction inputs read from real Blender data (attributes, UVs, images, material nodes) vs known constructions.

Every mesh, UV map and image is built here from numpy arrays, so the expected :class:`SurfaceMesh` /
:class:`TextureImage` arrays and the expected structure directions follow from the construction alone
(independent of the add-on's readers). The directions are then looked up by the core
(``pack_surfaces(...).structure_direction``) and compared with the analytic fields.
"""

import math
import types

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from contact_lab.addon.errors import BakeError  # noqa: E402
from contact_lab.addon.friction import export as friction_export  # noqa: E402
from contact_lab.addon.rigid import gather as scene_export  # noqa: E402
from contact_lab.core.friction.surface import StructureSource, SurfaceFrictionModel  # noqa: E402
from contact_lab.operators import preview  # noqa: E402

pytestmark = pytest.mark.blender

TOL = 2e-6
"""Float32 storage in Blender (coordinates, attributes, UVs, matrices)."""

OFFSET = np.array([0.3, -0.2, 0.1])
"""Grid vertices are offset so the bounding-box centre (the shape origin) is not the object origin."""


# construction helpers ---------------------------------------------------------------------------


def grid(n=4, size=2.0):
    """Vertices (V, 3) of an n×n grid in the local XY plane (+ OFFSET) and its quads (F, 4), CCW from +Z."""
    xs = np.linspace(-0.5 * size, 0.5 * size, n + 1)
    x, y = np.meshgrid(xs, xs, indexing="xy")
    verts = np.stack([x.ravel(), y.ravel(), np.zeros(x.size)], axis=1) + OFFSET
    a = (np.arange(n)[:, None] * (n + 1) + np.arange(n)[None, :]).ravel()
    quads = np.stack([a, a + 1, a + n + 2, a + n + 1], axis=1)
    return verts, quads


def split(quads):
    """Two triangles per quad, (2F, 3)."""
    return np.concatenate([quads[:, [0, 1, 2]], quads[:, [0, 2, 3]]])


def make_object(name, verts, faces, *, location=(1.0, 2.0, 3.0), rotation=(0.2, -0.1, 0.7), scale=(1.0, 1.0, 1.0)):
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(np.asarray(verts).tolist(), [], np.asarray(faces).tolist())
    mesh.update()
    obj = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(obj)
    obj.location, obj.rotation_euler, obj.scale = location, rotation, scale
    bpy.context.view_layer.objects.active = obj
    bpy.context.view_layer.update()
    return obj


def corner_vertices(mesh):
    out = np.empty(len(mesh.loops), np.int32)
    mesh.loops.foreach_get("vertex_index", out)
    return out


def add_uv(mesh, name, uv_per_vertex):
    mesh.uv_layers.new(name=name)
    uv = np.asarray(uv_per_vertex, np.float32)[corner_vertices(mesh)]
    mesh.uv_layers[name].uv.foreach_set("vector", uv.ravel())


def rotated_uv(verts, alpha):
    """UV = 0.25·R(α)·(x, y) + 0.5: U grows along local angle −α, V along 90° − α."""
    c, s = math.cos(alpha), math.sin(alpha)
    x, y = verts[:, 0], verts[:, 1]
    return np.stack([0.25 * (c * x - s * y) + 0.5, 0.25 * (s * x + c * y) + 0.5], axis=1)


def float_image(name, pixels, colorspace="Non-Color"):
    """A float image (H, W, 4) with exactly these values (rows bottom to top)."""
    h, w, _ = pixels.shape
    image = bpy.data.images.new(name, w, h, alpha=True, float_buffer=True)
    image.colorspace_settings.name = colorspace
    image.pixels.foreach_set(np.asarray(pixels, np.float32).ravel())
    return image


def frame(obj):
    """(centre_local, scale) of the shape frame, computed independently from the construction."""
    corners = np.array([tuple(c) for c in obj.bound_box])
    return 0.5 * (corners.min(0) + corners.max(0)), np.array(obj.scale)


def export(obj, length_scale=None):
    scene = bpy.context.scene
    metres = scene.unit_settings.scale_length if length_scale is None else length_scale
    centre, scale = friction_export.shape_frame(obj)
    depsgraph = bpy.context.evaluated_depsgraph_get()
    return friction_export.surface_friction(
        obj, depsgraph=depsgraph, centre_local=centre, scale=scale, length_scale=metres
    )


def lookup():
    return pytest.importorskip("contact_lab.core.friction.lookup")


def unit(v):
    v = np.asarray(v, float)
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def sample_points(verts_shape, tris, rng, count=12):
    """Random points inside random triangles (shape frame)."""
    t = rng.integers(0, len(tris), count)
    b = rng.dirichlet(np.ones(3), count)
    return np.einsum("ki,kij->kj", b, verts_shape[tris[t]])


# SurfaceMesh from attributes ---------------------------------------------------------------------


def test_point_attribute_matches_construction_and_core_directions():
    """A POINT FLOAT_VECTOR field f(v) = (−y, x, ¼) (relative to the centre) under rotation, non-uniform scale and
    unit scale: vertices, triangles and corner vectors equal the construction; the core's direction at any
    surface point equals S·f(point)."""
    bpy.context.scene.unit_settings.scale_length = 0.5
    verts, quads = grid()
    tris = split(quads)
    scale = np.array([2.0, 1.0, 0.5])
    obj = make_object("Field", verts, tris, scale=tuple(scale))
    centre = 0.5 * (verts.min(0) + verts.max(0))
    rel = verts - centre
    field = np.stack([-rel[:, 1], rel[:, 0], np.full(len(verts), 0.25)], axis=1)
    attr = obj.data.attributes.new("grain", "FLOAT_VECTOR", "POINT")
    attr.data.foreach_set("vector", field.astype(np.float32).ravel())
    s = obj.contact_lab
    s.friction_model, s.structure_source, s.structure_attribute = "ANISOTROPIC", "ATTRIBUTE", "grain"
    assert friction_export.friction_warnings(obj) == []

    surface = export(obj)
    np.testing.assert_allclose(friction_export.shape_frame(obj)[0], frame(obj)[0], atol=TOL)
    assert surface.model == SurfaceFrictionModel.ANISOTROPIC
    assert surface.structure_source == StructureSource.ATTRIBUTE
    assert (surface.mu_t, surface.mu_b) == pytest.approx((0.3, 0.6))
    mesh = surface.mesh
    expected_verts = scale * rel * 0.5
    np.testing.assert_allclose(mesh.vertices, expected_verts, atol=TOL)
    np.testing.assert_array_equal(mesh.triangles, tris)
    assert mesh.vertices.dtype == np.float64 and mesh.triangles.dtype == np.int32
    np.testing.assert_allclose(mesh.corner_structure, (scale * field)[tris], atol=TOL)
    assert mesh.corner_uv is None  # the attribute source needs no UVs

    pool = lookup().pack_surfaces([surface])
    for p in sample_points(expected_verts, tris, np.random.default_rng(1)):
        local = p / (scale * 0.5)  # back to object space relative to the centre
        expected = scale * np.array([-local[1], local[0], 0.25])
        np.testing.assert_allclose(pool.structure_direction(0, p), expected, atol=1e-5)


def test_face_and_corner_attributes_expand_to_triangle_corners():
    """FACE values go to every corner of the face's triangles, CORNER values to their own corners."""
    verts, quads = grid(3)
    obj = make_object("Faces", verts, quads, scale=(1.5, 1.5, 1.5))
    angles = 0.3 * np.arange(len(quads))
    per_face = np.stack([np.cos(angles), np.sin(angles), np.zeros(len(quads))], axis=1)
    obj.data.attributes.new("face_dir", "FLOAT_VECTOR", "FACE").data.foreach_set(
        "vector", per_face.astype(np.float32).ravel()
    )
    per_corner = np.stack([np.arange(4 * len(quads)), np.ones(4 * len(quads)), np.zeros(4 * len(quads))], axis=1)
    obj.data.attributes.new("corner_dir", "FLOAT_VECTOR", "CORNER").data.foreach_set(
        "vector", per_corner.astype(np.float32).ravel()
    )
    s = obj.contact_lab
    s.friction_model, s.structure_source, s.structure_attribute = "MATCHSTICK", "ATTRIBUTE", "face_dir"
    surface = export(obj)
    tris = surface.mesh.triangles
    assert len(tris) == 2 * len(quads)
    # independent reference: the quad holding all three vertices of each triangle
    contains = np.stack([np.isin(tris, q).all(axis=1) for q in quads], axis=1)  # (T, F)
    assert np.all(contains.sum(axis=1) == 1)
    poly = contains.argmax(axis=1)
    np.testing.assert_allclose(surface.mesh.corner_structure, 1.5 * per_face[poly][:, None, :].repeat(3, 1), atol=TOL)
    pool = lookup().pack_surfaces([surface])
    centroids = surface.mesh.vertices[tris].mean(axis=1)
    for k in range(0, len(tris), 3):
        np.testing.assert_allclose(pool.structure_direction(0, centroids[k]), 1.5 * per_face[poly[k]], atol=1e-5)

    s.structure_attribute = "corner_dir"
    surface = export(obj)
    # loops of quad f are 4f .. 4f+3 in from_pydata order, holding quads[f]
    position = np.argmax(quads[poly][:, None, :] == tris[:, :, None], axis=2)  # (T, 3) index in the quad
    loops = 4 * poly[:, None] + position
    np.testing.assert_allclose(surface.mesh.corner_structure, 1.5 * per_corner[loops], atol=1e-4)


# UV maps and images ------------------------------------------------------------------------------


@pytest.mark.parametrize("alpha", [0.0, 0.6, -2.1])
def test_uv_tangent_follows_rotated_uv_map(alpha):
    """UV map rotated by α: corner UVs equal the construction; the core's UV tangent is S·(cos α, −sin α, 0)."""
    verts, quads = grid()
    tris = split(quads)
    scale = np.array([2.0, 1.0, 0.5])
    obj = make_object("UVRot", verts, tris, scale=tuple(scale))
    add_uv(obj.data, "Plain", verts[:, :2] * 0.25 + 0.5)
    add_uv(obj.data, "Rot", rotated_uv(verts, alpha))
    s = obj.contact_lab
    s.friction_model, s.structure_source = "ANISOTROPIC", "UV_TANGENT"

    surface = export(obj)  # no uv_map set: the active render UV map
    np.testing.assert_allclose(surface.mesh.corner_uv, (verts[:, :2] * 0.25 + 0.5)[tris], atol=TOL)
    s.uv_map = "Rot"
    surface = export(obj)
    np.testing.assert_allclose(surface.mesh.corner_uv, rotated_uv(verts, alpha)[tris], atol=TOL)
    assert surface.mesh.corner_structure is None

    pool = lookup().pack_surfaces([surface])
    expected = unit(scale * np.array([math.cos(alpha), -math.sin(alpha), 0.0]))
    for p in sample_points(surface.mesh.vertices, tris, np.random.default_rng(2)):
        np.testing.assert_allclose(unit(pool.structure_direction(0, p)), expected, atol=1e-5)


@pytest.mark.parametrize(("alpha", "beta"), [(0.0, 0.9), (0.5, -1.2), (2.0, 2.5)])
def test_direction_image_gives_angle_after_tbn(alpha, beta):
    """A constant direction image at angle β on a UV map rotated by α: the direction is at angle β − α."""
    verts, quads = grid()
    tris = split(quads)
    obj = make_object("Img", verts, tris, scale=(1.5, 1.5, 1.5))
    add_uv(obj.data, "UVMap", rotated_uv(verts, alpha))
    rgb = (0.5 + 0.5 * math.cos(beta), 0.5 + 0.5 * math.sin(beta), 0.5, 1.0)
    pixels = np.broadcast_to(np.array(rgb, np.float32), (6, 8, 4)).copy()
    pixels[0, 0, 3] = 0.25  # marks the bottom-left texel (alpha is not read for directions)
    image = float_image("dir", pixels)
    s = obj.contact_lab
    s.friction_model, s.structure_source, s.structure_image = "MATCHSTICK", "IMAGE", image
    assert friction_export.friction_warnings(obj) == []

    surface = export(obj)
    assert surface.structure_source == StructureSource.IMAGE
    assert surface.structure_image.pixels.shape == (6, 8, 4) and surface.structure_image.pixels.dtype == np.float32
    np.testing.assert_array_equal(surface.structure_image.pixels, pixels)
    np.testing.assert_allclose(surface.mesh.corner_uv, rotated_uv(verts, alpha)[tris], atol=TOL)

    pool = lookup().pack_surfaces([surface])
    expected = np.array([math.cos(beta - alpha), math.sin(beta - alpha), 0.0])
    for p in sample_points(surface.mesh.vertices, tris, np.random.default_rng(3)):
        np.testing.assert_allclose(unit(pool.structure_direction(0, p)), expected, atol=1e-5)


def test_axis_source_in_shape_frame():
    """AXIS: the object axis scaled by the object scale (then unit), in the shape frame."""
    verts, quads = grid(2)
    obj = make_object("Axis", verts, quads, scale=(1.0, 3.0, 1.0))
    s = obj.contact_lab
    s.friction_model, s.structure_source, s.structure_axis = "TENSOR", "AXIS", "Y"
    s.friction_kappa, s.friction_tensor = 0.4, (1.0, 0.2, 2.0)
    surface = export(obj)
    np.testing.assert_allclose(surface.structure_axis, (0.0, 1.0, 0.0), atol=1e-12)
    assert surface.mesh is None  # an axis needs no mesh
    assert surface.kappa == pytest.approx(0.4)
    np.testing.assert_allclose(surface.tensor, [[1.0, 0.2], [0.2, 2.0]], atol=1e-7)
    pool = lookup().pack_surfaces([surface])
    np.testing.assert_allclose(pool.structure_direction(0, np.zeros(3)), (0.0, 1.0, 0.0))


def test_evaluated_mesh_is_read():
    """Modifiers are applied: a Subdivision modifier's vertices are exported, not the base mesh's."""
    verts, quads = grid(2)
    obj = make_object("Subd", verts, quads)
    add_uv(obj.data, "UVMap", verts[:, :2] * 0.25 + 0.5)
    obj.modifiers.new("Subd", "SUBSURF").levels = 1
    obj.contact_lab.friction_model, obj.contact_lab.structure_source = "ANISOTROPIC", "UV_TANGENT"
    surface = export(obj)
    assert len(surface.mesh.vertices) == 25 and len(obj.data.vertices) == 9


# normal maps ---------------------------------------------------------------------------------------


def normal_pixels(h=4, w=8):
    """A float normal map with distinct texels (tilted in U by the column, in V by the row)."""
    rng = np.random.default_rng(7)
    xy = rng.uniform(-0.4, 0.4, size=(h, w, 2))
    z = np.sqrt(1.0 - np.sum(xy * xy, axis=2, keepdims=True))
    n = np.concatenate([xy, z], axis=2)
    return np.concatenate([0.5 * n + 0.5, np.ones((h, w, 1))], axis=2).astype(np.float32)


def material_with_normal_map(image, *, uv_map="", strength=0.7, reroute=True, connect=True, space="TANGENT"):
    mat = bpy.data.materials.new("Textured")
    if bpy.app.version < (5, 0, 0):
        mat.use_nodes = True
    nodes, links = mat.node_tree.nodes, mat.node_tree.links
    bsdf = next(n for n in nodes if n.type == "BSDF_PRINCIPLED")
    tex = nodes.new("ShaderNodeTexImage")
    tex.image = image
    normal_map = nodes.new("ShaderNodeNormalMap")
    normal_map.uv_map = uv_map
    normal_map.space = space
    normal_map.inputs["Strength"].default_value = strength
    if reroute:
        r1, r2 = nodes.new("NodeReroute"), nodes.new("NodeReroute")
        links.new(tex.outputs["Color"], r1.inputs[0])
        links.new(r1.outputs[0], r2.inputs[0])
        links.new(r2.outputs[0], normal_map.inputs["Color"])
    else:
        links.new(tex.outputs["Color"], normal_map.inputs["Color"])
    if connect:
        out = nodes.new("NodeReroute")
        links.new(normal_map.outputs["Normal"], out.inputs[0])
        links.new(out.outputs[0], bsdf.inputs["Normal"])
    return mat, normal_map


def textured_grid(name="Textured", alpha=0.4):
    verts, quads = grid()
    tris = split(quads)
    obj = make_object(name, verts, tris)
    add_uv(obj.data, "Plain", verts[:, :2] * 0.25 + 0.5)
    add_uv(obj.data, "Rot", rotated_uv(verts, alpha))
    obj.contact_lab.friction_model = "TEXTURE"
    return obj, verts, tris


def test_normal_map_found_in_material_through_reroutes():
    """Image Texture → reroutes → Normal Map (uv 'Rot', strength 0.7) → reroute → BSDF Normal is found; the
    export carries its pixels, strength and that UV map."""
    obj, verts, tris = textured_grid()
    pixels = normal_pixels()
    image = float_image("nm", pixels)
    mat, node = material_with_normal_map(image, uv_map="Rot", strength=0.7)
    obj.data.materials.append(mat)

    found = friction_export.find_normal_map(obj)
    assert found is not None and found.auto
    assert found.image == image and found.uv_map == "Rot" and found.space == "TANGENT"
    assert found.strength == pytest.approx(0.7) and found.material == mat.name and found.node == node.name
    assert friction_export.friction_warnings(obj) == []

    obj.contact_lab.normal_map_directx = True
    obj.contact_lab.texture_patch_size = 0.08
    surface = export(obj)
    assert surface.model == SurfaceFrictionModel.TEXTURE
    np.testing.assert_array_equal(surface.normal_map.pixels, pixels)
    assert surface.normal_map.name == "nm"
    assert surface.normal_map_strength == pytest.approx(0.7) and surface.normal_map_directx is True
    assert surface.patch_size == pytest.approx(0.08)
    np.testing.assert_allclose(surface.mesh.corner_uv, rotated_uv(verts, 0.4)[tris], atol=TOL)

    node.inputs["Strength"].default_value = 0.25  # the node drives the strength, not the object setting
    assert export(obj).normal_map_strength == pytest.approx(0.25)


def test_normal_map_detection_needs_a_shader_normal_and_warns_on_space_and_linked_strength():
    obj, _, _ = textured_grid()
    image = float_image("nm", normal_pixels())
    mat, node = material_with_normal_map(image, connect=False)
    obj.data.materials.append(mat)
    assert friction_export.find_normal_map(obj) is None
    issues = friction_export.friction_issues(obj)
    assert any(i.fatal and "needs a normal map" in i.message for i in issues)

    mat2, node2 = material_with_normal_map(image, space="OBJECT", reroute=False)
    value = mat2.node_tree.nodes.new("ShaderNodeValue")
    mat2.node_tree.links.new(value.outputs[0], node2.inputs["Strength"])
    obj.data.materials.append(mat2)
    found = friction_export.find_normal_map(obj)
    assert found is not None and found.material == mat2.name
    warnings = [i for i in friction_export.friction_issues(obj) if not i.fatal]
    text = " | ".join(i.message for i in warnings)
    assert "Object space" in text and "Strength is linked" in text
    assert not any(i.fatal for i in friction_export.friction_issues(obj))


def test_explicit_normal_map_overrides_material():
    """A picked normal map wins over the material's; its strength is the object setting; UVs: active render map."""
    obj, verts, tris = textured_grid()
    auto = float_image("auto", normal_pixels())
    picked_pixels = normal_pixels(2, 2)
    picked = float_image("picked", picked_pixels)
    mat, _ = material_with_normal_map(auto, uv_map="Rot")
    obj.data.materials.append(mat)
    s = obj.contact_lab
    s.normal_map, s.normal_map_strength = picked, 0.3
    source = friction_export.normal_map_source(obj)
    assert source.image == picked and not source.auto
    surface = export(obj)
    np.testing.assert_array_equal(surface.normal_map.pixels, picked_pixels)
    assert surface.normal_map_strength == pytest.approx(0.3)
    np.testing.assert_allclose(surface.mesh.corner_uv, (verts[:, :2] * 0.25 + 0.5)[tris], atol=TOL)
    s.uv_map = "Rot"
    np.testing.assert_allclose(export(obj).mesh.corner_uv, rotated_uv(verts, 0.4)[tris], atol=TOL)


# warnings and fatal problems -----------------------------------------------------------------------


def test_warnings_for_colour_image_missing_uv_int_attribute_and_missing_file():
    verts, quads = grid(2)
    obj = make_object("Checks", verts, quads)
    s = obj.contact_lab

    # Color (sRGB) normal map: a warning only
    s.friction_model = "TEXTURE"
    add_uv(obj.data, "UVMap", verts[:, :2])
    s.normal_map = bpy.data.images.new("srgb", 4, 4)
    issues = friction_export.friction_issues(obj)
    assert [i.fatal for i in issues] == [False]
    assert "sRGB" in issues[0].message and "Non-Color" in issues[0].message
    assert friction_export.validate_friction([obj]) == [f"'Checks': {issues[0].message}"]

    # image without pixel data (file missing)
    missing = bpy.data.images.new("missing", 4, 4)
    missing.source, missing.filepath = "FILE", "/nonexistent/normal.png"
    s.normal_map = missing
    issues = friction_export.friction_issues(obj)
    assert any(i.fatal and "no pixel data" in i.message for i in issues)
    with pytest.raises(BakeError, match="'Checks'.*no pixel data") as info:
        friction_export.validate_friction([obj])
    assert info.value.object_name == "Checks"

    # missing UV maps
    s.friction_model, s.structure_source = "ANISOTROPIC", "UV_TANGENT"
    s.uv_map = "Nope"
    assert any(i.fatal and "'Nope' not found" in i.message for i in friction_export.friction_issues(obj))
    s.uv_map = ""
    obj.data.uv_layers.remove(obj.data.uv_layers["UVMap"])
    assert any(i.fatal and "needs a UV map" in i.message for i in friction_export.friction_issues(obj))

    # attribute of the wrong type, missing, on the EDGE domain
    s.structure_source = "ATTRIBUTE"
    obj.data.attributes.new("count", "INT", "POINT")
    s.structure_attribute = "count"
    issues = friction_export.friction_issues(obj)
    assert len(issues) == 1 and issues[0].fatal and "INT" in issues[0].message and "POINT" in issues[0].message
    obj.data.attributes.new("edgy", "FLOAT_VECTOR", "EDGE")
    s.structure_attribute = "edgy"
    assert "EDGE" in friction_export.friction_warnings(obj)[0]
    s.structure_attribute = "absent"
    assert "not found" in friction_export.friction_warnings(obj)[0]

    # direction image not picked; tensor not positive definite; no structure at all
    s.structure_source = "IMAGE"
    assert any(i.fatal and "no direction image" in i.message for i in friction_export.friction_issues(obj))
    s.friction_model, s.structure_source = "TENSOR", "AXIS"
    s.friction_tensor = (1.0, 2.0, 1.0)
    assert any(i.fatal and "positive definite" in i.message for i in friction_export.friction_issues(obj))
    s.friction_model, s.structure_source = "MATCHSTICK", "NONE"
    assert [i.fatal for i in friction_export.friction_issues(obj)] == [False]
    s.friction_model = "COULOMB"
    assert friction_export.friction_issues(obj) == []


def test_fatal_friction_problem_stops_the_bake_before_anything_changes(lab):
    scene = bpy.context.scene
    lab.add_ground()
    box = lab.add_cube("Grooved", (0.0, 0.0, 1.0))
    box.contact_lab.friction_model = "ANISOTROPIC"
    box.contact_lab.structure_source = "ATTRIBUTE"
    box.contact_lab.structure_attribute = "missing"
    before = lab.snapshot(scene)
    with pytest.raises(BakeError, match="'Grooved': attribute 'missing' not found") as info:
        scene_export.export_scene(scene)
    assert info.value.object_name == "Grooved"
    with pytest.raises(RuntimeError, match="'Grooved': attribute 'missing' not found"):
        bpy.ops.contact_lab.bake()
    assert lab.snapshot(scene) == before


# scene export ----------------------------------------------------------------------------------------


def test_export_scene_hands_surfaces_to_builder_at_first_frame(lab, monkeypatch):
    """The exporter runs for every shape at the bake's first frame; non-Coulomb shapes reach the builder."""
    from contact_lab.core import ModelBuilder

    calls = []
    original = ModelBuilder.set_shape_friction

    def record(self, shape, surface):
        calls.append((shape, surface))
        return original(self, shape, surface)

    monkeypatch.setattr(ModelBuilder, "set_shape_friction", record)
    scene = bpy.context.scene
    scene.unit_settings.scale_length = 0.5
    scene.frame_start, scene.frame_end = 1, 5
    lab.add_ground()
    box = lab.add_cube("Grain", (0.0, 0.0, 1.0), size=1.0)
    box.scale = (2.0, 1.0, 1.0)
    box.contact_lab.friction_model = "ANISOTROPIC"
    box.contact_lab.structure_source = "ATTRIBUTE"
    box.contact_lab.structure_attribute = "dir"
    mesh = box.data
    nv = len(mesh.vertices)
    grain = np.tile(np.float32([1.0, 1.0, 0.0]), nv)
    mesh.attributes.new("dir", "FLOAT_VECTOR", "POINT").data.foreach_set("vector", grain)
    base = np.empty(nv * 3, np.float32)
    mesh.vertices.foreach_get("co", base)
    base = base.reshape(nv, 3).astype(float)
    # the mesh moves later: a shape key shifts it by +0.3 in X from frame 1 (value 0) to frame 5 (value 1)
    box.shape_key_add(name="Basis")
    moved = box.shape_key_add(name="Moved")
    moved.data.foreach_set("co", (base + [0.3, 0.0, 0.0]).astype(np.float32).ravel())
    moved.value = 0.0
    moved.keyframe_insert("value", frame=1)
    moved.value = 1.0
    moved.keyframe_insert("value", frame=5)
    scene.frame_set(5)

    export = scene_export.export_scene(scene)
    assert scene.frame_current == 5
    assert len(calls) == 1  # the Coulomb ground keeps its plain μ
    body = next(b for b in export.bodies if b.object_name == "Grain")
    shape, surface = calls[0]
    assert shape == body.body_index  # one shape per body, in body order
    # the frame-1 mesh (not the shifted frame-5 one) in the body's frame
    expected = [2.0, 1.0, 1.0] * (base - body.centre_local) * 0.5
    np.testing.assert_allclose(surface.mesh.vertices, expected, atol=TOL)
    np.testing.assert_allclose(surface.mesh.corner_structure[0, 0], [2.0, 1.0, 0.0], atol=TOL)


def test_unit_scale_converts_patch_size_and_spin():
    bpy.context.scene.unit_settings.scale_length = 0.01  # 1 BU = 1 cm
    obj, verts, tris = textured_grid()
    s = obj.contact_lab
    s.normal_map = float_image("nm", normal_pixels())
    s.texture_patch_size, s.friction_spin = 5.0, 2.0
    surface = export(obj)
    assert surface.patch_size == pytest.approx(0.05) and surface.contensou == pytest.approx(0.02)
    centre = 0.5 * (verts.min(0) + verts.max(0))
    np.testing.assert_allclose(surface.mesh.vertices, (verts - centre) * 0.01, atol=TOL)


def test_anisotropic_scene_bakes():
    """An anisotropic box on a Coulomb ground bakes end to end through the operator."""
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 6
    bpy.ops.mesh.primitive_plane_add(size=20.0)
    ground = bpy.context.object
    ground.contact_lab.role, ground.contact_lab.shape = "PASSIVE", "PLANE"
    bpy.ops.mesh.primitive_cube_add(size=1.0, location=(0.0, 0.0, 0.6))
    box = bpy.context.object
    box.contact_lab.role = "ACTIVE"
    box.contact_lab.friction_model = "ANISOTROPIC"
    box.contact_lab.structure_source = "AXIS"
    assert bpy.ops.contact_lab.bake() == {"FINISHED"}
    assert box.animation_data.action is not None


# preview ---------------------------------------------------------------------------------------------


def read_colors(mesh, name):
    attr = mesh.color_attributes[name]
    assert (attr.data_type, attr.domain) == ("FLOAT_COLOR", "POINT")
    rgba = np.empty(len(attr.data) * 4, np.float32)
    attr.data.foreach_get("color", rgba)
    return rgba.reshape(-1, 4)


def test_preview_friction_writes_the_core_map():
    """preview_friction colours the vertices by surface_friction_map of the exported surface (analytic too)."""
    texture = pytest.importorskip("contact_lab.core.friction.texture")
    verts, quads = grid()
    tris = split(quads)
    obj = make_object("Preview", verts, tris, rotation=(0.0, 0.0, 0.0))
    centre = 0.5 * (verts.min(0) + verts.max(0))
    rel = verts - centre
    arm = rel - [0.13, 0.07, 0.0]  # a swirl around a point that is no vertex (no zero vector at a vertex)
    field = np.stack([-arm[:, 1], arm[:, 0], np.zeros(len(verts))], axis=1)
    obj.data.attributes.new("swirl", "FLOAT_VECTOR", "POINT").data.foreach_set(
        "vector", field.astype(np.float32).ravel()
    )
    s = obj.contact_lab
    s.friction, s.friction_t, s.friction_b = 0.5, 0.2, 0.8
    s.friction_model, s.structure_source, s.structure_attribute = "ANISOTROPIC", "ATTRIBUTE", "swirl"

    assert bpy.ops.contact_lab.preview_friction(direction=(1.0, 0.0, 0.0)) == {"FINISHED"}
    assert obj.data.color_attributes.active_color.name == preview.ATTRIBUTE_NAME
    colors = read_colors(obj.data, preview.ATTRIBUTE_NAME)

    surface = export(obj)
    pool = lookup().pack_surfaces([surface])
    values = texture.surface_friction_map(pool, 0, (rel * 1.0).astype(float), np.array([1.0, 0.0, 0.0]))
    expected, lo, hi = preview.friction_colors(values)
    np.testing.assert_allclose(colors, expected, atol=1e-5)
    # analytic: μ(φ) = 1/sqrt(cos²φ/μt² + sin²φ/μb²) with cos φ = x̂·s/|s| = −arm_y/|arm|
    cos = -arm[:, 1] / np.linalg.norm(arm[:, :2], axis=1)
    analytic = 1.0 / np.sqrt(cos**2 / 0.2**2 + (1 - cos**2) / 0.8**2)
    np.testing.assert_allclose(values, analytic, atol=1e-5)
    assert (lo, hi) == pytest.approx((analytic.min(), analytic.max()), abs=1e-5) and hi - lo > 0.3
    assert np.allclose(colors[np.argmin(values), :3], (0, 0, 1)) and np.allclose(
        colors[np.argmax(values), :3], (1, 0, 0)
    )


def test_preview_friction_texture_model_and_failure():
    texture = pytest.importorskip("contact_lab.core.friction.texture")
    obj, verts, tris = textured_grid(alpha=0.0)
    h, w = 4, 16
    u = (np.arange(w) + 0.5) / w
    tilt = np.where((u * 4) % 1.0 < 0.75, 0.5, -0.9)  # a sawtooth: long shallow faces, short steep ones
    n = unit(np.stack([tilt, np.zeros(w), np.ones(w)], axis=1))
    px = np.ones((h, w, 4), np.float32)
    px[:, :, :3] = (0.5 * n + 0.5)[None]
    obj.contact_lab.normal_map = float_image("saw", px)
    obj.contact_lab.texture_patch_size = 0.2
    assert bpy.ops.contact_lab.preview_friction(direction=(1.0, 0.0, 0.0), attribute_name="saw_x") == {"FINISHED"}
    colors = read_colors(obj.data, "saw_x")
    surface = export(obj)
    centre = 0.5 * (verts.min(0) + verts.max(0))
    values = texture.surface_friction_map(
        lookup().pack_surfaces([surface]), 0, verts - centre, np.array([1.0, 0.0, 0.0])
    )
    np.testing.assert_allclose(colors, preview.friction_colors(values)[0], atol=1e-5)
    assert values.min() >= 0.0 and np.ptp(values) > 0.05  # facets tilted against +X plow, the others do not

    obj.contact_lab.normal_map = None  # no normal map anywhere: fatal, nothing written
    with pytest.raises(RuntimeError, match="'Textured': Texture friction needs a normal map"):
        bpy.ops.contact_lab.preview_friction(direction=(1.0, 0.0, 0.0), attribute_name="other")
    assert obj.data.color_attributes.get("other") is None


# panel ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("model", ["COULOMB", "ANISOTROPIC", "MATCHSTICK", "TENSOR", "TEXTURE"])
def test_panel_draws_friction_section(model, lab):
    from contact_lab.panels import physics

    obj, _, _ = textured_grid()
    mat, _ = material_with_normal_map(float_image("nm", normal_pixels()), uv_map="Rot")
    obj.data.materials.append(mat)
    s = obj.contact_lab
    s.role, s.friction_model, s.structure_source = "ACTIVE", model, "ATTRIBUTE"
    s.structure_attribute = "absent"
    layout = lab.FakeLayout()
    physics.CONTACT_LAB_PT_object.draw(types.SimpleNamespace(layout=layout), bpy.context)
    props, labels = layout.props(), layout.labels()
    assert "friction_model" in props and "friction_spin" in props
    assert ("friction_t" in props) == (model in {"ANISOTROPIC", "MATCHSTICK"})
    assert ("friction_tensor" in props) == (model == "TENSOR")
    assert ("structure_attribute" in props) == (model in {"ANISOTROPIC", "MATCHSTICK", "TENSOR"})
    assert any(name == "operator" and args[0] == "contact_lab.preview_friction" for name, args, _ in layout.log)
    if model == "TEXTURE":
        assert "From material: nm (Textured)" in labels and "normal_map" in props and "uv_map" in props
    if model in {"ANISOTROPIC", "MATCHSTICK", "TENSOR"}:
        assert "attribute 'absent' not found on the mesh" in labels
