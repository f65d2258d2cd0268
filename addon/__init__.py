"""The Blender bridge: properties, scene → core model, trajectory → keyframes, bake orchestration.

The only place that converts units (Blender units × ``scale_length`` = metres). Submodules that touch
the core (``scene_export``, ``bake``) are imported lazily so registering the add-on stays fast.
"""
