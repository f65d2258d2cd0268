"""Blender → :class:`core.friction.surface.SurfaceFriction`: per-object friction inputs (course ch. 6).

Reads an object's ``contact_lab`` friction settings, its evaluated mesh (triangles, UVs, a structure
attribute), images (direction image, normal map) and its material node tree (normal map auto-detection),
and produces the core's data contract. Bulk reads only (``foreach_get`` into numpy); no per-vertex or
per-pixel Python loops.

Frames and units:
- Everything leaves this module in the *shape's* frame, which is the body frame of
  :mod:`..rigid.gather`: the object's rotation placed at the bounding-box centre (the origin for planes).
  Points: ``p_shape = scale ∘ (v_local − centre_local) · length_scale`` [m]. Structure vectors (attribute,
  axis) are tangent vectors and transform with the scale only: ``s_shape = scale ∘ s_local`` (the core
  normalises and projects them onto the contact plane).
- Patch size and spin friction are stored in Blender units and leave in metres (× ``scale_length``).

What is fatal for a bake (:func:`validate_friction` raises ``BakeError`` naming the objects) and what is
only a warning (shown in the panel, see :func:`friction_issues`):
- fatal: required data is missing or unusable: a Texture model without any normal map; no UV map (or the
  named one missing) where one is needed (Texture model, Image and UV Tangent structure sources); a
  structure image that is not set; a structure attribute that is unnamed, missing, not FLOAT_VECTOR or on
  the EDGE domain; an image without pixel data (missing or unloadable file) or with fewer than 3 channels;
  a mesh-based input on a non-mesh object; a friction tensor that is not positive definite (friction
  would add energy).
- warning: an image that is not Non-Color data (the render would decode it differently from the physics,
  which reads the stored values); a Normal Map node not in Tangent space or with a linked Strength; a
  UDIM image (first tile only); several different normal maps in the materials (the first is used); an
  anisotropic model without a structure source (behaves isotropically with μ).

Models that use a structure field: Anisotropic, Matchstick, Tensor (the structure settings of other
models are ignored and not checked). Plain Coulomb objects without spin friction export ``None`` from
:func:`export_surfaces` (the shape's μ already says everything).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ...core.friction.surface import (
    StructureSource,
    SurfaceFriction,
    SurfaceFrictionModel,
    SurfaceMesh,
    TextureImage,
)
from .. import units
from ..scene import evaluated_at

if TYPE_CHECKING:
    import bpy  # for annotations only: this module reads bpy data through the objects it is given

__all__ = [
    "DATA_COLOR_SPACES",
    "FrictionIssue",
    "NormalMapSource",
    "export_surfaces",
    "find_normal_map",
    "friction_issues",
    "friction_warnings",
    "normal_map_source",
    "read_image",
    "read_surface_mesh",
    "shape_frame",
    "surface_friction",
    "uv_map_name",
    "validate_friction",
]

DATA_COLOR_SPACES = frozenset({"Non-Color", "Raw", "Linear", "Linear Rec.709"})
"""Colour spaces whose stored values are used unchanged by the shader (data, not colour)."""

STRUCTURE_MODELS = frozenset({"ANISOTROPIC", "MATCHSTICK", "TENSOR"})
"""Friction models that use the structure direction field."""

UV_SOURCES = frozenset({"IMAGE", "UV_TANGENT"})
"""Structure sources that need a UV map."""

AXIS_VECTORS = {"X": (1.0, 0.0, 0.0), "Y": (0.0, 1.0, 0.0), "Z": (0.0, 0.0, 1.0)}

_MAX_HOPS = 256
"""Longest chain of reroutes followed in a node tree (guards against malformed, cyclic trees)."""


@dataclass(frozen=True)
class FrictionIssue:
    """One problem with an object's friction inputs; ``fatal`` ones stop a bake."""

    message: str
    fatal: bool


