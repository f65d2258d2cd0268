"""The pile at 100, 1 000 and 10 000 boxes: time per substep of ours (PGS) and Bullet's, the cold compile apart.

Each size runs ``bench_pile.py --sides blender ours --solvers PGS`` in its own process (Blender's rigid body world
and Contact Lab's bake of the same scene, in one process per size), after a warm-up bake, so its figures are warm
(cache loaded, kernels compiled). The cold compile is measured once, separately: ``bench_pile_core.py``'s cold start
(import and a small pile with every kernel the pile uses) in a fresh process with an empty Numba cache; it does not
depend on the number of bodies. The pile keeps the spec's height at every size (``pile_scene``: ``round(sqrt(N /
10))`` boxes per row, about 10 layers, the container's inner width 0.3 m per row), so the bodies per floor area and
the contacts per body are comparable; every size simulates the same ``--seconds`` (default 2 s: the pile has landed
after 0.75 s and is settling).

Prints a table (bodies, contacts, ms per substep for both, ratio, cold compile) and, with ``--plot``, draws
``docs/pile_scaling.svg`` (log-log time per substep against bodies, both engines, with the load average of each
run) and, when ``rsvg-convert`` is on the PATH, ``docs/pile_scaling.png`` from it. No plotting library is needed
(the venvs have no matplotlib): the SVG is written directly.

Run: ``python tests/benchmarks/bench_pile_scaling.py --plot`` (options: ``--sizes 100 1000 10000``, ``--seconds 2``,
``--python`` the interpreter with bpy for the runs (default: this one), ``--no-cold``, ``--json PATH`` to keep the
results, ``--from-json PATH`` to print and plot saved results without running anything, ``--svg PATH``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from xml.sax.saxutils import escape

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SVG_PATH = ROOT / "docs" / "pile_scaling.svg"

sys.path.insert(0, str(HERE))
import pile_scene as ps  # noqa: E402


def _env(cache_dir: str | None = None) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT.parent), env.get("PYTHONPATH", "")) if p)
    if cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = cache_dir
    return env


def cold_compile(python: str) -> dict:
    """The core's cold start in a fresh process with an empty Numba cache [s], with the load before it."""
    with tempfile.TemporaryDirectory(prefix="pile_cold_") as cache, tempfile.TemporaryDirectory() as out:
        path = Path(out) / "cold.json"
        load = ps.load_line()
        cmd = [python, str(HERE / "bench_pile_core.py"), "--bodies", "20", "--seconds", "0.1", "--json", str(path)]
        subprocess.run(cmd, check=True, env=_env(cache), stdout=subprocess.DEVNULL)
        result = json.loads(path.read_text())
    return dict(cold_s=result["cold_s"], load=load, versions=result["versions"])


def run_size(python: str, bodies: int, seconds: float) -> dict:
    """``bench_pile.py`` for one size (Bullet and ours, PGS) in its own process; returns its JSON."""
    with tempfile.TemporaryDirectory() as out:
        path = Path(out) / "pile.json"
        cmd = [python, str(HERE / "bench_pile.py"), "--bodies", str(bodies), "--seconds", str(seconds),
               "--sides", "blender", "ours", "--solvers", "PGS", "--json", str(path)]  # fmt: skip
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, env=_env())
        result = json.loads(path.read_text())
    result["wall_s"] = time.perf_counter() - t0
    return result


def summary(results: list[dict]) -> list[dict]:
    """One row per size: contacts, Bullet's and our ms per substep, the ratio and the loads."""
    rows = []
    for r in results:
        bullet = next(x for x in r["rows"] if x["engine"].startswith("Blender"))
        ours = next(x for x in r["rows"] if x["engine"] == "Contact Lab PGS")
        rows.append(dict(
            bodies=r["bodies"], seconds=r["seconds"], contacts=ours.get("max_contacts", 0),
            bullet_ms=bullet["substep_ms"], ours_ms=ours["substep_ms"], ratio=ours["substep_ms"] / bullet["substep_ms"],
            bullet_load=bullet["load"], ours_load=ours["load"], ours_deepest_mm=ours["deepest_mm"],
            bullet_deepest_mm=bullet["deepest_mm"], ours_tunnelled=ours["tunnelled"],
            bullet_tunnelled=bullet["tunnelled"],
        ))  # fmt: skip
    return rows


