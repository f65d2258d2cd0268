"""Bulk keyframe writing for legacy (Blender < 4.4) and layered/slotted (4.4+, 5.x) actions.

One code path reaches the F-curve container:

- Blender < 4.4: the legacy ``Action`` itself holds ``fcurves`` and ``groups``.
- Blender ≥ 4.4: ``action.layers[0].strips[0].channelbag(slot, ensure=True)`` holds them; ``Action.fcurves``
  is a deprecated proxy in 4.4/4.5 and gone in 5.0.

Keys are written with ``keyframe_points.add(n)`` + ``foreach_set("co", ...)`` and LINEAR interpolation
via ``foreach_set("interpolation", ...)``: no per-key Python loop.
"""

from typing import Any, cast

import bpy
import numpy as np

GROUP_NAME = "Object Transforms"
"""F-curve group of the baked channels (the name Blender's own keying uses)."""

LAYERED_ACTIONS_VERSION = (4, 4, 0)
"""First Blender version with layered (slotted) actions."""


def uses_layered_actions() -> bool:
    """True when this Blender reaches F-curves through layers ▸ strips ▸ channelbag(slot)."""
    return tuple(bpy.app.version) >= LAYERED_ACTIONS_VERSION


def interpolation_value(name: str) -> int:
    """Blender's number for the keyframe interpolation ``name`` ('LINEAR', 'CONSTANT'), as ``foreach_set`` takes it."""
    # bl_rna.properties is typed with the base class Property; this one is an EnumProperty
    prop = cast("bpy.types.EnumProperty", bpy.types.Keyframe.bl_rna.properties["interpolation"])
    return prop.enum_items[name].value


def fcurve_container(action, id_data) -> tuple[Any, Any]:
    """The object holding ``fcurves``/``groups`` for ``id_data`` in ``action``, and the slot (None if legacy).

    Layered actions get a slot for ``id_data`` (created if missing), a layer and a keyframe strip.
    Typed Any: the container is an Action before 4.4 and an ActionChannelbag after, and the slot an ActionSlot;
    each Blender's stubs know only one of these (4.2 has no channelbag or slot, 5.0 no ``Action.groups``).
    """
    if not uses_layered_actions():
        return action, None
    # 'target_id_type' (5.x) was 'id_root' in early 4.4 builds
    slot = next(
        (s for s in action.slots if getattr(s, "target_id_type", getattr(s, "id_root", None)) == id_data.id_type), None
    )
    if slot is None:
        slot = action.slots.new(id_type=id_data.id_type, name=id_data.name)
    layer = action.layers[0] if len(action.layers) else action.layers.new("Layer")
    strip = layer.strips[0] if len(layer.strips) else layer.strips.new(type="KEYFRAME")
    return strip.channelbag(slot, ensure=True), slot


def write_fcurve(container, data_path: str, index: int, frames: np.ndarray, values: np.ndarray, *, group=None):
    """Replace the F-curve ``data_path[index]`` in ``container`` with linear keys at ``frames``.

    Args:
        container: a legacy Action or a channelbag (anything with ``fcurves``).
        frames: frame numbers, shape (n,). values: key values, shape (n,).
        group: an action group to put the curve in, or None.
    """
    old = container.fcurves.find(data_path, index=index)
    if old is not None:
        container.fcurves.remove(old)
    fcurve = container.fcurves.new(data_path, index=index)
    if group is not None:
        fcurve.group = group
    n = int(frames.shape[0])
    co = np.empty(2 * n, dtype=np.float32)
    co[0::2] = frames
    co[1::2] = values
    points = fcurve.keyframe_points
    points.add(n)
    points.foreach_set("co", co)
    points.foreach_set("interpolation", np.full(n, interpolation_value("LINEAR"), dtype=np.int32))
    fcurve.update()
    return fcurve


def _as_arrays(frames, location, quaternion):
    frames = np.asarray(frames, dtype=np.float64).reshape(-1)
    location = np.asarray(location, dtype=np.float64)
    quaternion = np.asarray(quaternion, dtype=np.float64)
    n = frames.shape[0]
    if location.shape != (n, 3) or quaternion.shape != (n, 4):
        raise ValueError(
            f"expected location ({n}, 3) and quaternion ({n}, 4), got {location.shape} and {quaternion.shape}"
        )
    if not (np.all(np.isfinite(location)) and np.all(np.isfinite(quaternion))):
        raise ValueError("keyframe values must be finite")
    return frames, location, quaternion


def new_transform_action(obj, frames, location, quaternion, *, action_name=None):
    """Build a new action with location + rotation_quaternion keys for ``obj`` without assigning it.

    Returns:
        ``(action, slot)``; ``slot`` is None on Blender < 4.4.
    """
    frames, location, quaternion = _as_arrays(frames, location, quaternion)
    action = bpy.data.actions.new(action_name or f"{obj.name}Action")
    try:
        if not uses_layered_actions():
            # Blender < 4.4 only; 5.0 removed Action.id_root, so its stubs flag what this guard already skips
            action.id_root = "OBJECT"  # pyright: ignore[reportAttributeAccessIssue]
        container, slot = fcurve_container(action, obj)
        group = container.groups.get(GROUP_NAME) or container.groups.new(GROUP_NAME)
        for i in range(3):
            write_fcurve(container, "location", i, frames, location[:, i], group=group)
        for i in range(4):
            write_fcurve(container, "rotation_quaternion", i, frames, quaternion[:, i], group=group)
    except BaseException:
        bpy.data.actions.remove(action)
        raise
    return action, slot


def slot_identifier(obj) -> str:
    """Identifier of the action slot ``obj`` uses ('' on Blender < 4.4 or without a slot)."""
    ad = obj.animation_data
    if ad is None or not uses_layered_actions():
        return ""
    slot = ad.action_slot
    return slot.identifier if slot is not None else ""


def assign_action(obj, action, slot=None) -> None:
    """Make ``action`` (may be None) the object's action; on 4.4+ use ``slot`` (an ActionSlot or its identifier)."""
    ad = obj.animation_data
    if ad is None:
        if action is None:
            return
        ad = obj.animation_data_create()
    ad.action = action
    if action is None or not uses_layered_actions():
        return
    if isinstance(slot, str):
        slot = next((s for s in action.slots if s.identifier == slot), None) if slot else None
    if slot is not None:
        ad.action_slot = slot


def write_transform_keyframes(obj, frames, location, quaternion, *, action_name=None):
    """Key ``obj``'s location and rotation_quaternion at ``frames`` into a new action and assign it.

    Args:
        obj: a bpy Object.
        frames: frame numbers, shape (F,).
        location: object locations [BU], shape (F, 3).
        quaternion: rotations (w, x, y, z), shape (F, 4).
        action_name: name of the new action (default ``"<object>Action"``).

    Returns:
        The new ``bpy.types.Action`` (now the object's active action; ``rotation_mode`` is 'QUATERNION').
    """
    action, slot = new_transform_action(obj, frames, location, quaternion, action_name=action_name)
    assign_action(obj, action, slot)
    obj.rotation_mode = "QUATERNION"
    return action


def fcurves_of(obj):
    """The F-curves animating ``obj`` through its action (legacy or its slot's channelbag); [] if none."""
    ad = obj.animation_data
    if ad is None or ad.action is None:
        return []
    action = ad.action
    if not uses_layered_actions():
        return list(action.fcurves)
    slot = ad.action_slot
    if slot is None or not len(action.layers) or not len(action.layers[0].strips):
        return []
    channelbag = action.layers[0].strips[0].channelbag(slot)
    return list(channelbag.fcurves) if channelbag is not None else []
