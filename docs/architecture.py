"""Draw docs/architecture.svg from the code tree: the layers, the sibling engines and the data flow.

Everything in the picture is read from the package: folders and modules from the file system, the imports
between them with ``ast``, and each engine (a core/ folder defining ``iter_simulate``) with its builder, model
and result type from that function's signature. A new engine folder or module appears by re-running this
script, and ``tests/core/test_architecture.py`` fails while the committed SVG differs from what the tree gives.

Usage: .venv/bin/python docs/architecture.py [--check]
"""

from __future__ import annotations

import ast
import functools
import math
import sys
from pathlib import Path
from xml.sax.saxutils import escape

ROOT = Path(__file__).resolve().parents[1]
SVG_PATH = ROOT / "docs" / "architecture.svg"
UI_PACKAGES = ("operators", "panels", "cli")  # with the root *.py files, the UI layer (cli: the command line)
PACKAGES = (*UI_PACKAGES, "addon", "core")
ENGINE_ORDER = ("rigid", "soft", "ipc")  # left to right; any other engine folder follows by name
ROLES = {"__init__.py": "Blender's entry point", "__main__.py": "headless CLI", "registration.py": "registers it all"}
WIDTH, LANE, MARGIN, LINE = 1040, 130, 12, 12
MID_X = MARGIN + LANE + 14
MID_W = WIDTH - 2 * MID_X
STYLE = """
text { font-family: sans-serif; font-size: 10px; fill: #1f2937; } .mod { fill: #4b5563; } .flow { fill: #b45309; }
.title { font-size: 17px; font-weight: bold; } .band { font-size: 12px; font-weight: bold; fill: #374151; }
.head { font-size: 11px; font-weight: bold; } .note { fill: #6b7280; font-style: italic; }
.bad { fill: #c0392b; font-weight: bold; } .box { fill: #ffffff; stroke: #8a94a6; }
.node { fill: #fff4e5; stroke: #d9822b; stroke-width: 1.5; } path.flow { fill: none; stroke: #d9822b; stroke-width: 2; }
path.dep { fill: none; stroke: #6b7280; stroke-width: 1.2; }
"""
Parts = tuple[str, ...]


# ---- reading the tree ---------------------------------------------------------------------------------------
def source_files(root: Path) -> list[Path]:
    """Every module of the package: the root *.py files and the *.py files under the package folders."""
    return sorted(root.glob("*.py")) + [p for top in PACKAGES for p in sorted((root / top).rglob("*.py"))]


def is_module(root: Path, parts: Parts) -> bool:
    """Whether ``parts`` names a module file or a package folder of the tree."""
    path = root.joinpath(*parts)
    return (bool(parts) and path.with_suffix(".py").is_file()) or (path / "__init__.py").is_file()


def parse(path: Path) -> ast.Module:
    """The syntax tree of the file at ``path``, parsed once per version of the file (the picture and its tests read
    every module several times)."""
    stat = path.stat()
    return _parse(path, stat.st_mtime_ns, stat.st_size)


@functools.cache
def _parse(path: Path, mtime_ns: int, size: int) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def imports(root: Path = ROOT) -> list[tuple[Parts, Parts]]:
    """(importing module, imported module or package) as path parts, for every in-package import, by ``ast``."""
    edges = set()
    for path in source_files(root):
        source = path.relative_to(root).with_suffix("").parts
        for node in ast.walk(parse(path)):
            if isinstance(node, ast.Import):
                edges |= {
                    (source, tuple(a.name.split(".")[1:])) for a in node.names if a.name.startswith("contact_lab")
                }
            elif isinstance(node, ast.ImportFrom) and (node.level or node.module.startswith("contact_lab")):
                module = tuple(node.module.split(".")) if node.module else ()
                base = source[: len(source) - node.level] + module if node.level else module[1:]
                for alias in node.names:  # ``from . import x`` imports module x if there is one, else names of .
                    edges.add((source, base + (alias.name,) if is_module(root, base + (alias.name,)) else base))
    return sorted(edges)


def box_key(root: Path, parts: Parts) -> str:
    """The box that shows a module: ``core/rigid/``, ``addon/``, ``core/*.py``, ``operators/``, ``__main__.py``."""
    top = parts[0] if parts else "__init__"
    if top in ("core", "addon") and len(parts) > 1 and (root / top / parts[1]).is_dir():
        return f"{top}/{parts[1]}/"
    if top == "core":
        return "core/" if parts[1:] in ((), ("__init__",)) else "core/*.py"
    return f"{top}/" if (root / top).is_dir() else f"{top}.py"