@dataclass
class NormalMapSource:
    """Where an object's normal map comes from."""

    image: bpy.types.Image
    uv_map: str = ""
    """UV map named by the Normal Map node (or a UV Map node feeding the Image Texture); '' = default."""
    strength: float = 1.0
    space: str = "TANGENT"
    strength_linked: bool = False
    """The node's Strength input is driven by a link: only its default value is used."""
    material: str = ""
    node: str = ""
    auto: bool = True
    """Found in the material (False: picked in ``normal_map``)."""
    others: tuple = ()
    """Names of further, different normal map images found in the materials (ignored)."""


# settings helpers -------------------------------------------------------------------------------


def _settings(obj):
    return obj.contact_lab


def uses_structure(settings) -> bool:
    """The object's model uses a structure direction and a source is set."""
    return settings.friction_model in STRUCTURE_MODELS and settings.structure_source != "NONE"


def needs_uv(settings) -> bool:
    """A UV map is required (Texture model; Image / UV Tangent structure sources)."""
    return settings.friction_model == "TEXTURE" or (
        uses_structure(settings) and settings.structure_source in UV_SOURCES
    )


def needs_mesh(settings) -> bool:
    """The object's render mesh is required for lookups (UVs or a structure attribute)."""
    return needs_uv(settings) or (uses_structure(settings) and settings.structure_source == "ATTRIBUTE")


# material node tree -----------------------------------------------------------------------------


def _upstream(socket):
    """``(node, output socket)`` feeding an input socket, through reroutes; None when unlinked or muted."""
    for _ in range(_MAX_HOPS):
        if not socket.is_linked:
            return None
        link = socket.links[0]
        if getattr(link, "is_muted", False) or not getattr(link, "is_valid", True):
            return None
        node = link.from_node
        if node.type == "REROUTE":
            socket = node.inputs[0]
            continue
        return node, link.from_socket
    return None


def _reaches_shader_normal(socket) -> bool:
    """An output socket reaches (through reroutes and Bump nodes) a shader's ``Normal`` input."""
    stack, hops = [socket], 0
    while stack and hops < _MAX_HOPS:
        hops += 1
        out = stack.pop()
        for link in out.links:
            if getattr(link, "is_muted", False):
                continue
            node, to = link.to_node, link.to_socket
            if node.type == "REROUTE":
                stack.extend(node.outputs)
            elif node.type == "BUMP" and to.name == "Normal":
                stack.extend(node.outputs)
            elif to.name == "Normal" and node.type != "NORMAL_MAP" and not getattr(node, "mute", False):
                return True
    return False


def _node_source(material, node) -> NormalMapSource | None:
    """The image behind a Normal Map node whose output reaches a shader's Normal input."""
    if getattr(node, "mute", False) or not _reaches_shader_normal(node.outputs[0]):
        return None
    fed = _upstream(node.inputs["Color"])
    if fed is None:
        return None
    tex, _ = fed
    if tex.type != "TEX_IMAGE" or tex.image is None:
        return None
    uv_map = node.uv_map
    if not uv_map:  # the Image Texture may be sampled through a UV Map node
        vector = _upstream(tex.inputs["Vector"])
        if vector is not None and vector[0].type == "UVMAP":
            uv_map = vector[0].uv_map
    strength = node.inputs["Strength"]
    return NormalMapSource(
        image=tex.image,
        uv_map=uv_map,
        strength=float(strength.default_value),
        space=node.space,
        strength_linked=bool(strength.is_linked),
        material=material.name,
        node=node.name,
    )


def _materials(obj):
    for slot in getattr(obj, "material_slots", ()):
        material = slot.material
        if material is None or getattr(material, "node_tree", None) is None:
            continue
        yield material


def find_normal_map(obj) -> NormalMapSource | None:
    """Auto-detect the normal map in ``obj``'s materials (slot order, then node name).

    An Image Texture node feeds (possibly through reroutes) a Normal Map node's Color input, whose output
    reaches (through reroutes / Bump nodes) a shader's Normal input. Returns its image, the node's UV map,
    Strength (the input's value; a linked Strength is flagged) and space; None when nothing is found.
    """
    found: list[NormalMapSource] = []
    for material in _materials(obj):
        nodes = sorted((n for n in material.node_tree.nodes if n.type == "NORMAL_MAP"), key=lambda n: n.name)
        for node in nodes:
            source = _node_source(material, node)
            if source is not None:
                found.append(source)
    if not found:
        return None
    first = found[0]
    first.others = tuple(sorted({s.image.name for s in found[1:] if s.image != first.image}))
    return first


