"""Writers for deforming-mesh bakes (soft bodies): per-frame vertex positions, independent of the solver.

Two outputs (blender_conventions.md §4.6):

- :func:`attach_pc2`: a Mesh Cache modifier reading a PC2 file written by
  :func:`contact_lab.core.formats.pc2.write_pc2`.
  The recommended default: small .blend, scrubbable, renders on farms.
- :func:`write_shape_keys`: one key block per frame on the mesh's Key, values keyed 0→1→0 on the Key ID's
  own action (slot id_type 'KEY'). Self-contained .blend, fine for short clips.

:func:`remove_deform_output` undoes both and leaves the user's own shape keys, actions and modifiers alone.
Everything is bulk: ``foreach_set`` per key block, one ``keyframe_points.add`` + ``foreach_set`` per F-curve,
no per-vertex Python loop.

A bake writes through a :class:`~.transaction.Transaction` (:func:`prepare_deform_output`,
:func:`stage_pc2_files`, then :func:`commit_deform_output`, :func:`commit_pc2_files`): new shape keys are built
on a copy of the mesh, which replaces the object's mesh in one assignment; PC2 files are written under temporary
names and renamed over the previous caches; a cache modifier that is no longer wanted is disabled during the
commit and deleted once everything is in place.
"""

from __future__ import annotations

import os
from typing import Any

import bpy
import numpy as np

from ...core.formats import pc2
from . import keyframes

__all__ = ["CACHE_MODIFIER_NAME", "attach_pc2", "deform_output_kind", "remove_deform_output", "write_shape_keys"]

CACHE_MODIFIER_NAME = "Contact Lab Cache"
"""Name of the Mesh Cache modifier :func:`attach_pc2` adds (and :func:`remove_deform_output` removes)."""

SHAPE_KEY_GROUP = "Contact Lab Shape Keys"
"""F-curve group of the key-block value curves."""

ACTION_SUFFIX = "ContactLabShapes"
"""Actions created for the Key ID are named ``<object name><ACTION_SUFFIX>``."""

_RECORD = "contact_lab_deform"
"""ID property on the Key recording what :func:`write_shape_keys` created (block names, Basis, action)."""

_INTERPOLATIONS = ("LINEAR", "CONSTANT")


def _value_path(block_name: str) -> str:
    return f'key_blocks["{bpy.utils.escape_identifier(block_name)}"].value'


def _frame_label(frame: float) -> str:
    return f"{int(frame):05d}" if float(frame).is_integer() else f"{frame:g}"


def _key_container(key, action, *, create: bool) -> tuple[Any, Any]:
    """F-curve container (legacy action or channelbag) and slot used by ``key`` in ``action``.

    Both None when ``create`` is False and the Key has no channelbag. Any as in :func:`.keyframes.fcurve_container`.
    """
    if keyframes.uses_layered_actions():
        ad = key.animation_data
        slot = ad.action_slot if ad is not None and ad.action == action else None
        if slot is not None and len(action.layers) and len(action.layers[0].strips):
            strip = action.layers[0].strips[0]
            bag = strip.channelbag(slot, ensure=create)
            return bag, slot
        if not create:
            return None, None
    return keyframes.fcurve_container(action, key)


def _block_value_keys(frames: np.ndarray, i: int, hold_ends: bool):
    """Key frames/values of block ``i``: 0 at the previous baked frame, 1 at its frame, 0 at the next.

    The first block's leading 0 sits at ``f0 - 1`` and the last block's trailing 0 at ``f_last + 1``
    (dropped with ``hold_ends``, so the first/last shape holds outside the baked range, like Mesh Cache).
    """
    n = frames.shape[0]
    f = frames[i]
    kf, kv = [], []
    if i > 0:
        kf.append(frames[i - 1])
        kv.append(0.0)
    elif not hold_ends:
        kf.append(f - 1.0)
        kv.append(0.0)
    kf.append(f)
    kv.append(1.0)
    if i < n - 1:
        kf.append(frames[i + 1])
        kv.append(0.0)
    elif not hold_ends:
        kf.append(f + 1.0)
        kv.append(0.0)
    return np.asarray(kf, dtype=np.float64), np.asarray(kv, dtype=np.float64)


