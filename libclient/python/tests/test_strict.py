"""The strict comparison helper itself: a scalar 4 is not [[4]]."""

import numpy as np
import pytest

from conftest import assert_strict


def test_scalar_is_not_a_matrix():
    with pytest.raises(AssertionError):
        assert_strict(np.array([[4]], np.int32), np.int32(4))
    with pytest.raises(AssertionError):
        assert_strict(np.array(4, np.int32), np.array([[4]], np.int32))


def test_dtype_must_match():
    with pytest.raises(AssertionError):
        assert_strict(np.array(4, np.int64), np.int32(4))
    assert_strict(np.array(4, np.int32), np.int32(4))


def test_tuples_compare_elementwise():
    assert_strict((np.array(1.0, np.float32),), (np.float32(1.0),))
    with pytest.raises(AssertionError):
        assert_strict(np.array(1.0, np.float32), (np.float32(1.0),))