def normal_map_source(obj) -> NormalMapSource | None:
    """The normal map the Texture model uses: ``normal_map`` if picked, else :func:`find_normal_map`.

    An explicit image keeps the detected node's UV map (if that node uses the same image) but takes its
    strength from ``normal_map_strength``.
    """
    settings = _settings(obj)
    detected = find_normal_map(obj)
    if settings.normal_map is None:
        return detected
    uv_map = detected.uv_map if detected is not None and detected.image == settings.normal_map else ""
    return NormalMapSource(
        image=settings.normal_map,
        uv_map=uv_map,
        strength=float(settings.normal_map_strength),
        auto=False,
    )


def uv_map_name(obj, mesh, normal_source: NormalMapSource | None = None) -> str | None:
    """UV map to read: ``uv_map`` if set, else the normal map node's, else the active render one; None if none."""
    settings = _settings(obj)
    if settings.uv_map:
        return settings.uv_map
    if normal_source is not None and normal_source.uv_map:
        return normal_source.uv_map
    layers = mesh.uv_layers
    if len(layers) == 0:
        return None
    for layer in layers:
        if layer.active_render:
            return layer.name
    return layers[0].name


# checks -----------------------------------------------------------------------------------------


def _image_issues(image, what: str) -> list[FrictionIssue]:
    issues = []
    size = tuple(image.size)
    if size[0] * size[1] == 0:  # reading the size loads the image: a missing file gives (0, 0)
        where = f" (file '{image.filepath}')" if getattr(image, "filepath", "") else ""
        issues.append(FrictionIssue(f"{what} '{image.name}' has no pixel data{where}: missing or unreadable", True))
        return issues
    if image.channels < 3:
        issues.append(FrictionIssue(f"{what} '{image.name}' has {image.channels} channel(s), needs RGB", True))
    space = image.colorspace_settings.name
    if space not in DATA_COLOR_SPACES:
        issues.append(
            FrictionIssue(
                f"{what} '{image.name}' uses colour space '{space}': set it to Non-Color "
                "(physics reads the stored values, the render would decode them)",
                False,
            )
        )
    if getattr(image, "source", "") == "TILED":
        issues.append(FrictionIssue(f"{what} '{image.name}' is a UDIM image: only its first tile is used", False))
    return issues


def _mesh_for_checks(obj, depsgraph):
    if depsgraph is not None:
        return obj.evaluated_get(depsgraph).data
    return obj.data


