"""Driving a bake: the job protocol's driver (:mod:`.driver`: ``bake_scene``, ``start_bake``, ``clear_bake``), the
base job every engine's job extends (:mod:`.job`), the background bake of the UI (:mod:`.worker`) and the thread
and compile utilities both drivers use (:mod:`.threads`, a leaf).

``bake_scene``, ``start_bake`` and ``clear_bake`` are also reachable here (``addon.bake.bake_scene``), loaded on
first use: the engines' jobs import :mod:`.job` from this package, so importing the driver eagerly would import
them back while they load.
"""

_DRIVER_NAMES = ("bake_scene", "start_bake", "clear_bake")


def __getattr__(name: str):
    if name in _DRIVER_NAMES:
        from . import driver

        return getattr(driver, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
