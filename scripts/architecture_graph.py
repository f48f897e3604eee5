"""Draw the project's layers from its own imports: docs/architecture.svg.

    .venv/bin/python scripts/architecture_graph.py            # rewrite docs/architecture.svg
    .venv/bin/python scripts/architecture_graph.py --check    # exit 1 when it is out of date

Every `import` statement counts, including those inside functions. A box is a part of the
project (an app, or a pure core package drawn on its own because every app may use it);
an arrow A -> B says a module of A imports one of B. Only the arrows are drawn (no line
or import counts), so the picture changes, and `--check` fails, when the structure does:
an arrow appears or goes. The parts are stacked in the direction the architecture allows
(docs/ARCHITECTURE.md, "Direction of dependencies"): an arrow that runs upwards breaks it
and is drawn red.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import Counter
from html import escape
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUTPUT = ROOT / "docs" / "architecture.svg"

# Top to bottom: a part may import the parts below it.
PARTS: list[tuple[str, str, str]] = [
    ("sharing", "sharing/", "read-only share links to a dashboard or a comparison"),
    ("schedules", "schedules/", "watches: timing, firing, streak, a run's judges and verdict"),
    ("guide", "guide/", "the user guide at /help/, from docs/guide (imports no app)"),
    ("behaviour", "behaviour/", "what users do: behaviour imports, online metrics"),
    ("judges", "judges/", "LLM judges: runs, calls, calibration, counts"),
    ("judges.core", "judges/core/", "providers, sending, prompts, answers (no Django)"),
    ("metrics", "metrics/", "recompute pipeline, reports: dashboards, compare, verdicts"),
    ("judgments", "judgments/", "scales, slots and grades, queue, pool, import/export"),
    ("evaluations", "evaluations/", "endpoints, fetching, query sets, evaluations, lifecycle"),
    ("behaviour.core", "behaviour/core/", "click models, online metrics, simulator (no Django)"),
    ("metrics_engine", "metrics_engine/", "every formula, aggregation, bounds (no Django)"),
    ("notifications", "notifications/", "in-app notifications, mail, webhooks and deliveries"),
    ("searchtweak", "searchtweak/", "settings, teams and access, outbound policy, SQL helpers"),
]


def part_of(module: str) -> str | None:
    """The most specific part that holds a dotted module name."""
    best = None
    for name, _folder, _about in PARTS:
        holds = module == name or module.startswith(name + ".")
        if holds and (best is None or len(name) > len(best)):
            best = name
    return best


def project_modules() -> dict[str, Path]:
    modules: dict[str, Path] = {}
    for _name, folder, _about in PARTS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            relative = path.relative_to(ROOT)
            if "migrations" in relative.parts or "management" in relative.parts:
                continue
            dotted = ".".join(relative.with_suffix("").parts)
            modules[dotted.removesuffix(".__init__")] = path
    return modules


def imported_modules(module: str, path: Path, known: dict[str, Path]) -> list[str]:
    """The project modules one file imports, one entry per import statement and target."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # `from pkg import mod` imports pkg.mod when that is a module, else pkg.
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                       for alias in node.names]
        else:
            continue
        for target in dict.fromkeys(targets):
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != module:
                found.append(target)
    return found


def part_edges() -> tuple[Counter, dict[str, int]]:
    known = project_modules()
    edges: Counter = Counter()
    lines: Counter = Counter()
    for module, path in known.items():
        source = part_of(module)
        lines[source] += sum(1 for _ in path.open())
        for target in imported_modules(module, path, known):
            destination = part_of(target)
            if destination and destination != source:
                edges[(source, destination)] += 1
    return edges, dict(lines)


def render(edges: Counter, lines: dict[str, int]) -> str:
    width, box_width, box_height, gap = 1000, 520, 58, 34
    left = 60
    rank = {name: index for index, (name, _f, _a) in enumerate(PARTS)}
    top = {name: 70 + index * (box_height + gap) for name, index in rank.items()}
    height = 70 + len(PARTS) * (box_height + gap) + 40
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="13">',
        '<defs><marker id="down" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker>'
        '<marker id="up" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#c0392b"/>'
        '</marker></defs>',
        '<rect width="100%" height="100%" fill="white"/>',
        '<text x="20" y="30" font-size="18" font-weight="bold">SearchTweak: parts and '
        'their imports</text>',
        '<text x="20" y="52" fill="#555">A part may import the parts below it; an arrow: '
        'some module of one imports the other (inside functions too). Red: runs upwards.'
        '</text>',
    ]
    for name, folder, about in PARTS:
        y = top[name]
        pure = name.endswith(".core") or name == "metrics_engine"
        out.append(f'<rect x="{left}" y="{y}" width="{box_width}" height="{box_height}" '
                   f'rx="6" fill="{"#eef6ee" if pure else "#eef2fa"}" stroke="#445"/>')
        out.append(f'<text x="{left + 12}" y="{y + 23}" font-weight="bold">'
                   f'{escape(folder)}</text>')
        out.append(f'<text x="{left + 12}" y="{y + 44}" fill="#333">{escape(about)}</text>')
    # Arrows leave each box's right side and bend out into a lane of their own.
    ordered = sorted(edges.items(), key=lambda item: (rank[item[0][0]], rank[item[0][1]]))
    for lane, ((source, destination), _count) in enumerate(ordered):
        upward = rank[destination] < rank[source]
        x0 = left + box_width
        x_lane = x0 + 30 + lane * 20
        y0 = top[source] + 14 + (lane % 4) * 10
        y1 = top[destination] + box_height - 14 - (lane % 4) * 10 if not upward \
            else top[destination] + box_height - 8
        colour = "#c0392b" if upward else "#555"
        marker = "up" if upward else "down"
        out.append(f'<path d="M{x0},{y0} H{x_lane} V{y1} H{x0 + 2}" fill="none" '
                   f'stroke="{colour}" stroke-width="1.4" marker-end="url(#{marker})"/>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when docs/architecture.svg is not what the code draws")
    args = parser.parse_args()
    edges, lines = part_edges()
    svg = render(edges, lines)
    upward = [f"{a} -> {b} ({n})" for (a, b), n in edges.items()
              if part_of(b) and [p[0] for p in PARTS].index(b) < [p[0] for p in PARTS].index(a)]
    if args.check:
        current = OUTPUT.read_text() if OUTPUT.exists() else ""
        if current != svg:
            print(f"{OUTPUT.relative_to(ROOT)} is out of date: run {Path(__file__).name}")
            return 1
        return 0
    OUTPUT.write_text(svg)
    print(f"wrote {OUTPUT.relative_to(ROOT)}: {len(edges)} arrows between parts "
          f"({sum(edges.values())} import statements, {sum(lines.values()):,} lines), "
          f"{len(upward)} upwards{': ' + ', '.join(upward) if upward else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