def listing(folder: Path, folders: bool = True) -> list[str]:
    """Modules (no .py) and, if ``folders``, subpackages (with /) directly in a package folder, sorted."""
    names = [p.stem for p in folder.glob("*.py") if p.name != "__init__.py"]
    return sorted(names + [p.name + "/" for p in folder.iterdir() if folders and (p / "__init__.py").is_file()])


def imported_classes(path: Path, body: list[ast.stmt]) -> dict[str, ast.ClassDef]:
    """The top-level classes a module imports by relative ``from`` imports from module files beside it or above
    (an engine's builder may live in a shared piece, e.g. core/fem/), by name."""
    found = {}
    for node in body:
        if isinstance(node, ast.ImportFrom) and node.level and node.module:
            source = path.parents[node.level - 1].joinpath(*node.module.split(".")).with_suffix(".py")
            if source.is_file():
                names = {a.name for a in node.names}
                tree = parse(source).body
                found |= {n.name: n for n in tree if isinstance(n, ast.ClassDef) and n.name in names}
    return found


def engine_shape(folder: Path) -> tuple[str, str, str] | None:
    """(builder, model, result) of an engine folder, read from its ``iter_simulate``; None if it has none."""
    classes = {}  # every top-level class of the folder or imported into it, and the first top-level iter_simulate
    funcs = []
    for path in sorted(folder.rglob("*.py")):
        body = parse(path).body
        funcs += [n for n in body if isinstance(n, ast.FunctionDef) and n.name == "iter_simulate"]
        classes |= {n.name: n for n in body if isinstance(n, ast.ClassDef)}
        classes |= imported_classes(path, body)
    if not funcs:
        return None
    argument, returns = funcs[0].args.args[0].annotation, funcs[0].returns
    model = ast.unparse(argument) if argument else "model"
    result = [n.id for n in ast.walk(returns) if isinstance(n, ast.Name)][-1] if returns else "result"
    builders = []  # a class whose finalize() returns the model, else the model wrapping its first argument
    for cls in sorted(classes.values(), key=lambda c: c.name):
        for fn in (n for n in cls.body if isinstance(n, ast.FunctionDef)):
            if fn.name == "finalize" and fn.returns and ast.unparse(fn.returns) == model:
                builders.insert(0, cls.name)
            elif cls.name == model and fn.name == "__init__" and fn.args.args[1:] and fn.args.args[1].annotation:
                builders.append(f"{model}({ast.unparse(fn.args.args[1].annotation)})")
    return (builders or [model])[0], model, result


def engines(root: Path = ROOT) -> dict[str, tuple[str, str, str]]:
    """Engine name -> (builder, model, result), for every package folder in core/ with an ``iter_simulate``."""
    found = {n[:-1]: engine_shape(root / "core" / n) for n in listing(root / "core") if n.endswith("/")}
    order = [e for e in ENGINE_ORDER if found.get(e)] + sorted(e for e in found if found[e] and e not in ENGINE_ORDER)
    return {name: found[name] for name in order}


# ---- drawing ------------------------------------------------------------------------------------------------
def text_width(text: str, size: float = 10.0) -> float:
    """A generous estimate of the width of ``text`` in a generic sans-serif font (DejaVu Sans is the widest)."""
    narrow, wide = "fijlrt.,:;'|()[] /", "mwMW"
    return size * sum(0.3 if c in narrow else 0.88 if c in wide else 0.7 if c.isupper() else 0.57 for c in text)


def num(value: float) -> str:
    """A coordinate rounded to 0.1, so the same tree gives a byte-identical file."""
    return f"{round(value, 1):g}"


def txt(x: float, y: float, s: str, cls: str, anchor: str = "start") -> str:
    """One SVG text element."""
    return f'<text x="{num(x)}" y="{num(y)}" class="{cls}" text-anchor="{anchor}">{escape(s)}</text>'


def rect(x: float, y: float, w: float, h: float, cls: str = "", fill: str = "", r: int = 4) -> str:
    """One SVG rectangle with rounded corners, styled by class or filled with a colour."""
    paint = f'class="{cls}"' if cls else f'fill="{fill}"'
    return f'<rect x="{num(x)}" y="{num(y)}" width="{num(w)}" height="{num(h)}" rx="{r}" {paint}/>'


