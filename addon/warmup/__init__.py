"""The warm-up: compiling the solvers' kernels ahead of the first bake, in a separate low-priority process.

:mod:`.warmup` starts and watches that process, :mod:`.child` is its entry script, :mod:`.scenes` the tiny scenes it
bakes, and :mod:`.jitcache` where the compiled kernels are cached (also read by the CLI: no bpy).
"""
