"""The errors every engine raises: bad input (one class per engine's builder) and divergence.

Each input error is a :class:`ValueError` whose message names the offending object; the Blender bridge
turns it into a report that names the object and the fix.
"""

from __future__ import annotations


class ModelError(ValueError):
    """Invalid scene input to the rigid engine's builder; the message names the offending body."""


class SoftWorldError(ValueError):
    """Invalid input to the soft engine's builder (names the offending body or collider)."""


class IpcInputError(ValueError):
    """The start state is not admissible for IPC (surfaces touching or intersecting, inverted tets)."""


class DivergenceError(FloatingPointError):
    """A body's state became non-finite; nothing after ``frame`` is valid (any engine)."""

    def __init__(self, frame: int, body_index: list[int], body_label: list[str]):
        self.frame = frame
        """Output frame (0-based, as in the trajectory) during which the state blew up."""
        self.body_index = body_index
        """Indices of the bodies with a non-finite pose or velocity."""
        self.body_label = body_label
        """Their labels (Blender object names)."""
        names = ", ".join(body_label[:5]) + (" …" if len(body_label) > 5 else "")
        super().__init__(f"simulation diverged at frame {frame} (bodies: {names})")
