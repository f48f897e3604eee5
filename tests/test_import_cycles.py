"""No import cycle among the project's modules: each module can be read (and imported)
after the ones it names, never through itself.

The graph counts every import statement wherever it stands (a function-level import is
still a dependency, deferred), `from package import name` as importing the package (and
the submodule when `name` is one), and importing a submodule as also running the
packages above it that the importer is not already inside.
"""

import ast
from collections.abc import Iterable
from pathlib import Path

from tests.source_scan import PACKAGES

ROOT = Path(__file__).resolve().parent.parent


def module_files(root: Path = ROOT) -> dict[str, Path]:
    """{dotted module name: file} of the project's packages, migrations left out."""
    modules = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            if "migrations" in parts:
                continue
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join(parts)] = path
    return modules


def _ancestors(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:end]) for end in range(1, len(parts))]


def _named(module: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The modules an import statement names (absolute), with `from X import n` also
    naming X.n: the caller keeps those that are modules of the project."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        here = module.split(".") if is_package else module.split(".")[:-1]
        here = here[:len(here) - (node.level - 1)]
        base = ".".join([*here, base] if base else here)
    return [base, *(f"{base}.{alias.name}" for alias in node.names)]


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for module, path in modules.items():
        is_package = path.name == "__init__.py"
        inside = {module, *_ancestors(module)}
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for target in _named(module, is_package, node):
                if target in modules and target != module:
                    graph[module].add(target)
                # Importing a.b.c runs a and a.b first, unless the importer is inside them.
                graph[module].update(parent for parent in _ancestors(target)
                                     if parent in modules and parent not in inside)
    return graph


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components, iteratively (the graph has hundreds of modules)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterable[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    components.append(sorted(component))
    return components


def a_cycle(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """One cycle through the component's first module, to name in the failure."""
    members = set(component)
    start = component[0]
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for successor in sorted(graph[node] & members):
                if successor == start:
                    return [*paths[node], start]
                if successor not in paths:
                    paths[successor] = [*paths[node], successor]
                    following.append(successor)
        frontier = following
    return component


def cycles(root: Path = ROOT) -> list[str]:
    graph = import_graph(module_files(root))
    return [" -> ".join(a_cycle(graph, component))
            for component in strongly_connected(graph) if len(component) > 1]


def test_no_module_of_the_project_imports_itself_through_others():
    found = cycles()
    assert not found, "import cycles:\n" + "\n".join(found)


def test_the_scan_sees_function_level_and_package_imports(tmp_path):
    for package, files in {
        "evaluations": {"__init__.py": "", "tasks.py": "from evaluations import services\n",
                        "services/__init__.py": "from evaluations.services.fetch import go\n",
                        "services/fetch.py": "def go():\n    from evaluations.tasks import t\n"},
        "metrics_engine": {"__init__.py": "from metrics_engine.a import x\n",
                           "a.py": "from metrics_engine import b\n", "b.py": ""},
        "judges": {"__init__.py": "", "x.py": "from . import y\n", "y.py": ""},
        "judgments": {"__init__.py": ""}, "searchtweak": {"__init__.py": ""},
    }.items():
        for name, text in files.items():
            path = tmp_path / package / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    graph = import_graph(module_files(tmp_path))
    assert graph["judges.x"] == {"judges", "judges.y"}
    assert graph["metrics_engine.a"] == {"metrics_engine", "metrics_engine.b"}
    assert sorted(cycles(tmp_path)) == [
        "evaluations.services -> evaluations.services.fetch -> evaluations.tasks"
        " -> evaluations.services",
        "metrics_engine -> metrics_engine.a -> metrics_engine",
    ]
