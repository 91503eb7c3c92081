"""What the builder and the client refuse, and how: a JitdError with the
right StatusCode and a message that names the op (or the argument) and the
shapes involved. Bad ops are refused when they are added, not at Build or
at run time; the builder remembers its first error; the daemon keeps
serving afterwards."""

import numpy as np
import pytest

import jitd
from conftest import assert_strict, requires_builder
from support import adder, scalar_fn

pytestmark = requires_builder

F32_3 = np.zeros(3, np.float32)
F32_2x2 = np.zeros((2, 2), np.float32)


def _c(b, value, dtype=np.float32):
    return b.Constant(np.asarray(value, dtype))


# (what is wrong, the call that must fail, a word the message must contain)
ILL_TYPED = [
    ("mixed element types", lambda b: b.Add(_c(b, [1.0]), _c(b, [1], np.int32)), "Add"),
    ("shapes that do not broadcast", lambda b: b.Mul(_c(b, F32_3), _c(b, F32_2x2)), "Mul"),
    ("bad broadcast_dimensions", lambda b: b.Add(_c(b, F32_2x2), _c(b, F32_3),
                                                 broadcast_dimensions=(1,)), "Add"),
    ("compare of different types", lambda b: b.Lt(_c(b, [1.0]), _c(b, [1.0], np.float64)),
     "Lt"),
    ("bitwise op on floats", lambda b: b.And(_c(b, [1.0]), _c(b, [2.0])), "And"),
    ("shift on floats", lambda b: b.ShiftLeft(_c(b, [1.0]), _c(b, [2.0])), "ShiftLeft"),
    ("Real of a real", lambda b: b.Real(_c(b, [1], np.int32)), "Real"),
    ("Complex of ints", lambda b: b.Complex(_c(b, [1], np.int32), _c(b, [1], np.int32)),
     "Complex"),
    ("inner dimensions differ", lambda b: b.Dot(_c(b, np.zeros((2, 3))), _c(b, F32_2x2)),
     "Dot"),
    ("dot of rank 3", lambda b: b.Dot(_c(b, np.zeros((2, 2, 2))), _c(b, F32_2x2)), "Dot"),
    ("element count changes", lambda b: b.Reshape(_c(b, F32_3), None, [2, 2]), "Reshape"),
    ("not a permutation", lambda b: b.Transpose(_c(b, F32_2x2), [1, 1]), "Transpose"),
    ("reverse a missing dimension", lambda b: b.Rev(_c(b, F32_3), [1]), "Rev"),
    ("slice past the end", lambda b: b.Slice(_c(b, F32_3), [1], [4]), "Slice"),
    ("slice with start after limit", lambda b: b.Slice(_c(b, F32_3), [2], [1]), "Slice"),
    ("slice in a missing dimension", lambda b: b.SliceInDim(_c(b, F32_3), 0, 1, 1, 2),
     "Slice"),
    ("dynamic slice larger than the operand",
     lambda b: b.DynamicSlice(_c(b, F32_3), [b.ConstantS32Scalar(0)], [4]), "DynamicSlice"),
    ("update larger than the operand",
     lambda b: b.DynamicUpdateSlice(_c(b, F32_3), _c(b, np.zeros(5)), [b.ConstantS32Scalar(0)]),
     "DynamicUpdateSlice"),
    ("concatenate ranks differ", lambda b: b.ConcatInDim([_c(b, F32_3), _c(b, F32_2x2)], 0),
     "Concat"),
    ("concatenate types differ",
     lambda b: b.ConcatInDim([_c(b, F32_3), _c(b, [1], np.int32)], 0), "Concat"),
    ("select on a non-bool predicate",
     lambda b: b.Select(_c(b, [1], np.int32), _c(b, [1.0]), _c(b, [2.0])), "Select"),
    ("select branches differ", lambda b: b.Select(b.Constant(np.array([True])), _c(b, [1.0]),
                                                  _c(b, [1], np.int32)), "Select"),
    ("clamp bounds of another type",
     lambda b: b.Clamp(_c(b, 0, np.int32), _c(b, F32_3), _c(b, 1, np.int32)), "Clamp"),
    ("pad config of the wrong rank",
     lambda b: b.Pad(_c(b, F32_2x2), b.ConstantF32Scalar(0), [(1, 1, 0)]), "Pad"),
    ("pad value of another type",
     lambda b: b.Pad(_c(b, F32_3), b.ConstantS32Scalar(0), [(1, 1, 0)]), "Pad"),
    ("broadcast_in_dim to a smaller shape",
     lambda b: b.BroadcastInDim(_c(b, F32_3), [2], [0]), "BroadcastInDim"),
    ("iota dimension out of range",
     lambda b: b.BroadcastedIota(np.int32, (2, 3), 2), "Iota"),
    ("tuple index out of range",
     lambda b: b.GetTupleElement(b.Tuple(_c(b, F32_3)), 1), "GetTupleElement"),
    ("tuple element of an array", lambda b: b.GetTupleElement(_c(b, F32_3), 0),
     "GetTupleElement"),
    ("sort dimension out of range", lambda b: b.Sort(_c(b, F32_3), dimension=1), "Sort"),
    ("cholesky of a non-square matrix", lambda b: b.Cholesky(_c(b, np.ones((2, 3)))),
     "Cholesky"),
    ("triangular solve shapes differ", lambda b: b.TriangularSolve(
        _c(b, np.eye(3)), _c(b, np.ones((4, 2))), left_side=True), "TriangularSolve"),
    ("fft of a real operand", lambda b: b.Fft(_c(b, np.zeros(8)), jitd.FftType.FFT, [8]),
     "Fft"),
    ("fft length differs from the dimension",
     lambda b: b.Fft(_c(b, np.zeros(8), np.complex64), jitd.FftType.FFT, [4]), "Fft"),
    ("fft of no dimensions",
     lambda b: b.Fft(_c(b, np.zeros(8), np.complex64), jitd.FftType.FFT, []), "Fft"),
    ("no such fft type", lambda b: b.Fft(_c(b, np.zeros(8), np.complex64), 7, [8]), "Fft"),
    ("uniform bounds of two types", lambda b: b.RngUniform(
        b.ConstantF32Scalar(0.0), b.ConstantF64Scalar(1.0), dims=(2,)), "RngUniform"),
    ("uniform bounds that are not scalars", lambda b: b.RngUniform(
        _c(b, [0.0]), _c(b, [1.0]), dims=(2,)), "RngUniform"),
    ("normal with a token for mu", lambda b: b.RngNormal(
        b.CreateToken(), b.ConstantF32Scalar(1.0), dims=(2,)), "RngNormal"),
    ("normal of integers", lambda b: b.RngNormal(
        b.ConstantS32Scalar(0), b.ConstantS32Scalar(1), dims=(2,)), "RngNormal"),
    ("reduce precision of integers",
     lambda b: b.ReducePrecision(_c(b, [1], np.int32), 5, 10), "ReducePrecision"),
    ("reduce precision to no exponent",
     lambda b: b.ReducePrecision(_c(b, [1.0]), 0, 10), "ReducePrecision"),
    ("convert to an element type that does not exist",
     lambda b: b.ConvertElementType(_c(b, [1.0]), 99), "element type"),
]


