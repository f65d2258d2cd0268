"""All-or-nothing writes: a bake's results replace the previous ones together (Blender data and files) or not at all.

Every engine writes its results inside one :class:`Transaction`, in three phases:

1. **Prepare**: new data is built beside the old one, which is not touched: new actions, copies of the meshes
   that get new shape keys, PC2 files under hidden temporary names. Each new thing is registered to be removed
   if the transaction fails.
2. **Commit**: short, reversible steps swap the new data in: pointer assignments (an object's action or mesh),
   property sets (rotation mode, modifier settings), file renames (previous cache → a hidden backup, new file →
   the cache's name). Every step records the exact inverse of what it changed before the next step runs.
3. **Discard**: only once every step succeeded, what was replaced is removed: old meshes and actions, disabled
   cache modifiers, cache backups. Discarding cannot take the new results back; a failure in it leaves a harmless
   leftover (an orphan data-block, a hidden backup file), which is named in :attr:`Transaction.warnings`.

Any exception in phase 1 or 2 (``MemoryError`` and ``KeyboardInterrupt`` included) runs the recorded inverses in
reverse order, so the scene and the files on disk are as they were, and then propagates; an exception that is not
a :class:`~..errors.BakeError` becomes a :class:`WriteError` naming the step. If an inverse itself fails, the
others still run and a :class:`RollbackError` lists what could not be put back (a backup file is then kept, never
deleted).

This module knows neither bpy nor the engines: callers pass the changes as functions
(``txn.step(label, do, undo=...)``). Its file helpers (:meth:`Transaction.make_folder`,
:meth:`Transaction.stage_file`, :meth:`Transaction.replace_file`) are the PC2 caches' part of the mechanism.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from typing import Any, Literal, TypeVar

from ..errors import BakeError

T = TypeVar("T")

__all__ = ["RollbackError", "Transaction", "WriteError", "describe_exception"]


def describe_exception(exc: BaseException) -> str:
    """``"TypeName: message"`` (only the type name when the message is empty, e.g. a bare ``MemoryError``)."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class WriteError(BakeError):
    """Writing a bake's results failed and everything was put back as it was; the message names the step."""

    def __init__(self, message: str, *, step: str, object_name: str | None = None):
        super().__init__(message, object_name=object_name)
        self.step = step
        """Label of the step that failed."""


class RollbackError(BakeError):
    """Writing failed and some changes could not be undone; the message lists them and what to do."""

    def __init__(self, message: str, *, step: str, unrestored: list[str], object_name: str | None = None):
        super().__init__(message, object_name=object_name)
        self.step = step
        """Label of the step that failed."""
        self.unrestored = unrestored
        """Labels of the steps whose inverse failed, each with the error."""