def friction_issues(obj, depsgraph=None) -> list[FrictionIssue]:
    """Every problem with ``obj``'s friction inputs, fatal or not (cheap: no mesh copies, no pixel reads).

    Args:
        obj: a ``bpy.types.Object`` with ``contact_lab`` settings.
        depsgraph: check the evaluated mesh (attributes made by modifiers) instead of the base mesh.
    """
    s = _settings(obj)
    model = s.friction_model
    issues: list[FrictionIssue] = []
    if model in STRUCTURE_MODELS and s.structure_source == "NONE":
        issues.append(FrictionIssue("no structure direction (Structure is None): friction is isotropic with μ", False))
    if model == "TENSOR":
        q_tt, q_tb, q_bb = (float(x) for x in s.friction_tensor)
        if not (q_tt > 0.0 and q_bb > 0.0 and q_tt * q_bb - q_tb * q_tb > 0.0):
            issues.append(
                FrictionIssue(
                    f"friction tensor (Q_tt, Q_tb, Q_bb) = ({q_tt:g}, {q_tb:g}, {q_bb:g}) is not positive definite "
                    "(needs Q_tt > 0, Q_bb > 0, Q_tt·Q_bb > Q_tb²): friction could add energy",
                    True,
                )
            )
    normal = None
    if model == "TEXTURE":
        normal = normal_map_source(obj)
        if normal is None:
            issues.append(
                FrictionIssue(
                    "Texture friction needs a normal map: pick one, or add Image Texture ▸ Normal Map ▸ shader "
                    "Normal to its material",
                    True,
                )
            )
        else:
            issues += _image_issues(normal.image, "normal map")
            if normal.auto and normal.space != "TANGENT":
                issues.append(
                    FrictionIssue(
                        f"Normal Map node '{normal.node}' is in {normal.space.title()} space; it is read as Tangent",
                        False,
                    )
                )
            if normal.auto and normal.strength_linked:
                issues.append(
                    FrictionIssue(
                        f"Normal Map node '{normal.node}' Strength is linked: its value {normal.strength:g} is used",
                        False,
                    )
                )
            if normal.others:
                issues.append(
                    FrictionIssue(
                        f"several normal maps in the materials: '{normal.image.name}' is used, "
                        f"{', '.join(repr(n) for n in normal.others)} ignored",
                        False,
                    )
                )
    structure = uses_structure(s)
    if structure and s.structure_source == "IMAGE":
        if s.structure_image is None:
            issues.append(FrictionIssue("Structure is Image but no direction image is picked", True))
        else:
            issues += _image_issues(s.structure_image, "direction image")
    if not needs_mesh(s):
        return issues
    if obj.type != "MESH":
        issues.append(FrictionIssue(f"{_need_text(s)} needs a mesh object, this is a {obj.type.lower()}", True))
        return issues
    mesh = _mesh_for_checks(obj, depsgraph)
    if needs_uv(s):
        name = uv_map_name(obj, mesh, normal)
        if name is None:
            issues.append(FrictionIssue(f"{_need_text(s)} needs a UV map, the mesh has none", True))
        elif mesh.uv_layers.get(name) is None:
            have = ", ".join(f"'{layer.name}'" for layer in mesh.uv_layers) or "none"
            issues.append(FrictionIssue(f"UV map '{name}' not found (the mesh has {have})", True))
    if structure and s.structure_source == "ATTRIBUTE":
        issues += _attribute_issues(mesh, s.structure_attribute)
    return issues


def _need_text(s) -> str:
    if s.friction_model == "TEXTURE":
        return "Texture friction"
    return f"Structure {s.structure_source.replace('_', ' ').title()}"


def _attribute_issues(mesh, name: str) -> list[FrictionIssue]:
    if not name:
        return [FrictionIssue("Structure is Attribute but no attribute name is set", True)]
    attr = mesh.attributes.get(name)
    if attr is None:
        return [FrictionIssue(f"attribute '{name}' not found on the mesh", True)]
    if attr.data_type != "FLOAT_VECTOR" or attr.domain not in {"POINT", "FACE", "CORNER"}:
        return [
            FrictionIssue(
                f"attribute '{name}' is {attr.data_type} on the {attr.domain} domain; needs FLOAT_VECTOR on "
                "POINT, FACE or CORNER",
                True,
            )
        ]
    return []


def friction_warnings(obj, depsgraph=None) -> list[str]:
    """Messages of :func:`friction_issues` (fatal ones first), for the panel and reports."""
    issues = friction_issues(obj, depsgraph)
    return [i.message for i in sorted(issues, key=lambda i: not i.fatal)]


def validate_friction(objects, depsgraph=None) -> list[str]:
    """Check every object's friction inputs before a bake.

    Returns:
        The non-fatal warnings, each as ``"'<object>': <message>"``.

    Raises:
        BakeError: fatal problems (all of them, each naming its object; ``object_name`` = the first).
    """
    from ..errors import BakeError

    fatal, warnings = [], []
    for obj in objects:
        for issue in friction_issues(obj, depsgraph):
            (fatal if issue.fatal else warnings).append((obj.name, f"'{obj.name}': {issue.message}"))
    if fatal:
        text = "; ".join(m for _, m in fatal[:6])
        if len(fatal) > 6:
            text += f"; and {len(fatal) - 6} more problem(s)"
        raise BakeError(text, object_name=fatal[0][0])
    return [m for _, m in warnings]


