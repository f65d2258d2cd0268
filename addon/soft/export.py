"""Kept for scripts and the demo: ``export_soft_scene`` (gather then build on the calling thread, main thread) and
``SoftBakeSettings`` from their old place. The code lives in :mod:`.gather` and :mod:`.build`."""

from .build import SoftBakeSettings
from .gather import export_soft_scene

__all__ = ["SoftBakeSettings", "export_soft_scene"]
