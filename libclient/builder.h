// The computation builder behind include/jitd/jitd_builder.h: xla_client's
// ComputationBuilder without a compiler. Ops are kept in a small graph of
// their own (op name, operands, result shapes, attributes, regions) with
// shapes inferred and checked as each op is added; Build() turns the graph
// into a FlatBuffers module (ipc/module.fbs) and prints it as StableHLO text
// in MLIR's generic op form. Nothing here links the IR: libjitd.so stays
// free of the compiler.
//
// Builder: not thread safe (one thread at a time); lives as long as its
// owner keeps it. Shape, Computation: immutable values, safe to share.
#ifndef JITD_LIBCLIENT_BUILDER_H_
#define JITD_LIBCLIENT_BUILDER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "ipc/module_generated.h"

namespace jitd::client {

// Element types: the values of jitd_dtype_t and of ElementType in
// ipc/module.fbs.
using ElementType = fbmodule::ElementType;

// "f32", "s32", "pred", ... (XLA's spelling).
std::string_view XlaTypeName(ElementType t);
// "f32", "i32", "i1", "complex<f32>", ... (MLIR's spelling).
std::string_view MlirTypeName(ElementType t);
// Bytes one element occupies in host memory and in a dense constant (one
// for PRED and sub-byte types); 0 for INVALID.
int ElementBytes(ElementType t);

// An array shape, a tuple of shapes, or a token. Plain value.
class Shape {
 public:
  enum class Kind : uint8_t { kArray, kTuple, kToken };
  static constexpr int kMaxRank = 16;

  Shape() = default;
  static Shape Array(ElementType dtype, std::vector<int64_t> dims);
  static Shape Scalar(ElementType dtype) { return Array(dtype, {}); }
  static Shape Tuple(std::vector<Shape> elements);
  static Shape Token();
  // Array() with the limits checked (valid dtype, rank <= 16, dims >= 0,
  // fewer than 2^40 elements).
  static StatusOr<Shape> CheckedArray(ElementType dtype, std::vector<int64_t> dims);

  Kind kind() const { return kind_; }
  bool is_array() const { return kind_ == Kind::kArray; }
  bool is_tuple() const { return kind_ == Kind::kTuple; }
  bool is_token() const { return kind_ == Kind::kToken; }
  ElementType dtype() const { return dtype_; }
  const std::vector<int64_t>& dims() const { return dims_; }
  int64_t rank() const { return static_cast<int64_t>(dims_.size()); }
  int64_t num_elements() const;
  const std::vector<Shape>& elements() const { return elements_; }
  bool operator==(const Shape& other) const = default;

  std::string ToString() const;  // "f32[2,3]", "(f32[], s32[4])", "token"
  std::string ToMlir() const;    // "tensor<2x3xf32>", "tuple<...>", "!stablehlo.token"

 private:
  Kind kind_ = Kind::kArray;
  ElementType dtype_ = ElementType::ElementType_F32;
  std::vector<int64_t> dims_;
  std::vector<Shape> elements_;
};

// ---- The graph ----------------------------------------------------------------

struct StructField {
  std::string name;
  bool is_list = true;
  std::vector<int64_t> values;
  bool operator==(const StructField&) const = default;
};

struct ConvDims {
  int64_t input_batch = 0, input_feature = 1;
  std::vector<int64_t> input_spatial;
  int64_t kernel_input_feature = 1, kernel_output_feature = 0;
  std::vector<int64_t> kernel_spatial;
  int64_t output_batch = 0, output_feature = 1;
  std::vector<int64_t> output_spatial;
  bool operator==(const ConvDims&) const = default;
};

// An attribute the builder emits.
struct Attr {
  enum class Kind : uint8_t { kBool, kInt, kString, kI64Array, kDense, kEnum, kStruct, kConv, kSymbol };
  Kind kind = Kind::kBool;
  int64_t i = 0;                                   // kBool (0/1), kInt
  ElementType int_type = ElementType::ElementType_S64;  // kInt
  std::string s;              // kString, kSymbol, kEnum (value), kStruct (name)
  std::string enum_name;      // kEnum: "comparison_direction"
  std::vector<int64_t> ints;  // kI64Array
  Shape dense_type;           // kDense
  bool splat = false;         // kDense
  std::shared_ptr<const std::vector<uint8_t>> bytes;  // kDense
  std::vector<StructField> fields;  // kStruct
  ConvDims conv;                    // kConv

