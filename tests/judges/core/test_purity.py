"""judges/core never touches Django, so the app, the bench and the tests share it as is."""

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def test_judges_core_imports_without_django():
    modules = sorted(f"judges.core.{path.stem}" for path in (REPO / "judges" / "core").glob("*.py")
                     if path.stem != "__init__")
    code = (
        f"import sys, {', '.join(modules)}\n"
        "loaded = sorted(name for name in sys.modules if name.split('.')[0] == 'django')\n"
        "assert not loaded, loaded\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
        env={"PATH": "/usr/bin:/bin"}, timeout=60, check=False,
    )
    assert completed.returncode == 0, completed.stderr


def test_no_module_of_judges_core_names_django_in_an_import():
    sources = sorted((REPO / "judges" / "core").glob("*.py"))
    assert len(sources) >= 4
    for source in sources:
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            assert not any(name.split(".")[0] == "django" for name in names), source
