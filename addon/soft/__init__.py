"""The soft engine's bridge: Blender objects → :mod:`...core.soft` world (``export``) and its bake job."""
