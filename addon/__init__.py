"""The Blender bridge: settings, Blender objects → core models, core results → Blender data, bake orchestration.

Mirrors the core's engines: ``rigid/``, ``soft/`` and ``ipc/`` each hold the engine's ``gather`` (scene → plain
data, validated; main thread), ``build`` (plain data → core model; no bpy, any thread) and ``job`` (its
:class:`~.bake.job.BakeJob`); ``rigid/`` also holds ``shapes`` (collision shapes in body frames: hulls, meshes,
compounds, centres of mass) and ``rigid_body_import`` (Blender's rigid body world → Contact Lab settings);
``output/`` holds every writer (keyframes and baked actions, shape keys and PC2 caches, and the caches' names).
By job: ``bake/`` drives a bake (picks the engine's job, runs it on one thread or in the background), ``checks/``
is Check Scene, ``warmup/`` compiles the kernels ahead of the first bake (and knows their cache), ``friction/`` reads
and previews surface friction. Foundations: ``scene`` (which objects take part, compound parts, their checks, world
matrices over the frame range), ``properties``, ``versioning``, ``units``, ``errors``, ``paths`` (where a bake may
write). The command line is beside the bridge, in ``cli/``.

The only place that converts units (Blender units × ``scale_length`` = metres). It knows no UI: operators
and panels call it, and the entry point registers them. Submodules that touch the core (the engines'
``export`` and ``job`` modules, ``bake/``) are imported lazily so registering the add-on stays fast.
"""
