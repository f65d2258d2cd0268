"""Objects a bake writes into that come from a library .blend: refused where the result would not be saved.

A bake writes keyframes onto active bodies and shape keys or a Mesh Cache modifier onto soft objects. An object
*linked* from a library is not saved with the file: Blender lets the bake change it in memory, and on reopening
everything is gone. A *library override* is saved with the file, and measured on Blender 5.0 (bake, save,
reopen) it keeps the rigid keyframes and the PC2 cache modifier, but not new shape keys: they live on a local
copy of the mesh, and the override's mesh goes back to the library's on reopening. So a linked object is
refused, and an override only with shape-key output.

Reads bpy objects only (``library``, ``override_library``); returns problems, raises nothing.
"""

from __future__ import annotations

import os

__all__ = ["MAKE_LOCAL", "MAKE_OVERRIDE", "library_problems"]

MAKE_LOCAL = "Object ▸ Relations ▸ Make Local"
MAKE_OVERRIDE = "Object ▸ Library Override ▸ Make"


def _library_name(obj) -> str:
    library = obj.library
    return os.path.basename(library.filepath) or library.name


def library_problems(active: list, soft: list, soft_output: str) -> list[tuple[str, str, str, str]]:
    """``(object name, problem, fix, setting)`` for every object whose baked result would not survive saving.

    Args:
        active: the active (dynamic) bodies the bake keys.
        soft: the soft objects it deforms. soft_output: 'SHAPE_KEYS' or 'PC2' (``scene.contact_lab.soft_output``).
    """
    out = []
    for obj in [*active, *soft]:
        if getattr(obj, "library", None) is not None:
            out.append(
                (
                    obj.name,
                    f"'{obj.name}' is linked from the library '{_library_name(obj)}': what the bake writes into it "
                    "would be lost when the file is saved",
                    f"make it local ({MAKE_LOCAL}) or give it a library override ({MAKE_OVERRIDE})",
                    "library",
                )
            )
        elif getattr(obj, "override_library", None) is not None and obj in soft and soft_output == "SHAPE_KEYS":
            out.append(
                (
                    obj.name,
                    f"'{obj.name}' is a library override: its baked shape keys would be lost when the file is saved "
                    "(the override keeps the library's mesh)",
                    f"set Scene ▸ Contact Lab Bake ▸ Output to PC2 Cache, or make it local ({MAKE_LOCAL})",
                    "override_library",
                )
            )
    return out
