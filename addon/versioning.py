"""Files saved by an older Contact Lab open with the settings they were made with.

Blender stores a property's value in the .blend only once it was set; an unset one reads the add-on's current
default. So a changed default silently changes every old file that relied on the old one. Each saved scene
therefore carries the settings version it was written with (``Scene.contact_lab.settings_version``, stamped on
save), and on load the objects of an older scene get the defaults of their time written into them explicitly.

Changes of default, by the version that made them:

- 1: *Lattice Resolution* 12 -> 8 (the default cube bakes at an artist's pace).
- 2: *Lattice Fit* Padded -> Fitted (a box's lattice ends at its faces: as soft as its material).
- 3: *IPC Surface* Mesh -> Split to Lattice (IPC holds a coarse mesh by its faces, on the lattice its Lattice Fit
  asks for).
"""

from __future__ import annotations

from typing import Any

import bpy

SETTINGS_VERSION = 3
"""The version this add-on stamps on every scene it saves."""

OLD_DEFAULTS: tuple[tuple[int, str, object], ...] = (
    (1, "lattice_resolution", 12),
    (2, "lattice_fit", "PADDED"),
    (3, "ipc_surface", "MESH"),
)
"""``(version that changed it, Object.contact_lab property, its default before that version)``."""


def upgrade_file() -> list[str]:
    """Write the old defaults into the unset settings of every object used by a scene saved before they changed.

    Returns the names of the objects changed (for the console and the tests).
    """
    changed: list[str] = []
    scenes: Any = bpy.data.scenes  # their ``contact_lab`` pointer is added at registration, unknown to the stubs
    for scene in scenes:
        version = int(scene.contact_lab.settings_version)
        if version >= SETTINGS_VERSION:
            continue
        for obj in scene.objects:
            settings = getattr(obj, "contact_lab", None)
            if settings is None:
                continue
            for since, name, old in OLD_DEFAULTS:
                if version < since and not settings.is_property_set(name):
                    setattr(settings, name, old)
                    changed.append(obj.name)
        scene.contact_lab.settings_version = SETTINGS_VERSION
    return sorted(set(changed))


def _on_load(_dummy=None) -> None:
    if not bpy.data.filepath:  # the startup file or a new file: made now, today's defaults are its defaults
        _stamp_all()
        return
    changed = upgrade_file()
    if changed:
        print(f"Contact Lab: kept the settings this file was made with on {', '.join(changed)} (older version)")


def _stamp_all() -> None:
    scenes: Any = bpy.data.scenes
    for scene in scenes:
        if scene.contact_lab.settings_version != SETTINGS_VERSION:
            scene.contact_lab.settings_version = SETTINGS_VERSION


def _on_save(_dummy=None) -> None:
    _stamp_all()


def _upgrade_open_file() -> None:
    """One-shot timer: the file that is open when the add-on is enabled or updated (no load event follows)."""
    _on_load()


def register() -> None:
    """Attach the load and save handlers (once), and upgrade the file already open (an updated extension is
    registered again while the user's file stays open: no load event would see it)."""
    handlers = getattr(bpy.app, "handlers", None)  # (the mocked bpy of the add-on tests has none)
    if handlers is None:
        return
    for handler, event in ((_on_load, handlers.load_post), (_on_save, handlers.save_pre)):
        if handler not in event:
            event.append(handlers.persistent(handler))  # kept when another file is loaded
    timers = getattr(bpy.app, "timers", None)
    if timers is not None and not timers.is_registered(_upgrade_open_file):
        timers.register(_upgrade_open_file, first_interval=0.0)  # bpy.data is not writable while registering


def unregister() -> None:
    handlers = getattr(bpy.app, "handlers", None)
    if handlers is None:
        return
    for handler, event in ((_on_load, handlers.load_post), (_on_save, handlers.save_pre)):
        if handler in event:
            event.remove(handler)
    timers = getattr(bpy.app, "timers", None)
    if timers is not None and timers.is_registered(_upgrade_open_file):
        timers.unregister(_upgrade_open_file)