def _check_positions(obj, frames, positions):
    if obj is None or obj.type != "MESH":
        raise TypeError(f"expected a mesh object, got {getattr(obj, 'type', obj)!r}")
    frames = np.asarray(frames, dtype=np.float64).reshape(-1)
    positions = np.asarray(positions)
    n_verts = len(obj.data.vertices)
    if positions.shape != (frames.shape[0], n_verts, 3):
        raise ValueError(f"expected positions of shape ({frames.shape[0]}, {n_verts}, 3), got {positions.shape}")
    if frames.shape[0] == 0:
        raise ValueError("need at least one frame")
    if not np.all(np.isfinite(frames)) or np.any(np.diff(frames) <= 0.0):
        raise ValueError("frames must be finite and strictly increasing")
    positions = np.ascontiguousarray(positions, dtype=np.float32)
    if not np.all(np.isfinite(positions)):
        raise ValueError("positions must be finite")
    return frames, positions


def _key_action_container(obj, key, action_name: str | None = None):
    """The F-curve container of the Key ID's action: a new action (recorded, to be removed with the output)
    when the Key has none, else the user's action, which receives the curves."""
    ad = key.animation_data or key.animation_data_create()
    action = ad.action
    if action is None:
        action = bpy.data.actions.new(action_name or f"{obj.name}{ACTION_SUFFIX}")
        if not keyframes.uses_layered_actions():
            # Blender < 4.4 only; 5.0 removed Action.id_root, so its stubs flag what this guard already skips
            action.id_root = "KEY"  # pyright: ignore[reportAttributeAccessIssue]
        key[_RECORD]["action"] = action.name
        container, slot = keyframes.fcurve_container(action, key)
        keyframes.assign_action(key, action, slot)
    else:
        container, slot = _key_container(key, action, create=True)
        if slot is not None and ad.action_slot is None:
            ad.action_slot = slot
    return container


def write_shape_keys(
    obj,
    frames,
    positions,
    *,
    name_prefix: str = "contact_lab",
    interpolation: str = "LINEAR",
    hold_ends: bool = False,
    action_name: str | None = None,
):
    """Bake per-frame vertex positions into shape keys of ``obj`` with keyed values.

    Adds a Basis (if the mesh has no shape keys yet) and one key block ``<name_prefix>_<frame>`` per frame,
    relative to the reference key. Each block's ``value`` is keyed 0 at the previous baked frame (``f - 1``
    for the first), 1 at its frame and 0 at the next one (``f + 1`` for the last), so exactly one block is 1
    at every baked frame. The curves go into the Key ID's action (a new one, slot id_type 'KEY', unless the
    Key already has an action, which then receives the curves). A previous shape-key output of ``obj`` is
    removed first.

    Args:
        obj: a mesh object.
        frames: baked frame numbers, shape (F,), strictly increasing.
        positions: object-local vertex positions [BU] per frame, shape (F, V, 3).
        name_prefix: prefix of the key block names.
        interpolation: 'LINEAR' (blend neighbouring frames between keys) or 'CONSTANT' (step).
        hold_ends: drop the 0-key before the first and after the last frame, so the first/last baked shape
            holds outside the baked range instead of returning to the Basis.
        action_name: name of the Key's new action, when it needs one (default ``<object name><ACTION_SUFFIX>``).

    Returns:
        The mesh's ``bpy.types.Key``.
    """
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"interpolation must be one of {_INTERPOLATIONS}, got {interpolation!r}")
    frames, positions = _check_positions(obj, frames, positions)
    _remove_shape_key_output(obj)

    mesh = obj.data
    created_basis = mesh.shape_keys is None
    if created_basis:
        obj.shape_key_add(name="Basis", from_mix=False)
    key = mesh.shape_keys
    record = {"prefix": name_prefix, "blocks": [], "created_basis": created_basis, "action": ""}
    key[_RECORD] = record
    active_index = obj.active_shape_key_index
    try:
        names = []
        for i in range(frames.shape[0]):
            block = obj.shape_key_add(name=f"{name_prefix}_{_frame_label(frames[i])}", from_mix=False)
            block.relative_key = key.reference_key
            block.slider_min, block.slider_max = 0.0, 1.0
            block.value = 0.0
            block.data.foreach_set("co", positions[i].ravel())
            names.append(block.name)  # Blender may add a ".001" suffix on a clash with a user key
        key[_RECORD]["blocks"] = names

        container = _key_action_container(obj, key, action_name)
        group = container.groups.get(SHAPE_KEY_GROUP) or container.groups.new(SHAPE_KEY_GROUP)
        interp = keyframes.interpolation_value(interpolation)
        for i, name in enumerate(names):
            kf, kv = _block_value_keys(frames, i, hold_ends)
            fcurve = keyframes.write_fcurve(container, _value_path(name), 0, kf, kv, group=group)
            if interpolation != "LINEAR":
                fcurve.keyframe_points.foreach_set("interpolation", np.full(kf.shape[0], interp, dtype=np.int32))
                fcurve.update()
    except BaseException:
        _remove_shape_key_output(obj)
        raise
    obj.active_shape_key_index = min(active_index, len(key.key_blocks) - 1)
    mesh.update()
    return key


