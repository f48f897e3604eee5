"""Write docs/operations/settings.md from the code: every environment variable SearchTweak reads.

    .venv/bin/python scripts/settings_reference.py            # rewrite docs/operations/settings.md
    .venv/bin/python scripts/settings_reference.py --check    # exit 1 when it is out of date

The app's source files (not tests, bench or scripts) are parsed, not imported. A variable is
read by one of the typed readers of searchtweak/envvars.py (`env_int("NAME", default, ...)`)
or, outside Django, by `os.environ.get("NAME", ...)` / `os.getenv` / `os.environ["NAME"]`
(the name may be a module-level string constant). Its type comes from the reader, its
default from the reader's default argument (or the right side of `reader(...) or fallback`),
and its meaning from the first sentence of the comment directly above the statement that
reads it (or of the enclosing function's docstring). A read without a comment is an error:
the reference would have nothing to say about it, so `--check` fails and names it.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUTPUT = ROOT / "docs" / "operations" / "settings.md"
# Folders and files that are not the app: their variables configure tests or benchmarks.
NOT_APP = {".venv", ".git", "tests", "bench", "scripts", "migrations", "node_modules",
           "staticfiles", ".cache"}

READER_TYPES = {
    "env_str": "text",
    "env_bool": "boolean (true/false, 1/0, on/off)",
    "env_int": "integer",
    "env_list": "comma-separated list",
    "env_networks": "comma-separated IP networks",
    "env_url": "URL",
    "env_email_url": "mail server URL",
}
# Readers that read one fixed variable: name, type, default.
FIXED_READERS = {
    "env_behind_tls_proxy": ("SECURE_PROXY_SSL_HEADER", READER_TYPES["env_bool"], "False"),
}


@dataclass
class Read:
    name: str
    type: str
    default: str
    meaning: str
    path: str


@dataclass
class Variable:
    name: str
    reads: list[Read] = field(default_factory=list)


def app_files(root: Path) -> list[Path]:
    files = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if NOT_APP.intersection(relative.parts):
            continue
        files.append(path)
    # The settings module first: a variable's meaning comes from its first read.
    settings = root / "searchtweak" / "settings.py"
    first = [settings] if settings in files else []
    return [*first, *(path for path in files if path != settings)]


def _first_sentence(text: str) -> str:
    text = " ".join(text.split())
    match = re.search(r"(?<=[.;])\s+(?=[A-Z(`])|(?<=:)\s+(?=[A-Z(])", text)
    sentence = text[: match.start()] if match else text
    return sentence.rstrip(":;")


def _comment_above(lines: list[str], lineno: int) -> str | None:
    """The contiguous comment block ending on the line just above `lineno` (1-based)."""
    block: list[str] = []
    index = lineno - 2
    while index >= 0 and lines[index].strip().startswith("#"):
        block.insert(0, lines[index].strip().lstrip("#").strip())
        index -= 1
    return " ".join(block) if block else None


class _Reads(ast.NodeVisitor):
    def __init__(self, path: Path, source: str, root: Path) -> None:
        self.path = path
        self.relative = path.relative_to(root).as_posix()
        self.source = source
        self.lines = source.splitlines()
        self.constants: dict[str, str] = {}
        self.statements: list[ast.stmt] = []
        self.functions: list[ast.FunctionDef] = []
        self.parents: dict[ast.AST, ast.AST] = {}
        self.reads: list[Read] = []
        self.unexplained: list[str] = []

    def run(self, tree: ast.Module) -> None:
        for node in tree.body:
            if (isinstance(node, ast.Assign) and len(node.targets) == 1
                    and isinstance(node.targets[0], ast.Name)
                    and isinstance(node.value, ast.Constant)
                    and isinstance(node.value.value, str)):
                self.constants[node.targets[0].id] = node.value.value
        for parent in ast.walk(tree):
            for child in ast.iter_child_nodes(parent):
                self.parents[child] = parent
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                self._call(node)
            elif isinstance(node, ast.Subscript) and _is_os_environ(node.value):
                name = self._name(node.slice)
                if name and not isinstance(node.ctx, ast.Store):
                    self._add(node, name, "text", "none (required)")

    def _name(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name):
            return self.constants.get(node.id)
        return None

    def _call(self, node: ast.Call) -> None:
        func = node.func
        callee = func.id if isinstance(func, ast.Name) else (
            func.attr if isinstance(func, ast.Attribute) else "")
        if callee in FIXED_READERS and isinstance(func, ast.Name):
            name, kind, default = FIXED_READERS[callee]
            self._add(node, name, kind, default)
            return
        if callee in READER_TYPES and isinstance(func, ast.Name) and node.args:
            name = self._name(node.args[0])
            if name is None:
                return
            kind = READER_TYPES[callee]
            minimum = _keyword(node, "minimum")
            if minimum is not None:
                kind += f" ≥ {self._code(minimum)}"
            if callee == "env_url":
                schemes = _keyword(node, "schemes")
                if isinstance(schemes, ast.Tuple):
                    kind += " (" + ", ".join(
                        f"{element.value}://" for element in schemes.elts
                        if isinstance(element, ast.Constant)) + ")"
            default_node = node.args[1] if len(node.args) > 1 else _keyword(node, "default")
            default = self._code(default_node) if default_node is not None else None
            self._add(node, name, kind, default or self._fallback(node) or '""')
            return
        is_get = (isinstance(func, ast.Attribute) and func.attr == "get"
                  and _is_os_environ(func.value))
        is_getenv = (isinstance(func, ast.Attribute) and func.attr == "getenv"
                     and isinstance(func.value, ast.Name) and func.value.id == "os")
        if (is_get or is_getenv) and node.args:
            name = self._name(node.args[0])
            if name is None:
                return
            parent = self.parents.get(node)
            while isinstance(parent, ast.BoolOp):
                parent = self.parents.get(parent)
            as_int = (isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name)
                      and parent.func.id == "int")
            default = self._code(node.args[1]) if len(node.args) > 1 else None
            self._add(node, name, "integer" if as_int else "text",
                      default or self._fallback(node) or '""')

    def _fallback(self, node: ast.Call) -> str | None:
        """`reader(...) or fallback`: the fallback is the default."""
        parent = self.parents.get(node)
        if isinstance(parent, ast.BoolOp) and isinstance(parent.op, ast.Or) \
                and parent.values[0] is node:
            return " or ".join(self._code(value) for value in parent.values[1:])
        return None

    def _code(self, node: ast.AST) -> str:
        text = ast.get_source_segment(self.source, node) or ""
        return " ".join(text.split())

    def _statement(self, node: ast.AST) -> ast.AST:
        while not isinstance(node, ast.stmt):
            node = self.parents[node]
        return node

    def _meaning(self, node: ast.AST, name: str) -> str | None:
        # The comment directly above the line of the call, then above its statement; in a
        # comment about several settings, the sentence that starts "NAME: ".
        for lineno in (node.lineno, self._statement(node).lineno):
            comment = _comment_above(self.lines, lineno)
            if comment:
                own = re.search(rf"(?:^|\s){re.escape(name)}: (.*)", comment)
                if own:
                    sentence = _first_sentence(own.group(1))
                    return sentence[:1].upper() + sentence[1:]
                return _first_sentence(comment)
        parent = self.parents.get(node)
        while parent is not None and not isinstance(parent, ast.FunctionDef):
            parent = self.parents.get(parent)
        if parent is not None:
            docstring = ast.get_docstring(parent)
            if docstring:
                return _first_sentence(docstring)
        return None

    def _add(self, node: ast.AST, name: str, kind: str, default: str) -> None:
        meaning = self._meaning(node, name)
        if meaning is None:
            self.unexplained.append(f"{self.relative}:{node.lineno}: {name}")
            meaning = ""
        self.reads.append(Read(name, kind, default, meaning, self.relative))


def _is_os_environ(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ"
            and isinstance(node.value, ast.Name) and node.value.id == "os")


def _keyword(node: ast.Call, name: str) -> ast.AST | None:
    for keyword in node.keywords:
        if keyword.arg == name:
            return keyword.value
    return None


def collect(root: Path = ROOT) -> tuple[dict[str, Variable], list[str]]:
    """Every variable the app under `root` reads, and the reads that no comment explains."""
    variables: dict[str, Variable] = {}
    unexplained: list[str] = []
    for path in app_files(root):
        source = path.read_text()
        visitor = _Reads(path, source, root)
        visitor.run(ast.parse(source))
        reads = sorted(visitor.reads, key=lambda read: _line_of(source, read.name))
        for read in reads:
            variables.setdefault(read.name, Variable(read.name)).reads.append(read)
        unexplained += visitor.unexplained
    return variables, unexplained


def _line_of(source: str, name: str) -> int:
    return source.find(f'"{name}"') if f'"{name}"' in source else len(source)


HEADER = """\
# Settings reference

