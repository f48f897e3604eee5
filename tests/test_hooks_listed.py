"""Every hidden path is in docs/ARCHITECTURE.md's "Hooks and receivers" table: each signal
receiver of the project, each hook a project module registers callables with, each system
check; and the table lists nothing that is gone.

Found at runtime, after Django's start-up (the apps' `ready` connected and registered
everything): the receivers of every signal object alive (Django's and Celery's), whose
function is project code; the system checks registered by project code; and the hooks,
found in the source: a module-level function named `register_*` or `*_register` that keeps
what it is handed at module level (assigns a parameter to a `global`, or stores it in a
module-level dict or list). Its listeners are the project callables found, at runtime, in
what it keeps. A function so named that keeps nothing (`user_register_from_invitation`
creates a user) is no hook.
"""

import ast
import dataclasses
import gc
import importlib
import re
import sys
import weakref
from collections.abc import Callable
from pathlib import Path

from celery.utils.dispatch.signal import Signal as CelerySignal
from django.core.checks.registry import registry as check_registry
from django.db.models.signals import post_save
from django.dispatch import Signal

from tests.source_scan import PACKAGES, ROOT

DOCUMENT = ROOT / "docs" / "ARCHITECTURE.md"
HOOK_NAME = re.compile(r"^(register_\w+|\w+_register)$")


def is_project(module: str) -> bool:
    return module.split(".")[0] in PACKAGES


def dotted(function: object) -> str | None:
    function = getattr(function, "__func__", function)
    module, name = getattr(function, "__module__", None), getattr(function, "__qualname__", None)
    return f"{module}.{name}" if module and name else None


def _names_of(thing: object) -> set[str]:
    """Every module-level name bound to `thing` (how a table's sender may call it)."""
    return {attribute for module in list(sys.modules.values())
            for attribute, value in list(getattr(module, "__dict__", {}).items())
            if value is thing}


def _every_object() -> list:
    """gc.get_objects() with the frozen ones too: the test process freezes what its
    collection built (tests/startup.py), signals included, and get_objects leaves them out."""
    gc.unfreeze()
    try:
        return gc.get_objects()
    finally:
        gc.freeze()


def receivers(project: Callable[[str], bool] = is_project) -> dict[str, set[str]]:
    """{listener's dotted name: the names its signals go by} for every live signal's
    receivers that are project functions."""
    found: dict[str, set[str]] = {}
    # type(), not isinstance(): isinstance asks a lazy object or a weak proxy for its
    # __class__, which evaluates the one (a CSP nonce outside a request raises) and raises
    # ReferenceError for the other once its referent is gone.
    for signal in [thing for thing in _every_object()
                   if issubclass(type(thing), Signal | CelerySignal)]:
        for entry in list(signal.receivers):
            receiver = entry[1]() if isinstance(entry[1], weakref.ReferenceType) else entry[1]
            name = dotted(receiver)
            if name and project(name):
                found.setdefault(name, set()).update(_names_of(signal))
    return found


def checks(project: Callable[[str], bool] = is_project) -> dict[str, set[str]]:
    every = check_registry.registered_checks | check_registry.deployment_checks
    return {name: {"checks"} for name in map(dotted, every) if name and project(name)}


def keeps_what_it_is_handed(function: ast.FunctionDef, module_names: set[str]) -> set[str]:
    """The module-level names a function stores one of its parameters in: assigned after
    `global name`, or `name[...] = ...` for a module-level `name`. Empty: not a hook."""
    parameters = {arg.arg for arg in ast.walk(function.args) if isinstance(arg, ast.arg)}
    declared = {name for node in ast.walk(function) if isinstance(node, ast.Global)
                for name in node.names}
    kept = set()
    for node in ast.walk(function):
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            pairs = list(zip(target.elts, node.value.elts, strict=True)) \
                if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple) \
                and len(target.elts) == len(node.value.elts) else [(target, node.value)]
            for stored, value in pairs:
                if not {found.id for found in ast.walk(value)
                        if isinstance(found, ast.Name)} & parameters:
                    continue
                if isinstance(stored, ast.Name) and stored.id in declared:
                    kept.add(stored.id)
                if isinstance(stored, ast.Subscript) and isinstance(stored.value, ast.Name) \
                        and stored.value.id in module_names:
                    kept.add(stored.value.id)
    return kept


def hook_functions(source: str) -> dict[str, set[str]]:
    """{hook function's name: module-level names it keeps what it is handed in}."""
    tree = ast.parse(source)
    module_names = {target.id for node in tree.body
                    if isinstance(node, ast.Assign | ast.AnnAssign)
                    for target in (node.targets if isinstance(node, ast.Assign)
                                   else [node.target]) if isinstance(target, ast.Name)}
    hooks = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and HOOK_NAME.match(node.name):
            kept = keeps_what_it_is_handed(node, module_names)
            if kept:
                hooks[node.name] = kept
    return hooks


def _callables_in(value: object, depth: int = 3) -> list[object]:
    if callable(value) and not isinstance(value, type):
        return [value]
    if depth == 0:
        return []
    if dataclasses.is_dataclass(value):
        parts = [getattr(value, field.name) for field in dataclasses.fields(value)]
    elif isinstance(value, dict):
        parts = list(value.values())
    elif isinstance(value, list | tuple | set):
        parts = list(value)
    else:
        parts = []
    return [found for part in parts for found in _callables_in(part, depth - 1)]


