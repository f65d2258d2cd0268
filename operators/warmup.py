"""Compile Solvers: ``bpy.ops.contact_lab.warm_up()`` starts :mod:`..addon.warmup.warmup` now (normally automatic).

The warm-up starts by itself shortly after the extension is enabled, once per version of the solver. This operator
runs it again on demand (after a failure, or to rebuild the kernel cache) and keeps the panel's progress line
current while it runs.
"""

from typing import TYPE_CHECKING

import bpy

if TYPE_CHECKING:
    from bpy.stub_internal.rna_enums import OperatorReturnItems  # in the stubs only, never at run time

REDRAW_INTERVAL = 1.0
"""Seconds between redraws of the Properties editor while the warm-up runs."""


def _redraw_while_running():
    from ..addon.warmup import warmup

    for window in getattr(bpy.context.window_manager, "windows", []):
        for area in window.screen.areas:
            if area.type == "PROPERTIES":
                area.tag_redraw()
    return REDRAW_INTERVAL if warmup.running() or warmup.status().state == "running" else None


def follow_warmup() -> None:
    """Redraw the panel's warm-up line until the warm-up ends (idempotent)."""
    if not bpy.app.background and not bpy.app.timers.is_registered(_redraw_while_running):
        bpy.app.timers.register(_redraw_while_running, first_interval=REDRAW_INTERVAL)


class CONTACT_LAB_OT_warm_up(bpy.types.Operator):
    """Compile the solvers now, in a background process at low priority, so that the next bake starts at once"""

    bl_idname = "contact_lab.warm_up"
    bl_label = "Compile Solvers"
    bl_options = {"REGISTER"}

    @classmethod
    def poll(cls, context):
        from ..addon.warmup import jitcache, warmup

        return jitcache.configured_dir() is not None and not warmup.running()

    def execute(self, context) -> "set[OperatorReturnItems]":
        from ..addon.warmup import warmup

        try:
            started = warmup.start(force=True)
        except OSError as exc:
            self.report({"ERROR"}, f"Cannot start the warm-up process: {exc}")
            return {"CANCELLED"}
        if not started:
            self.report({"INFO"}, "The solvers are already being compiled")
            return {"CANCELLED"}
        follow_warmup()
        self.report({"INFO"}, "Compiling the solvers in the background")
        return {"FINISHED"}


CLASSES = (CONTACT_LAB_OT_warm_up,)