  static Attr Bool(bool v);
  static Attr Int(int64_t v, ElementType t = ElementType::ElementType_S64);
  static Attr String(std::string v);
  static Attr I64Array(std::vector<int64_t> v);
  static Attr Dense(Shape type, std::vector<uint8_t> bytes, bool splat = false);
  static Attr Enum(std::string enum_name, std::string value);  // #stablehlo<...>
  static Attr Struct(std::string name, std::vector<StructField> fields);
  static Attr Symbol(std::string name);
};

struct Graph;

// A value: result `index` of node `node`, or block argument `index` when
// node == kArg, of the graph `up` levels above the one the reference is in
// (0: the same graph; 1: the graph holding the node whose region this is;
// regions of if / case capture values from above this way).
struct ValueRef {
  static constexpr int32_t kArg = -1;
  int32_t node = kArg;
  int32_t index = 0;
  int32_t up = 0;
  bool operator==(const ValueRef&) const = default;
};

struct Node {
  std::string name;  // "stablehlo.add"
  std::vector<ValueRef> operands;
  std::vector<Shape> results;
  std::vector<std::pair<std::string, Attr>> attrs;
  std::vector<Graph> regions;
};

// One block: its arguments and its ops (the last one the terminator where
// the block is a region or function body).
struct Graph {
  std::vector<Shape> args;
  std::vector<std::string> arg_names;
  std::vector<Node> nodes;
};

// A built computation. Immutable.
class Computation {
 public:
  const std::string& name() const { return name_; }
  const std::vector<Shape>& parameters() const { return parameters_; }
  const Shape& result_shape() const { return result_shape_; }
  const std::vector<uint8_t>& module_bytes() const { return module_bytes_; }
  // StableHLO text in MLIR's generic op form.
  std::string ToText() const;

  // The graph (for the emitters): the main block, the values it returns and
  // their shapes, and whether the root was a Tuple op (flattened).
  const Graph& body() const { return body_; }
  const std::vector<ValueRef>& results() const { return results_; }
  const std::vector<Shape>& result_shapes() const { return result_shapes_; }
  bool root_is_tuple() const { return root_is_tuple_; }

 private:
  friend class Builder;
  std::string name_;
  std::vector<Shape> parameters_;
  Shape result_shape_;
  bool root_is_tuple_ = false;
  // The main function's block (arguments = parameters in index order)
  // without its return, and the values it returns (a tuple root flattened)
  // with their shapes. Ops with embedded computations inline this block.
  Graph body_;
  std::vector<ValueRef> results_;
  std::vector<Shape> result_shapes_;
  std::vector<uint8_t> module_bytes_;
};

// The FlatBuffers module (ipc/module.fbs) and the StableHLO text of a
// computation: one public function "main" taking the parameters and
// returning the (flattened) results.
std::vector<uint8_t> EmitFlatBuffer(const Computation& c);
std::string EmitText(const Computation& c);

// Op handles: (builder serial << 32) | (index + 1); 0 is no op.
using OpId = uint64_t;

enum class UnaryOp : int {
  kNot, kAbs, kExp, kExpm1, kFloor, kRound, kCeil, kLog, kLog1p, kSign, kCos, kSin, kTanh,
  kSqrt, kRsqrt, kCbrt, kSquare, kIsFinite, kReciprocal, kNeg, kLogistic, kReal, kImag, kConj,
  kTan, kClz, kPopulationCount, kRoundNearestEven, kErf, kErfc, kErfInv, kLgamma, kDigamma,
  kBesselI1e, kAcos, kAsin, kAtan, kAcosh, kAsinh, kAtanh, kCosh, kSinh,
  kLast = kSinh,
};
enum class BinaryOp : int {
  kEq, kNe, kGe, kGt, kLt, kLe, kAdd, kSub, kMul, kDiv, kRem, kMax, kMin, kAnd, kOr, kXor,
  kPow, kAtan2, kShiftLeft, kShiftRightArithmetic, kShiftRightLogical, kComplex, kNextAfter,
  kLast = kNextAfter,
};

struct DotDims {
  std::vector<int64_t> lhs_contracting, rhs_contracting, lhs_batch, rhs_batch;
};
struct ConvOptions {
  std::vector<int64_t> window_strides, padding_low, padding_high, lhs_dilation, rhs_dilation;
  ConvDims dims;
  int64_t feature_group_count = 1;
  int64_t batch_group_count = 1;
};
struct WindowOptions {
  std::vector<int64_t> dimensions, strides, base_dilations, window_dilations, padding_low,
      padding_high;  // empty = defaults
};
struct GatherDims {
  std::vector<int64_t> offset_dims, collapsed_slice_dims, start_index_map;
  int64_t index_vector_dim = 0;
};
struct ScatterDims {
  std::vector<int64_t> update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims;
  int64_t index_vector_dim = 0;
};
enum class Padding { kValid, kSame };
// XLA's (low, high) padding for `padding` on input_dims with window/strides.
StatusOr<std::vector<std::pair<int64_t, int64_t>>> MakePadding(
    Padding padding, std::span<const int64_t> input_dims, std::span<const int64_t> window_dims,
    std::span<const int64_t> strides);

class Builder {
 public:
  explicit Builder(std::string name);

