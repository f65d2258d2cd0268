"""Friction settings, their checks and the preview operator against the mocked bpy (no Blender)."""

import types

import numpy as np
import pytest
from contact_lab import registration
from contact_lab.addon import properties
from contact_lab.addon.errors import BakeError
from contact_lab.addon.friction import export as friction_export
from contact_lab.core.friction.surface import StructureSource, SurfaceFrictionModel
from contact_lab.operators import preview


def _props(cls=properties.CONTACT_LAB_ObjectSettings):
    return cls.__annotations__


def _items(marker):
    return [item[0] for item in marker.keywords["items"]]


# properties ----------------------------------------------------------------------------------------


def test_friction_property_names_kinds_and_defaults():
    """The scripting names of the friction settings, their kinds and documented defaults."""
    p = _props()
    assert _items(p["friction_model"]) == ["COULOMB", "ANISOTROPIC", "MATCHSTICK", "TENSOR", "TEXTURE"]
    assert p["friction_model"].keywords["default"] == "COULOMB"
    assert p["friction_t"].kind == p["friction_b"].kind == "FloatProperty"
    assert (p["friction_t"].keywords["default"], p["friction_b"].keywords["default"]) == (0.3, 0.6)
    assert "0.3" in p["friction_t"].keywords["description"] and "0.6" in p["friction_b"].keywords["description"]
    assert _items(p["structure_source"]) == ["NONE", "ATTRIBUTE", "IMAGE", "UV_TANGENT", "AXIS"]
    assert p["structure_source"].keywords["default"] == "NONE"
    assert p["structure_attribute"].kind == "StringProperty"
    assert _items(p["structure_axis"]) == ["X", "Y", "Z"] and p["structure_axis"].keywords["default"] == "X"
    for name in ("structure_image", "normal_map"):
        assert p[name].kind == "PointerProperty" and p[name].keywords["type"].__name__ == "Image"
    assert p["texture_patch_size"].keywords["default"] == 0.05
    assert p["texture_patch_size"].keywords["unit"] == "LENGTH"  # shown in scene units, converted at bake
    assert p["normal_map_directx"].kind == "BoolProperty" and p["normal_map_directx"].keywords["default"] is False
    assert p["normal_map_strength"].keywords["default"] == 1.0
    assert p["uv_map"].kind == "StringProperty" and p["uv_map"].keywords["default"] == ""
    assert p["friction_kappa"].kind == "FloatProperty"
    assert p["friction_tensor"].kind == "FloatVectorProperty" and p["friction_tensor"].keywords["size"] == 3
    assert tuple(p["friction_tensor"].keywords["default"]) == (1.0, 0.0, 1.0)
    assert p["friction_spin"].keywords["default"] == 0.0 and p["friction_spin"].keywords["unit"] == "LENGTH"
    # the existing settings keep their names
    for name in ("role", "shape", "mass", "friction", "restitution", "baked_action"):
        assert name in p


def test_every_friction_setting_explains_itself():
    p = _props()
    names = [n for n in p if n.startswith(("friction_", "structure_", "normal_map", "texture_")) or n == "uv_map"]
    assert len(names) >= 14
    for name in names:
        assert len(p[name].keywords.get("description", "")) > 30, name
    for marker in (p["friction_model"], p["structure_source"]):
        for _, label, tip in marker.keywords["items"]:
            assert label and len(tip) > 15


def test_enum_items_match_the_core_enums():
    p = _props()
    assert _items(p["friction_model"]) == [m.name for m in SurfaceFrictionModel if m.name != "NONE"]
    assert _items(p["structure_source"]) == [s.name for s in StructureSource]


def test_preview_operator_is_registered_with_its_public_name():
    op = preview.CONTACT_LAB_OT_preview_friction
    assert op.bl_idname == "contact_lab.preview_friction" and op.bl_options == {"REGISTER", "UNDO"}
    assert op in registration.classes()
    direction = op.__annotations__["direction"]
    assert direction.kind == "FloatVectorProperty" and tuple(direction.keywords["default"]) == (1.0, 0.0, 0.0)
    assert op.__annotations__["attribute_name"].keywords["default"] == "contact_lab_friction"


# stand-ins for Blender data --------------------------------------------------------------------------


class Coll(list):
    """A bpy collection: iterable, ``get(name)``, index by name."""

    def get(self, name):
        return next((x for x in self if x.name == name), None)

    def __getitem__(self, key):
        if isinstance(key, str):
            item = self.get(key)
            if item is None:
                raise KeyError(key)
            return item
        return super().__getitem__(key)


class Socket:
    def __init__(self, node, name, default=None):
        self.node, self.name, self.default_value, self.links = node, name, default, []

    @property
    def is_linked(self):
        return bool(self.links)


class Node:
    def __init__(self, type, name, inputs=(), outputs=(), **attrs):
        self.type, self.name, self.mute = type, name, False
        self.inputs = Coll(Socket(self, n, d) for n, d in inputs)
        self.outputs = Coll(Socket(self, n) for n in outputs)
        self.__dict__.update(attrs)