def hooks() -> dict[str, set[str]]:
    """{registered callable's dotted name: {the hook's dotted name}}, plus each hook under
    its own name (so a hook with nothing registered is still found)."""
    found: dict[str, set[str]] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            module_name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            for function, kept in hook_functions(path.read_text()).items():
                module = importlib.import_module(module_name.removesuffix(".__init__"))
                hook = f"{module.__name__}.{function}"
                found.setdefault(hook, set()).add(hook)
                for name in kept:
                    for registered in _callables_in(getattr(module, name)):
                        listener = dotted(registered)
                        if listener and is_project(listener):
                            found.setdefault(listener, set()).add(hook)
    return found


def table_rows(document: str) -> list[tuple[str, str]]:
    """(sender cell, listeners cell) of each row of the "Hooks and receivers" table."""
    section = document.split("\n## Hooks and receivers\n", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|") for line in section.splitlines() if line.startswith("|")]
    return [(cells[1], cells[2]) for cells in rows
            if cells[1].strip() != "sender" and not cells[1].startswith("---")]


def _dotted_names(cell: str) -> set[str]:
    return {name for name in re.findall(r"`([\w.]+)`", cell) if "." in name}


def problems(found: dict[str, set[str]], document: str) -> list[str]:
    """What the table lacks (a listener, a hook, or a listener's sender in its row) and
    what it lists that is gone. `found`: {listener or hook: the names of its senders}."""
    rows: dict[str, str] = {}
    hooks_listed: set[str] = set()
    for sender, listeners in table_rows(document):
        for name in _dotted_names(listeners):
            rows[name] = rows.get(name, "") + sender
        hooks_listed |= {name for name in _dotted_names(sender)
                         if HOOK_NAME.match(name.rsplit(".", 1)[1])}
    report = []
    for name, senders in sorted(found.items()):
        if senders == {name}:  # a hook itself
            if name not in hooks_listed:
                report.append(f"not in the table: {name} (a hook)")
        elif name not in rows:
            report.append(f"not in the table: {name} ({', '.join(sorted(senders))})")
        elif not any(sender in rows[name] for sender in senders):
            report.append(f"{name} is listed without its sender {', '.join(sorted(senders))}")
    report += [f"listed but gone: {name}" for name in sorted(set(rows) | hooks_listed)
               if name not in found]
    return report


def everything() -> dict[str, set[str]]:
    found = receivers()
    for more in (checks(), hooks()):
        for name, senders in more.items():
            found.setdefault(name, set()).update(senders)
    return found


def test_the_table_lists_every_hook_and_receiver_and_nothing_gone():
    assert problems(everything(), DOCUMENT.read_text()) == []


def _probe(sender, **kwargs) -> None:
    pass


def test_a_receiver_the_table_lacks_is_named():
    here = _probe.__module__
    post_save.connect(_probe, weak=False, dispatch_uid="test_hooks_listed.probe")
    try:
        found = receivers(project=lambda name: is_project(name) or name.startswith(here))
    finally:
        post_save.disconnect(dispatch_uid="test_hooks_listed.probe")
    assert f"not in the table: {here}._probe (post_save)" in problems(
        found, DOCUMENT.read_text())


def test_a_listener_the_table_lists_after_it_is_gone_is_named():
    document = DOCUMENT.read_text().replace(
        "\n## Hooks and receivers\n",
        "\n## Hooks and receivers\n| `evaluations.hooks.register_gone` | `x` | y |\n"
        "| `evaluations.signals.snapshots_created` | `metrics.receivers.on_gone` | y |\n", 1)
    assert problems(everything(), document) == [
        "listed but gone: evaluations.hooks.register_gone",
        "listed but gone: metrics.receivers.on_gone"]


def test_only_a_register_function_that_keeps_what_it_is_handed_is_a_hook():
    source = (
        "_dispatcher = None\n"
        "_bodies = {}\n"
        "def dispatcher_register(dispatcher):\n"
        "    global _dispatcher\n"
        "    _dispatcher = dispatcher\n"
        "def periodic_register(name, *, body):\n"
        "    _bodies[name] = (1, body)\n"
        "def user_register_from_invitation(*, invitation, username):\n"
        "    user = make(username)\n"
        "    return user\n"
        "def register_nothing(value):\n"
        "    global _dispatcher\n"
        "    _dispatcher = None\n"
        "def register_pair(build):\n"
        "    global _dispatcher, _cache\n"
        "    _dispatcher, _cache = build, None\n")
    assert hook_functions(source) == {"dispatcher_register": {"_dispatcher"},
                                      "periodic_register": {"_bodies"},
                                      "register_pair": {"_dispatcher"}}


def test_the_rule_finds_the_hooks_of_the_code():
    # The hooks that apps register at start-up, found from the source (a rename or a move
    # fails here, with the new names, rather than going unseen).
    hook_names = {name for name, senders in hooks().items() if senders == {name}}
    assert {name.rsplit(".", 1)[1] for name in hook_names} >= {
        "register_scale_provider", "keywords_fetch_dispatcher_register", "periodic_register"}


def test_the_document_names_the_test():
    assert "tests/test_hooks_listed.py" in Path(DOCUMENT).read_text()
