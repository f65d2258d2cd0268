"""The rigid engine's bridge: Blender objects → :mod:`...core.rigid` model (``export``) and its bake job."""
