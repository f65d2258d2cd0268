"""Helpers the command-line tests share: running ``python -m contact_lab bake`` and fingerprinting a folder."""

import hashlib
import os
import subprocess
import sys


def run_cli(*args, timeout=600):
    """``python -m contact_lab bake ARGS`` in a child process of this tier's Python; the completed process."""
    return subprocess.run(
        [sys.executable, "-m", "contact_lab", "bake", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def file_tree(root, *, skip=()):
    """``{relative path: sha256 of the bytes, or 'dir'}`` of everything under ``root`` (hidden files too), but the
    relative file paths in ``skip``."""
    out = {}
    for folder, dirs, names in os.walk(root):
        for name in dirs:
            out[os.path.relpath(os.path.join(folder, name), root)] = "dir"
        for name in names:
            path = os.path.join(folder, name)
            if os.path.relpath(path, root) not in skip:
                with open(path, "rb") as fh:
                    out[os.path.relpath(path, root)] = hashlib.sha256(fh.read()).hexdigest()
    return out
