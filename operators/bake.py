"""Bake and Clear operators: thin wrappers around :mod:`..addon.bake.driver`.

``CONTACT_LAB_OT_bake.execute`` is a complete blocking bake (scripts, tests, background mode).
``invoke`` in the UI runs the same job off the main thread (``addon.bake.worker.BackgroundBake``): the scene is read
here, a worker thread builds and simulates it, and a window timer only reads its progress (the progress bar, the
panel and the status bar follow) and writes the results when it is done. Blender stays responsive throughout, also
while the first bake compiles the solver; Esc cancels at once and leaves everything unchanged.

When the .blend's PC2 Cache Folder leads outside the .blend's folder (module ``addon.paths``), ``invoke`` asks
first (Blender's confirmation popup naming the folder); confirming runs the bake with ``allow_outside_paths``.
"""

# Blender declares an operator's properties as class annotations holding a call (``name: BoolProperty(...)``) and
# reads them at registration; a call is no type, so the checker's rule for type expressions is off in this file.
# pyright: reportInvalidTypeForm=false

from typing import TYPE_CHECKING, Any

import bpy
from bpy.props import BoolProperty

if TYPE_CHECKING:
    from bpy.stub_internal.rna_enums import OperatorReturnItems  # in the stubs only, never at run time

TIMER_INTERVAL = 0.1
"""Seconds between modal timer ticks (each only reads the worker's progress)."""

PASS_THROUGH_EVENTS = frozenset(
    {"MOUSEMOVE", "INBETWEEN_MOUSEMOVE", "WHEELUPMOUSE", "WHEELDOWNMOUSE", "MIDDLEMOUSE", "TRACKPADPAN", "TRACKPADZOOM"}
)
"""Events that still reach Blender during a modal bake (view navigation only: no editing mid-bake)."""

_running: dict[str, Any] = {"job": None}
"""The modal bake in progress (an ``addon.bake.worker.BackgroundBake``), if any: one at a time."""


def _addon_bake():
    # imported on first use: pulls in the numba core, which registration must not pay for
    from ..addon.bake import driver as bake

    return bake


def _addon_worker():
    from ..addon.bake import worker

    return worker


def _tag_redraw(context) -> None:
    screen = getattr(context, "screen", None)
    if screen is None:
        return
    for area in screen.areas:
        if area.type in {"PROPERTIES", "STATUSBAR"}:
            area.tag_redraw()


