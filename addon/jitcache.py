"""Numba cache location for the installed extension.

Inside Blender the package is ``bl_ext.<repo>.contact_lab`` and its folder may be read-only or wiped on
upgrade, so compiled kernels are cached in the extension's user directory instead. numba picks the
cache locator when a ``@njit(cache=True)`` decorator runs, so :func:`configure` must run before any
``core`` kernel module is imported (``addon.registration.register`` calls it first; ``core`` is only
imported lazily, by the first bake). Imported as plain ``contact_lab`` (development, tests) numba's
default (``__pycache__`` next to the sources) is left alone.
"""

import sys

_configured_dir: str | None = None


def root_package() -> str:
    """The extension's root package (``bl_ext.<repo>.contact_lab`` or ``contact_lab``)."""
    return __package__.rpartition(".")[0]


def is_installed_extension() -> bool:
    """True when running as an installed Blender extension (package under ``bl_ext.``)."""
    return __package__.startswith("bl_ext.")


def configure() -> str | None:
    """Point ``numba.config.CACHE_DIR`` at the extension's user directory; return it (None: default kept).

    Idempotent. Warns when a core kernel module was already imported, since its cache location is fixed.
    """
    global _configured_dir
    if not is_installed_extension():
        return None
    if _configured_dir is not None:
        return _configured_dir
    import bpy
    import numba

    path = bpy.utils.extension_path_user(root_package(), path="numba_cache", create=True)
    numba.config.CACHE_DIR = path
    _configured_dir = path
    early = [m for m in sys.modules if m.startswith(root_package() + ".core.")]
    if early:
        print(f"[contact_lab] numba cache set after core modules were imported: {sorted(early)[:3]}", flush=True)
    return path