# reading ----------------------------------------------------------------------------------------


def read_image(image, cache: dict | None = None) -> TextureImage:
    """Pixels of ``image`` as stored (no colour conversion), float32 (height, width, channels), bottom row first.

    ``cache`` (image name → TextureImage) shares one array among the shapes that use the same image (the core
    stores each pixel array once).
    """
    key = getattr(image, "name_full", image.name)  # unique also for images linked from libraries
    if cache is not None and key in cache:
        return cache[key]
    width, height = (int(x) for x in image.size)
    channels = int(image.channels)
    buf = np.empty(width * height * channels, dtype=np.float32)
    if buf.size:
        image.pixels.foreach_get(buf)
    texture = TextureImage(pixels=buf.reshape(height, width, channels), name=image.name)
    if cache is not None:
        cache[key] = texture
    return texture


def read_surface_mesh(
    mesh,
    *,
    centre_local=(0.0, 0.0, 0.0),
    scale=(1.0, 1.0, 1.0),
    length_scale: float = 1.0,
    uv_map: str | None = None,
    attribute: str | None = None,
) -> SurfaceMesh:
    """A Blender mesh as a :class:`SurfaceMesh` in the shape frame.

    Args:
        mesh: a ``bpy.types.Mesh`` (normally the evaluated mesh from ``to_mesh()``).
        centre_local: shape origin in object space [BU]. scale: object scale (3,).
        length_scale: metres per Blender unit.
        uv_map: name of the UV map to read into ``corner_uv`` (None: no UVs).
        attribute: name of a FLOAT_VECTOR attribute (POINT / FACE / CORNER) to read into ``corner_structure``.
    """
    centre = np.asarray(centre_local, dtype=np.float64)
    scale = np.asarray(scale, dtype=np.float64)
    nv = len(mesh.vertices)
    co = np.empty(nv * 3, dtype=np.float32)
    mesh.vertices.foreach_get("co", co)
    vertices = scale * (co.reshape(nv, 3).astype(np.float64) - centre) * float(length_scale)

    tris = mesh.loop_triangles
    nt = len(tris)
    tri = np.empty(nt * 3, dtype=np.int32)
    tris.foreach_get("vertices", tri)
    tri = tri.reshape(nt, 3)
    loops = None
    if uv_map is not None or attribute is not None:
        loops = np.empty(nt * 3, dtype=np.int32)
        tris.foreach_get("loops", loops)
        loops = loops.reshape(nt, 3)

    corner_uv = None
    if uv_map is not None:
        layer = mesh.uv_layers[uv_map]
        uv = np.empty(len(mesh.loops) * 2, dtype=np.float32)
        layer.uv.foreach_get("vector", uv)
        corner_uv = uv.reshape(-1, 2).astype(np.float64)[loops]

    corner_structure = None
    if attribute is not None:
        attr = mesh.attributes[attribute]
        values = np.empty(len(attr.data) * 3, dtype=np.float32)
        attr.data.foreach_get("vector", values)
        values = scale * values.reshape(-1, 3).astype(np.float64)
        if attr.domain == "POINT":
            corner_structure = values[tri]
        elif attr.domain == "CORNER":
            corner_structure = values[loops]
        elif attr.domain == "FACE":
            poly = np.empty(nt, dtype=np.int32)
            tris.foreach_get("polygon_index", poly)
            corner_structure = np.repeat(values[poly][:, None, :], 3, axis=1)
        else:
            raise ValueError(f"attribute '{attribute}' is on the {attr.domain} domain")
    return SurfaceMesh(vertices=vertices, triangles=tri, corner_uv=corner_uv, corner_structure=corner_structure)


def shape_frame(obj) -> tuple[np.ndarray, np.ndarray]:
    """``(centre_local [BU] (3,), scale (3,))`` of ``obj``'s shape frame, as :mod:`..rigid.gather` computes it."""
    corners = np.asarray([tuple(c) for c in obj.bound_box], dtype=np.float64).reshape(8, 3)
    centre = 0.5 * (corners.min(axis=0) + corners.max(axis=0))
    if obj.contact_lab.shape == "PLANE":
        centre = np.zeros(3)
    _, _, scale, _ = units.decompose_matrices(np.array(obj.matrix_world, dtype=np.float64)[None])
    return centre, scale[0]


