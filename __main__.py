"""``python -m contact_lab bake IN.blend [more.blend ...] [options]``: the command line (:mod:`.cli`).

Arguments, exit codes and batches are :mod:`.cli.command`'s; a single file is baked in this process by
:mod:`.cli.single`, which is imported only then (it needs ``bpy``; a batch process never loads it).
"""

from __future__ import annotations

from .cli.command import EXIT_BAKE_ERROR, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, build_parser, exit_process
from .cli.command import main as run

__all__ = [
    "EXIT_BAKE_ERROR", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE", "bake_file", "build_parser", "export_fclib", "main",
]  # fmt: skip


def bake_file(args) -> tuple[int, dict]:
    """Bake one file in this process (:func:`.cli.single.bake_file`): ``(exit code, report)``."""
    from .cli import single

    return single.bake_file(args)


def export_fclib(args) -> int:
    """``export-fclib`` in this process (:func:`.cli.fclib_export.export`, which needs ``bpy``): the exit code."""
    from .cli import fclib_export

    return fclib_export.export(args)


def main(argv: list[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); returns the exit code."""
    return run(argv, bake_file, export_fclib)


if __name__ == "__main__":
    exit_process(main())
