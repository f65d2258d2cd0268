"""Baked actions: swap new keyframe actions in all at once, remember what an object had, and restore it.

A bake writes location + rotation keys into new actions first (:func:`prepare_transforms`), then assigns them
(:func:`commit_transforms`), both inside the bake's :class:`~.transaction.Transaction`: a failure anywhere gives
every object back its action, slot, rotation mode, pose and bookkeeping exactly. The object's previous action,
slot, rotation mode and pose are kept on ``obj.contact_lab`` so that :func:`clear_baked_action` (Clear Bake) can
bring them back.
"""

from __future__ import annotations

import bpy
import numpy as np

from . import keyframes
from .transaction import Transaction

ACTION_SUFFIX = "ContactLab"
"""Baked actions are named ``<object name><ACTION_SUFFIX>``."""

_PREVIOUS_FIELDS = (
    "has_previous",
    "previous_action",
    "previous_slot",
    "previous_rotation_mode",
    "previous_location",
    "previous_rotation_quaternion",
    "previous_rotation_euler",
    "baked_action",
)
"""``obj.contact_lab`` fields a bake changes."""

_POSE_FIELDS = ("location", "rotation_quaternion", "rotation_euler", "rotation_axis_angle", "scale")


def key_transforms(objects: list, frames: np.ndarray, transforms: list) -> None:
    """Key location + rotation_quaternion of ``objects``: new actions first, then swapped in (all or nothing).

    Args:
        objects: bpy objects. frames: scene frames (F,). transforms: per object ``(location (F, 3) [BU],
            quaternion (F, 4) wxyz)``.
    """
    with Transaction("keyframes") as txn:
        commit_transforms(txn, prepare_transforms(txn, objects, frames, transforms))


def prepare_transforms(txn: Transaction, objects: list, frames, transforms: list) -> list[tuple]:
    """Build one new action per object (not assigned: nothing the user sees changes); the prepare phase.

    Args:
        txn: the bake's transaction (the actions are removed if it fails).
        objects: bpy objects. frames: scene frames (F,). transforms: per object ``(location (F, 3) [BU],
            quaternion (F, 4) wxyz)``.

    Returns:
        ``(object, action, slot)`` per object, for :func:`commit_transforms`.
    """
    frames = np.asarray(frames, dtype=np.float64)
    built = []
    for obj, (location, quaternion) in zip(objects, transforms, strict=True):
        name = f"{obj.name}{ACTION_SUFFIX}"
        action, slot = txn.step(
            f"build the keyframes of '{obj.name}'",
            lambda obj=obj, location=location, quaternion=quaternion, name=name: keyframes.new_transform_action(
                obj, frames, location, quaternion, action_name=name
            ),
            undo=lambda built: _remove_action(built[0]),
            object_name=obj.name,
        )
        built.append((obj, action, slot))
    return built


def commit_transforms(txn: Transaction, built: list[tuple]) -> None:
    """Assign the actions of :func:`prepare_transforms` (the commit phase); replaced bakes go on commit."""
    for obj, action, slot in built:
        _swap_in(txn, obj, action, slot)


def _remove_action(action) -> None:
    try:
        bpy.data.actions.remove(action)
    except ReferenceError:
        pass  # already gone


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


def _drop_empty_animation(obj) -> None:
    """Remove ``obj``'s animation data once it holds nothing (no action, driver or NLA track): the bake created it
    on an object without animation, and an empty one would keep an unassigned slot behind."""
    ad = obj.animation_data
    if ad is not None and ad.action is None and not len(ad.drivers) and not len(ad.nla_tracks):
        obj.animation_data_clear()


def _discard_action(action) -> None:
    """Remove a Contact Lab action once nothing uses it any more."""
    if action is not None and action.users == 0:
        bpy.data.actions.remove(action)


class _AnimationSnapshot:
    """What a bake changes on one object (animation data, rotation mode, pose, bookkeeping), to put back."""

    def __init__(self, obj):
        self.obj = obj
        ad = obj.animation_data
        self.had_animation_data = ad is not None
        self.action = ad.action if ad is not None else None
        self.slot = ad.action_slot if ad is not None and keyframes.uses_layered_actions() else None
        self.last_slot = ad.last_slot_identifier if ad is not None and keyframes.uses_layered_actions() else None
        self.rotation_mode = obj.rotation_mode
        self.pose = {name: tuple(getattr(obj, name)) for name in _POSE_FIELDS}
        s = obj.contact_lab
        # (stored or not: a field never set has no ID property until written, and must stay so)
        self.settings = {name: (s.is_property_set(name), _plain(getattr(s, name))) for name in _PREVIOUS_FIELDS}

    def restore(self) -> None:
        obj = self.obj
        s = obj.contact_lab
        for name, (stored, value) in self.settings.items():
            if not stored:  # never written: nothing stored, as before
                if s.is_property_set(name):
                    s.property_unset(name)
            elif _plain(getattr(s, name)) != value:
                setattr(s, name, value)
        if not self.had_animation_data:
            obj.animation_data_clear()
        elif obj.animation_data is not None:
            ad = obj.animation_data
            ad.action = self.action
            if keyframes.uses_layered_actions():
                if self.action is not None and ad.action_slot != self.slot:
                    ad.action_slot = self.slot
                ad.last_slot_identifier = self.last_slot
        obj.rotation_mode = self.rotation_mode  # converts the rotation: the exact values follow
        for name, value in self.pose.items():
            setattr(obj, name, value)


def _plain(value):
    """A copy of an RNA value that does not follow later changes (vectors are views)."""
    if value is None or isinstance(value, (str, bool, int, float, bpy.types.ID)):
        return value
    return tuple(value)


def _swap_in(txn: Transaction, obj, action, slot) -> None:
    s = obj.contact_lab
    snapshot = _AnimationSnapshot(obj)
    txn.on_rollback(f"give '{obj.name}' back its animation", snapshot.restore)
    name = obj.name
    txn.step(f"remember the animation '{name}' had before", lambda: _remember_previous(obj), object_name=name)
    old = s.baked_action
    txn.step(f"give '{name}' its new keyframes", lambda: keyframes.assign_action(obj, action, slot), object_name=name)
    txn.step(
        f"set the rotation mode of '{name}' to Quaternion",
        lambda: _set(obj, "rotation_mode", "QUATERNION"),
        object_name=name,
    )
    txn.step(f"record the new bake of '{name}'", lambda: _set(s, "baked_action", action), object_name=name)
    if old is not None and old != action:
        txn.on_commit(f"remove the replaced action '{old.name}' of '{name}'", lambda: _discard_action(old))

    def rename():
        desired = f"{name}{ACTION_SUFFIX}"
        if action.name != desired and bpy.data.actions.get(desired) is None:
            action.name = desired  # the replaced bake's name is free again

    txn.on_commit(f"rename the new action of '{name}'", rename)


def _set(owner, name: str, value) -> None:
    setattr(owner, name, value)


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
        _drop_empty_animation(obj)
    s.baked_action = None
    s.previous_action = None
    s.previous_slot = ""
    s.has_previous = False
    _discard_action(baked)
    return True