def arrow(d: str, kind: str = "dep") -> str:
    """One SVG path with an arrowhead at its end: ``dep`` (an import, gray) or ``flow`` (data flow, orange)."""
    return f'<path d="{d}" class="{kind}" marker-end="url(#{kind})"/>'


class Box:
    """A titled box of module names, in as many columns as fit, with optional orange flow lines."""

    def __init__(self, key: str, names: list[str], flow: tuple[str, ...] = ()):
        self.key, self.names, self.flow = key, names, flow

    def columns(self, cols: int) -> list[list[str]]:
        """The names split column-major into at most ``cols`` columns."""
        rows = max(1, math.ceil(len(self.names) / cols))
        return [self.names[i : i + rows] for i in range(0, len(self.names), rows)]

    def need(self) -> float:
        """The width this box would like (names in columns of about four), for a weighted row."""
        names = sum(max(map(text_width, c)) + 14 for c in self.columns(max(1, math.ceil(len(self.names) / 4))))
        return max([text_width(self.key, 11.5), *(text_width(s) for s in self.flow), names, 60]) + 16

    def place(self, x: float, y: float, w: float) -> None:
        """Fix position and width; the height follows from the most columns of names that fit."""
        self.x, self.y, self.w = x, y, w
        for cols in range(max(1, len(self.names)), 0, -1):
            self.cols = self.columns(cols)
            widths = [max(map(text_width, c)) for c in self.cols]
            if cols == 1 or sum(widths) + 14 * (len(widths) - 1) <= w - 16:
                break
        gap = min(max(14, (w - 16 - sum(widths)) / max(1, len(widths) - 1)), 36)
        self.col_x = [x + 8 + sum(widths[:i]) + i * gap for i in range(len(widths))]
        self.h = 24 + LINE * (len(self.flow) + max(map(len, self.cols), default=0))

    def svg(self) -> list[str]:
        """The box, its title, its flow lines and its module names."""
        out = [rect(self.x, self.y, self.w, self.h, "box"), txt(self.x + 8, self.y + 15, self.key, "head")]
        out += [txt(self.x + 8, self.y + 15 + LINE * (i + 1), s, "flow") for i, s in enumerate(self.flow)]
        top = self.y + 15 + LINE * (len(self.flow) + 1)
        for column, x in zip(self.cols, self.col_x, strict=True):
            out += [txt(x, top + LINE * i, name, "mod") for i, name in enumerate(column)]
        return out