def link(out, into):
    lk = types.SimpleNamespace(from_node=out.node, from_socket=out, to_node=into.node, to_socket=into, is_muted=False)
    out.links.append(lk)
    into.links.append(lk)


def image(name="img", colorspace="Non-Color", size=(4, 4), channels=4):
    return types.SimpleNamespace(
        name=name,
        size=size,
        channels=channels,
        colorspace_settings=types.SimpleNamespace(name=colorspace),
        source="GENERATED",
        filepath="",
    )


def normal_map_material(img, *, uv_map="Detail", strength=0.7, connected=True):
    tex = Node("TEX_IMAGE", "Image Texture", inputs=[("Vector", None)], outputs=["Color", "Alpha"], image=img)
    reroute = Node("REROUTE", "Reroute", inputs=[("Input", None)], outputs=["Output"])
    nmap = Node(
        "NORMAL_MAP",
        "Normal Map",
        inputs=[("Strength", strength), ("Color", None)],
        outputs=["Normal"],
        uv_map=uv_map,
        space="TANGENT",
    )
    bsdf = Node("BSDF_PRINCIPLED", "Principled BSDF", inputs=[("Base Color", None), ("Normal", None)], outputs=["BSDF"])
    link(tex.outputs["Color"], reroute.inputs[0])
    link(reroute.outputs[0], nmap.inputs["Color"])
    if connected:
        link(nmap.outputs["Normal"], bsdf.inputs["Normal"])
    return types.SimpleNamespace(name="Mat", node_tree=types.SimpleNamespace(nodes=[tex, reroute, nmap, bsdf]))


def default_settings(**overrides):
    """Object settings holding the PropertyGroup's declared defaults (as Blender would)."""
    values = {}
    for name, marker in _props().items():
        if "default" in marker.keywords:
            values[name] = marker.keywords["default"]
        elif marker.kind == "PointerProperty":
            values[name] = None
        elif marker.kind == "StringProperty":
            values[name] = ""
    values.setdefault("role", "NONE")
    values.update(overrides)
    return types.SimpleNamespace(**values)


def fake_object(settings=None, *, uv=("UVMap",), attributes=(), materials=(), obj_type="MESH"):
    mesh = types.SimpleNamespace(
        uv_layers=Coll(types.SimpleNamespace(name=n, active_render=(i == 0)) for i, n in enumerate(uv)),
        attributes=Coll(types.SimpleNamespace(name=n, data_type=t, domain=d) for n, t, d in attributes),
    )
    return types.SimpleNamespace(
        name="Obj",
        type=obj_type,
        contact_lab=settings or default_settings(),
        data=mesh,
        material_slots=[types.SimpleNamespace(material=m) for m in materials],
    )


def fatal(obj):
    return [i.message for i in friction_export.friction_issues(obj) if i.fatal]


def warnings(obj):
    return [i.message for i in friction_export.friction_issues(obj) if not i.fatal]


# checks ----------------------------------------------------------------------------------------------


def test_coulomb_default_object_has_no_issues():
    assert friction_export.friction_issues(fake_object(uv=())) == []


def test_normal_map_auto_detection_through_reroute():
    img = image("bumps")
    obj = fake_object(default_settings(friction_model="TEXTURE"), uv=("UVMap", "Detail"), materials=[None])
    assert any("needs a normal map" in m for m in fatal(obj))
    obj.material_slots.append(types.SimpleNamespace(material=normal_map_material(img)))
    found = friction_export.find_normal_map(obj)
    assert found.image is img and found.uv_map == "Detail" and found.strength == 0.7 and found.auto
    assert friction_export.friction_issues(obj) == []
    assert friction_export.uv_map_name(obj, obj.data, found) == "Detail"
    # not wired to a shader's Normal: not a normal map
    obj.material_slots[1].material = normal_map_material(img, connected=False)
    assert friction_export.find_normal_map(obj) is None


def test_explicit_normal_map_overrides_and_uses_object_strength():
    auto, picked = image("auto"), image("picked")
    obj = fake_object(
        default_settings(friction_model="TEXTURE", normal_map=picked, normal_map_strength=0.4),
        materials=[normal_map_material(auto)],
    )
    source = friction_export.normal_map_source(obj)
    assert source.image is picked and source.strength == 0.4 and not source.auto and source.uv_map == ""
    assert friction_export.uv_map_name(obj, obj.data, source) == "UVMap"  # the active render UV map


def test_colour_image_is_a_warning_missing_data_is_fatal():
    obj = fake_object(default_settings(friction_model="TEXTURE", normal_map=image("paint", colorspace="sRGB")))
    assert fatal(obj) == [] and len(warnings(obj)) == 1
    assert "'sRGB'" in warnings(obj)[0] and "Non-Color" in warnings(obj)[0]
    assert friction_export.validate_friction([obj]) == [f"'Obj': {warnings(obj)[0]}"]
    obj.contact_lab.normal_map = image("lost", size=(0, 0))
    assert any("no pixel data" in m for m in fatal(obj))
    with pytest.raises(BakeError, match="'Obj': normal map 'lost' has no pixel data") as info:
        friction_export.validate_friction([obj])
    assert info.value.object_name == "Obj"


