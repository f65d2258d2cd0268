"""Where a soft (or IPC) bake's PC2 caches go: one file per owning .blend, scene and object.

A cache belongs to the .blend file the bake is saved into (its *owner*): the open file in Blender, the ``-o`` file
of the command line. A ``//`` Cache Folder is relative to the owner's folder, so baking one input into
``a/v1.blend`` and ``b/v2.blend`` writes ``a/contact_lab_cache/`` and ``b/contact_lab_cache/``.

The file name is ``<owner stem>_<scene>_<object>_<hash>.pc2``: the readable parts have unsafe characters replaced
(so "shot 1" and "shot_1" clean alike, as do objects "a/b" and "a_b"), and the hash, over the exact owner path,
scene name and object name, keeps them apart (and "Cube"/"cube" apart on file systems that ignore case). A
collision that remains possible (two targets equal after :func:`os.path.normcase` and case folding) is refused
before anything is simulated (:func:`collision_problems`).

Reads bpy only for the default owner (the open file's path).
"""

from __future__ import annotations

import hashlib
import os

from ..paths import FolderError, check_writable

__all__ = [
    "CACHE_FOLDER_PANEL",
    "cache_file_name",
    "cache_folder_problems",
    "cache_paths",
    "collision_problems",
    "owner_path",
    "resolve_cache_dir",
]

PART_LENGTH = 40
"""Longest readable part (owner stem, scene, object) of a cache name; the hash tells the rest apart."""

CACHE_FOLDER_PANEL = "Scene ▸ Contact Lab Bake ▸ Cache Folder"
"""Where the setting ``scene.contact_lab.soft_cache_dir`` is, for messages."""

HASH_LENGTH = 10
"""Hex digits of the hash in a cache name (40 bits)."""


def owner_path(owner: str | None = None) -> str:
    """The .blend file that owns a bake's caches: ``owner`` made absolute, or the open file ('' when unsaved)."""
    if owner is None:
        import bpy

        owner = bpy.data.filepath
    return os.path.abspath(owner) if owner else ""


def resolve_cache_dir(scene, owner: str | None = None) -> str:
    """Absolute PC2 cache folder from ``scene.contact_lab.soft_cache_dir``; ``//`` is the owner's folder.

    Args:
        owner: the .blend file the bake is saved into (default: the open file).

    Raises:
        FolderError: the folder is empty, or ``//``-relative while the owner was never saved.
    """
    owner = owner_path(owner)
    raw = str(scene.contact_lab.soft_cache_dir).strip()
    if not raw:
        raise FolderError("the PC2 Cache Folder is empty", "choose a folder for the cache files")
    if raw.startswith("//") and not owner:
        raise FolderError(
            f"the PC2 Cache Folder '{raw}' is relative to the .blend file, which is not saved yet",
            "save the file first or choose an absolute folder",
        )
    if raw.startswith("//"):  # Blender's relative prefix; the owner's folder, not necessarily the open file's
        raw = os.path.join(os.path.dirname(owner), raw[2:])
    return os.path.normpath(raw)


def _clean(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)[:PART_LENGTH] or "_"


def cache_file_name(owner: str, scene_name: str, object_name: str) -> str:
    """PC2 file name of one object: ``<owner stem>_<scene>_<object>_<hash>.pc2``.

    Args:
        owner: absolute path of the owning .blend ('' when unsaved: the stem reads ``untitled``).
        scene_name, object_name: exact Blender names.

    The hash (lower-case hex) is over the exact owner path (:func:`os.path.normcase`: one file, one name on
    Windows), scene and object names, so names that clean or case-fold alike get different files.
    """
    stem = os.path.splitext(os.path.basename(owner))[0] if owner else "untitled"
    key = "\0".join((os.path.normcase(owner), scene_name, object_name)).encode("utf-8", "surrogatepass")
    digest = hashlib.sha256(key).hexdigest()[:HASH_LENGTH]
    return f"{_clean(stem)}_{_clean(scene_name)}_{_clean(object_name)}_{digest}.pc2"


def cache_paths(folder: str, owner: str, scene_name: str, object_names: list[str]) -> list[str]:
    """Absolute cache path per object (same order), in ``folder`` (absolute)."""
    return [os.path.join(folder, cache_file_name(owner, scene_name, name)) for name in object_names]


def collision_problems(object_names: list[str], paths: list[str]) -> list[tuple[str, str, str]]:
    """``(object name, problem, fix)`` for every object whose cache path equals an earlier one's, ignoring case (a
    file system that ignores case would give both one file)."""
    seen: dict[str, str] = {}
    problems = []
    for name, path in zip(object_names, paths, strict=True):
        other = seen.setdefault(os.path.normcase(os.path.normpath(path)).casefold(), name)
        if other != name:
            problem = f"'{other}' and '{name}' would write the same PC2 cache '{path}'"
            problems.append((name, problem, "rename one of them"))
    return problems


def cache_folder_problems(scene, object_names: list[str], owner: str | None = None) -> list[tuple]:
    """What Check Scene reports about a PC2 bake's caches: ``(object name or None, problem, fix, setting)``.

    The Cache Folder must be usable and writable or creatable (:func:`.paths.check_writable`; whether it may lie
    outside the .blend's folder is the bake's question, :func:`..bake.check_output_folders`), and no two objects
    of ``object_names`` may share a cache file.
    """
    setting = "scene.contact_lab.soft_cache_dir"
    try:
        folder = resolve_cache_dir(scene, owner)
        check_writable(folder, setting="PC2 Cache Folder")
    except FolderError as exc:
        problem = exc.problem[0].upper() + exc.problem[1:]
        return [(None, problem, f"{exc.fix} in {CACHE_FOLDER_PANEL}", setting)]
    paths = cache_paths(folder, owner_path(owner), scene.name, object_names)
    return [(name, problem, fix, "name") for name, problem, fix in collision_problems(object_names, paths)]
