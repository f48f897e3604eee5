"""metrics_engine and the conformance command never touch Django."""

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_core_imports_without_django_configured():
    code = (
        "import sys, metrics_engine, metrics_engine.statistics, metrics.conformance\n"
        "loaded = sorted(name for name in sys.modules if name.split('.')[0] == 'django')\n"
        "assert not loaded, loaded\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
        env={"PATH": "/usr/bin:/bin"}, timeout=60, check=False,
    )
    assert completed.returncode == 0, completed.stderr


def test_no_module_of_the_core_names_django_in_an_import():
    core = sorted((REPO / "metrics_engine").glob("*.py"))
    sources = [*core, REPO / "metrics" / "conformance.py"]
    assert len(sources) >= 8
    for source in sources:
        tree = ast.parse(source.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            assert not any(name.split(".")[0] == "django" for name in names), source