class TestIllTypedOps(object):

    @pytest.mark.parametrize("what,make,word", ILL_TYPED, ids=[c[0] for c in ILL_TYPED])
    def test_refused_when_added(self, what, make, word):
        b = jitd.ComputationBuilder("bad")
        with pytest.raises(jitd.JitdError) as e:
            make(b)
        assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT, e.value
        assert word.lower() in e.value.message.lower(), (word, e.value.message)

    def test_messages_name_the_shapes(self):
        b = jitd.ComputationBuilder("shapes")
        with pytest.raises(jitd.JitdError) as e:
            b.Add(b.Constant(np.zeros((2, 3), np.float32)), b.Constant(np.zeros(4, np.float32)))
        assert "f32[2,3]" in e.value.message and "f32[4]" in e.value.message, e.value.message

    def test_the_first_error_stays_and_build_reports_it(self):
        b = jitd.ComputationBuilder("sticky")
        with pytest.raises(jitd.JitdError):
            b.Dot(b.Constant(np.zeros((2, 3))), b.Constant(np.zeros((2, 3))))
        with pytest.raises(jitd.JitdError) as e:
            b.Build(b.ConstantF32Scalar(1.0))
        assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT
        assert "Dot" in e.value.message

    def test_an_empty_builder_does_not_build(self):
        with pytest.raises(jitd.JitdError) as e:
            jitd.ComputationBuilder("nothing").Build()
        assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT


class TestPythonSideChecks(object):
    """Checks the Python layer makes before calling the C builder."""

    def test_collapse_needs_consecutive_dimensions_in_range(self):
        b = jitd.ComputationBuilder("collapse")
        x = b.Constant(np.zeros((2, 3, 4), np.int8))
        for dims in ([0, 2], [1, 0], [], [2, 3]):
            with pytest.raises(jitd.JitdError) as e:
                b.Collapse(x, dims)
            assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT
            assert "Collapse" in e.value.message

    def test_slice_needs_one_entry_per_dimension(self):
        b = jitd.ComputationBuilder("slice_arity")
        x = b.Constant(np.zeros((2, 3), np.int8))
        with pytest.raises(jitd.JitdError) as e:
            b.Slice(x, [0, 0], [1])
        assert "Slice" in e.value.message
        with pytest.raises(jitd.JitdError):
            b.Slice(x, [0, 0], [1, 1], [1])

    def test_window_arrays_need_one_entry_per_window_dimension(self):
        b = jitd.ComputationBuilder("windows")
        x = b.Constant(np.ones((4, 4), np.float32))
        init = b.ConstantF32Scalar(0.0)
        add = adder(np.float32)
        ge = scalar_fn(np.float32, 2, lambda bb, p, q: bb.Ge(p, q))
        source = b.Constant(np.ones((3, 3), np.float32))
        for call, word in [
            (lambda: b.ReduceWindowWithGeneralPadding(x, init, add, (2, 2), (1,),
                                                      [(0, 0), (0, 0)]), "window_strides"),
            (lambda: b.ReduceWindowWithGeneralPadding(x, init, add, (2, 2), (1, 1), [(0, 0)]),
             "padding"),
            (lambda: b.ReduceWindowWithGeneralPadding(x, init, add, (2, 2), (1, 1),
                                                      [(0, 0), (0, 0)], window_dilations=(1,)),
             "window_dilations"),
            (lambda: b.ReduceWindowWithGeneralPadding(x, init, add, (2, 2), (1, 1),
                                                      [(0, 0, 0), (0, 0)]), "pair"),
            (lambda: b.ReduceWindow(x, init, add, (2,), (1,), jitd.PaddingType.SAME), "SAME"),
            (lambda: b.SelectAndScatterWithGeneralPadding(x, ge, (2, 2), (1, 1, 1),
                                                          [(0, 0), (0, 0)], source, init, add),
             "window_strides"),
            (lambda: b.SelectAndScatter(x, ge, (2, 2, 2), (1, 1), jitd.PaddingType.VALID,
                                        source, init, add), "VALID"),
        ]:
            with pytest.raises(jitd.JitdError) as e:
                call()
            assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT
            assert word in e.value.message, (word, e.value.message)

    def test_conditional_needs_one_operand_per_branch(self):
        b = jitd.ComputationBuilder("branches")
        same = scalar_fn(np.float32, 1, lambda bb, v: v)
        with pytest.raises(jitd.JitdError) as e:
            b.Conditional(b.ConstantS32Scalar(0), [same, same], [b.ConstantF32Scalar(1.0)])
        assert "Conditional" in e.value.message

    def test_reduce_needs_one_init_per_operand(self):
        b = jitd.ComputationBuilder("inits")
        x = b.Constant(np.ones(3, np.float32))
        with pytest.raises(jitd.JitdError) as e:
            b.Reduce([x, x], [b.ConstantF32Scalar(0.0)], adder(np.float32), [0])
        assert "Reduce" in e.value.message

    def test_values_that_do_not_fit_c_int32(self):
        b = jitd.ComputationBuilder("int32")
        x = b.Constant(np.ones(4, np.float32))
        with pytest.raises(jitd.JitdError) as e:
            b.ReducePrecision(x, 2**31, 10)
        assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT
        with pytest.raises(jitd.JitdError):
            b.Fft(b.Constant(np.ones(4, np.complex64)), -2**31 - 1, [4])

    def test_ops_of_another_builder(self):
        first = jitd.ComputationBuilder("first")
        second = jitd.ComputationBuilder("second")
        x = first.ConstantS32Scalar(1)
        with pytest.raises(jitd.JitdError) as e:
            second.Neg(x)
        assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT
        assert "first" in e.value.message and "second" in e.value.message

    def test_non_ops_and_non_computations_are_type_errors(self):
        b = jitd.ComputationBuilder("types")
        x = b.ConstantF32Scalar(1.0)
        with pytest.raises(TypeError):
            b.Neg(np.float32(1.0))
        with pytest.raises(TypeError):
            b.Map([x], lambda v: v, [])
        with pytest.raises(TypeError):
            b.Call("not a computation", [x])

    def test_unsupported_element_type_for_a_parameter(self):
        b = jitd.ComputationBuilder("dtype")
        with pytest.raises(jitd.JitdError) as e:
            b.ParameterFromNumpy(np.zeros(2, np.float128) if hasattr(np, "float128")
                                 else np.zeros(2, "U1"))
        assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT

    def test_negative_dimensions_are_refused(self):
        with pytest.raises(jitd.JitdError) as e:
            jitd.Shape(np.float32, (2, -1))
        assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT
        b = jitd.ComputationBuilder("rng_dims")
        with pytest.raises(jitd.JitdError):
            b.RngNormal(b.ConstantF32Scalar(0.0), b.ConstantF32Scalar(1.0), dims=(3, -2))