def _remove_shape_key_output(obj) -> bool:
    """Remove what :func:`write_shape_keys` created on ``obj``'s Key; True if anything was there."""
    key = obj.data.shape_keys if obj.type == "MESH" else None
    if key is None or _RECORD not in key:
        return False
    record = key[_RECORD]
    names = [str(n) for n in record.get("blocks", [])]
    own_action_name = str(record.get("action", ""))
    created_basis = bool(record.get("created_basis", False))

    ad = key.animation_data
    action = ad.action if ad is not None else None
    if ad is not None and action is not None:
        container, _slot = _key_container(key, action, create=False)
        if container is not None:
            for name in names:
                fcurve = container.fcurves.find(_value_path(name), index=0)
                if fcurve is not None:
                    container.fcurves.remove(fcurve)
            group = container.groups.get(SHAPE_KEY_GROUP)
            if group is not None and not len(group.channels):
                container.groups.remove(group)
        own = own_action_name and action.name == own_action_name
        empty = container is None or not len(container.fcurves)
        if own and empty and (not keyframes.uses_layered_actions() or len(action.slots) <= 1):
            keyframes.assign_action(key, None)
            bpy.data.actions.remove(action)
        if ad.action is None and not len(ad.drivers) and not len(ad.nla_tracks):
            key.animation_data_clear()

    blocks = key.key_blocks
    for name in names:
        block = blocks.get(name)
        if block is not None and block != key.reference_key:
            obj.shape_key_remove(block)
    if created_basis and len(key.key_blocks) <= 1:
        obj.shape_key_clear()  # the Key ID goes away with its last block
        if _alive(key):
            # a Key copied with its mesh (ID.copy) carries one user too many: clearing leaves it an orphan that
            # would still be saved; nothing else uses it
            bpy.data.batch_remove([key])
    else:
        del key[_RECORD]
        obj.active_shape_key_index = min(obj.active_shape_key_index, len(key.key_blocks) - 1)
    obj.data.update()
    return True


def _move_modifier_first(obj, modifier) -> None:
    """Put ``modifier`` first in the stack (before topology-changing ones)."""
    index = list(obj.modifiers).index(modifier)
    if index == 0:
        return
    try:
        obj.modifiers.move(index, 0)
    except RuntimeError:
        pass  # e.g. linked or overridden data: keep it where it is


def _stored_path(abspath: str) -> str:
    """``abspath`` as the modifier stores it: relative (``//…``) to a saved .blend, absolute otherwise."""
    if bpy.data.filepath:
        try:
            return bpy.path.relpath(abspath)
        except ValueError:  # other drive (Windows): keep absolute
            return abspath
    return abspath


