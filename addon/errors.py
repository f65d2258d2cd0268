"""The error every part of the bridge raises for the user: :class:`BakeError`."""

from __future__ import annotations


class BakeError(Exception):
    """A bake could not run or finish; the message is meant for the user (names object and frame)."""

    def __init__(self, message: str, *, object_name: str | None = None, frame: int | None = None):
        super().__init__(message)
        self.object_name = object_name
        """Name of the offending object, if one is to blame."""
        self.frame = frame
        """Scene frame at which the problem appeared, if it is tied to a frame."""
