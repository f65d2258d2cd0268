"""Contact Lab: physically based contact and friction baked into keyframes.

This file is the Blender extension entry point. It stays import-light: nothing
heavy (bpy, numba, the core) is imported until Blender calls :func:`register`.
"""


def register():
    """Register properties, operators and panels (called by Blender)."""
    from . import registration

    registration.register()


def unregister():
    """Undo :func:`register` (called by Blender)."""
    from . import registration

    registration.unregister()