  const std::string& name() const { return name_; }
  // The first error of any op added, or OK.
  const Status& status() const { return error_; }
  StatusOr<Shape> GetShape(OpId op) const;

  StatusOr<OpId> Parameter(int64_t index, const Shape& shape, std::string name);
  // One element of `dtype` in host layout (ElementBytes(dtype) bytes).
  StatusOr<OpId> ConstantScalar(ElementType dtype, const void* value);
  StatusOr<OpId> ConstantArray(ElementType dtype, std::vector<int64_t> dims, const void* data,
                               size_t size_bytes);
  StatusOr<OpId> Unary(UnaryOp op, OpId operand);
  StatusOr<OpId> Binary(BinaryOp op, OpId lhs, OpId rhs,
                        std::span<const int64_t> broadcast_dimensions = {});
  StatusOr<OpId> ConvertElementType(OpId operand, ElementType dtype);
  StatusOr<OpId> BitcastConvertType(OpId operand, ElementType dtype);
  StatusOr<OpId> Broadcast(OpId operand, std::span<const int64_t> sizes);
  StatusOr<OpId> BroadcastInDim(OpId operand, std::span<const int64_t> out_dims,
                                std::span<const int64_t> broadcast_dimensions);
  StatusOr<OpId> Reshape(OpId operand, std::optional<std::vector<int64_t>> dimensions,
                         std::span<const int64_t> new_sizes);
  StatusOr<OpId> Transpose(OpId operand, std::span<const int64_t> permutation);
  StatusOr<OpId> Rev(OpId operand, std::span<const int64_t> dimensions);
  StatusOr<OpId> Slice(OpId operand, std::span<const int64_t> start,
                       std::span<const int64_t> limit, std::span<const int64_t> strides);
  StatusOr<OpId> SliceInDim(OpId operand, int64_t start, int64_t limit, int64_t stride,
                            int64_t dimno);
  StatusOr<OpId> DynamicSlice(OpId operand, std::span<const OpId> start_indices,
                              std::span<const int64_t> slice_sizes);
  StatusOr<OpId> DynamicUpdateSlice(OpId operand, OpId update,
                                    std::span<const OpId> start_indices);
  StatusOr<OpId> Concatenate(std::span<const OpId> operands, int64_t dimension);
  StatusOr<OpId> Pad(OpId operand, OpId padding_value, std::span<const int64_t> low,
                     std::span<const int64_t> high, std::span<const int64_t> interior);
  StatusOr<OpId> Iota(ElementType dtype, int64_t size);
  StatusOr<OpId> BroadcastedIota(const Shape& shape, int64_t dimension);
  StatusOr<OpId> Select(OpId pred, OpId on_true, OpId on_false);
  StatusOr<OpId> Clamp(OpId min, OpId operand, OpId max);
  StatusOr<OpId> Dot(OpId lhs, OpId rhs);
  StatusOr<OpId> DotGeneral(OpId lhs, OpId rhs, const DotDims& dims);
  StatusOr<OpId> ConvGeneralDilated(OpId lhs, OpId rhs, const ConvOptions& options);
  StatusOr<OpId> Conv(OpId lhs, OpId rhs, std::span<const int64_t> strides, Padding padding);
  StatusOr<OpId> Reduce(std::span<const OpId> operands, std::span<const OpId> init_values,
                        const Computation& computation, std::span<const int64_t> dimensions);
  StatusOr<OpId> ReduceWindow(std::span<const OpId> operands, std::span<const OpId> init_values,
                              const Computation& computation, const WindowOptions& window);
  StatusOr<OpId> Map(std::span<const OpId> operands, const Computation& computation,
                     std::span<const int64_t> dimensions);
  // comparator null: ascending by operand 0.
  StatusOr<OpId> Sort(std::span<const OpId> operands, int64_t dimension,
                      const Computation* comparator, bool is_stable);
  StatusOr<OpId> While(const Computation& condition, const Computation& body, OpId init);
  StatusOr<OpId> Conditional(OpId pred, OpId true_operand, const Computation& true_computation,
                             OpId false_operand, const Computation& false_computation);
  StatusOr<OpId> ConditionalIndexed(OpId index, std::span<const Computation* const> branches,
                                    std::span<const OpId> operands);
  StatusOr<OpId> Tuple(std::span<const OpId> elements);
  StatusOr<OpId> GetTupleElement(OpId tuple, int64_t index);
  StatusOr<OpId> Gather(OpId operand, OpId start_indices, const GatherDims& dims,
                        std::span<const int64_t> slice_sizes, bool indices_are_sorted);
  StatusOr<OpId> Scatter(OpId operand, OpId indices, OpId updates,
                         const Computation& update_computation, const ScatterDims& dims,
                         bool indices_are_sorted, bool unique_indices);
  StatusOr<OpId> CreateToken();
  StatusOr<OpId> AfterAll(std::span<const OpId> tokens);
  // Returns tuple(value, token).
  StatusOr<OpId> InfeedWithToken(OpId token, const Shape& shape, std::string config);
  StatusOr<OpId> OutfeedWithToken(OpId operand, OpId token, std::string config);
  // With the builder's implicit token (program order).
  StatusOr<OpId> Infeed(const Shape& shape, std::string config);
  StatusOr<OpId> Outfeed(OpId operand, std::string config);

