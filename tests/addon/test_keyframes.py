"""The keyframe helper picks legacy vs layered actions by bpy.app.version and writes keys in bulk."""

import numpy as np
import pytest
from contact_lab.addon.output import keyframes


class FakeKeyframePoints:
    def __init__(self):
        self.count = 0
        self.sets = {}

    def __len__(self):
        return self.count

    def add(self, n):
        self.count += n

    def foreach_set(self, attr, seq):
        self.sets[attr] = np.array(seq, copy=True)


class FakeFCurve:
    def __init__(self, data_path, index):
        self.data_path, self.array_index = data_path, index
        self.keyframe_points = FakeKeyframePoints()
        self.group = None
        self.updated = 0

    def update(self):
        self.updated += 1


class FakeFCurves(list):
    def new(self, data_path, index=0):
        fc = FakeFCurve(data_path, index)
        self.append(fc)
        return fc

    def find(self, data_path, index=0):
        return next((f for f in self if f.data_path == data_path and f.array_index == index), None)


class FakeGroups(dict):
    def new(self, name):
        self[name] = name
        return name


class LegacyAction:
    """Blender < 4.4: the action holds the F-curves."""

    def __init__(self, name):
        self.name = name
        self.fcurves = FakeFCurves()
        self.groups = FakeGroups()
        self.id_root = "NONE"


class FakeSlot:
    def __init__(self, id_type, name):
        self.target_id_type = id_type
        self.identifier = "OB" + name


class FakeSlots(list):
    def new(self, id_type, name):
        slot = FakeSlot(id_type, name)
        self.append(slot)
        return slot


class FakeChannelbag:
    def __init__(self, slot):
        self.slot = slot
        self.fcurves = FakeFCurves()
        self.groups = FakeGroups()


class FakeStrip:
    def __init__(self):
        self.bags = {}

    def channelbag(self, slot, ensure=False):
        if slot.identifier not in self.bags and ensure:
            self.bags[slot.identifier] = FakeChannelbag(slot)
        return self.bags.get(slot.identifier)


class FakeStrips(list):
    def new(self, type):
        assert type == "KEYFRAME"
        strip = FakeStrip()
        self.append(strip)
        return strip


class FakeLayer:
    def __init__(self):
        self.strips = FakeStrips()


class FakeLayers(list):
    def new(self, name):
        layer = FakeLayer()
        self.append(layer)
        return layer


class LayeredAction:
    """Blender 4.4+/5.x: no Action.fcurves; layers ▸ strips ▸ channelbag(slot)."""

    def __init__(self, name):
        self.name = name
        self.slots = FakeSlots()
        self.layers = FakeLayers()

    def __getattr__(self, name):
        if name in ("fcurves", "groups"):
            raise AttributeError(f"Action.{name} was removed in 5.0")
        raise AttributeError(name)


class FakeAnimData:
    def __init__(self):
        self.action = None
        self.action_slot = None


class FakeObject:
    id_type = "OBJECT"

    def __init__(self, name="Cube"):
        self.name = name
        self.animation_data = None
        self.rotation_mode = "XYZ"

    def animation_data_create(self):
        self.animation_data = FakeAnimData()
        return self.animation_data


def sample_keys(n=5):
    frames = np.arange(10, 10 + n, dtype=np.float64)
    location = np.stack([np.linspace(0, 1, n), np.linspace(2, 3, n), np.linspace(-1, 4, n)], axis=1)
    quat = np.tile([1.0, 0.0, 0.0, 0.0], (n, 1))
    quat[:, 3] = np.linspace(0.0, 0.5, n)
    quat /= np.linalg.norm(quat, axis=1, keepdims=True)
    return frames, location, quat


def check_curves(fcurves, frames, location, quat):
    assert [(f.data_path, f.array_index) for f in fcurves] == [("location", i) for i in range(3)] + [
        ("rotation_quaternion", i) for i in range(4)
    ]
    values = np.concatenate([location, quat], axis=1)
    for column, fc in enumerate(fcurves):
        expected = np.empty(2 * len(frames), np.float32)
        expected[0::2], expected[1::2] = frames, values[:, column]
        assert len(fc.keyframe_points) == len(frames)
        np.testing.assert_array_equal(fc.keyframe_points.sets["co"], expected)
        assert fc.keyframe_points.sets["co"].dtype == np.float32
        np.testing.assert_array_equal(fc.keyframe_points.sets["interpolation"], np.ones(len(frames)))
        assert fc.updated == 1 and fc.group == keyframes.GROUP_NAME


@pytest.mark.parametrize("version", [(4, 2, 3), (4, 3, 2)])
def test_legacy_actions_before_4_4(mock_bpy, version):
    """Blender < 4.4 writes into Action.fcurves."""
    mock_bpy.app.version = version
    mock_bpy.data.actions.factory = LegacyAction
    obj = FakeObject()
    frames, location, quat = sample_keys()
    action = keyframes.write_transform_keyframes(obj, frames, location, quat, action_name="Baked")
    assert isinstance(action, LegacyAction) and action.name == "Baked" and action.id_root == "OBJECT"
    assert obj.animation_data.action is action and obj.rotation_mode == "QUATERNION"
    check_curves(action.fcurves, frames, location, quat)
    assert keyframes.fcurves_of(obj) == list(action.fcurves)


@pytest.mark.parametrize("version", [(4, 4, 0), (5, 0, 1), (5, 2, 3)])
def test_layered_actions_from_4_4(mock_bpy, version):
    """Blender 4.4+ writes into layers[0].strips[0].channelbag(slot) and assigns the slot."""
    mock_bpy.app.version = version
    mock_bpy.data.actions.factory = LayeredAction
    obj = FakeObject("Ball")
    frames, location, quat = sample_keys(7)
    action = keyframes.write_transform_keyframes(obj, frames, location, quat)
    assert isinstance(action, LayeredAction) and action.name == "BallAction"
    assert len(action.slots) == 1 and action.slots[0].identifier == "OBBall"
    assert obj.animation_data.action is action and obj.animation_data.action_slot is action.slots[0]
    bag = action.layers[0].strips[0].channelbag(action.slots[0])
    check_curves(bag.fcurves, frames, location, quat)
    assert keyframes.fcurves_of(obj) == list(bag.fcurves)


def test_shape_mismatch_is_rejected_before_creating_an_action(mock_bpy):
    """Wrong array shapes raise without creating data."""
    mock_bpy.data.actions.factory = LayeredAction
    frames, location, quat = sample_keys()
    with pytest.raises(ValueError):
        keyframes.write_transform_keyframes(FakeObject(), frames, location[:, :2], quat)
    with pytest.raises(ValueError):
        keyframes.write_transform_keyframes(FakeObject(), frames, location * np.nan, quat)
    assert mock_bpy.data.actions.items == []
