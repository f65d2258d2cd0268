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
"""

from __future__ import annotations

import os

import bpy
import numpy as np

from ...core.formats import pc2
from ..errors import BakeError
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


def _enum_value(name: str) -> int:
    return bpy.types.Keyframe.bl_rna.properties["interpolation"].enum_items[name].value


def _value_path(block_name: str) -> str:
    return f'key_blocks["{bpy.utils.escape_identifier(block_name)}"].value'


def _frame_label(frame: float) -> str:
    return f"{int(frame):05d}" if float(frame).is_integer() else f"{frame:g}"


def _key_container(key, action, *, create: bool):
    """F-curve container (legacy action or channelbag) and slot used by ``key`` in ``action``."""
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


def _key_action_container(obj, key):
    """The F-curve container of the Key ID's action: a new action (recorded, to be removed with the output)
    when the Key has none, else the user's action, which receives the curves."""
    ad = key.animation_data or key.animation_data_create()
    action = ad.action
    if action is None:
        action = bpy.data.actions.new(f"{obj.name}{ACTION_SUFFIX}")
        if not keyframes.uses_layered_actions():
            action.id_root = "KEY"
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

        container = _key_action_container(obj, key)
        group = container.groups.get(SHAPE_KEY_GROUP) or container.groups.new(SHAPE_KEY_GROUP)
        interp = _enum_value(interpolation)
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
    if action is not None:
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
    else:
        del key[_RECORD]
        obj.active_shape_key_index = min(obj.active_shape_key_index, len(key.key_blocks) - 1)
    obj.data.update()
    return True


def _move_modifier_first(obj, modifier) -> None:
    """Put ``modifier`` first in the stack (before topology-changing ones); no RNA API for this in 4.2–5.2."""
    if obj.modifiers[0] == modifier:
        return
    try:
        with bpy.context.temp_override(object=obj, active_object=obj):
            bpy.ops.object.modifier_move_to_index(modifier=modifier.name, index=0)
    except RuntimeError:
        pass  # e.g. linked data: keep it where it is


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
    stored = abspath
    if bpy.data.filepath:
        try:
            stored = bpy.path.relpath(abspath)
        except ValueError:  # other drive (Windows): keep absolute
            stored = abspath

    modifier = obj.modifiers.get(CACHE_MODIFIER_NAME)
    if modifier is not None and modifier.type != "MESH_CACHE":
        obj.modifiers.remove(modifier)
        modifier = None
    if modifier is None:
        modifier = obj.modifiers.new(CACHE_MODIFIER_NAME, "MESH_CACHE")
        _move_modifier_first(obj, modifier)
    modifier.cache_format = "PC2"
    modifier.filepath = stored
    modifier.play_mode = "SCENE"
    modifier.time_mode = "FRAME"
    modifier.frame_start = float(frame_start)
    modifier.frame_scale = 1.0 / rate if rate > 0.0 else 1.0
    modifier.interpolation = "LINEAR"
    modifier.deform_mode = "OVERWRITE"
    modifier.factor = 1.0
    modifier.forward_axis = "POS_Y"
    modifier.up_axis = "POS_Z"
    # an enum flag set up to 4.x, a boolean vector in 5.x
    no_flip = set() if modifier.bl_rna.properties["flip_axis"].type == "ENUM" else (False, False, False)
    modifier.flip_axis = no_flip
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


def write_pc2_files(scene, export, objects, positions) -> list[str]:
    """Write one PC2 file per soft object into ``export.cache_dir``; return their absolute paths.

    All files are first written as hidden temporaries (atomically, by :func:`core.formats.pc2.write_pc2`) and renamed
    over their targets only when every one was written, so a failure leaves the previous caches intact.

    Raises:
        BakeError: the folder cannot be created or a file cannot be written.
    """
    folder = export.cache_dir
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as exc:
        raise BakeError(f"cannot create the PC2 Cache Folder '{folder}': {exc.strerror or exc}") from exc
    from ..soft.export import cache_file_name

    paths = [os.path.join(folder, cache_file_name(bpy.data.filepath, scene.name, obj.name)) for obj in objects]
    staged = []
    try:
        for path, local in zip(paths, positions, strict=True):
            tmp = os.path.join(folder, "." + os.path.basename(path) + ".new")
            pc2.write_pc2(tmp, local, start_frame=float(export.frames[0]), sample_rate=1.0)
            staged.append(tmp)
    except OSError as exc:
        for tmp in staged:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        reason = exc.strerror or exc
        raise BakeError(f"cannot write the PC2 cache in '{folder}': {reason}; nothing was changed") from exc
    for tmp, path in zip(staged, paths, strict=True):
        os.replace(tmp, path)
    return paths