class Picture:
    """The SVG being drawn: layer bands of box rows in the middle, the data flow in two side lanes."""

    def __init__(self, root: Path):
        self.engines, self.body, self.bands, self.rows, self.y = engines(root), [], [], {}, 54.0
        pairs = {(box_key(root, a), box_key(root, b)) for a, b in imports(root)}
        self.edges = sorted((a, b) for a, b in pairs if a != b)  # imports between boxes

    def band(self, name: str, label: str, rows: list[tuple[str, bool, float]], boxes_of: dict[str, list[Box]]) -> None:
        """One layer: a label, then rows of boxes (widths by need or equal, ``lift`` = room above for arcs)."""
        top, gap = self.y, 14
        self.y += 26
        for key, equal, lift in (r for r in rows if boxes_of[r[0]]):
            boxes = boxes_of[key]
            weights, x = [1.0 if equal else b.need() for b in boxes], MID_X
            for box, weight in zip(boxes, weights, strict=True):
                box.place(x, self.y + lift, (MID_W - gap * (len(boxes) - 1)) * weight / sum(weights))
                x += box.w + gap
                self.body += box.svg()
            self.rows[key] = (self.y + lift, self.y + lift + max(b.h for b in boxes))
            self.y = self.rows[key][1] + 12
        self.bands.append((name, label, top, self.y - 2))
        self.y += 26

    def imports_note(self, y: float, upper: list[Box], lower: list[Box], text: str, lower_too: str = "") -> None:
        """A down arrow between two rows naming the boxes that import downward; any upward import in red.
        ``lower_too``: one more key counted as below (``core/``, the core package's own __init__.py)."""
        up, low = {b.key for b in upper}, {b.key for b in lower} | {lower_too}
        down = sorted({a for a, b in self.edges if a in up and b in low})
        wrong = sorted(f"{a} → {b}" for a, b in self.edges if a in low and b in up)
        self.body.append(arrow(f"M{num(MID_X + 10)},{num(y)} v22"))
        self.body.append(txt(MID_X + 20, y + 15, f"{', '.join(down)} {text}", "note"))
        if wrong:
            self.body.append(txt(MID_X + MID_W, y + 15, "imports upward: " + ", ".join(wrong), "bad", "end"))

    def sibling_arcs(self, boxes: list[Box]) -> None:
        """An arc above the row for each import between sibling engine folders."""
        where = {b.key: b for b in boxes}
        for a, b in (e for e in self.edges if e[0] in where and e[1] in where):
            x1, x2, y = where[a].x + where[a].w / 2, where[b].x + where[b].w / 2, where[a].y
            self.body.append(arrow(f"M{num(x1)},{num(y)} Q{num((x1 + x2) / 2)},{num(y - 24)} {num(x2)},{num(y)}"))
            label = f"{a.split('/')[-2]} imports {b.split('/')[-2]}"
            self.body.append(txt((x1 + x2) / 2, y - 14, label, "note", "middle"))

    def lane(self, x: float, nodes: list[tuple[str, list[str], str, str]], down: bool) -> float:
        """Flow nodes (title, lines, row they sit beside, label of the arrow out) in a side lane; returns the
        y where the flow leaves the lane (bottom of the last node) or enters it (bottom of the first)."""
        placed, cx = [], x + LANE / 2
        for row in dict.fromkeys(n[2] for n in nodes):
            group = [n for n in nodes if n[2] == row]
            heights = [26 + LINE * len(n[1]) for n in group]
            y = sum(self.rows[row]) / 2 - (sum(heights) + 22 * (len(group) - 1)) / 2
            for node, h in zip(group, heights, strict=True):
                placed.append((node, y, h))
                self.body += [rect(x, y, LANE, h, "node", r=8), txt(cx, y + 16, node[0], "head", "middle")]
                self.body += [txt(cx, y + 16 + LINE * (i + 1), s, "flow", "middle") for i, s in enumerate(node[1])]
                y += h + 22
        for (a, ya, ha), (_, yb, hb) in zip(placed, placed[1:], strict=False):  # a feeds b
            start, end = (ya + ha, yb - 2) if down else (ya, yb + hb + 2)
            self.body.append(arrow(f"M{num(cx)},{num(start)} V{num(end)}", "flow"))
            side = (6, "start") if down else (-6, "end")
            self.body.append(txt(cx + side[0], (start + end) / 2 + 4, a[3], "flow", side[1]))
        return placed[-1][1] + placed[-1][2] if down else placed[0][1] + placed[0][2]

    def svg(self, height: float) -> str:
        """The whole file: style, arrowheads, the layer bands under everything drawn, title and legend."""
        fills, lx = {"ui": "#eaf1fb", "bridge": "#eaf7ec", "core": "#fbf3e6"}, WIDTH - MARGIN - 250
        bands = [rect(MARGIN - 6, t, WIDTH - 2 * MARGIN + 12, b - t, fill=fills[n], r=8) for n, _, t, b in self.bands]
        bands += [txt(MID_X, t + 17, label, "band") for _, label, t, _ in self.bands]
        legend = [
            txt(MARGIN, 26, "Contact Lab: layers and data flow", "title"),
            txt(MARGIN, 41, "drawn from the code tree by docs/architecture.py", "note"),
            arrow(f"M{lx},16 h24"),
            txt(lx + 32, 19, "imports: they point down, UI → bridge → core", "note"),
            arrow(f"M{lx},32 h24", "flow"),
            txt(lx + 32, 35, "data flow", "flow"),
        ]
        markers = [
            f'<marker id="{i}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto">'
            f'<path d="M0,0 L10,5 L0,10 z" fill="{c}"/></marker>'
            for i, c in (("dep", "#6b7280"), ("flow", "#d9822b"))
        ]
        size = f'width="{WIDTH}" height="{num(height)}" viewBox="0 0 {WIDTH} {num(height)}"'
        head = [f'<svg xmlns="http://www.w3.org/2000/svg" {size} font-family="sans-serif">', f"<style>{STYLE}</style>"]
        head += ["<defs>", *markers, "</defs>", rect(0, 0, WIDTH, height, fill="#ffffff", r=0)]
        return "\n".join([*head, *bands, *legend, *self.body, "</svg>", ""])


