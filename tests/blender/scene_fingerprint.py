"""A fingerprint of everything a failed or cancelled bake must leave as it was: the whole file and a folder.

Every object's transform, Contact Lab settings, custom properties, modifiers with every setting and animation
data; every action with its keyframes; every mesh with its vertices and shape keys; the data-block names; every
file under a folder (hidden ones too). Floats are compared bit for bit. Shared by the write-safety, cancel and
background-bake tests.
"""

import bpy
import numpy as np
from cli_tools import file_tree
from contact_lab.addon.output import keyframes

EVALUATION_CACHES = {"bound_box", "dimensions"}
"""Object properties read from the last depsgraph evaluation (a cache that any modifier edit resets), not data."""


def _plain(value):
    """A comparable copy of an RNA value: floats bit for bit, data-blocks by type and name."""
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        return value.hex()
    if isinstance(value, bpy.types.ID):
        return ("ID", type(value).__name__, value.name)
    if isinstance(value, bpy.types.bpy_struct):
        return ("struct", type(value).__name__, getattr(value, "name", None))
    if isinstance(value, (set, frozenset)):
        return tuple(sorted(value))
    if hasattr(value, "to_dict"):
        return _plain(value.to_dict())
    if hasattr(value, "to_list"):
        return _plain(value.to_list())
    if isinstance(value, dict):
        return tuple(sorted((k, _plain(v)) for k, v in value.items()))
    try:
        return tuple(_plain(v) for v in value)
    except TypeError:
        return repr(value)


def rna(struct, skip=()):
    """Every readable, non-collection RNA property of ``struct``."""
    out = {}
    for prop in struct.bl_rna.properties:
        name = prop.identifier
        if name == "rna_type" or name in skip or prop.type == "COLLECTION":
            continue
        try:
            out[name] = _plain(getattr(struct, name))
        except (AttributeError, RuntimeError, ReferenceError):
            continue
    return out


def custom(id_data):
    """The user's custom properties (the storage of registered settings, e.g. ``contact_lab``, is compared through
    RNA instead: Blender < 5.0 also lists it here, in a form that depends on which settings were ever read)."""
    registered = id_data.bl_rna.properties
    return {key: _plain(id_data[key]) for key in id_data.keys() if key not in registered}


def _keys(fcurve):
    points = fcurve.keyframe_points
    data = []
    for attr, width, dtype in (("co", 2, np.float32), ("handle_left", 2, np.float32), ("interpolation", 1, np.int32)):
        buf = np.empty(width * len(points), dtype)
        points.foreach_get(attr, buf)
        data.append(buf.tobytes())
    return (fcurve.data_path, fcurve.array_index, fcurve.group.name if fcurve.group else None, *data)


def _action(action):
    entry = {"users": action.users, "fake": action.use_fake_user, "custom": custom(action)}
    if keyframes.uses_layered_actions():
        entry["slots"] = [(s.identifier, _plain(getattr(s, "target_id_type", None))) for s in action.slots]
        entry["curves"] = [
            (layer.name, k, bag.slot.identifier if bag.slot else None, [_keys(fc) for fc in bag.fcurves])
            for layer in action.layers
            for k, strip in enumerate(layer.strips)
            for bag in strip.channelbags
        ]
    else:
        entry["id_root"] = action.id_root
        entry["curves"] = [_keys(fc) for fc in action.fcurves]
    return entry


def _animation(id_data):
    ad = id_data.animation_data
    if ad is None:
        return None
    return {"rna": rna(ad), "drivers": len(ad.drivers), "nla": [t.name for t in ad.nla_tracks]}


def _key(key):
    if key is None:
        return None
    blocks = []
    for block in key.key_blocks:
        co = np.empty(3 * len(block.data), np.float32)
        block.data.foreach_get("co", co)
        blocks.append((block.name, rna(block), co.tobytes()))
    return {"name": key.name, "rna": rna(key), "custom": custom(key), "animation": _animation(key), "blocks": blocks}


def fingerprint(root):
    """Everything a failed write must leave as it was: the whole file's data and every file under ``root``."""
    state = {"files": file_tree(root)}
    for attr in ("objects", "meshes", "shape_keys", "actions", "materials"):
        state[attr] = sorted(i.name for i in getattr(bpy.data, attr))
    for obj in bpy.data.objects:
        state[f"object {obj.name}"] = {
            "rna": rna(obj, skip=EVALUATION_CACHES),
            "settings": rna(obj.contact_lab),
            "custom": custom(obj),
            "modifiers": [(m.name, m.type, rna(m)) for m in obj.modifiers],
            "animation": _animation(obj),
        }
    for mesh in bpy.data.meshes:
        co = np.empty(3 * len(mesh.vertices), np.float32)
        mesh.vertices.foreach_get("co", co)
        state[f"mesh {mesh.name}"] = (mesh.users, co.tobytes(), custom(mesh), _key(mesh.shape_keys))
    for action in bpy.data.actions:
        state[f"action {action.name}"] = _action(action)
    for scene in bpy.data.scenes:
        state[f"scene {scene.name}"] = (scene.frame_current, rna(scene.contact_lab, skip={"last_report"}))
    return state


def assert_same(before, after, context):
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    details = []
    for k in changed[:4]:
        b, a = before.get(k), after.get(k)
        if isinstance(b, dict) and isinstance(a, dict):
            inner = sorted(i for i in set(b) | set(a) if b.get(i) != a.get(i))
            details.append(f"{k}: {[(i, b.get(i), a.get(i)) for i in inner][:3]}")
        else:
            details.append(f"{k}: {b!r:.300} -> {a!r:.300}")
    assert not changed, f"{context}: changed {changed}\n" + "\n".join(details)


# failure injection -------------------------------------------------------------------------------------------
