"""The daemon's own device list (issue 13, item 9) and per-client feeds
(item 6), from Python against a real daemon.

- Client.platforms / jitd.available_platforms() are what the daemon says it
  has (HelloReply.devices), not the names the package knows (PLATFORMS);
  asking for a device the daemon lacks names the ones it has.
- A Client's infeed/outfeed transfers use a second connection of the same
  process: the daemon keys feed queues by client process, so they still meet
  that Client's executions; another process never sees them.
"""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import jitd
from jitd import _lib

from conftest import HERE, assert_strict

requires_device_list = pytest.mark.skipif(
    not _lib.has("jitd_client_num_devices"),
    reason="the loaded libjitd.so is older than API version 7 (no device list)")

FEED = """
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %t = stablehlo.create_token : !stablehlo.token
  %v:2 = "stablehlo.infeed"(%t) : (!stablehlo.token) -> (tensor<2xf32>, !stablehlo.token)
  %s = stablehlo.add %x, %v#0 : tensor<2xf32>
  %t2 = "stablehlo.outfeed"(%s, %v#1) : (tensor<2xf32>, !stablehlo.token) -> !stablehlo.token
  return %s : tensor<2xf32>
}
"""


@requires_device_list
def test_platforms_are_the_daemons(daemon, client):
    listed = jitd.available_platforms()
    assert "interpreter" in listed
    # This build has no cuda device: the daemon does not list it, whatever
    # the package knows of.
    assert "cuda" in jitd.PLATFORMS and "cuda" not in listed
    assert client.platforms == listed
    for name in listed:
        assert jitd.Client(name).platform == name


@requires_device_list
def test_missing_device_names_the_daemons_devices(daemon):
    with pytest.raises(jitd.JitdError) as e:
        jitd.Client("cuda")
    assert e.value.code == jitd.StatusCode.NOT_FOUND
    assert "no device 'cuda'" in e.value.message
    for name in jitd.available_platforms():
        assert name in e.value.message
    # A name no jitd knows is the same: the daemon's list decides.
    with pytest.raises(jitd.JitdError) as e:
        jitd.Client("tpu")
    assert e.value.code == jitd.StatusCode.NOT_FOUND and "interpreter" in e.value.message


def test_feeds_use_a_second_connection_of_the_same_process(daemon, client):
    exe = client.compile_stablehlo(FEED)
    client.transfer_to_infeed(np.array([1, 2], np.float32))  # the feed connection
    assert_strict(exe.Execute([np.array([10, 20], np.float32)]),  # the main connection
                  np.array([11, 22], np.float32))
    assert_strict(client.transfer_from_outfeed(jitd.Shape(np.float32, (2,)), timeout_ms=5000),
                  np.array([11, 22], np.float32))


def test_another_process_never_reads_this_clients_outfeed(daemon, client):
    exe = client.compile_stablehlo(FEED)
    client.transfer_to_infeed(np.array([5, 5], np.float32))
    exe.Execute([np.array([1, 2], np.float32)])  # the outfeed now holds [6, 7]
    # Another process of the same user reads the outfeed: it finds its own
    # (empty) queue, not this client's value.
    code = textwrap.dedent("""
        import sys
        sys.path.insert(0, %r)
        import numpy as np
        import jitd
        c = jitd.Client("interpreter")
        try:
            v = c.transfer_from_outfeed(jitd.Shape(np.float32, (2,)), timeout_ms=300)
            print("READ", v)
            sys.exit(1)
        except jitd.JitdError as e:
            sys.exit(0 if e.code == jitd.StatusCode.DEADLINE_EXCEEDED else 2)
    """) % os.path.dirname(HERE)
    other = subprocess.run([sys.executable, "-c", code], env=dict(os.environ),
                           capture_output=True, text=True, timeout=60)
    assert other.returncode == 0, other.stdout + other.stderr
    # The value is still this client's.
    assert_strict(client.transfer_from_outfeed(jitd.Shape(np.float32, (2,)), timeout_ms=5000),
                  np.array([6, 7], np.float32))
