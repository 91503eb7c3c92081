"""Replicated execution through a real daemon (issue 17): programs compiled
for several replicas (CompileOptions.replica_count or the module's
mhlo.num_replicas), ExecutePerReplica with each replica's own arguments,
per-replica infeed / outfeed (xla_client's transfer_to_infeed(value,
replica_number) pattern), and collectives that cannot complete failing
within their deadline."""

import threading
import time

import numpy as np
import pytest

import jitd
from conftest import assert_strict, has_builder

# The body of an all_reduce (sum) over replicas 0 and 1 of %x.
_ALL_REDUCE = """
  %s = "stablehlo.all_reduce"(%x) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %t = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %t : tensor<f32>
  }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<3xf32>) -> tensor<3xf32>
"""

# No grid attributes: CompileOptions.replica_count decides.
SUM = """
module @sum {
func.func public @main(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<ui32>) {
""" + _ALL_REDUCE + """
  %r = stablehlo.replica_id : tensor<ui32>
  return %s, %r : tensor<3xf32>, tensor<ui32>
}
}
"""

# The module declares its two replicas.
DECLARED = """
module @declared attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 2 : i32} {
func.func public @main(%x: tensor<3xf32>) -> tensor<3xf32> {
""" + _ALL_REDUCE + """
  return %s : tensor<3xf32>
}
}
"""

# Each replica reads its infeed, sums it across replicas, writes its outfeed.
FEEDS = """
module @feeds attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 2 : i32} {
func.func public @main() -> tensor<3xf32> {
  %tok = stablehlo.create_token : !stablehlo.token
  %in:2 = "stablehlo.infeed"(%tok) : (!stablehlo.token) -> (tensor<3xf32>, !stablehlo.token)
  %x = stablehlo.multiply %in#0, %in#0 : tensor<3xf32>
""" + _ALL_REDUCE + """
  %done = "stablehlo.outfeed"(%s, %in#1) : (tensor<3xf32>, !stablehlo.token) -> !stablehlo.token
  return %s : tensor<3xf32>
}
}
"""

# Only replica 0 reaches the all_reduce: replica 1 ends without it.
MISMATCHED = """
module @mismatched attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 2 : i32} {
func.func public @main(%x: tensor<3xf32>) -> tensor<3xf32> {
  %r = stablehlo.replica_id : tensor<ui32>
  %zero = stablehlo.constant dense<0> : tensor<ui32>
  %first = stablehlo.compare EQ, %r, %zero : (tensor<ui32>, tensor<ui32>) -> tensor<i1>
  %out = "stablehlo.if"(%first) ({
""" + _ALL_REDUCE + """
    stablehlo.return %s : tensor<3xf32>
  }, {
    stablehlo.return %x : tensor<3xf32>
  }) : (tensor<i1>) -> tensor<3xf32>
  return %out : tensor<3xf32>
}
}
"""


# Only replica 0 reaches the all_reduce; replica 1 waits on an infeed
# nobody fills, so neither can finish before the deadline.
STUCK = MISMATCHED.replace("@mismatched", "@stuck").replace(
    """    stablehlo.return %x : tensor<3xf32>""",
    """    %tok = stablehlo.create_token : !stablehlo.token
    %in:2 = "stablehlo.infeed"(%tok) : (!stablehlo.token) -> (tensor<3xf32>, !stablehlo.token)
    stablehlo.return %in#0 : tensor<3xf32>""")


def _options(replicas=None, partitions=None):
    options = jitd.CompileOptions()
    options.replica_count = replicas
    options.num_partitions = partitions
    return options


