"""The daemon's life as the package promises it: a client starts a daemon
when none answers (one line on stderr; JITD_NO_AUTOSTART=1 or
autostart=False turn that off), and a client whose daemon went away
reconnects on its next call, compiling its executables again (from the disk
cache when the new daemon shares it), while LocalBuffers of the old daemon
raise FAILED_PRECONDITION naming the loss.

Each test uses its own socket in a temp directory (never the session
daemon of conftest.py) and stops every daemon it started.
"""

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

import numpy as np
import pytest

import jitd
from conftest import _jitd_bin, assert_strict, requires_builder

PLATFORM = os.environ.get("JITD_TEST_PLATFORM", "interpreter")

ADD_ONE = """
func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
  %one = stablehlo.constant dense<1.0> : tensor<3xf32>
  %0 = stablehlo.add %x, %one : tensor<3xf32>
  return %0 : tensor<3xf32>
}
"""
X = np.array([1, 2, 3], np.float32)
X_PLUS_ONE = np.array([2, 3, 4], np.float32)


def _alive(pid):
    """Running and not a zombie (a started daemon's parent is init)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _pid_file(socket_path):
    try:
        with open(os.path.join(os.path.dirname(socket_path), "jitd.pid")) as f:
            return int(f.read().strip() or 0)
    except (OSError, ValueError):
        return 0


def _stop(socket_path, pids=()):
    """`jitd stop`, then SIGKILL for anything still running."""
    subprocess.run([_jitd_bin(), "stop", "--socket", socket_path], capture_output=True,
                   timeout=30)
    for pid in pids:
        if pid and _alive(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def place(monkeypatch):
    """A fresh socket path with no daemon, and a private disk cache for the
    daemons started there ($XDG_CACHE_HOME, inherited by a started
    daemon). Stops whatever daemon runs there at the end."""
    tmp = tempfile.mkdtemp(prefix="jitd_life_")
    socket_path = os.path.join(tmp, "run", "jitd.sock")
    monkeypatch.setenv("XDG_CACHE_HOME", os.path.join(tmp, "cache"))
    monkeypatch.setenv("JITD_BINARY", _jitd_bin())
    monkeypatch.delenv("JITD_NO_AUTOSTART", raising=False)
    pids = []
    yield socket_path, pids
    _stop(socket_path, pids + [_pid_file(socket_path)])
    shutil.rmtree(tmp, ignore_errors=True)


def _serve(socket_path, cache_dir):
    """`jitd serve` on socket_path, ready (its jitd.pid written) -> Popen."""
    proc = subprocess.Popen([_jitd_bin(), "serve", "--socket", socket_path, "--cache-dir",
                             cache_dir, "--log-level", "error"])
    deadline = time.time() + 60
    while _pid_file(socket_path) != proc.pid:
        if proc.poll() is not None:
            raise RuntimeError("jitd serve exited with %d at start" % proc.returncode)
        if time.time() > deadline:
            raise RuntimeError("jitd serve did not come up on %s" % socket_path)
        time.sleep(0.02)
    return proc


def _announced_pid(text, socket_path):
    m = re.search(r"^jitd: started a daemon \(pid (\d+)\) at (\S+); log (\S+); ", text, re.M)
    assert m, "no announcement in %r" % text
    assert m.group(2) == socket_path
    assert m.group(3) == os.path.join(os.path.dirname(socket_path), "jitd.log")
    return int(m.group(1))


class TestAutostart(object):
    def test_client_starts_a_daemon_and_says_so(self, place, capfd):
        socket_path, pids = place
        c = jitd.Client(PLATFORM, socket_path=socket_path)
        err = capfd.readouterr().err
        pid = _announced_pid(err, socket_path)
        pids.append(pid)
        assert len([l for l in err.splitlines() if "started a daemon" in l]) == 1
        assert _alive(pid) and _pid_file(socket_path) == pid
        exe = c.compile_stablehlo(ADD_ONE)
        assert_strict(exe.Execute([X]), X_PLUS_ONE)
        # A second client finds it running: no second daemon, no line.
        jitd.Client(PLATFORM, socket_path=socket_path)
        assert "started a daemon" not in capfd.readouterr().err
        # `jitd stop` ends it and its pid file.
        out = subprocess.run([_jitd_bin(), "stop", "--socket", socket_path],
                             capture_output=True, text=True, timeout=30)
        assert out.returncode == 0, out.stderr
        assert "stopped the daemon (pid %d)" % pid in out.stderr
        assert not _alive(pid)
        assert _pid_file(socket_path) == 0

    def test_get_client_starts_one_through_jitd_socket(self, place, monkeypatch, capfd):
        socket_path, pids = place
        monkeypatch.setenv("JITD_SOCKET", socket_path)
        c = jitd.get_client(PLATFORM, socket_path=socket_path)
        pids.append(_announced_pid(capfd.readouterr().err, socket_path))
        assert_strict(c.compile_stablehlo(ADD_ONE).Execute([X]), X_PLUS_ONE)
        assert jitd.get_client(PLATFORM, socket_path=socket_path) is c

    def test_jitd_no_autostart(self, place, monkeypatch, capfd):
        socket_path, _ = place
        monkeypatch.setenv("JITD_NO_AUTOSTART", "1")
        with pytest.raises(jitd.JitdError) as e:
            jitd.Client(PLATFORM, socket_path=socket_path)
        assert e.value.code == jitd.StatusCode.UNAVAILABLE
        assert "JITD_NO_AUTOSTART" in e.value.message and socket_path in e.value.message
        assert "started a daemon" not in capfd.readouterr().err
        assert _pid_file(socket_path) == 0

    def test_autostart_false(self, place):
        socket_path, _ = place
        with pytest.raises(jitd.JitdError) as e:
            jitd.Client(PLATFORM, socket_path=socket_path, autostart=False)
        assert e.value.code == jitd.StatusCode.UNAVAILABLE
        assert _pid_file(socket_path) == 0


class TestReconnect(object):
    def test_restarted_daemon_recompiles_from_the_disk_cache(self, place):
        socket_path, pids = place
        cache_dir = os.path.join(os.path.dirname(socket_path), "cache")
        first = _serve(socket_path, cache_dir)
        pids.append(first.pid)
        c = jitd.get_client(PLATFORM, socket_path=socket_path)
        exe = c.compile_stablehlo(ADD_ONE)
        assert_strict(exe.Execute([X]), X_PLUS_ONE)
        buf = jitd.LocalBuffer.from_pyval(X, client=c)
        assert_strict(exe.ExecuteWithBuffers([buf]).to_py(), X_PLUS_ONE)

        first.send_signal(signal.SIGKILL)
        first.wait(30)
        second = _serve(socket_path, cache_dir)
        pids.append(second.pid)

        # The memoized client reconnects on its next call; the executable is
        # compiled again, from the disk cache the old daemon wrote.
        assert jitd.get_client(PLATFORM, socket_path=socket_path) is c
        assert_strict(exe.Execute([X]), X_PLUS_ONE)
        assert exe.cache_hit
        stats = c.stats()
        assert stats["disk_loads"] >= 1 and stats["compiles"] == 0, stats
        # A buffer the old daemon held is lost, and the error says so; its
        # last contents are still readable here.
        with pytest.raises(jitd.JitdError) as e:
            exe.ExecuteWithBuffers([buf])
        assert e.value.code == jitd.StatusCode.FAILED_PRECONDITION
        assert "went away" in e.value.message and "from_pyval" in e.value.message
        assert_strict(buf.to_py(), X)
        fresh = jitd.LocalBuffer.from_pyval(buf.to_py(), client=c)
        assert_strict(exe.ExecuteWithBuffers([fresh]).to_py(), X_PLUS_ONE)
        # New compiles work on the new connection too.
        assert_strict(c.compile_stablehlo(ADD_ONE).Execute([X]), X_PLUS_ONE)

    @requires_builder
    def test_builder_executable_is_compiled_again(self, place):
        socket_path, pids = place
        cache_dir = os.path.join(os.path.dirname(socket_path), "cache")
        first = _serve(socket_path, cache_dir)
        pids.append(first.pid)
        c = jitd.Client(PLATFORM, socket_path=socket_path)
        b = jitd.ComputationBuilder("twice")
        x = b.ParameterFromNumpy(X)
        b.Add(x, x)
        exe = b.Build().Compile(client=c)
        assert_strict(exe.Execute([X]), X * 2)
        first.send_signal(signal.SIGTERM)
        first.wait(30)
        pids.append(_serve(socket_path, cache_dir).pid)
        assert_strict(exe.Execute([X]), X * 2)
        assert exe.cache_hit

    def test_daemon_gone_for_good_is_replaced_by_a_started_one(self, place, capfd):
        socket_path, pids = place
        c = jitd.Client(PLATFORM, socket_path=socket_path)
        first = _announced_pid(capfd.readouterr().err, socket_path)
        pids.append(first)
        exe = c.compile_stablehlo(ADD_ONE)
        os.kill(first, signal.SIGKILL)
        deadline = time.time() + 30
        while _alive(first) and time.time() < deadline:
            time.sleep(0.01)
        assert_strict(exe.Execute([X]), X_PLUS_ONE)
        second = _announced_pid(capfd.readouterr().err, socket_path)
        pids.append(second)
        assert second != first and _alive(second)

    def test_no_daemon_and_no_autostart_is_a_clear_error(self, place, monkeypatch):
        socket_path, pids = place
        cache_dir = os.path.join(os.path.dirname(socket_path), "cache")
        first = _serve(socket_path, cache_dir)
        pids.append(first.pid)
        c = jitd.Client(PLATFORM, socket_path=socket_path)
        exe = c.compile_stablehlo(ADD_ONE)
        first.send_signal(signal.SIGTERM)
        first.wait(30)
        monkeypatch.setenv("JITD_NO_AUTOSTART", "1")
        with pytest.raises(jitd.JitdError) as e:
            exe.Execute([X])
        assert e.value.code == jitd.StatusCode.UNAVAILABLE
        assert "JITD_NO_AUTOSTART" in e.value.message
        # Back: the next call reconnects.
        pids.append(_serve(socket_path, cache_dir).pid)
        assert_strict(exe.Execute([X]), X_PLUS_ONE)