def _cache_settings(modifier, stored: str, frame_start: float, rate: float) -> dict:
    """The Mesh Cache settings :func:`attach_pc2` gives ``modifier``, in the order they are set."""
    # an enum flag set up to 4.x, a boolean vector in 5.x
    no_flip = set() if modifier.bl_rna.properties["flip_axis"].type == "ENUM" else (False, False, False)
    return {
        "cache_format": "PC2",
        "filepath": stored,
        "play_mode": "SCENE",
        "time_mode": "FRAME",
        "frame_start": float(frame_start),
        "frame_scale": 1.0 / rate if rate > 0.0 else 1.0,
        "interpolation": "LINEAR",
        "deform_mode": "OVERWRITE",
        "factor": 1.0,
        "forward_axis": "POS_Y",
        "up_axis": "POS_Z",
        "flip_axis": no_flip,
        "show_viewport": True,
        "show_render": True,
    }


def _apply(owner, values: dict) -> None:
    for name, value in values.items():
        setattr(owner, name, value)


def attach_pc2(obj, path, *, frame_start):
    """Make ``obj`` play the PC2 file ``path`` through a Mesh Cache modifier named ``CACHE_MODIFIER_NAME``.

    The modifier (reused if present, else added first in the stack) reads ``cache_format='PC2'`` in
    'FRAME' time mode with ``frame_start`` = frame of sample 0 and ``frame_scale = 1 / sample_rate``
    of the file, ``forward_axis='POS_Y'``, ``up_axis='POS_Z'`` (identity: object-local Blender axes),
    deform mode 'OVERWRITE'. The path is stored relative (``//…``) when the .blend is saved.

    Args:
        obj: a mesh object whose vertex count matches the cache.
        path: the PC2 file (absolute, or ``//``-relative to the .blend).
        frame_start: scene frame that shows sample 0 (the first baked frame).

    Returns:
        The ``bpy.types.MeshCacheModifier``.
    """
    if obj is None or obj.type != "MESH":
        raise TypeError(f"expected a mesh object, got {getattr(obj, 'type', obj)!r}")
    abspath = os.path.normpath(bpy.path.abspath(os.fspath(path)))
    _n_frames, n_verts, _start, rate = pc2.read_pc2_header(abspath)
    if n_verts != len(obj.data.vertices):
        raise ValueError(f"{abspath}: cache has {n_verts} vertices, {obj.name!r} has {len(obj.data.vertices)}")

    modifier = obj.modifiers.get(CACHE_MODIFIER_NAME)
    if modifier is not None and modifier.type != "MESH_CACHE":
        obj.modifiers.remove(modifier)
        modifier = None
    if modifier is None:
        modifier = obj.modifiers.new(CACHE_MODIFIER_NAME, "MESH_CACHE")
        _move_modifier_first(obj, modifier)
    _apply(modifier, _cache_settings(modifier, _stored_path(abspath), frame_start, rate))
    return modifier


def remove_deform_output(obj) -> bool:
    """Remove Contact Lab's deform output from ``obj``: its shape keys, their curves/action and the cache modifier.

    The user's own shape keys, actions (except our curves in them) and other modifiers stay. The PC2 file on
    disk is not deleted. Returns True if anything was removed.
    """
    removed = _remove_shape_key_output(obj)
    for modifier in [m for m in obj.modifiers if m.name == CACHE_MODIFIER_NAME and m.type == "MESH_CACHE"]:
        obj.modifiers.remove(modifier)
        removed = True
    return removed


def deform_output_kind(obj) -> str | None:
    """'SHAPE_KEYS' or 'PC2' when ``obj`` carries Contact Lab's deform output, else None (for panels)."""
    if getattr(obj, "type", None) != "MESH":
        return None
    key = obj.data.shape_keys
    if key is not None and _RECORD in key:
        return "SHAPE_KEYS"
    modifier = obj.modifiers.get(CACHE_MODIFIER_NAME)
    if modifier is not None and modifier.type == "MESH_CACHE":
        return "PC2"
    return None


# transactional bake output ---------------------------------------------------------------------------


def deform_output_problem(obj) -> str | None:
    """Why the bake cannot write ``obj``'s deform output (checked before any change), or None."""
    modifier = obj.modifiers.get(CACHE_MODIFIER_NAME)
    if modifier is not None and modifier.type != "MESH_CACHE":
        return (
            f"'{obj.name}' has a {modifier.type.replace('_', ' ').title()} modifier named '{CACHE_MODIFIER_NAME}', "
            "the name of Contact Lab's cache modifier: rename it; nothing was changed"
        )
    return None