def _three_scalars(b, x, y, z):
    return b.Add(b.Add(x, y), z)


class TestEmbeddedComputationSignatures(object):

    def test_reduce_with_a_three_parameter_function(self):
        three = scalar_fn(np.float32, 3, _three_scalars)
        b = jitd.ComputationBuilder("reduce")
        with pytest.raises(jitd.JitdError) as e:
            b.Reduce(b.Constant(np.ones(2, np.float32)), b.ConstantF32Scalar(0.0), three, [0])
        assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT
        assert "Reduce" in e.value.message

    def test_reduce_with_a_function_of_another_type(self):
        b = jitd.ComputationBuilder("reduce_type")
        with pytest.raises(jitd.JitdError) as e:
            b.Reduce(b.Constant(np.ones(2, np.float32)), b.ConstantF32Scalar(0.0),
                     adder(np.float64), [0])
        assert "Reduce" in e.value.message

    def test_map_arity_must_match_the_operands(self):
        two = adder(np.float32)
        b = jitd.ComputationBuilder("map")
        with pytest.raises(jitd.JitdError) as e:
            b.Map([b.Constant(np.ones(2, np.float32))], two, [0])
        assert "Map" in e.value.message

    def test_call_with_the_wrong_operands(self):
        negate = scalar_fn(np.float32, 1, lambda b, v: b.Neg(v))
        b = jitd.ComputationBuilder("call")
        for operands in ([b.ConstantS32Scalar(1)], [], [b.ConstantF32Scalar(1.0)] * 2):
            with pytest.raises(jitd.JitdError) as e:
                b.Call(negate, operands)
            assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT
            assert "Call" in e.value.message

    def test_while_condition_must_return_a_predicate(self):
        not_a_pred = scalar_fn(np.int32, 1, lambda b, v: v)
        step = scalar_fn(np.int32, 1, lambda b, v: b.Add(v, b.ConstantS32Scalar(1)))
        b = jitd.ComputationBuilder("while")
        with pytest.raises(jitd.JitdError) as e:
            b.While(not_a_pred, step, b.ConstantS32Scalar(0))
        assert "While" in e.value.message

    def test_while_body_must_keep_the_state_type(self):
        below = scalar_fn(np.int32, 1, lambda b, v: b.Lt(v, b.ConstantS32Scalar(3)))
        widen = scalar_fn(np.int32, 1, lambda b, v: b.ConvertElementType(v, np.int64))
        b = jitd.ComputationBuilder("while_type")
        with pytest.raises(jitd.JitdError) as e:
            b.While(below, widen, b.ConstantS32Scalar(0))
        assert "While" in e.value.message

    def test_conditional_branches_must_agree(self):
        to_f32 = scalar_fn(np.float32, 1, lambda b, v: v)
        to_f64 = scalar_fn(np.float32, 1, lambda b, v: b.ConvertElementType(v, np.float64))
        b = jitd.ComputationBuilder("cond")
        x = b.ConstantF32Scalar(1.0)
        with pytest.raises(jitd.JitdError) as e:
            b.Conditional(b.ConstantPredScalar(True), x, to_f32, x, to_f64)
        assert "Conditional" in e.value.message

    def test_sort_comparator_must_return_a_predicate(self):
        b = jitd.ComputationBuilder("sort")
        with pytest.raises(jitd.JitdError) as e:
            b.Sort(b.Constant(np.ones(3, np.float32)), comparator=adder(np.float32))
        assert "Sort" in e.value.message

    def test_select_and_scatter_select_must_return_a_predicate(self):
        b = jitd.ComputationBuilder("sas")
        add = adder(np.float32)
        with pytest.raises(jitd.JitdError) as e:
            b.SelectAndScatter(b.Constant(np.ones((2, 4), np.float32)), add, (2, 2), (2, 2),
                               jitd.PaddingType.VALID, b.Constant(np.ones((1, 2), np.float32)),
                               b.ConstantF32Scalar(0.0), add)
        assert "SelectAndScatter" in e.value.message

    def test_select_and_scatter_source_must_match_the_windows(self):
        b = jitd.ComputationBuilder("sas_source")
        ge = scalar_fn(np.float32, 2, lambda bb, p, q: bb.Ge(p, q))
        with pytest.raises(jitd.JitdError) as e:
            b.SelectAndScatter(b.Constant(np.ones((2, 4), np.float32)), ge, (2, 2), (2, 2),
                               jitd.PaddingType.VALID, b.Constant(np.ones((1, 3), np.float32)),
                               b.ConstantF32Scalar(0.0), adder(np.float32))
        assert "SelectAndScatter" in e.value.message

    def test_scatter_update_function_of_another_type(self):
        b = jitd.ComputationBuilder("scatter")
        dn = jitd.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                          scatter_dims_to_operand_dims=(0,), index_vector_dim=1)
        with pytest.raises(jitd.JitdError) as e:
            b.Scatter(b.Constant(np.zeros(4, np.int32)), b.Constant(np.array([[1]], np.int32)),
                      b.Constant(np.array([5], np.int32)), adder(np.float32), dn)
        assert "Scatter" in e.value.message