  StatusOr<OpId> Call(const Computation& computation, std::span<const OpId> operands);
  StatusOr<OpId> ReducePrecision(OpId operand, int32_t exponent_bits, int32_t mantissa_bits);
  StatusOr<OpId> ReplicaId();
  StatusOr<OpId> Cholesky(OpId a, bool lower);
  // transpose_a: 0 NO_TRANSPOSE, 1 TRANSPOSE, 2 ADJOINT.
  StatusOr<OpId> TriangularSolve(OpId a, OpId b, bool left_side, bool lower, bool unit_diagonal,
                                 int transpose_a);
  // fft_type: 0 FFT, 1 IFFT, 2 RFFT, 3 IRFFT.
  StatusOr<OpId> Fft(OpId operand, int fft_type, std::span<const int64_t> fft_length);
  StatusOr<OpId> Rng(OpId a, OpId b, const Shape& shape, bool normal);
  StatusOr<OpId> SelectAndScatter(OpId operand, const Computation& select,
                                  const WindowOptions& window, OpId source, OpId init_value,
                                  const Computation& scatter);

  // root 0 = the last op added.
  StatusOr<std::shared_ptr<const Computation>> Build(OpId root);

 private:
  struct Value {
    ValueRef ref;
    Shape shape;
  };
  struct Param {
    int64_t index;
    std::string name;
  };

  // Records `status` as the builder's error if it is the first; returns it.
  Status Fail(Status status);
  // The value of `op`, or an error naming `what` (the op being added).
  StatusOr<const Value*> Get(OpId op, std::string_view what) const;
  StatusOr<Shape> ArrayOf(OpId op, std::string_view what) const;
  // Appends a node to the main graph and returns its result values' ids.
  std::vector<OpId> AddNode(Node node);
  OpId AddNode1(Node node) { return AddNode(std::move(node))[0]; }
  OpId NewValue(ValueRef ref, Shape shape);
  // Value of `id` (checked before).
  const Value& V(OpId id) const;
  // Broadcasts `op` to `dims` (broadcast_in_dim with `mapping`) if needed.
  OpId BroadcastTo(OpId op, const std::vector<int64_t>& dims,
                   const std::vector<int64_t>& mapping);
  // A region running `c` on its block arguments (c's parameters).
  static Graph RegionOf(const Computation& c);
  // Multi-result node -> one tuple value when n > 1.
  OpId TupleOfResults(const std::vector<OpId>& results);
  StatusOr<OpId> OneResultOrTuple(Node node);
  // Reduce / ReduceWindow inputs: operands of one shape, each with a scalar
  // init value of its element type.
  struct ReduceInputs {
    std::vector<ValueRef> refs, init_refs;
    std::vector<ElementType> types;
    Shape first;
  };
  StatusOr<ReduceInputs> CheckReduceInputs(std::string_view op, std::span<const OpId> operands,
                                           std::span<const OpId> init_values);
  // Tuple elements of `op` as values (folding a tuple node's operands, or
  // adding get_tuple_element nodes).
  std::vector<OpId> Untuple(OpId op);
  StatusOr<OpId> ImplicitToken();
  // if (`op_name` "stablehlo.if") / case: branch b inlines branches[b] with
  // its parameter bound to operands[b].
  StatusOr<OpId> ConditionalImpl(OpId selector, const char* op_name,
                                 std::span<const Computation* const> branches,
                                 std::span<const OpId> operands, std::string_view what);

  std::string name_;
  uint32_t serial_;
  Status error_;
  std::vector<Value> values_;  // by OpId low word - 1
  std::vector<Param> params_;  // by block argument index of graph_
  Graph graph_;
  std::optional<OpId> implicit_token_;
};

}  // namespace jitd::client

#endif  // JITD_LIBCLIENT_BUILDER_H_
