"""gunicorn.conf.py, the production web server's settings (Dockerfile, docker-compose.yml,
bench/grading.py)."""

import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import skip_or_fail

REPO = Path(__file__).resolve().parents[2]

# A fresh interpreter: the test process has imported every view already.
PROBE = """
import os, runpy, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "searchtweak.settings")
import django
django.setup()
config = runpy.run_path("gunicorn.conf.py")
before = "judgments.api" in sys.modules
config["post_worker_init"](None)
print(config["workers"], config["worker_class"], config["bind"], before,
      "judgments.api" in sys.modules)
"""


def test_workers_come_from_the_environment_and_load_every_view_before_the_first_request():
    environment = {"WEB_CONCURRENCY": "3", "WEB_BIND": "127.0.0.1:9001", "PATH": "/usr/bin"}
    output = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, env=environment,
                            capture_output=True, text=True, check=True, timeout=60).stdout
    assert output.split() == ["3", "sync", "127.0.0.1:9001", "False", "True"]


def test_without_web_concurrency_two_workers_per_cpu_the_process_may_use():
    """As in a container limited to one CPU by a cpuset, on a host with more."""
    if shutil.which("taskset") is None:
        skip_or_fail("taskset (util-linux) is not installed")
    output = subprocess.run(["taskset", "-c", "0", sys.executable, "-c", PROBE], cwd=REPO,
                            env={"PATH": "/usr/bin"}, capture_output=True, text=True,
                            check=True, timeout=60).stdout
    assert output.split()[0] == "2"
