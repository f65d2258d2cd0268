"""Mocked-bpy tier: a small stand-in ``bpy`` with real base classes, installed before the add-on is imported.

The real Blender module is blocked by a meta-path finder, so these tests never use it even where it is
installed; run this tier in its own pytest process (``pytest tests/core tests/addon``).
"""

import importlib.abc
import os
import sys
import types

import pytest

# --import-mode=importlib keeps test folders off sys.path: put this one on it for the tier's helper module (fakes.py)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

_real = sys.modules.get("bpy")
if _real is not None and not getattr(_real, "__contact_lab_mock__", False):
    raise RuntimeError("the real bpy is already imported: run tests/addon in its own pytest process")


class _BlockRealBlender(importlib.abc.MetaPathFinder):
    """Refuse to import the real ``bpy``/``mathutils``/``bmesh`` (the mock lives in sys.modules)."""

    blocked = ("bpy", "mathutils", "bmesh", "bpy_extras")

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in self.blocked:
            raise ImportError(f"{name} is blocked in the mocked-bpy test tier")
        return None


# bpy.props: descriptors recording their arguments ---------------------------------------------------
class PropertyMarker:
    """What ``bpy.props.XProperty(**kw)`` returns in the mock: the kind and the keywords."""

    def __init__(self, kind, keywords):
        self.kind = kind
        self.keywords = keywords

    def __repr__(self):
        return f"{self.kind}({self.keywords})"


def _prop_factory(kind):
    def factory(**keywords):
        return PropertyMarker(kind, keywords)

    factory.__name__ = kind
    return factory


# bpy.types: real classes -------------------------------------------------------------------------
class _Registrable:
    pass


class Operator(_Registrable):
    def __init__(self):
        self.reports = []

    def report(self, type, message):
        self.reports.append((set(type), message))


class Panel(_Registrable):
    pass


class PropertyGroup(_Registrable):
    pass


class ID:
    pass


class Action(ID):
    pass


class Scene(ID):
    pass


class Image(ID):
    pass


class Object(ID):
    pass


class _EnumItem:
    def __init__(self, value):
        self.value = value


class Keyframe:
    bl_rna = types.SimpleNamespace(
        properties={
            "interpolation": types.SimpleNamespace(
                enum_items={"CONSTANT": _EnumItem(0), "LINEAR": _EnumItem(1), "BEZIER": _EnumItem(2)}
            )
        }
    )


class _Utils(types.ModuleType):
    def __init__(self):
        super().__init__("bpy.utils")
        self.calls = []
        self.registered = []

    def register_class(self, cls):
        if cls in self.registered:
            raise ValueError(f"register_class(...): already registered as a subclass '{cls.__name__}'")
        self.calls.append(("register", cls))
        self.registered.append(cls)

    def unregister_class(self, cls):
        if cls not in self.registered:
            raise RuntimeError(f"unregister_class(...): missing bl_rna for {cls.__name__}")
        self.calls.append(("unregister", cls))
        self.registered.remove(cls)

    def extension_path_user(self, package, path="", create=False):
        return f"/tmp/mock_user/{package}/{path}"


class _Actions:
    """``bpy.data.actions``: ``new`` uses a factory the keyframe tests swap per Blender version."""

    def __init__(self):
        self.items = []
        self.factory = None
        self.removed = []

    def new(self, name):
        action = self.factory(name)
        self.items.append(action)
        return action

    def remove(self, action):
        self.removed.append(action)
        self.items.remove(action)

    def get(self, name):
        return next((a for a in self.items if a.name == name), None)


def build_mock_bpy() -> types.ModuleType:
    bpy = types.ModuleType("bpy")
    bpy.__contact_lab_mock__ = True
    bpy.types = types.ModuleType("bpy.types")
    for cls in (Operator, Panel, PropertyGroup, ID, Action, Scene, Object, Image, Keyframe):
        setattr(bpy.types, cls.__name__, cls)
    bpy.props = types.ModuleType("bpy.props")
    for kind in (
        "BoolProperty",
        "EnumProperty",
        "FloatProperty",
        "FloatVectorProperty",
        "IntProperty",
        "PointerProperty",
        "StringProperty",
        "CollectionProperty",
    ):
        setattr(bpy.props, kind, _prop_factory(kind))
    bpy.utils = _Utils()
    bpy.app = types.SimpleNamespace(version=(5, 0, 1), background=True)
    bpy.data = types.SimpleNamespace(actions=_Actions(), scenes={}, objects={})
    return bpy


MOCK_BPY = build_mock_bpy()
sys.meta_path.insert(0, _BlockRealBlender())
for _name, _module in (("bpy", MOCK_BPY), ("bpy.types", MOCK_BPY.types), ("bpy.props", MOCK_BPY.props)):
    sys.modules[_name] = _module
sys.modules["bpy.utils"] = MOCK_BPY.utils


@pytest.fixture
def mock_bpy():
    """The stand-in bpy, with fresh app/data state per test."""
    MOCK_BPY.app.version = (5, 0, 1)
    MOCK_BPY.app.background = True
    MOCK_BPY.data.actions = _Actions()
    yield MOCK_BPY