def _alive(id_data) -> bool:
    """False once the data-block behind ``id_data`` was removed."""
    try:
        id_data.name  # noqa: B018 - the access raises ReferenceError for removed data
    except ReferenceError:
        return False
    return True


class DeformSwap:
    """One soft object's new deform output, built beside the old one by :func:`prepare_deform_output`."""

    def __init__(self, obj, output: str):
        self.obj = obj
        self.output = output
        """'SHAPE_KEYS' or 'PC2'."""
        self.old_mesh = obj.data
        self.new_mesh = None
        """The copy of the mesh with the new shape keys (or without the old ones), None if the mesh stays."""
        self.copied_action = None
        """Copy of the user's Key action that receives the new curves (the original is not touched)."""
        self.original_action_name = ""
        self.new_action = None
        """The Key's new own action (when the Key had none)."""
        self.created_actions: list = []
        """Every action :meth:`build` created (the copy and our new one), removed if the transaction fails."""

    def build(self, frames: np.ndarray, positions: np.ndarray, *, hold_ends: bool) -> None:
        """Copy the mesh (and the user's Key action), then replace the Contact Lab shape keys in the copy.

        The copy is edited through a temporary object outside every scene (the shape-key API is on objects). On
        any failure everything built so far is removed again before the exception propagates.
        """
        mesh = self.old_mesh
        known = {a.as_pointer() for a in bpy.data.actions}
        try:
            self.new_mesh = mesh.copy()
            key = self.new_mesh.shape_keys
            ad = key.animation_data if key is not None else None
            if key is not None and ad is not None and ad.action is not None:
                self.original_action_name = ad.action.name
                slot = keyframes.slot_identifier(key)
                self.copied_action = ad.action.copy()
                keyframes.assign_action(key, self.copied_action, slot)
                record = key.get(_RECORD)
                if record is not None and str(record.get("action", "")) == self.original_action_name:
                    record["action"] = self.copied_action.name  # still ours: removed below if it ends up empty
            # an object outside every scene carries the copy: shape_key_add/remove are Object methods
            carrier = bpy.data.objects.new(f"{self.obj.name} (Contact Lab bake)", self.new_mesh)
            try:
                carrier.active_shape_key_index = self.obj.active_shape_key_index
                _remove_shape_key_output(carrier)
                if self.output == "SHAPE_KEYS":
                    key = write_shape_keys(
                        carrier,
                        frames,
                        positions,
                        hold_ends=hold_ends,
                        action_name=f"{self.obj.name}{ACTION_SUFFIX}",
                    )
                    own = str(key[_RECORD].get("action", ""))
                    self.new_action = bpy.data.actions.get(own) if own else None
            finally:
                bpy.data.objects.remove(carrier)
            if self.copied_action is not None and _alive(self.copied_action) and not self.copied_action.users:
                bpy.data.actions.remove(self.copied_action)  # its Key went away with the old output
        except BaseException:
            self.created_actions = [a for a in bpy.data.actions if a.as_pointer() not in known]
            self.remove_new()
            raise
        self.created_actions = [a for a in bpy.data.actions if a.as_pointer() not in known]

    def remove_new(self) -> None:
        """Remove what :meth:`build` created (the transaction failed)."""
        for action in self.created_actions:
            if _alive(action):
                bpy.data.actions.remove(action)
        if self.new_mesh is not None and _alive(self.new_mesh):
            bpy.data.meshes.remove(self.new_mesh)
        self.new_mesh = self.copied_action = self.new_action = None
        self.created_actions = []

    def discard_old(self) -> None:
        """Remove the replaced mesh (its Key and an action only it used go with it); the new data takes the names."""
        old, new = self.old_mesh, self.new_mesh
        if new is None:
            return  # never the case: commit_deform_output registers this only once build() made the new mesh
        if old.users:
            return  # still used (e.g. a fake user): keep it, the new mesh keeps its own name
        old_name = old.name
        old_key = old.shape_keys
        key_name = old_key.name if old_key is not None else None
        action = old_key.animation_data.action if old_key is not None and old_key.animation_data else None
        bpy.data.meshes.remove(old)  # the Key goes with its mesh
        new.name = old_name
        new_key = new.shape_keys
        if new_key is not None and key_name is not None:
            new_key.name = key_name
        if action is not None and _alive(action) and not action.users:
            name = action.name
            bpy.data.actions.remove(action)
            # the new Key's action takes the name when it replaces this one (its copy, or our new action)
            heir = new_key.animation_data.action if new_key is not None and new_key.animation_data else None
            if heir is not None and any(heir == a for a in (self.copied_action, self.new_action) if a and _alive(a)):
                self._rename_action(heir, name, new_key)
        desired = f"{self.obj.name}{ACTION_SUFFIX}"
        if self.new_action is not None and _alive(self.new_action) and bpy.data.actions.get(desired) is None:
            self._rename_action(self.new_action, desired, new_key)

    def _rename_action(self, action, name: str, key) -> None:
        """Rename ``action`` and the record of it on ``key``, the new mesh's Key."""
        previous = action.name
        action.name = name
        if key is not None and _RECORD in key and str(key[_RECORD].get("action", "")) == previous:
            key[_RECORD]["action"] = action.name