def rows_of_boxes(root: Path, found: dict[str, tuple[str, str, str]]) -> dict[str, list[Box]]:
    """The boxes of each row, from the tree: UI packages and root files; addon's own modules and non-engine
    folders, then its engine folders; the core engines, then core's other folders and loose modules."""
    addon = [Box(f"addon/{n}", listing(root / "addon" / n)) for n in listing(root / "addon") if n[-1] == "/"]
    core = [Box(f"core/{n}", listing(root / "core" / n)) for n in listing(root / "core") if n[-1] == "/"]
    flows = {n: (b if "(" in b else f"{b} → {m}", f"iter_simulate → {r}") for n, (b, m, r) in found.items()}
    ui = [Box(p.name, [ROLES[p.name]] if p.name in ROLES else []) for p in sorted(root.glob("*.py"))]
    return {
        "ui": [Box(f"{p}/", listing(root / p)) for p in UI_PACKAGES] + ui,
        "addon": [Box("addon/", listing(root / "addon", False))] + [b for b in addon if b.key[6:-1] not in found],
        "addon_engines": [
            Box(f"addon/{n}/", listing(root / "addon" / n)) for n in found if (root / "addon" / n).is_dir()
        ],
        "engines": [Box(f"core/{n}/", listing(root / "core" / n), flows[n]) for n in found],
        "shared": [b for b in core if b.key[5:-1] not in found] + [Box("core/*.py", listing(root / "core", False))],
    }


def render(root: Path = ROOT) -> str:
    """The architecture picture of the tree at ``root``, as SVG text."""
    pic = Picture(root)
    row = rows_of_boxes(root, pic.engines)
    bridge, core = row["addon"] + row["addon_engines"], row["engines"] + row["shared"]
    pic.band("ui", "UI: operators, panels, registration (thin; bpy)", [("ui", False, 0)], row)
    pic.imports_note(pic.y - 26, row["ui"], bridge, "import addon/")
    label = "Bridge: addon/, Blender scene ↔ core model (bpy; the only unit conversion)"
    pic.band("bridge", label, [("addon", False, 0), ("addon_engines", True, 18)], row)
    pic.imports_note(pic.y - 26, bridge, core, "import core/", "core/")
    label = "Core: numpy + Numba, never bpy; sibling engines with the same shape from outside"
    pic.band("core", label, [("engines", True, 18), ("shared", False, 28)], row)
    note = "import the shared pieces, which import no engine"
    pic.imports_note(pic.rows["engines"][1] + 4, row["engines"], row["shared"], note)
    pic.sibling_arcs(row["addon_engines"])
    pic.sibling_arcs(row["engines"])

    # the data flow: down the left lane, along the bottom (the steps), up the right lane
    eng, output = list(pic.engines.values()), [b.names for b in row["addon"] if b.key == "addon/output/"]
    left = [
        ("Blender objects", ["scene + animation"], "ui", "read"),
        ("gather, build", ["addon/<engine>/", "gather.py, build.py"], "addon_engines", "SI units"),
        ("builder", [e[0] for e in eng], "engines", "finalize()"),
        ("model / state", [e[1] for e in eng], "engines", ""),
    ]
    right = [
        ("result", [e[2] for e in eng], "engines", "per frame"),
        ("writers", ["addon/output/", *(output[0] if output else [])], "addon", "writes"),
        ("Blender data", ["keyframes, shape keys,", "PC2 caches"], "ui", ""),
    ]
    start, end = pic.lane(MARGIN, left, down=True), pic.lane(WIDTH - MARGIN - LANE, right, down=False)
    bottom, lx, rx = pic.y - 12, MARGIN + LANE / 2, WIDTH - MARGIN - LANE / 2
    pic.body.append(arrow(f"M{num(lx)},{num(start)} V{num(bottom)} H{num(rx)} V{num(end + 2)}", "flow"))
    pic.body.append(txt(WIDTH / 2, bottom + 15, "steps: iter_simulate(...) yields after each frame", "flow", "middle"))
    return pic.svg(height=bottom + 26)


def main(argv: list[str]) -> int:
    """Write docs/architecture.svg; with --check, exit 1 if the committed file differs from what the tree gives."""
    svg = render(ROOT)
    if "--check" not in argv:
        SVG_PATH.write_text(svg, encoding="utf-8", newline="\n")
        return 0
    stale = not SVG_PATH.is_file() or SVG_PATH.read_text(encoding="utf-8") != svg
    if stale:
        print("docs/architecture.svg is stale: run .venv/bin/python docs/architecture.py", file=sys.stderr)
    return int(stale)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