<!-- Generated by scripts/settings_reference.py from the code; do not edit by hand.
     `make lint` runs it with --check and fails when this file is out of date. -->

Every environment variable SearchTweak reads, in the order the code reads them. With none set
it runs the development default (SQLite, tasks run in the web process, `DEBUG` on). A value
the reader cannot read as its type stops start-up with a message naming the variable
(`yes` is not a boolean). A default written as code is evaluated in the settings module:
`DEBUG` there is the value of the `DEBUG` variable.

{count} variables.
"""

FOOTER = """
Not read by the app: `make run` takes `HOST`, `PORT` and `DEMO_SEARCH_URL` as make variables
(see the Makefile), and the tests and benchmarks read variables of their own
([docs/dev/testing.md](../dev/testing.md), [bench/RESULTS.md](../../bench/RESULTS.md)).
"""


def render(variables: dict[str, Variable]) -> str:
    out = [HEADER.format(count=len(variables))]
    by_file: dict[str, list[Variable]] = {}
    for variable in variables.values():
        by_file.setdefault(variable.reads[0].path, []).append(variable)
    for path, group in by_file.items():
        out.append(f"\n## Read in `{path}`\n")
        for variable in group:
            first = variable.reads[0]
            out.append(f"- **`{variable.name}`**: {first.meaning.rstrip('.')}.")
            out.append(f"  Type: {first.type}. Default: `{first.default}`.")
            for other in variable.reads[1:]:
                if other.path != first.path:
                    out.append(f"  Also read in `{other.path}` ({other.type}, "
                               f"default `{other.default}`).")
    out.append(FOOTER)
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when the document is out of date")
    args = parser.parse_args()
    variables, unexplained = collect()
    if unexplained:
        print("These reads have no comment above them to say what they configure:",
              file=sys.stderr)
        for line in unexplained:
            print(f"  {line}", file=sys.stderr)
        return 1
    text = render(variables)
    if args.check:
        current = OUTPUT.read_text() if OUTPUT.exists() else ""
        if current != text:
            print(f"{OUTPUT.relative_to(ROOT)} is out of date: run "
                  "scripts/settings_reference.py", file=sys.stderr)
            return 1
        return 0
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(text)
    print(f"wrote {OUTPUT.relative_to(ROOT)} ({len(variables)} variables)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