class CONTACT_LAB_OT_bake(bpy.types.Operator):
    """Simulate the Contact Lab bodies and bake their motion: keyframes, shape keys or PC2 caches (Esc cancels)"""

    bl_idname = "contact_lab.bake"
    bl_label = "Bake Contact Lab"
    bl_options = {"REGISTER", "UNDO"}

    allow_outside_paths: BoolProperty(
        name="Allow Outside Paths",
        description=(
            "Write the PC2 caches even where the .blend file's Cache Folder leads outside the file's folder "
            "(set by the confirmation popup)"
        ),
        default=False,
        options={"SKIP_SAVE", "HIDDEN"},
    )

    @classmethod
    def poll(cls, context):
        return context.scene is not None and _running["job"] is None

    # blocking -----------------------------------------------------------------------------------
    def execute(self, context) -> "set[OperatorReturnItems]":
        if self.allow_outside_paths and self.options.is_invoke and _has_window(context):
            # Blender runs execute() when the user confirms invoke()'s popup: continue with the modal bake
            return self._start_modal(context, None)
        bake = _addon_bake()
        background = bpy.app.background

        def progress(done, total):
            if background:
                print(f"[contact_lab] frame {done}/{total}", flush=True)

        try:
            report = bake.bake_scene(context.scene, progress=progress, allow_outside_paths=self.allow_outside_paths)
        except bake.BakeError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        except KeyboardInterrupt:  # Ctrl-C in the console: the bake stopped or its write rolled back
            self.report({"WARNING"}, "Bake interrupted; nothing was changed")
            return {"CANCELLED"}
        self.report({"WARNING" if report.get("warnings") else "INFO"}, _summary(report))
        return {"FINISHED"}

    # modal --------------------------------------------------------------------------------------
    def invoke(self, context, event) -> "set[OperatorReturnItems]":
        if not _has_window(context):
            return self.execute(context)
        return self._start_modal(context, event)

    def _start_modal(self, context, event) -> "set[OperatorReturnItems]":
        bake = _addon_bake()
        try:
            job = _addon_worker().BackgroundBake(context.scene, allow_outside_paths=self.allow_outside_paths)
        except bake.UnsafePathError as exc:
            if event is None:  # already confirmed (cannot happen twice): report like any other error
                self.report({"ERROR"}, str(exc))
                return {"CANCELLED"}
            self.allow_outside_paths = True  # what execute() sees if the user confirms
            return context.window_manager.invoke_confirm(
                self,
                event,
                title="Write outside the .blend file's folder?",
                message=(
                    f"The PC2 Cache Folder '{exc.path}' of this file leads to '{exc.resolved}', outside the "
                    "file's folder. Write the cache files there?"
                ),
                confirm_text="Bake and Write There",
                icon="WARNING",
            )
        except bake.BakeError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        _running["job"] = job
        job.start()
        wm = context.window_manager
        self._timer = wm.event_timer_add(TIMER_INTERVAL, window=context.window)
        wm.progress_begin(0, job.job.frame_count)
        self._set_status(context, job)
        wm.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def modal(self, context, event) -> "set[OperatorReturnItems]":
        job = _running["job"]
        if job is None:
            return self._end(context, {"CANCELLED"})
        if event.type == "ESC" and event.value == "PRESS":
            job.cancel()
            self.report({"WARNING"}, f"Bake cancelled at frame {job.job.current_frame}; nothing was changed")
            return self._end(context, {"CANCELLED"})
        if event.type != "TIMER":
            return {"PASS_THROUGH"} if event.type in PASS_THROUGH_EVENTS else {"RUNNING_MODAL"}
        state = job.tick()  # reads the worker's progress; writes the results once it is done
        if state == "RUNNING":
            self._set_status(context, job)
            return {"RUNNING_MODAL"}
        if state == "FAILED":
            self.report({"ERROR"}, str(job.error))
            return self._end(context, {"CANCELLED"})
        report = job.report or {}
        self.report({"WARNING" if report.get("warnings") else "INFO"}, _summary(report))
        return self._end(context, {"FINISHED"})

    def cancel(self, context):
        # Blender ends the operator (window closed, file loaded): discard the bake
        job = _running["job"]
        if job is not None:
            job.cancel("interrupted")
        self._end(context, {"CANCELLED"})

    # helpers ------------------------------------------------------------------------------------
    def _set_status(self, context, job) -> None:
        progress = job.progress()
        settings = context.scene.contact_lab
        settings.is_baking = True
        settings.bake_progress = progress.fraction
        settings.bake_status = progress.text
        context.window_manager.progress_update(progress.frames_done)
        if context.workspace is not None:
            context.workspace.status_text_set(f"Contact Lab: {progress.text} — Esc to cancel")
        _tag_redraw(context)

    def _end(self, context, result: "set[OperatorReturnItems]") -> "set[OperatorReturnItems]":
        _running["job"] = None
        wm = context.window_manager
        timer = getattr(self, "_timer", None)
        if timer is not None:
            wm.event_timer_remove(timer)
            self._timer = None
        wm.progress_end()
        if context.workspace is not None:
            context.workspace.status_text_set(None)
        if context.scene is not None:
            settings = context.scene.contact_lab
            settings.is_baking = False
            settings.bake_progress = 0.0
            settings.bake_status = ""
        _tag_redraw(context)
        return result


class CONTACT_LAB_OT_clear_bake(bpy.types.Operator):
    """Remove the baked keyframes, shape keys and cache modifiers and restore the objects' previous animation"""

    bl_idname = "contact_lab.clear_bake"
    bl_label = "Clear Contact Lab Bake"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return context.scene is not None and _running["job"] is None

    def execute(self, context) -> "set[OperatorReturnItems]":
        bake = _addon_bake()
        cleared = bake.clear_bake(context.scene)
        if not cleared:
            self.report({"INFO"}, "Nothing to clear")
        else:
            self.report({"INFO"}, f"Cleared the bake of {len(cleared)} object(s)")
        return {"FINISHED"}


def _has_window(context) -> bool:
    """True in the UI (a window to run a modal bake in); False in background mode and without a window."""
    return not bpy.app.background and getattr(context, "window", None) is not None


def _summary(report: dict) -> str:
    """One line for the operator: what was baked, and the first warning (of the validation or the engine)."""
    warnings = report.get("warnings", [])
    text = _baked(report)
    return f"{text}; {len(warnings)} warning(s): {warnings[0]}" if warnings else text


def _baked(report: dict) -> str:
    frames = report["frames"]
    stats = report["stats"]
    seconds = report["timings"].get("total", 0.0)
    bodies = report["bodies"]
    if report.get("engine") in ("SOFT", "IPC"):
        boxes = len(bodies.get("active", []))
        extra = f" and {boxes} box(es)" if boxes else ""
        ipc = " with IPC" if report["engine"] == "IPC" else ""
        checked = ""
        if "intersections" in stats:
            checked = f"; {stats['intersections']} surfaces passing through, {stats.get('inverted', 0)} tets inside out"
        return (
            f"Baked {len(bodies.get('soft', []))} soft object(s){extra}{ipc}, frames {frames['start']}-{frames['end']} "
            f"in {seconds:.2f} s ({stats.get('tets', 0)} tets, up to {stats.get('max_newton_iterations', 0)} "
            f"solver iterations per step{checked})"
        )
    return (
        f"Baked {len(bodies['active'])} object(s), frames {frames['start']}-{frames['end']} "
        f"in {seconds:.2f} s (up to {stats['max_contacts']} contacts at once)"
    )


CLASSES = (CONTACT_LAB_OT_bake, CONTACT_LAB_OT_clear_bake)