class TestReplicatedExecute(object):

    def test_all_reduce_over_two_replicas(self, client):
        exe = client.compile_stablehlo(SUM, compile_options=_options(2))
        assert exe.replica_count == 2 and exe.num_partitions == 1 and exe.num_processes == 2
        assert exe.DeviceOrdinals() == [0, 1]
        a = np.array([1, 2, 3], np.float32)
        b = np.array([10, 20, 30.5], np.float32)
        results = exe.ExecutePerReplica([[a], [b]])
        assert len(results) == 2
        for replica, (total, rid) in enumerate(results):
            assert_strict(total, a + b)
            assert_strict(rid, np.uint32(replica))
        # Again, other arguments: nothing stays from the last run.
        results = exe.ExecutePerReplica([[b], [b]])
        assert_strict(results[1][0], b + b)

    def test_concurrent_calls_on_one_executable(self, client):
        # One call at a time uses the executable's kept buffers; the others
        # make their own, so no call sees another's arguments or results.
        exe = client.compile_stablehlo(DECLARED)
        errors = []

        def run(k):
            try:
                for i in range(20):
                    a = np.full(3, k * 100 + i, np.float32)
                    out = exe.ExecutePerReplica([[a], [a * 2]], deadline_ms=30000)
                    for got in out:
                        if not np.array_equal(got, a * 3):
                            errors.append((k, i, got))
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)
        threads = [threading.Thread(target=run, args=(k,)) for k in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not errors, errors[:3]

    def test_buffers_in_and_out(self, client):
        exe = client.compile_stablehlo(DECLARED)
        ones = np.ones(3, np.float32)
        first = exe.ExecuteWithBuffersPerReplica([[ones], [jitd.LocalBuffer.from_pyval(
            ones * 2, client=client)]])
        assert all(isinstance(b, jitd.LocalBuffer) for b in first)
        assert_strict(first[1].to_py(), ones * 3)
        # Each replica's result feeds its next run, staying in shared memory.
        second = exe.ExecuteWithBuffersPerReplica([[first[0]], [first[1]]])
        assert_strict(second[0].to_py(), ones * 6)
        with pytest.raises(jitd.JitdError) as e:
            exe.ExecuteWithBuffersPerReplica([[ones]])
        assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT

    def test_the_module_declares_the_replicas(self, client):
        exe = client.compile_stablehlo(DECLARED)
        assert exe.replica_count == 2
        ones = np.ones(3, np.float32)
        out = exe.ExecuteWithPythonValuesPerReplica([[ones], [ones * 4]])
        assert_strict(out[0], ones * 5)
        assert_strict(out[1], ones * 5)
        # Agreeing with the module is fine; contradicting it is named.
        assert client.compile_stablehlo(DECLARED, compile_options=_options(2, 1)).replica_count == 2
        with pytest.raises(jitd.JitdError) as e:
            client.compile_stablehlo(DECLARED, compile_options=_options(3))
        assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT
        assert "num_replicas = 3" in e.value.message
        assert "mhlo.num_replicas = 2" in e.value.message

    def test_num_replicas_is_replica_count(self, client):
        options = jitd.CompileOptions()
        options.num_replicas = 2
        assert options.replica_count == 2
        assert client.compile_stablehlo(SUM, compile_options=options).num_replicas == 2

    def test_device_assignment(self, client):
        options = _options(2)
        options.device_assignment = [1, 0]
        exe = client.compile_stablehlo(SUM, compile_options=options)
        assert exe.DeviceOrdinals() == [1, 0]
        results = exe.ExecutePerReplica([[np.ones(3, np.float32)], [np.ones(3, np.float32)]])
        assert_strict(results[0][0], np.full(3, 2, np.float32))
        options.device_assignment = [0]
        with pytest.raises(jitd.JitdError) as e:
            client.compile_stablehlo(SUM, compile_options=options)
        assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT
        assert "device_assignment has 1" in e.value.message

    def test_execute_of_a_replicated_program_points_to_execute_per_replica(self, client):
        exe = client.compile_stablehlo(DECLARED)
        with pytest.raises(jitd.JitdError) as e:
            exe.Execute([np.ones(3, np.float32)])
        assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT
        assert "ExecutePerReplica" in e.value.message
        with pytest.raises(jitd.JitdError) as e:
            exe.ExecutePerReplica([[np.ones(3, np.float32)]])
        assert "1 argument list(s) given" in e.value.message and "2 processes" in e.value.message

    def test_a_one_replica_program_runs_per_replica_too(self, client):
        exe = client.compile_stablehlo(SUM.replace(_ALL_REDUCE, "  %s = stablehlo.add %x, %x : "
                                                   "tensor<3xf32>\n"))
        assert exe.replica_count == 1
        x = np.array([1, 2, 3], np.float32)
        (total, rid), = exe.ExecutePerReplica([[x]])
        assert_strict(total, x + x)
        assert_strict(rid, np.uint32(0))
        assert_strict(exe.Execute([x])[0], x + x)

    def test_a_replica_that_skips_a_collective_is_named(self, client):
        exe = client.compile_stablehlo(MISMATCHED)
        start = time.time()
        with pytest.raises(jitd.JitdError) as e:
            exe.ExecutePerReplica([[np.ones(3, np.float32)], [np.ones(3, np.float32)]],
                                  deadline_ms=20000)
        assert time.time() - start < 10  # found out, not waited out
        assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT, e.value.message
        assert "stablehlo.all_reduce" in e.value.message
        assert "process 1 (replica 1" in e.value.message

    def test_a_collective_that_never_completes_ends_at_its_deadline(self, client):
        exe = client.compile_stablehlo(STUCK)
        start = time.time()
        with pytest.raises(jitd.JitdError) as e:
            exe.ExecutePerReplica([[np.ones(3, np.float32)], [np.ones(3, np.float32)]],
                                  deadline_ms=300)
        elapsed = time.time() - start
        assert e.value.code == jitd.StatusCode.DEADLINE_EXCEEDED, e.value.message
        assert "process" in e.value.message
        assert 0.3 <= elapsed < 20, elapsed  # the deadline, not a hang
        # The daemon still runs replicated programs.
        sums = client.compile_stablehlo(DECLARED).ExecutePerReplica(
            [[np.ones(3, np.float32)], [np.ones(3, np.float32)]], deadline_ms=10000)
        assert_strict(sums[0], np.full(3, 2, np.float32))


    def test_profile_of_a_replicated_run(self, client):
        options = _options(2)
        options.hlo_profile = True
        exe = client.compile_stablehlo(SUM, compile_options=options)
        exe.ExecutePerReplica([[np.ones(3, np.float32)], [np.ones(3, np.float32)]])
        assert exe.last_profile, exe.last_profile  # process 0's rows
        assert all(row["count"] >= 1 for row in exe.last_profile)
        assert exe.last_timing["total_micros"] >= exe.last_timing["execute_micros"]

    @pytest.mark.skipif(not has_builder(), reason="libjitd.so without the builder")
    def test_a_built_computation_with_replica_count(self, client):
        # xla_client's pattern: ReplicaId in a built computation, compiled
        # with CompileOptions.replica_count.
        b = jitd.ComputationBuilder("offset")
        x = b.ParameterFromNumpy(np.zeros(3, np.int64))
        b.Add(x, b.ConvertElementType(b.ReplicaId(), np.int64))
        options = jitd.CompileOptions()
        options.replica_count = 3
        exe = b.Build().Compile(compile_options=options, client=client)
        assert exe.replica_count == 3
        x = np.array([-4, 0, 11], np.int64)
        out = exe.ExecutePerReplica([[x], [x], [x]])
        for replica in range(3):
            assert_strict(out[replica], x + replica)


class TestPerReplicaFeeds(object):

    def test_each_replica_has_its_own_infeed_and_outfeed(self, client):
        exe = client.compile_stablehlo(FEEDS)
        result = {}

        def run():
            try:
                result["value"] = exe.ExecutePerReplica([[], []], deadline_ms=30000)
            except Exception as e:  # noqa: BLE001 - reported below
                result["error"] = e

        t = threading.Thread(target=run)
        t.start()
        time.sleep(0.1)  # the replicas now wait on their infeeds
        client.transfer_to_infeed(np.array([1, 2, 3], np.float32), replica_number=0)
        client.transfer_to_infeed(np.array([4, 5, 6], np.float32), replica_number=1)
        shape = jitd.Shape(np.float32, (3,))
        want = np.array([1 + 16, 4 + 25, 9 + 36], np.float32)
        assert_strict(client.transfer_from_outfeed(shape, replica_number=1), want)
        assert_strict(client.transfer_from_outfeed(shape, replica_number=0), want)
        t.join(60)
        assert not t.is_alive()
        assert "error" not in result, result.get("error")
        assert_strict(result["value"][0], want)
        assert_strict(result["value"][1], want)

    def test_feeding_first_and_module_level_functions(self, client, monkeypatch):
        exe = client.compile_stablehlo(FEEDS)
        client.transfer_to_infeed(np.full(3, 2, np.float32), replica_number=1)
        client.transfer_to_infeed(np.full(3, 1, np.float32), 0)
        out = exe.ExecutePerReplica([[], []])
        assert_strict(out[0], np.full(3, 5, np.float32))
        shape = jitd.Shape(np.float32, (3,))
        for replica in (0, 1):
            assert_strict(client.transfer_from_outfeed(shape, replica, timeout_ms=5000),
                          np.full(3, 5, np.float32))
        # Replica 1's outfeed is empty now; replica 0's read does not take
        # from another replica's queue.
        with pytest.raises(jitd.JitdError) as e:
            client.transfer_from_outfeed(shape, replica_number=1, timeout_ms=50)
        assert e.value.code == jitd.StatusCode.DEADLINE_EXCEEDED

    def test_replica_numbers_out_of_range(self, client):
        client.compile_stablehlo(FEEDS)
        with pytest.raises(jitd.JitdError) as e:
            client.transfer_to_infeed(np.float32(1), replica_number=1 << 20)
        assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT
        assert "out of range [0, " in e.value.message
        with pytest.raises(jitd.JitdError) as e:
            client.transfer_from_outfeed(jitd.Shape(np.float32, ()), replica_number=-1)
        assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT
        with pytest.raises(TypeError):
            client.transfer_to_infeed(np.float32(1), replica_number="1")
