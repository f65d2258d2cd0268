"""The IPC engine's bridge: Blender objects → :mod:`...core.ipc` world, read on the main thread (``gather``) and
built on any thread (``build``, no bpy), and its bake job (``job``)."""