@pytest.mark.parametrize("model", ["TEXTURE", "ANISOTROPIC"])
def test_missing_uv_map_is_fatal(model):
    s = default_settings(friction_model=model, structure_source="UV_TANGENT", normal_map=image())
    obj = fake_object(s, uv=())
    assert any("needs a UV map" in m for m in fatal(obj))
    obj = fake_object(default_settings(friction_model=model, structure_source="IMAGE", uv_map="Other"))
    assert any("'Other' not found" in m for m in fatal(obj))


def test_attribute_checks_name_the_type_and_domain():
    s = default_settings(friction_model="MATCHSTICK", structure_source="ATTRIBUTE", structure_attribute="grain")
    obj = fake_object(s, attributes=[("grain", "INT", "POINT")])
    assert fatal(obj) == ["attribute 'grain' is INT on the POINT domain; needs FLOAT_VECTOR on POINT, FACE or CORNER"]
    for domain in ("POINT", "FACE", "CORNER"):
        assert fatal(fake_object(s, attributes=[("grain", "FLOAT_VECTOR", domain)])) == []
    assert fatal(fake_object(s, attributes=[("grain", "FLOAT_VECTOR", "EDGE")]))
    assert fatal(fake_object(s)) == ["attribute 'grain' not found on the mesh"]
    s.structure_attribute = ""
    assert "no attribute name" in fatal(fake_object(s))[0]
    s.structure_attribute = "grain"
    assert "needs a mesh object" in fatal(fake_object(s, obj_type="CURVE"))[0]
    # the same settings on a Coulomb object are ignored (the model does not use a structure)
    s.friction_model = "COULOMB"
    assert friction_export.friction_issues(fake_object(s)) == []


def test_tensor_and_missing_structure_checks():
    s = default_settings(friction_model="TENSOR", structure_source="AXIS", friction_tensor=(1.0, 1.5, 1.0))
    assert "positive definite" in fatal(fake_object(s))[0]
    s.friction_tensor = (1.0, 0.5, 1.0)
    assert friction_export.friction_issues(fake_object(s)) == []
    s.structure_source = "NONE"
    assert fatal(fake_object(s)) == [] and "isotropic" in warnings(fake_object(s))[0]
    s.structure_source, s.structure_image = "IMAGE", None
    assert any("no direction image" in m for m in fatal(fake_object(s)))


def test_warnings_list_fatal_first():
    s = default_settings(friction_model="TEXTURE", normal_map=image("paint", colorspace="sRGB"))
    obj = fake_object(s, uv=())
    messages = friction_export.friction_warnings(obj)
    assert "needs a UV map" in messages[0] and "sRGB" in messages[1]


# export without a mesh -------------------------------------------------------------------------------


def test_axis_surface_in_shape_frame_and_si_units():
    s = default_settings(
        friction_model="TENSOR",
        structure_source="AXIS",
        structure_axis="Z",
        friction_kappa=0.3,
        friction_tensor=(2.0, 0.5, 1.0),
        friction_spin=4.0,
        friction=0.7,
    )
    obj = fake_object(s)
    surface = friction_export.surface_friction(obj, depsgraph=None, scale=(1.0, 1.0, 2.0), length_scale=0.01)
    assert surface.model == SurfaceFrictionModel.TENSOR and surface.structure_source == StructureSource.AXIS
    np.testing.assert_allclose(surface.structure_axis, (0.0, 0.0, 1.0))
    np.testing.assert_allclose(surface.tensor, [[2.0, 0.5], [0.5, 1.0]])
    assert surface.kappa == 0.3 and surface.mu == 0.7 and surface.mesh is None
    assert surface.contensou == pytest.approx(0.04) and surface.patch_size == pytest.approx(0.0005)


def test_coulomb_surface_is_isotropic():
    s = default_settings(friction=0.8, structure_source="AXIS")
    surface = friction_export.surface_friction(fake_object(s), depsgraph=None)
    assert surface.model == SurfaceFrictionModel.COULOMB
    assert surface.mu == surface.mu_t == surface.mu_b == 0.8
    assert surface.structure_source == StructureSource.NONE  # Coulomb does not use a structure


# preview colours -------------------------------------------------------------------------------------


def test_friction_colors_ramp_blue_to_red():
    rgba, lo, hi = preview.friction_colors(np.array([0.2, 0.5, 0.8]))
    assert (lo, hi) == (0.2, 0.8)
    np.testing.assert_allclose(rgba, [(0, 0, 1, 1), (0, 1, 0, 1), (1, 0, 0, 1)], atol=1e-12)
    rgba, lo, hi = preview.friction_colors(np.full(4, 0.5))
    assert lo == hi == 0.5 and np.allclose(rgba[:, :3], (0, 1, 0))
