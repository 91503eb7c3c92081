"""compile_stablehlo with argument_shapes compiles a program with dynamic
dimensions (`tensor<?x4xf32>`, shape polymorphism as jax.export writes it)
for those shapes, one cache entry per concrete shape (issue 16, item 3)."""

import numpy as np
import pytest

import jitd
from conftest import assert_strict

# y = x @ w + 1 for x of shape (b, 4); s = the sum of y over b.
POLY = """
func.func public @main(%x: tensor<?x4xf32>, %w: tensor<4x3xf32>) -> (tensor<3xf32>, tensor<?x3xf32>) {
  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<?x4xf32>, tensor<4x3xf32>) -> tensor<?x3xf32>
  %one = stablehlo.constant dense<1.000000e+00> : tensor<f32>
  %b = stablehlo.get_dimension_size %x, dim = 0 : (tensor<?x4xf32>) -> tensor<i32>
  %b1 = stablehlo.reshape %b : (tensor<i32>) -> tensor<1xi32>
  %c3 = stablehlo.constant dense<3> : tensor<1xi32>
  %shape = stablehlo.concatenate %b1, %c3, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
  %ones = stablehlo.dynamic_broadcast_in_dim %one, %shape, dims = [] : (tensor<f32>, tensor<2xi32>) -> tensor<?x3xf32>
  %y = stablehlo.add %0, %ones : tensor<?x3xf32>
  %zero = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %s = stablehlo.reduce(%y init: %zero) applies stablehlo.add across dimensions = [0] : (tensor<?x3xf32>, tensor<f32>) -> tensor<3xf32>
  return %s, %y : tensor<3xf32>, tensor<?x3xf32>
}
"""

W = (np.arange(12, dtype=np.float32).reshape(4, 3) - 5) / 4


def _shapes(b):
    return [jitd.Shape(np.float32, (b, 4)), jitd.Shape(np.float32, (4, 3))]


def test_each_batch_size_compiles_and_agrees_with_numpy(client):
    for b in (1, 3, 6):
        exe = client.compile_stablehlo(POLY, argument_shapes=_shapes(b))
        assert exe.argument_shapes == _shapes(b)
        assert exe.result_shapes == [jitd.Shape(np.float32, (3,)), jitd.Shape(np.float32, (b, 3))]
        x = (np.arange(b * 4, dtype=np.float32).reshape(b, 4) - 2) / 3
        s, y = exe.Execute([x, W])
        want = x @ W + np.float32(1)
        np.testing.assert_allclose(y, want, rtol=1e-6)
        np.testing.assert_allclose(s, want.sum(axis=0), rtol=1e-5)
        assert y.dtype == np.float32 and y.shape == (b, 3)


def test_one_cache_entry_per_concrete_shape(client):
    first = client.compile_stablehlo(POLY, argument_shapes=_shapes(7))
    again = client.compile_stablehlo(POLY, argument_shapes=_shapes(7))
    other = client.compile_stablehlo(POLY, argument_shapes=_shapes(8))
    assert not first.cache_hit
    assert again.cache_hit
    assert not other.cache_hit
    assert other.result_shapes[1] == jitd.Shape(np.float32, (8, 3))
    assert first.result_shapes[1] == jitd.Shape(np.float32, (7, 3))


def test_without_shapes_the_dynamic_argument_is_named(client):
    with pytest.raises(jitd.JitdError) as e:
        client.compile_stablehlo(POLY)
    assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT
    assert "argument #0 of @main is tensor<?x4xf32>" in e.value.message


def test_shapes_that_contradict_the_program_are_refused(client):
    with pytest.raises(jitd.JitdError) as e:
        client.compile_stablehlo(POLY, argument_shapes=[jitd.Shape(np.float32, (2, 5)),
                                                        jitd.Shape(np.float32, (4, 3))])
    assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT
    assert "differs in static dimension 1" in e.value.message


def test_static_program_keeps_its_own_check(client):
    add_one = """
func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
  %c = stablehlo.constant dense<1.000000e+00> : tensor<3xf32>
  %y = stablehlo.add %x, %c : tensor<3xf32>
  return %y : tensor<3xf32>
}
"""
    exe = client.compile_stablehlo(add_one, argument_shapes=[jitd.Shape(np.float32, (3,))])
    assert_strict(exe.Execute([np.array([1, 2, 3], np.float32)]),
                  np.array([2, 3, 4], np.float32))
