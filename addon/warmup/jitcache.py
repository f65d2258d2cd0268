"""Numba cache location for the installed extension, shared by the add-on, its warm-up and the CLI.

Inside Blender the package is ``bl_ext.<repo>.contact_lab`` and its folder may be read-only or wiped on
upgrade, so compiled kernels are cached in the extension's user directory instead. numba picks the
cache locator when a ``@njit(cache=True)`` decorator runs, so :func:`configure` must run before any
``core`` kernel module is imported (the entry point's ``registration.register`` calls it first; ``core`` is only
imported lazily, by the first bake). Imported as plain ``contact_lab`` (development, tests) numba's
default (``NUMBA_CACHE_DIR``, or ``__pycache__`` next to the sources) is left alone.

One cache serves every process that runs the installed extension's code: the add-on, the warm-up process
(:mod:`.warmup`, told the directory through :data:`CACHE_ENV`) and the CLI run from the extension's folder
(:mod:`...cli.single` imports itself under the same ``bl_ext`` name). They must all import the code under that
one package name: a cached kernel records its module's name and loading it imports that module, so an entry written by
``contact_lab.core.x`` cannot be read where the package is ``bl_ext.user_default.contact_lab``.
"""

import os
import shutil
import sys
from pathlib import Path

from .fingerprint import CORE_DIR, core_source_fingerprint  # noqa: F401  (CORE_DIR: for callers)

CACHE_ENV = "CONTACT_LAB_NUMBA_CACHE"
"""Environment variable a parent process sets to hand its kernel cache directory to a child (used as is)."""

_configured_dir: str | None = None


def root_package() -> str:
    """The extension's root package (``bl_ext.<repo>.contact_lab`` or ``contact_lab``)."""
    return (__package__ or "").removesuffix(".addon.warmup")


def is_installed_extension() -> bool:
    """True when running as an installed Blender extension (package under ``bl_ext.``)."""
    return (__package__ or "").startswith("bl_ext.")


def configured_dir() -> str | None:
    """The kernel cache directory :func:`configure` chose, or None (numba's default is in use)."""
    return _configured_dir


def configure() -> str | None:
    """Point ``numba.config.CACHE_DIR`` at ``<user dir>/numba_cache/<core source fingerprint>``; return it.

    A directory handed down in :data:`CACHE_ENV` (the warm-up process) is used as is. None means the default was
    kept (not an installed extension).

    Idempotent. Warns when a core kernel module was already imported, since its cache location is fixed.
    """
    global _configured_dir
    if _configured_dir is not None:
        return _configured_dir
    inherited = os.environ.get(CACHE_ENV)
    if not inherited and not is_installed_extension():
        return None
    from numba.core import config as numba_config

    if inherited:
        path = inherited
    else:
        import bpy

        base = Path(bpy.utils.extension_path_user(root_package(), path="numba_cache", create=True))
        fingerprint = core_source_fingerprint()
        for old in base.iterdir():  # caches of earlier versions of the core can never be valid again
            if old.is_dir() and old.name != fingerprint:
                shutil.rmtree(old, ignore_errors=True)
        path = str(base / fingerprint)
    # numba declares its settings at run time (setattr: the checker knows no CACHE_DIR). Not NUMBA_CACHE_DIR in
    # os.environ: that would move other add-ons' numba caches into this extension's folder too.
    setattr(numba_config, "CACHE_DIR", path)  # noqa: B010
    _configured_dir = path
    early = [m for m in sys.modules if m.startswith(root_package() + ".core.")]
    if early:
        print(f"[contact_lab] numba cache set after core modules were imported: {sorted(early)[:3]}", flush=True)
    return path
