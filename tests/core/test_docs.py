"""The documentation works as written: its code runs, its commands exist, its links resolve, the README stays short.

Pages: ``README.md``, ``CHANGELOG.md``, every ``docs/*.md`` and ``tests/benchmarks/README.md``.

- Every fenced ``python`` block runs in a fresh namespace (in a temporary folder, ``print`` silenced), except the
  ones that need Blender (they name ``bpy``, ``bl_ext`` or the add-on's modules), which are compiled here and run
  in Blender by ``tests/blender/test_docs_scripting.py``; the library examples are also checked against their
  physics (the slide distance, the soft rest, the IPC gap).
- Every shell line (``sh``, ``bash``, ``shell``, ``console`` blocks; inline ``make X`` and ``python -m contact_lab``
  spans) names existing ``make`` targets, existing repository scripts, and the command line's real subcommands
  and options (``python -m contact_lab ...`` is checked against :func:`contact_lab.cli.command.build_parser`).
- Every relative link and image resolves to a file, and a ``#anchor`` to a heading of that file (GitHub's slugs).
- ``README.md`` is at most 12 KiB (the front door; the rest lives under ``docs/``).
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import shlex
import tempfile
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
README_MAX_BYTES = 12 * 1024
FIRST_PAGES = ("README.md", "docs/library.md")  # where the library examples are looked for first, in this order


def pages(root: Path = ROOT) -> list[Path]:
    """The documentation pages that exist under ``root``: README, CHANGELOG, docs/*.md, the benchmarks' README."""
    named = [root / "README.md", root / "CHANGELOG.md", root / "tests" / "benchmarks" / "README.md"]
    return [p for p in named if p.is_file()] + sorted((root / "docs").glob("*.md"))


def rel(path: Path, root: Path = ROOT) -> str:
    return path.relative_to(root).as_posix()


# ---------------------------------------------------------------------------------------------------------------
# Fenced blocks


@dataclass(frozen=True)
class Block:
    page: str  # path relative to the root
    line: int  # 1-based line of the opening fence
    lang: str
    text: str

    @property
    def name(self) -> str:
        return f"{self.page}:{self.line}"


FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<lang>[\w+-]*)")


def fenced_blocks(text: str, page: str) -> list[Block]:
    """The fenced code blocks of a Markdown text, dedented by their fence's indentation (blocks inside lists)."""
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, start = len(m["indent"]), m["fence"], i
        body, i = [], i + 1
        while i < len(lines) and not re.match(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", lines[i]):
            line = lines[i]
            body.append(line[min(indent, len(line) - len(line.lstrip())) :])
            i += 1
        blocks.append(Block(page, start + 1, m["lang"].lower(), "\n".join(body) + "\n"))
        i += 1
    return blocks


def blank_fences(text: str) -> str:
    """The text with every fenced block's lines blanked (line numbers kept)."""
    out, fence = [], None
    for line in text.splitlines():
        m = FENCE.match(line)
        if fence is None and m:
            fence = m["fence"]
            out.append("")
        elif fence is not None:
            if re.match(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", line):
                fence = None
            out.append("")
        else:
            out.append(line)
    return "\n".join(out)


def without_code(text: str) -> str:
    """The text with fenced blocks blanked (line numbers kept) and inline code spans removed."""
    return re.sub(r"(`+)(?:(?!\1)[^\n])+?\1", "", blank_fences(text))


@functools.cache
def all_blocks() -> tuple[Block, ...]:
    return tuple(b for p in pages() for b in fenced_blocks(p.read_text(encoding="utf-8"), rel(p)))


BLENDER_MARKERS = ("import bpy", "bpy.", "bl_ext", "contact_lab.addon", "contact_lab.operators", "contact_lab.panels")
"""A python block naming one of these needs Blender (or a Blender scene): it is compiled, not run."""


def needs_blender(block: Block) -> bool:
    return any(marker in block.text for marker in BLENDER_MARKERS)


def python_blocks() -> list[Block]:
    return [b for b in all_blocks() if b.lang in ("python", "py", "python3")]


RUNNABLE = [b for b in python_blocks() if not needs_blender(b)]
BLENDER_ONLY = [b for b in python_blocks() if needs_blender(b)]


@functools.cache
def run_block(block: Block) -> dict:
    """Execute a block once per session in a temporary folder; returns its namespace."""
    namespace = {"__name__": "__docs__", "print": lambda *args, **kwargs: None}
    here = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="contact_lab_docs_") as folder:
        os.chdir(folder)
        try:
            exec(compile(block.text, block.name, "exec"), namespace)
        finally:
            os.chdir(here)
    return namespace


def first_block(predicate) -> Block:
    """The first runnable block that satisfies ``predicate``: README, then docs/library.md, then the other pages."""
    order = {page: k for k, page in enumerate(FIRST_PAGES)}
    candidates = sorted(RUNNABLE, key=lambda b: (order.get(b.page, len(order)), b.page, b.line))
    found = next((b for b in candidates if predicate(b.text)), None)
    assert found is not None, "no documentation page shows this library example any more"
    return found


@pytest.mark.parametrize("block", RUNNABLE, ids=[b.name for b in RUNNABLE])
def test_every_python_example_runs(block):
    """Each python block that needs no Blender runs as printed."""
    run_block(block)


@pytest.mark.parametrize("block", BLENDER_ONLY, ids=[b.name for b in BLENDER_ONLY])
def test_python_examples_that_need_blender_compile(block):
    """Blocks that need bpy or a Blender scene are syntax-checked here (the Blender test tier runs the add-on)."""
    print(f"compiled only (needs Blender): {block.name}")
    compile(block.text, block.name, "exec")


def test_library_example_slides_the_documented_distance():
    """The library's first example: the box stops after v0² / (2 μ g) within 2 %."""
    namespace = run_block(first_block(lambda text: "from contact_lab.core import" in text))
    traj, box = namespace["traj"], namespace["box"]
    assert traj.body_pos[-1, box, 0] == pytest.approx(3.0**2 / (2 * 0.4 * 9.81), rel=0.02)
    assert abs(traj.body_vel[-1, box, 0]) < 1e-3


def test_library_soft_example_rests_on_the_plane():
    """The soft-engine example: the cube's lowest node rests within 2 mm of the plane, in contact."""
    namespace = run_block(first_block(lambda text: "soft.simulate(" in text))
    traj = namespace["traj"]
    assert traj.frames_done == traj.frame_count == 25
    assert abs(traj.node_pos[-1, :, 2].min()) < 2e-3  # dropped from 1 cm: on the plane, neither above nor through
    assert traj.contact_count[-1] > 0


def test_library_ipc_example_keeps_a_gap_and_never_intersects():
    """The IPC example: the cube ends resting inside the barrier's band, above 0, and no frame intersects."""
    namespace = run_block(first_block(lambda text: "ipc.simulate(" in text))
    traj = namespace["traj"]
    assert traj.frames_done == traj.frame_count
    start = traj.node_pos[0]
    dhat = 1e-3 * float(np.linalg.norm(start.max(axis=0) - start.min(axis=0)))
    assert 0.0 < traj.min_distance[-1] < dhat  # the automatic dhat: 1e-3 of the bounding-box diagonal
    assert traj.node_pos[-1, :, 2].min() > 0.0
    assert traj.intersections.sum() == 0 and traj.inverted.sum() == 0


# ---------------------------------------------------------------------------------------------------------------
# Shell lines: make targets, scripts, the command line's options


@functools.cache
def make_targets(makefile: Path = ROOT / "Makefile") -> frozenset[str]:
    """Every target the Makefile names (rule heads and .PHONY), without pattern or variable targets."""
    targets = set()
    for line in makefile.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^([^\s#=:][^=:]*?)\s*::?(?!=)", line)
        if m and not line.startswith("\t"):
            targets.update(t for t in m[1].split() if "$" not in t and "%" not in t)
    targets.discard(".PHONY")
    return frozenset(targets)


@functools.cache
def cli_parser() -> argparse.ArgumentParser:
    from contact_lab.cli.command import build_parser

    return build_parser()


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:  # argparse keeps its subparsers here; there is no public accessor
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _option_problem(parser: argparse.ArgumentParser, token: str, where: str) -> str | None:
    option = token.split("=", 1)[0]
    if not option.startswith("--") and len(option) > 2:
        option = option[:2]  # a short option with its value attached: -j4
    if option not in parser._option_string_actions:
        return f"{where}: `{option}` is not an option of `{parser.prog}`"
    return None


def cli_problems(args: list[str], where: str) -> list[str]:
    """What is wrong with ``python -m contact_lab ARGS`` as far as names go (values are not checked)."""
    parser = cli_parser()
    commands = _subcommands(parser)
    args = [a.strip("[]") for a in args if a.strip("[]") not in ("...", "…", "")]  # usage lines: [-o OUT] ...
    options = [t for t in args if t.startswith("-") and t != "-"]
    if not args or args[0].startswith("-"):
        return [p for t in options if (p := _option_problem(parser, t, where))]
    if args[0] not in commands:
        return [f"{where}: `{args[0]}` is not a command of `python -m contact_lab` ({', '.join(commands)})"]
    sub = commands[args[0]]
    return [p for t in options if (p := _option_problem(sub, t, where))]


SCRIPT = re.compile(r"^(?:\./)?((?:tests|demo|docs|cli|core|addon)/[\w./-]+\.(?:py|md|json|toml))(?:::\S*)?$")
ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def shell_commands(line: str) -> list[list[str]]:
    """The simple commands of one shell line as token lists: quotes respected, split at ``&& || ; | &``."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    commands: list[list[str]] = [[]]
    for token in lexer:
        if token and all(c in "&|;()<>" for c in token):
            commands.append([])
        else:
            commands[-1].append(token)
    return [c for c in commands if c]


def command_problems(tokens: list[str], where: str, root: Path = ROOT) -> list[str]:
    """Problems of one simple shell command: unknown make targets, missing scripts, unknown CLI names."""
    while tokens and ENV_ASSIGNMENT.match(tokens[0]):
        tokens = tokens[1:]
    problems = []
    for token in tokens:
        m = SCRIPT.match(token)
        if m and not (root / m[1]).exists():
            problems.append(f"{where}: `{m[1]}` does not exist")
    if tokens and tokens[0] == "make":
        targets = make_targets(root / "Makefile")
        for target in (t for t in tokens[1:] if not t.startswith("-") and "=" not in t):
            if target not in targets:
                problems.append(f"{where}: `make {target}`: the Makefile has no target {target!r}")
    for k in range(len(tokens) - 1):
        if tokens[k] == "-m" and tokens[k + 1] == "contact_lab":
            problems += cli_problems(tokens[k + 2 :], where)
        if tokens[k] == "--python-expr":
            try:
                compile(tokens[k + 1], where, "exec")
            except SyntaxError as exc:
                problems.append(f"{where}: the --python-expr does not compile: {exc}")
    return problems


def shell_lines(block: Block) -> list[tuple[int, str]]:
    """(line number, command line) of a shell block: continuations joined, prompts dropped."""
    out, pending, start = [], "", 0
    for k, line in enumerate(block.text.splitlines()):
        if not pending:
            start = block.line + 1 + k
        line = re.sub(r"^\s*\$ ", "", line) if not pending else line
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        out.append((start, pending + line))
        pending = ""
    if pending:
        out.append((start, pending))
    return out


def shell_problems(page: Path, root: Path = ROOT) -> list[str]:
    """Every problem of the page's shell blocks and inline ``make`` spans."""
    text, name = page.read_text(encoding="utf-8"), rel(page, root)
    problems = []
    for block in fenced_blocks(text, name):
        if block.lang not in ("sh", "bash", "shell", "console"):
            continue
        for number, line in shell_lines(block):
            try:
                commands = shell_commands(line)
            except ValueError as exc:
                problems.append(f"{name}:{number}: cannot parse `{line.strip()}`: {exc}")
                continue
            for tokens in commands:
                problems += command_problems(tokens, f"{name}:{number}", root)
    prose = blank_fences(text)
    for number, line in enumerate(prose.splitlines(), 1):
        for span in re.findall(r"`(make(?: [\w.-]+)+)`", line):
            problems += command_problems(span.split(), f"{name}:{number}", root)
        for span in re.findall(r"`([^`]*-m contact_lab\b[^`]*)`", line):
            for tokens in shell_commands(span):
                problems += command_problems(tokens, f"{name}:{number}", root)
    return problems


@pytest.mark.parametrize("page", pages(), ids=[rel(p) for p in pages()])
def test_shell_lines_name_existing_targets_scripts_and_options(page):
    problems = shell_problems(page)
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------------------------------------------------------
# Links and anchors


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading's text: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"!\[[^\]]*\]\([^)]*\)", "", heading)  # images
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links keep their text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").replace("*", "")
    text = unicodedata.normalize("NFC", text.strip().lower())
    text = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LNM")
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """The anchors of a page's headings (ATX headings outside code; repeated slugs numbered -1, -2, ...)."""
    seen: dict[str, int] = {}
    out = set()
    for line in without_code(text).splitlines():
        m = re.match(r"^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$", line)
        if not m:
            continue
        slug = github_slug(m[1])
        out.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
        seen[slug] = seen.get(slug, 0) + 1
    out.update(re.findall(r"<a\s+(?:name|id)=\"([^\"]+)\"", text))
    return out


LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$")
HTML = re.compile(r"<(?:img|a)\s[^>]*?(?:src|href)=\"([^\"]+)\"")


def link_targets(text: str) -> list[tuple[int, str]]:
    """(line, target) of every link, image, reference definition and HTML src/href outside code."""
    out = []
    for number, line in enumerate(without_code(text).splitlines(), 1):
        for pattern in (LINK, REFERENCE, HTML):
            out += [(number, target) for target in pattern.findall(line)]
    return out


def link_problems(page: Path, root: Path = ROOT) -> list[str]:
    """Relative links of ``page`` that lead to no file, or to no heading of the file."""
    text, name = page.read_text(encoding="utf-8"), rel(page, root)
    problems = []
    for number, target in link_targets(text):
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("//"):
            continue  # http:, https:, mailto: ...
        path, _, anchor = target.partition("#")
        resolved = (page.parent / unquote(path)).resolve() if path else page
        where = f"{name}:{number}: `{target}`"
        if not resolved.exists():
            problems.append(f"{where} leads to no file")
        elif anchor and resolved.suffix == ".md" and resolved.is_file():
            if anchor not in anchors(resolved.read_text(encoding="utf-8")):
                problems.append(f"{where}: {resolved.name} has no heading with the anchor #{anchor}")
    return problems


@pytest.mark.parametrize("page", pages(), ids=[rel(p) for p in pages()])
def test_relative_links_and_anchors_resolve(page):
    problems = link_problems(page)
    assert not problems, "\n".join(problems)


def test_readme_is_a_short_front_door():
    """README.md stays within 12 KiB; the details live under docs/."""
    size = README.stat().st_size
    assert size <= README_MAX_BYTES, f"README.md is {size} bytes, more than {README_MAX_BYTES}: move details to docs/"


def test_docs_index_links_every_page():
    """docs/README.md links every page under docs/ and the root's CHANGELOG.md and LICENSE."""
    index = ROOT / "docs" / "README.md"
    linked = {(index.parent / unquote(t.partition("#")[0])).resolve() for _, t in link_targets(index.read_text())}
    wanted = [p for p in (ROOT / "docs").glob("*.md") if p != index] + [ROOT / "CHANGELOG.md", ROOT / "LICENSE"]
    missing = sorted(rel(p) for p in wanted if p.exists() and p.resolve() not in linked)
    assert not missing, f"docs/README.md does not link {', '.join(missing)}"
