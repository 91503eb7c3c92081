"""examples/mlp.py and the README's Python snippet run against the test daemon."""

import os
import re
import subprocess
import sys

from conftest import REPO, requires_builder

pytestmark = requires_builder


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(REPO, "libclient", "python")
    return env


def test_mlp_example(daemon):
    out = subprocess.run([sys.executable, os.path.join(REPO, "examples", "mlp.py"),
                          "--socket", daemon, "--platform", "interpreter"],
                         env=_env(), capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "result:     f32[16,3]" in out.stdout
    assert "max |jitd - numpy|" in out.stdout


def test_readme_snippet(daemon):
    readme = open(os.path.join(REPO, "README.md")).read()
    snippet = re.search(r"```python\n(.*?)```", readme, re.S).group(1)
    env = _env()
    env["JITD_SOCKET"] = daemon
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", snippet], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.strip() == "[1. 3. 5.]"