class TestCompileAndExecute(object):

    @staticmethod
    def _scale(client):
        b = jitd.ComputationBuilder("scale")
        b.Mul(b.ParameterFromNumpy(np.zeros((2, 3), np.float32)),
              b.ParameterFromNumpy(np.float32(0)))
        return b.Build()

    def test_argument_shapes_at_compile_must_match(self, client):
        comp = self._scale(client)
        with pytest.raises(jitd.JitdError) as e:
            comp.Compile(argument_shapes=[jitd.Shape(np.float32, (3, 2)),
                                          jitd.Shape(np.float32, ())], client=client)
        assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT
        assert "f32[3,2]" in e.value.message and "f32[2,3]" in e.value.message

    def test_layout_functions_are_unimplemented(self, client):
        with pytest.raises(jitd.JitdError) as e:
            self._scale(client).Compile(layout_fn=lambda shape: shape, client=client)
        assert e.value.code == jitd.StatusCode.UNIMPLEMENTED

    @pytest.mark.parametrize("args,words", [
        ([np.ones((2, 3), np.float32)], ["1 argument(s)", "takes 2"]),
        ([np.ones((2, 3), np.float32)] * 3, ["3 argument(s)"]),
        ([np.ones((3, 2), np.float32), np.float32(1)], ["argument 0", "f32[3,2]", "f32[2,3]"]),
        ([np.ones((2, 3), np.float64), np.float32(1)], ["argument 0", "f64[2,3]"]),
        ([np.ones((2, 3), np.float32), np.ones(1, np.float32)], ["argument 1", "f32[1]"]),
        ([np.ones((2, 3), np.float32), np.int32(1)], ["argument 1", "s32[]"]),
        ([np.ones((2, 3), np.float32), "one"], ["argument 1"]),
    ], ids=["too_few", "too_many", "transposed", "f64", "vector", "int", "string"])
    def test_wrong_arguments(self, client, args, words):
        exe = self._scale(client).Compile(client=client)
        with pytest.raises(jitd.JitdError) as e:
            exe.Execute(args)
        assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT
        for word in words:
            assert word in e.value.message, (word, e.value.message)

    def test_python_scalar_that_does_not_fit(self, client):
        b = jitd.ComputationBuilder("u8")
        b.Neg(b.ParameterFromNumpy(np.uint8(0)))
        exe = b.Build().Compile(client=client)
        for bad in (256, -1, 0.5):
            with pytest.raises(jitd.JitdError) as e:
                exe.Execute([bad])
            assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT

    def test_the_daemon_serves_after_all_of_the_above(self, client):
        exe = self._scale(client).Compile(client=client)
        x = np.arange(6, dtype=np.float32).reshape(2, 3)
        assert_strict(exe.Execute([x, np.float32(-0.5)]), x * np.float32(-0.5))
