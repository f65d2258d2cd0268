"""Kept for scripts: ``from contact_lab.addon.validate import validate_scene`` (Check Scene lives in
:mod:`.checks.validate`)."""

from .checks.validate import check_before_bake, validate_scene

__all__ = ["check_before_bake", "validate_scene"]
