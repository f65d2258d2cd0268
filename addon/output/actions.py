"""Baked actions: swap new keyframe actions in all at once, remember what an object had, and restore it.

A bake writes location + rotation keys into new actions first (:func:`key_transforms`), then assigns them;
the object's previous action, slot, rotation mode and pose are kept on ``obj.contact_lab`` so that
:func:`restore_previous` (Clear Bake) can bring them back.
"""

from __future__ import annotations

import bpy
import numpy as np

from . import keyframes

ACTION_SUFFIX = "ContactLab"
"""Baked actions are named ``<object name><ACTION_SUFFIX>``."""


def key_transforms(objects: list, frames: np.ndarray, transforms: list) -> None:
    """Key location + rotation_quaternion of ``objects``: new actions first, then swapped in (all or nothing).

    Args:
        objects: bpy objects. frames: scene frames (F,). transforms: per object ``(location (F, 3) [BU],
            quaternion (F, 4) wxyz)``.
    """
    frames = np.asarray(frames, dtype=np.float64)
    built = []
    try:  # phase 1: new actions, not yet assigned
        for obj, (location, quaternion) in zip(objects, transforms, strict=True):
            name = f"{obj.name}{ACTION_SUFFIX}"
            built.append(keyframes.new_transform_action(obj, frames, location, quaternion, action_name=name))
    except BaseException:
        for action, _ in built:
            bpy.data.actions.remove(action)
        raise
    # phase 2: swap (nothing left that can fail half-way on valid data)
    for obj, (action, slot) in zip(objects, built, strict=True):
        _swap_in(obj, action, slot)


def _remember_previous(obj) -> None:
    s = obj.contact_lab
    ad = obj.animation_data
    current = ad.action if ad is not None else None
    if s.has_previous and s.baked_action is not None and current == s.baked_action:
        return  # a re-bake: keep what the object had before its first bake
    s.has_previous = True
    s.previous_action = current
    s.previous_slot = keyframes.slot_identifier(obj) if current is not None else ""
    s.previous_rotation_mode = obj.rotation_mode
    s.previous_location = tuple(obj.location)
    s.previous_rotation_quaternion = tuple(obj.rotation_quaternion)
    s.previous_rotation_euler = tuple(obj.rotation_euler)


def _discard_action(action) -> None:
    """Remove a Contact Lab action once nothing uses it any more."""
    if action is not None and action.users == 0:
        bpy.data.actions.remove(action)


def _swap_in(obj, action, slot) -> None:
    s = obj.contact_lab
    _remember_previous(obj)
    old = s.baked_action
    keyframes.assign_action(obj, action, slot)
    obj.rotation_mode = "QUATERNION"
    s.baked_action = action
    if old is not None and old != action:
        _discard_action(old)
    desired = f"{obj.name}{ACTION_SUFFIX}"
    if action.name != desired and bpy.data.actions.get(desired) is None:
        action.name = desired  # the replaced bake's name is free again


def clear_baked_action(obj) -> bool:
    """Give ``obj`` back what it had before its first bake and drop the baked action.

    The previous action (and slot), rotation mode and pose come back when the baked action is still the
    object's action; the bookkeeping on ``obj.contact_lab`` is reset either way. Returns False (and changes
    nothing) when the object has no rigid bake.
    """
    s = obj.contact_lab
    if s.baked_action is None and not s.has_previous:
        return False
    baked = s.baked_action
    ad = obj.animation_data
    current = ad.action if ad is not None else None
    if baked is not None and current == baked:
        if s.has_previous:
            keyframes.assign_action(obj, s.previous_action, s.previous_slot)
            obj.rotation_mode = s.previous_rotation_mode or "XYZ"
            obj.location = tuple(s.previous_location)
            obj.rotation_quaternion = tuple(s.previous_rotation_quaternion)
            obj.rotation_euler = tuple(s.previous_rotation_euler)
        else:
            keyframes.assign_action(obj, None)
    s.baked_action = None
    s.previous_action = None
    s.previous_slot = ""
    s.has_previous = False
    _discard_action(baked)
    return True