def prepare_deform_output(txn, obj, output: str, frames, positions, *, hold_ends: bool = True) -> DeformSwap:
    """Build ``obj``'s new deform output without touching the object (the prepare phase).

    SHAPE_KEYS: a copy of the mesh gets the new shape keys (the previous Contact Lab keys removed from it, the
    user's own keys and Key action kept, the action copied). PC2: a mesh with a previous shape-key output gets a
    copy without it; the PC2 file itself is staged by :func:`stage_pc2_files`.

    Args:
        txn: the bake's :class:`~.transaction.Transaction`.
        obj: a soft (mesh) object. output: 'SHAPE_KEYS' or 'PC2'.
        frames: baked frame numbers (F,). positions: object-local vertex positions per frame [BU], (F, V, 3).
    """
    swap = DeformSwap(obj, output)
    if output == "SHAPE_KEYS" or _has_shape_key_output(obj):
        verb = "write the shape keys of" if output == "SHAPE_KEYS" else "remove the previous shape keys of"
        txn.step(
            f"{verb} '{obj.name}' into a copy of its mesh",
            lambda: swap.build(np.asarray(frames, dtype=np.float64), positions, hold_ends=hold_ends),
            undo=lambda _: swap.remove_new(),
            object_name=obj.name,
        )
    return swap


def _has_shape_key_output(obj) -> bool:
    key = obj.data.shape_keys
    return key is not None and _RECORD in key


def _mesh_users(mesh) -> list:
    return [o for o in bpy.data.objects if o.data == mesh]


def commit_deform_output(txn, swap: DeformSwap, *, cache_path: str | None = None, frame_start: float = 1.0) -> None:
    """Swap ``swap``'s new output in (the commit phase): the new mesh, then the cache modifier.

    PC2 (``cache_path`` given: the cache's absolute path; the file itself is renamed into place by
    :func:`commit_pc2_files`): the Contact Lab Cache modifier is added first in the stack or reused, and set up.
    SHAPE_KEYS: a previous cache modifier is disabled now and deleted once the whole bake is in place.
    """
    obj = swap.obj
    if swap.new_mesh is not None:
        old, new = swap.old_mesh, swap.new_mesh
        blocks = len(new.shape_keys.key_blocks) if new.shape_keys is not None else 0
        for user in _mesh_users(old):  # linked duplicates share the mesh: they all get the new one
            previous = user.active_shape_key_index

            def swap_back(_, user=user, previous=previous):
                user.data = old
                user.active_shape_key_index = previous

            txn.step(
                f"give '{user.name}' its new mesh",
                lambda user=user: setattr(user, "data", new),
                undo=swap_back,
                object_name=user.name,
            )
            txn.step(
                f"select the active shape key of '{user.name}'",
                lambda user=user, index=min(previous, max(blocks - 1, 0)): setattr(
                    user, "active_shape_key_index", index
                ),
                object_name=user.name,
            )
        txn.on_commit(f"remove the previous mesh '{old.name}' of '{obj.name}'", swap.discard_old)

    modifiers = obj.modifiers
    if cache_path is not None:
        modifier = modifiers.get(CACHE_MODIFIER_NAME)
        if modifier is None:
            active = modifiers.active

            def remove(added, active=active):
                modifiers.remove(added)
                modifiers.active = active

            modifier = txn.step(
                f"add the cache modifier of '{obj.name}'",
                lambda: modifiers.new(CACHE_MODIFIER_NAME, "MESH_CACHE"),
                undo=remove,
                object_name=obj.name,
            )
            last = len(modifiers) - 1
            txn.step(
                f"move the cache modifier of '{obj.name}' first",
                lambda: _move_modifier_first(obj, modifier),
                undo=lambda _: modifiers.move(list(modifiers).index(modifier), last),
                object_name=obj.name,
            )
        values = _cache_settings(modifier, _stored_path(cache_path), frame_start, 1.0)
        _set_reversibly(txn, modifier, values, f"set up the cache modifier of '{obj.name}'", obj.name)
    else:
        for modifier in [m for m in modifiers if m.name == CACHE_MODIFIER_NAME and m.type == "MESH_CACHE"]:
            off = {"show_viewport": False, "show_render": False}
            _set_reversibly(txn, modifier, off, f"disable the previous cache modifier of '{obj.name}'", obj.name)

            def delete(modifier=modifier):
                if modifier in list(modifiers):
                    modifiers.remove(modifier)

            txn.on_commit(f"delete the disabled cache modifier of '{obj.name}'", delete)