def surface_friction(
    obj,
    *,
    depsgraph,
    centre_local=(0.0, 0.0, 0.0),
    scale=(1.0, 1.0, 1.0),
    length_scale: float = 1.0,
    image_cache: dict | None = None,
) -> SurfaceFriction:
    """``obj``'s friction inputs as a :class:`SurfaceFriction` in its shape frame (SI units).

    Reads the evaluated mesh (``depsgraph``) only when the model needs it. Does not check the inputs:
    call :func:`validate_friction` first (missing data raises ``KeyError`` / ``ValueError`` here).
    """
    s = _settings(obj)
    metres = float(length_scale)
    scale = np.asarray(scale, dtype=np.float64)
    model = s.friction_model
    q_tt, q_tb, q_bb = (float(x) for x in s.friction_tensor)
    surface = SurfaceFriction(
        model=SurfaceFrictionModel[model],
        mu=float(s.friction),
        mu_t=float(s.friction_t),
        mu_b=float(s.friction_b),
        contensou=float(s.friction_spin) * metres,
        kappa=float(s.friction_kappa),
        tensor=np.array([[q_tt, q_tb], [q_tb, q_bb]]),
        patch_size=float(s.texture_patch_size) * metres,
    )
    if model == "COULOMB":
        surface.mu_t = surface.mu_b = surface.mu
    structure = uses_structure(s)
    if structure:
        surface.structure_source = StructureSource[s.structure_source]
        if s.structure_source == "AXIS":
            axis = scale * np.asarray(AXIS_VECTORS[s.structure_axis])
            surface.structure_axis = axis / np.linalg.norm(axis)
        elif s.structure_source == "IMAGE":
            surface.structure_image = read_image(s.structure_image, image_cache)
    normal = None
    if model == "TEXTURE":
        normal = normal_map_source(obj)
        if normal is None:
            raise ValueError(f"'{obj.name}': Texture friction needs a normal map")
        surface.normal_map = read_image(normal.image, image_cache)
        surface.normal_map_strength = float(normal.strength)
        surface.normal_map_directx = bool(s.normal_map_directx)
    if needs_mesh(s):
        obj_eval = obj.evaluated_get(depsgraph)
        mesh = obj_eval.to_mesh()
        try:
            uv = uv_map_name(obj, mesh, normal) if needs_uv(s) else None
            attribute = s.structure_attribute if structure and s.structure_source == "ATTRIBUTE" else None
            surface.mesh = read_surface_mesh(
                mesh, centre_local=centre_local, scale=scale, length_scale=metres, uv_map=uv, attribute=attribute
            )
        finally:
            obj_eval.to_mesh_clear()
    return surface


def export_surfaces(scene, objects, centres, scales, length_scale: float, frame: int) -> list[SurfaceFriction | None]:
    """Friction inputs of ``objects`` (one per object, in order) at scene frame ``frame``.

    Validates first (:func:`validate_friction`; fatal problems raise ``BakeError``). Meshes are read from the
    evaluated depsgraph at ``frame``; the scene's current frame is restored afterwards. Plain Coulomb objects
    without spin friction give None.

    Args:
        centres: shape origins in object space [BU], one (3,) per object. scales: object scales (3,) at ``frame``.
    """
    out: list[SurfaceFriction | None] = [None] * len(objects)
    todo = [
        k
        for k, obj in enumerate(objects)
        if obj.contact_lab.friction_model != "COULOMB" or obj.contact_lab.friction_spin > 0.0
    ]
    if not todo:
        return out
    with evaluated_at(scene, frame) as depsgraph:
        validate_friction([objects[k] for k in todo], depsgraph)
        images: dict = {}
        for k in todo:
            out[k] = surface_friction(
                objects[k],
                depsgraph=depsgraph,
                centre_local=centres[k],
                scale=scales[k],
                length_scale=length_scale,
                image_cache=images,
            )
    return out
