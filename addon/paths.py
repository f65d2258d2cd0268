"""Where a bake may write files: output folders read from a .blend stay inside the folders the user trusts.

A .blend file carries its own output settings: the PC2 Cache Folder (``scene.contact_lab.soft_cache_dir``) is
whatever the file says, so a downloaded file could point it at ``//../../../.config/autostart/``, at an absolute
path, or through a symlink out of its folder. Contact Lab writes such a folder only when it resolves (absolute,
``..`` collapsed, symlinks followed: :func:`os.path.realpath`) inside

- the folder of the .blend file (itself resolved), or
- a folder the user chose for this bake (``trusted``: the CLI passes the folder of its ``-o`` output),

unless the user allows it for this bake: the UI asks for a confirmation, the CLI needs ``--allow-outside-paths``,
scripts pass ``allow_outside_paths=True``. An unsaved file has no folder and was not read from disk: what its
settings say was typed in this session, and is not restricted.

Pure functions of paths (no bpy): :func:`check_inside` (the policy) and :func:`check_writable` (the folder can be
written or created, checked before simulating, without creating anything).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from .errors import BakeError

__all__ = ["FolderError", "UnsafePathError", "check_inside", "check_writable", "is_inside", "real_path"]


class FolderError(BakeError):
    """A folder setting cannot be used: ``problem`` and ``fix`` apart (Check Scene shows them in two places)."""

    def __init__(self, problem: str, fix: str, *, note: str = ""):
        super().__init__(f"{problem}: {fix}{note}")
        self.problem = problem
        self.fix = fix


class UnsafePathError(BakeError):
    """An output folder read from a .blend resolves outside the folders the user trusts (see the module docstring)."""

    def __init__(self, message: str, *, setting: str, path: str, resolved: str, roots: list[str]):
        super().__init__(message)
        self.setting = setting
        """The setting's name as the UI shows it, e.g. ``"PC2 Cache Folder of scene 'Scene'"``."""
        self.path = path
        """The setting's value as stored in the file, e.g. ``"//../../x/"``."""
        self.resolved = resolved
        """Where it leads: absolute, symlinks followed."""
        self.roots = roots
        """The folders it would have had to be inside (resolved)."""


def real_path(path: str) -> str:
    """``path`` absolute, normalised and with every symlink of its existing part followed."""
    return os.path.realpath(os.path.abspath(path))


def is_inside(path: str, root: str) -> bool:
    """True when the resolved ``path`` is ``root`` or below it (both resolved; different drives: False)."""
    path, root = real_path(path), real_path(root)
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:  # different drives (Windows)
        return False


def check_inside(
    folder: str,
    *,
    setting: str,
    raw: str,
    blend_path: str,
    trusted: Iterable[str] = (),
    allow_outside: bool = False,
) -> str:
    """Apply the policy of the module docstring to one output folder; return the folder resolved.

    Args:
        folder: the folder as Blender resolves it (absolute; ``//`` already expanded).
        setting: the setting's name for the message, e.g. ``"PC2 Cache Folder of scene 'Scene'"``.
        raw: the setting's value as stored in the file (shown in the message).
        blend_path: the .blend file's path ('' when unsaved: nothing is checked).
        trusted: folders the user chose for this bake (e.g. the CLI's output folder).
        allow_outside: the user allowed writing outside (UI confirmation, ``--allow-outside-paths``).

    Raises:
        UnsafePathError: ``folder`` resolves outside every allowed folder; the message names the setting, the
            path, where it resolves and how to allow it.
    """
    resolved = real_path(folder)
    if allow_outside or not blend_path:
        return resolved
    roots = [real_path(os.path.dirname(os.path.abspath(blend_path)))]
    roots += [real_path(root) for root in trusted if root]
    if any(is_inside(resolved, root) for root in roots):
        return resolved
    shown = f"'{roots[0]}'" + "".join(f" or '{root}'" for root in roots[1:])
    inside = "one of them" if len(roots) > 1 else "it"
    # an absolute setting that is already where it leads is named once
    where = " is" if os.path.normpath(raw) == resolved else f" resolves to '{resolved}',"
    raise UnsafePathError(
        f"The {setting} '{raw}'{where} outside the .blend file's folder"
        f"{' and the chosen output folder' if len(roots) > 1 else ''} ({shown}). A .blend file may only write "
        f"inside its own folder unless you allow it: confirm the prompt when baking in Blender, pass "
        f"--allow-outside-paths to 'python -m contact_lab bake', or bake with allow_outside_paths=True from a "
        f"script; or choose a folder inside {inside}, e.g. '//contact_lab_cache/'. Nothing was written",
        setting=setting,
        path=raw,
        resolved=resolved,
        roots=roots,
    )


def check_writable(folder: str, *, setting: str) -> None:
    """Check that the files of ``folder`` can be written: it is a writable folder, or it can be created.

    Creates nothing: an existing folder must be a writable directory; a missing one needs its nearest existing
    parent to be a writable directory (a regular file on the way makes it impossible).

    Raises:
        FolderError: the folder is a file, lies under a file, or is not writable; the message names the setting.
    """
    path = os.path.abspath(folder)
    probe = path
    while not os.path.exists(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    if not os.path.isdir(probe):
        where = "is a file" if probe == path else f"cannot be created: '{probe}' is a file, not a folder"
        raise FolderError(f"The {setting} '{path}' {where}", "choose a folder", note="; nothing was changed")
    if not os.access(probe, os.W_OK | os.X_OK):
        what = "is not writable" if probe == path else f"cannot be created: '{probe}' is not writable"
        raise FolderError(
            f"The {setting} '{path}' {what}", "choose a folder you can write to", note="; nothing was changed"
        )
