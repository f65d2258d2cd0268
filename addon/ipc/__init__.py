"""The IPC engine's bridge: Blender objects → :mod:`...core.ipc` world (``export``) and its bake job."""