def _set_reversibly(txn, owner, values: dict, label: str, object_name: str) -> None:
    previous = {name: _copy_value(getattr(owner, name)) for name in values}

    def restore(_):
        for name in reversed(list(previous)):
            setattr(owner, name, previous[name])

    txn.step(label, lambda: _apply(owner, values), undo=restore, object_name=object_name)


def _copy_value(value):
    # vectors and enum sets read from RNA are views or mutable: keep plain copies
    if isinstance(value, (set, frozenset)):
        return set(value)
    if isinstance(value, (str, bytes, int, float, bool)) or value is None:
        return value
    try:
        return tuple(value)
    except TypeError:
        return value


def stage_pc2_files(txn, scene, export, objects, positions) -> list[tuple[str, str]]:
    """Write one PC2 file per soft object to ``export.cache_files`` under temporary names (the prepare phase).

    The paths were chosen when the scene was gathered (:mod:`.caches`: one per owning .blend, scene and
    object). Their folder (and missing parents) is created; every file is written atomically by
    :func:`core.formats.pc2.write_pc2` beside its target, whose previous version stays untouched.

    Returns:
        ``(target path, staged path)`` per object, for :func:`commit_pc2_files`.
    """
    folder = export.cache_dir
    txn.make_folder(folder, label=f"create the PC2 Cache Folder '{folder}'")
    staged = []
    start = float(export.frames[0])
    for obj, local, target in zip(objects, positions, export.cache_files, strict=True):

        def write(path, local=local):
            pc2.write_pc2(path, local, start_frame=start, sample_rate=1.0)

        path = txn.stage_file(target, write, label=f"write the PC2 cache of '{obj.name}'", object_name=obj.name)
        staged.append((target, path))
    return staged


def commit_pc2_files(txn, staged: list[tuple[str, str]], objects) -> None:
    """Rename every staged file over its target (the previous cache becomes a backup, deleted on commit)."""
    for (target, path), obj in zip(staged, objects, strict=True):
        txn.replace_file(path, target, label=f"put the new PC2 cache of '{obj.name}' in place", object_name=obj.name)


def write_pc2_files(scene, export, objects, positions) -> list[str]:
    """Write one PC2 file per soft object to ``export.cache_files``; return their absolute paths.

    All files are staged first and renamed over their targets only when every one was written, so a failure
    leaves the previous caches intact (one :class:`~.transaction.Transaction`).

    Raises:
        BakeError: the folder cannot be created or a file cannot be written; nothing was changed.
    """
    from .transaction import Transaction

    with Transaction("PC2 caches") as txn:
        staged = stage_pc2_files(txn, scene, export, objects, positions)
        commit_pc2_files(txn, staged, objects)
    return [target for target, _ in staged]