def print_table(rows: list[dict], cold: dict | None, versions: dict) -> None:
    print(f"\npile scaling, PGS, warm; {ps.versions_line(versions)}")
    print("| bodies | simulated s | max contacts | Bullet ms/substep | ours ms/substep | ours / Bullet | "
          "deepest mm (Bullet / ours) | load before (Bullet; ours) |")  # fmt: skip
    print("|---:|---:|---:|---:|---:|---:|---|---|")
    for r in rows:
        print(f"| {r['bodies']:,} | {r['seconds']:g} | {r['contacts']:,} | {r['bullet_ms']:.2f} | {r['ours_ms']:.2f} | "
              f"{r['ratio']:.2f} | {r['bullet_deepest_mm']:.2f} / {r['ours_deepest_mm']:.2f} | "
              f"{_loads(r['bullet_load'])}; {_loads(r['ours_load'])} |")  # fmt: skip
    if cold:
        print(f"\ncold compile (empty Numba cache, fresh process, every pile kernel): {cold['cold_s']:.1f} s "
              f"[{cold['load']}]")  # fmt: skip


def _loads(line: str) -> str:
    """'load 1.2 1.0 0.9 on 2 cores' -> '1.2' (the 1-minute average)."""
    parts = line.split()
    return parts[1] if len(parts) > 1 else line


# ---- the plot (SVG written directly) --------------------------------------------------------------------------

W, H = 700, 420
LEFT, RIGHT, TOP, BOTTOM = 70, 210, 48, 60
SERIES = (("bullet_ms", "Blender (Bullet)", "#2563eb", "square"), ("ours_ms", "Contact Lab PGS", "#d9822b", "circle"))


def _log_ticks(lo: float, hi: float) -> list[float]:
    """1-2-5 ticks covering [lo, hi]."""
    ticks = []
    for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1):
        ticks += [m * 10.0**e for m in (1, 2, 5) if lo <= m * 10.0**e <= hi]
    return ticks