class Transaction:
    """One all-or-nothing write (see the module docstring); use it as a context manager.

    >>> with Transaction("bake of scene 'Scene'") as txn:   # doctest: +SKIP
    ...     action = txn.step("build the action of 'Box'", build, undo=remove_action)
    ...     txn.step("give 'Box' its new action", lambda: assign(box, action), undo=lambda _: assign(box, old))
    ...     txn.on_commit("remove the previous action of 'Box'", lambda: remove_action(old))
    """

    def __init__(self, label: str = "bake"):
        self.label = label
        """What is written (for messages)."""
        self.warnings: list[str] = []
        """Leftovers of the discard phase that could not be removed (empty when everything went well)."""
        self.steps: list[str] = []
        """Labels of the steps run so far, in order (for reports and tests)."""
        self.state = "open"
        """'open', then 'committed' or 'rolled back'."""
        self._undo: list[tuple[str, Callable[[], Any]]] = []
        self._discard: list[tuple[str, Callable[[], Any]]] = []
        self._current: tuple[str, str | None] = ("", None)
        self._token = secrets.token_hex(4)

    # recording ------------------------------------------------------------------------------------
    def step(
        self,
        label: str,
        do: Callable[[], T],
        *,
        undo: Callable[[T], Any] | None = None,
        object_name: str | None = None,
    ) -> T:
        """Run ``do()`` as one step of the write and return its result.

        Args:
            label: what the step does, e.g. ``"give 'Jelly' its new mesh"`` (shown when it fails).
            do: the change. It must either complete or leave nothing behind when it raises (a builder removes
                what it created before re-raising).
            undo: called with ``do()``'s result if the transaction fails later; restores exactly what ``do``
                changed.
            object_name: the object the step is about, for the error.
        """
        if self.state != "open":
            raise RuntimeError(f"{self.label}: the transaction is already {self.state}")
        self._current = (label, object_name)
        self.steps.append(label)
        result = do()
        if undo is not None:
            self._undo.append((label, lambda: undo(result)))
        self._current = ("", None)  # an error between steps is not this step's
        return result

    def on_rollback(self, label: str, undo: Callable[[], Any]) -> None:
        """Register ``undo()`` to run if the transaction fails (e.g. a snapshot taken before several steps)."""
        self._undo.append((label, undo))

    def on_commit(self, label: str, discard: Callable[[], Any]) -> None:
        """Register ``discard()`` to run once everything is committed, in registration order (best effort)."""
        self._discard.append((label, discard))

    # files ----------------------------------------------------------------------------------------
    def make_folder(self, folder: str, *, label: str) -> None:
        """Create ``folder`` and its missing parents; on failure the ones created are removed again (if empty)."""

        def create() -> list[str]:
            missing = []
            path = os.path.abspath(folder)
            while not os.path.lexists(path):
                missing.append(path)
                parent = os.path.dirname(path)
                if parent == path:
                    break
                path = parent
            os.makedirs(folder, exist_ok=True)
            return missing  # deepest first

        def remove(created: list[str]) -> None:
            for path in created:
                try:
                    os.rmdir(path)
                except OSError:
                    if os.path.isdir(path) and os.listdir(path):
                        continue  # something else wrote into it meanwhile: not ours to delete
                    raise

        self.step(label, create, undo=remove)

    def stage_file(
        self, target: str, write: Callable[[str], Any], *, label: str, object_name: str | None = None
    ) -> str:
        """Write a new version of ``target`` beside it under a hidden temporary name; return that name.

        ``write(path)`` writes the file. The temporary file is deleted if the transaction fails; the previous
        ``target`` is not touched (:meth:`replace_file` puts the new one in place).
        """
        folder, name = os.path.split(target)
        staged = os.path.join(folder, f".{name}.{self._token}.new")

        def create() -> str:
            try:
                write(staged)
            except BaseException:
                _unlink_quietly(staged)
                raise
            return staged

        return self.step(label, create, undo=lambda path: _unlink_quietly(path), object_name=object_name)

    def replace_file(self, staged: str, target: str, *, label: str, object_name: str | None = None) -> None:
        """Put the staged file in place of ``target``: the previous one becomes a hidden backup, deleted on commit.

        Two renames in the same folder (atomic on POSIX and NTFS); a failure renames the backup back. A symlink
        at ``target`` is moved aside like a file, never written through.
        """
        folder, name = os.path.split(target)
        backup = os.path.join(folder, f".{name}.{self._token}.previous")
        if os.path.lexists(target):
            self.step(
                f"{label}: keep the previous file as {os.path.basename(backup)}",
                lambda: os.replace(target, backup),
                undo=lambda _: os.replace(backup, target),
                object_name=object_name,
            )
            self.on_commit(f"delete the previous file {backup}", lambda: os.unlink(backup))
        self.step(
            label,
            lambda: os.replace(staged, target),
            undo=lambda _: os.replace(target, staged),
            object_name=object_name,
        )

    # outcome --------------------------------------------------------------------------------------
    def __enter__(self) -> Transaction:
        return self

    # Literal[False]: the exception always propagates, so names bound inside the ``with`` are bound after it.
    def __exit__(self, exc_type, exc, tb) -> Literal[False]:
        if exc is None:
            self._commit()
            return False
        self._rollback(exc)
        return False  # re-raise (unless _rollback raised a clearer error)

    def _commit(self) -> None:
        self.state = "committed"
        self._undo.clear()
        for label, discard in self._discard:
            self._discard_one(label, discard)
        self._discard.clear()

    def _discard_one(self, label: str, discard: Callable[[], Any]) -> None:
        try:
            discard()
        except Exception as exc:  # the results are in place: a leftover is reported, not raised
            self.warnings.append(f"could not {label} ({describe_exception(exc)}); it is a leftover, safe to delete")

    def _rollback(self, exc: BaseException) -> None:
        self.state = "rolled back"
        label, object_name = self._current
        unrestored = []
        while self._undo:
            undo_label, undo = self._undo.pop()
            try:
                undo()
            except BaseException as undo_exc:  # keep undoing the rest: as much as possible goes back
                unrestored.append(f"{undo_label} ({describe_exception(undo_exc)})")
        self._discard.clear()
        where = f" while trying to {label}" if label else ""
        if unrestored:
            raise RollbackError(
                f"Writing the {self.label} failed{where} ({describe_exception(exc)}) and these changes could not be "
                f"undone: {'; '.join(unrestored)}. Check these objects and files before saving (previous cache "
                "files are kept as hidden '.previous' files next to their target)",
                step=label,
                unrestored=unrestored,
                object_name=object_name,
            ) from exc
        if isinstance(exc, Exception) and not isinstance(exc, BakeError):
            raise WriteError(
                f"Writing the {self.label} failed{where} ({describe_exception(exc)}); nothing was changed: the "
                "scene and the cache files are as they were before the bake",
                step=label,
                object_name=object_name,
            ) from exc


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
