"""What a check finds: :class:`Finding` and its constructors :func:`error`, :func:`warning`, :func:`info`, and the
:class:`SceneView` every check reads. A leaf of ``checks/``: each check imports it instead of the orchestrator
(:mod:`.validate`), so no check imports upward.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

LEVELS = ("ERROR", "WARNING", "INFO")
"""Finding levels, most severe first."""

BLENDER_MAX_FRAME = 1_048_574
"""Blender's largest frame number (and its negative the smallest the current frame may take)."""


@dataclass(frozen=True)
class Finding:
    """One problem (or note) about a scene, for the panel, the report and :func:`raise_errors`."""

    level: str
    """'ERROR' (the bake refuses to run), 'WARNING' (it runs, the result may look wrong) or 'INFO'."""
    object_name: str | None
    """The object it is about, or None for the scene."""
    setting: str | None
    """The property to change (``'scale'``, ``'contact_lab.mass'``, ``'scene.gravity'``), or None."""
    message: str
    """What is wrong, naming the object or setting: ``"'Box': its scale is zero on axis X"``."""
    fix: str
    """What to change; empty when ``message`` already ends with it (messages of the engines' own checks)."""

    @property
    def text(self) -> str:
        """The message and the fix as one sentence."""
        return f"{self.message}: {self.fix}" if self.fix else self.message


def error(obj, message: str, fix: str = "", setting: str | None = None) -> Finding:
    """An ERROR finding about ``obj`` (an object, its name or None for the scene)."""
    return Finding("ERROR", _name(obj), setting, message, fix)


def warning(obj, message: str, fix: str = "", setting: str | None = None) -> Finding:
    """A WARNING finding about ``obj`` (an object, its name or None)."""
    return Finding("WARNING", _name(obj), setting, message, fix)


def info(obj, message: str, fix: str = "", setting: str | None = None) -> Finding:
    """An INFO finding about ``obj`` (an object, its name or None)."""
    return Finding("INFO", _name(obj), setting, message, fix)


def _name(obj) -> str | None:
    return obj if obj is None or isinstance(obj, str) else obj.name


@dataclass
class SceneView:
    """The objects one engine would bake, gathered once for every check."""

    scene: Any
    """The ``bpy.types.Scene`` (Any: its ``contact_lab`` settings are registered at run time, unknown to the stubs)."""
    engine: str
    start: int
    end: int
    active: list
    """Active rigid bodies (Compound Parents included, their parts not), by name."""
    passive: list
    """Passive objects, by name (for the IPC engine: without the Mesh colliders)."""
    soft: list
    """Soft objects (Soft and IPC engines; empty for Rigid), by name."""
    mesh_colliders: list
    """IPC engine: passive objects with the Mesh shape (they become IPC mesh colliders)."""
    parts: dict
    """Rigid engine: ``{compound parent name: its parts}``."""
    broken: set
    """Names of objects with a NaN or infinite transform or setting: the geometric checks leave them out."""
    soft_in_rigid: list
    """Rigid engine: objects with the Soft role (an error)."""
    metres: float = 1.0
    """Metres per Blender unit."""
    matrices: dict | None = None
    """``{object name: world matrix (4, 4) [BU] at the start frame}``, for the objects of the geometric checks."""

    @property
    def rigid(self) -> list:
        return self.active + self.passive

    @property
    def objects(self) -> list:
        """Every object taking part (bodies, parts, soft objects, mesh colliders), each once."""
        parts = [p for children in self.parts.values() for p in children]
        return self.active + self.passive + parts + self.soft + self.mesh_colliders