def svg(rows: list[dict], cold: dict | None, versions: dict) -> str:
    xs = [r["bodies"] for r in rows]
    ys = [r[key] for r in rows for key, *_ in SERIES]
    x_lo, x_hi = min(xs) / 1.5, max(xs) * 1.5
    y_lo, y_hi = 10 ** math.floor(math.log10(min(ys) / 1.2)), 10 ** math.ceil(math.log10(max(ys) * 1.2))
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM

    def px(x):
        return LEFT + pw * (math.log10(x) - math.log10(x_lo)) / (math.log10(x_hi) - math.log10(x_lo))

    def py(y):
        return TOP + ph * (1.0 - (math.log10(y) - math.log10(y_lo)) / (math.log10(y_hi) - math.log10(y_lo)))

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}">',
        "<style>text { font-family: sans-serif; font-size: 11px; fill: #1f2937; } .title { font-size: 14px; "
        "font-weight: bold; } .note { fill: #6b7280; font-size: 10px; } .grid { stroke: #e5e7eb; } "
        ".axis { stroke: #6b7280; fill: none; }</style>",
        f'<rect width="{W}" height="{H}" fill="#ffffff"/>',
        f'<text class="title" x="{LEFT}" y="20">The pile: time per substep against bodies (PGS, 20 iterations, '
        f"240 Hz)</text>",
        f'<text class="note" x="{LEFT}" y="36">{escape(ps.versions_line(versions))}</text>',
    ]
    for t in _log_ticks(y_lo, y_hi):
        y = py(t)
        out.append(f'<line class="grid" x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + pw}" y2="{y:.1f}"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{t:g}</text>')
    for t in xs:
        x = px(t)
        out.append(f'<line class="grid" x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{TOP + ph}"/>')
        out.append(f'<text x="{x:.1f}" y="{TOP + ph + 16}" text-anchor="middle">{t:,}</text>')
    out.append(f'<rect class="axis" x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}"/>')
    out.append(f'<text x="{LEFT + pw / 2}" y="{H - 24}" text-anchor="middle">bodies (boxes of 0.2 m, log scale)</text>')
    out.append(f'<text transform="translate(18 {TOP + ph / 2}) rotate(-90)" text-anchor="middle">'
               f"ms per substep (log scale)</text>")  # fmt: skip
    # linear scaling through the smallest Bullet point, for reference
    r0 = rows[0]
    x_a, x_b = xs[0], xs[-1]
    y_a, y_b = r0["bullet_ms"], r0["bullet_ms"] * x_b / x_a
    if y_b <= y_hi:
        out.append(f'<line x1="{px(x_a):.1f}" y1="{py(y_a):.1f}" x2="{px(x_b):.1f}" y2="{py(y_b):.1f}" '
                   f'stroke="#9ca3af" stroke-dasharray="4 4"/>')  # fmt: skip
    for key, _label, colour, marker in SERIES:
        points = [(px(r["bodies"]), py(r[key])) for r in rows]
        path = " ".join(f"{'M' if i == 0 else 'L'}{x:.1f},{y:.1f}" for i, (x, y) in enumerate(points))
        out.append(f'<path d="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for (x, y), r in zip(points, rows, strict=True):
            if marker == "circle":
                out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{colour}"/>')
            else:
                out.append(f'<rect x="{x - 4:.1f}" y="{y - 4:.1f}" width="8" height="8" fill="{colour}"/>')
            # Bullet's values above-left of their points, ours below-right: the two lines run close together
            tx, ty, anchor = (x - 7, y - 7, "end") if marker == "square" else (x + 7, y + 15, "start")
            out.append(f'<text x="{tx:.1f}" y="{ty:.1f}" fill="{colour}" text-anchor="{anchor}">{r[key]:.2f}</text>')
    lx, ly = LEFT + pw + 14, TOP + 10
    for i, (_, label, colour, _) in enumerate(SERIES):
        out.append(f'<line x1="{lx}" y1="{ly + 18 * i}" x2="{lx + 20}" y2="{ly + 18 * i}" stroke="{colour}" '
                   f'stroke-width="2"/>')  # fmt: skip
        out.append(f'<text x="{lx + 26}" y="{ly + 18 * i + 4}">{escape(label)}</text>')
    out.append(f'<line x1="{lx}" y1="{ly + 36}" x2="{lx + 20}" y2="{ly + 36}" stroke="#9ca3af" '
               f'stroke-dasharray="4 4"/>')  # fmt: skip
    out.append(f'<text x="{lx + 26}" y="{ly + 40}">linear in bodies</text>')
    notes = [f"{r['bodies']:,}: ours/Bullet {r['ratio']:.2f}, load {_loads(r['ours_load'])}" for r in rows]
    if cold:
        notes.append(f"cold compile {cold['cold_s']:.0f} s (once,")
        notes.append("empty cache; not in the")
        notes.append("per-substep figures)")
    notes.append(f"{rows[0]['seconds']:g} s simulated per size")
    notes.append("preliminary: 2-core VM,")
    notes.append("other jobs running")
    for i, text in enumerate(notes):
        out.append(f'<text class="note" x="{lx}" y="{ly + 70 + 14 * i}">{escape(text)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", type=int, default=[100, 1000, 10000])
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--python", default=sys.executable, help="interpreter with bpy and numba for the runs")
    parser.add_argument("--no-cold", action="store_true", help="skip the cold-compile measurement")
    parser.add_argument("--plot", action="store_true", help=f"write {SVG_PATH.relative_to(ROOT)}")
    parser.add_argument("--svg", default=str(SVG_PATH))
    parser.add_argument("--json", default=None, help="save the results here")
    parser.add_argument("--from-json", default=None, help="print (and plot) saved results; run nothing")
    args = parser.parse_args(argv)
    if args.from_json:
        saved = json.loads(Path(args.from_json).read_text())
    else:
        probe = subprocess.run([args.python, "-c", "import bpy"], env=_env(), capture_output=True)
        if probe.returncode != 0:
            print(f"bench_pile_scaling: {args.python} cannot import bpy; nothing to measure")
            return 0
        cold = None if args.no_cold else cold_compile(args.python)
        if cold:
            print(f"cold compile: {cold['cold_s']:.1f} s [{cold['load']}]")
        results = [run_size(args.python, n, args.seconds) for n in args.sizes]
        saved = dict(cold=cold, results=results, versions=results[0]["versions"])
        if args.json:
            Path(args.json).write_text(json.dumps(saved, indent=1))
    rows = summary(saved["results"])
    print_table(rows, saved["cold"], saved["versions"])
    if args.plot:
        Path(args.svg).write_text(svg(rows, saved["cold"], saved["versions"]))
        print(f"wrote {args.svg}")
        png = Path(args.svg).with_suffix(".png")
        if shutil.which("rsvg-convert"):  # librsvg's converter, when the machine has it (Debian: librsvg2-bin)
            subprocess.run(["rsvg-convert", "-o", str(png), args.svg], check=True)
            print(f"wrote {png}")
        else:
            print(f"no rsvg-convert on PATH: {png} not written (the SVG holds the same plot)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
