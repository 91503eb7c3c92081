// The IR: Module -> Function -> Region -> Block -> Op, with SSA Values.
//
// Mirrors MLIR's structure for the StableHLO dialect: an Op has an OpCode,
// operands (borrowed Value pointers), results (owned Values), named
// attributes, and regions (owned). Each container owns what it holds through
// unique_ptr, so pointers to Values, Ops, Blocks and Regions stay valid while
// their owner lives. Not thread-safe; a Module is built once and then read.
#ifndef JITD_JIT_IR_MODULE_H_
#define JITD_JIT_IR_MODULE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "jit/ir/attribute.h"
#include "jit/ir/type.h"

namespace jitd::ir {

enum class OpCode : uint16_t {
#define X(e, name) k##e,
#include "jit/ir/ops.def"
#undef X
};

// "stablehlo.add" for OpCode::kAdd.
std::string_view OpName(OpCode code);
std::optional<OpCode> ParseOpName(std::string_view name);
// The known op name closest to `name` (an unknown one) by edit distance,
// for "did you mean" hints: "stablehlo.ad" -> "stablehlo.add", "add" ->
// "stablehlo.add", "mhlo.tanh" -> "stablehlo.tanh". Empty when nothing is
// close (more than about a third of the name would have to change).
std::string NearestOpName(std::string_view name);

// Op families that share their text syntax: `%x : T` (unary, including
// convert) and `%a, %b : T` (binary), as stablehlo-opt prints them.
bool IsElementwiseUnary(OpCode code);
bool IsElementwiseBinary(OpCode code);

// The element-wise op a chlo.broadcast_* op applies once its operands are
// broadcast to the result's shape (chlo.md): OpCode::kAdd for
// kChloBroadcastAdd, kChloNextAfter for kChloBroadcastNextAfter, ...;
// nullopt for every other op.
std::optional<OpCode> ElementwiseOfChloBroadcast(OpCode code);

// Regions nested inside each other (a while in a while in ...) at most this
// deep: the parser refuses deeper text and VerifyModule deeper IR from any
// source, and the inline pass never nests past it. Walks over nested
// regions (verifier, printer, passes, evaluator, devices) recurse once per
// level, so this bounds their stack use. Ops chained inside one block are
// not limited: every walk over operands and use-def chains is iterative.
inline constexpr int kMaxRegionNesting = 64;

// Where something came from in the source text; line 0 = unknown.
struct Location {
  uint32_t line = 0;
  uint32_t column = 0;
  std::string ToString() const;  // "12:5"
};

class Op;
class Block;
class Region;
class Function;

// An SSA value: an op result or a block argument.
class Value {
 public:
  Value(Type type, Op* defining_op, Block* owner_block, int index)
      : type_(std::move(type)), defining_op_(defining_op),
        owner_block_(owner_block), index_(index) {}

  const Type& type() const { return type_; }
  void set_type(Type type) { type_ = std::move(type); }
  // The op producing this value, or null for a block argument.
  Op* defining_op() const { return defining_op_; }
  // The block this value is an argument of, or null for an op result.
  Block* owner_block() const { return owner_block_; }
  // Result number or argument number.
  int index() const { return index_; }

  // Source name without '%' ("arg0", "cst_1"); empty when none. For op
  // results the printer uses the op's result groups instead.
  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

 private:
  Type type_;
  Op* defining_op_;
  Block* owner_block_;
  int index_;
  std::string name_;
};

// A named run of results as the source wrote them: `%0:2` is {"0", 2};
// `%values, %indices` is {"values", 1}, {"indices", 1}.
struct ResultGroup {
  std::string name;
  int count = 1;
};

class Op {
 public:
  Op(OpCode code, Location loc) : code_(code), loc_(loc) {}

  OpCode code() const { return code_; }
  std::string_view name() const { return OpName(code_); }
  Location loc() const { return loc_; }
  Block* parent_block() const { return parent_; }
  void set_parent_block(Block* b) { parent_ = b; }

  std::span<Value* const> operands() const { return operands_; }
  Value* operand(size_t i) const { return operands_[i]; }
  size_t num_operands() const { return operands_.size(); }
  void add_operand(Value* v) { operands_.push_back(v); }
  void set_operand(size_t i, Value* v) { operands_[i] = v; }

  size_t num_results() const { return results_.size(); }
  Value* result(size_t i) const { return results_[i].get(); }
  Value* add_result(Type type);
  std::vector<Type> result_types() const;
  std::vector<Type> operand_types() const;

  const std::vector<ResultGroup>& result_groups() const { return result_groups_; }
  void set_result_groups(std::vector<ResultGroup> groups) { result_groups_ = std::move(groups); }

  AttributeList& attrs() { return attrs_; }
  const AttributeList& attrs() const { return attrs_; }
  const Attribute* attr(std::string_view name) const { return attrs_.Find(name); }

  size_t num_regions() const { return regions_.size(); }
  Region& region(size_t i) const { return *regions_[i]; }
  Region& add_region();

  // Typed attribute lookups; nullopt when missing or of another kind.
  std::optional<int64_t> GetInt(std::string_view name) const;
  std::optional<bool> GetBool(std::string_view name) const;
  std::optional<std::vector<int64_t>> GetI64Array(std::string_view name) const;
  const EnumAttr* GetEnum(std::string_view name) const;
  const StructAttr* GetStruct(std::string_view name) const;

 private:
  OpCode code_;
  Location loc_;
  Block* parent_ = nullptr;
  std::vector<Value*> operands_;
  std::vector<std::unique_ptr<Value>> results_;
  std::vector<ResultGroup> result_groups_;
  AttributeList attrs_;
  std::vector<std::unique_ptr<Region>> regions_;
};

class Block {
 public:
  explicit Block(Region* parent) : parent_(parent) {}

  Region* parent_region() const { return parent_; }
  size_t num_args() const { return args_.size(); }
  Value* arg(size_t i) const { return args_[i].get(); }
  Value* add_arg(Type type);

  const std::vector<std::unique_ptr<Op>>& ops() const { return ops_; }
  Op* add_op(std::unique_ptr<Op> op);
  // Inserts `op` before position `index` (== ops().size() appends).
  Op* InsertOp(size_t index, std::unique_ptr<Op> op);
  // Position of `op` in this block, or nullopt when it is not here.
  std::optional<size_t> IndexOf(const Op* op) const;
  // Removes and returns the op at `index`; its results must have no uses.
  std::unique_ptr<Op> RemoveOp(size_t index);
  // Moves all ops out (the block is left empty) / puts a list of ops in,
  // replacing what is there: for passes that rebuild a block in one sweep.
  std::vector<std::unique_ptr<Op>> TakeOps() { return std::move(ops_); }
  void SetOps(std::vector<std::unique_ptr<Op>> ops);
  // Destroys every op for which `pred` holds, in one pass; returns how many.
  // Their results must have no remaining uses.
  size_t EraseOpsIf(const std::function<bool(const Op&)>& pred);
  // The last op (the terminator in a well-formed block), or null.
  Op* terminator() const { return ops_.empty() ? nullptr : ops_.back().get(); }

 private:
  Region* parent_;
  std::vector<std::unique_ptr<Value>> args_;
  std::vector<std::unique_ptr<Op>> ops_;
};

class Region {
 public:
  explicit Region(Op* parent_op) : parent_op_(parent_op) {}

  // The op owning this region, or null for a function body.
  Op* parent_op() const { return parent_op_; }
  size_t num_blocks() const { return blocks_.size(); }
  Block& block(size_t i) const { return *blocks_[i]; }
  Block& add_block();
  bool empty() const { return blocks_.empty(); }

 private:
  Op* parent_op_;
  std::vector<std::unique_ptr<Block>> blocks_;
};

// A `func.func`: signature, argument/result attributes, and a body region
// whose entry block's arguments are the function's parameters.
class Function {
 public:
  Function(std::string name, Location loc) : name_(std::move(name)), loc_(loc), body_(nullptr) {}

  const std::string& name() const { return name_; }
  Location loc() const { return loc_; }
  bool is_public() const { return visibility_ != "private"; }
  // "public" (default, not printed), "private", or "nested".
  const std::string& visibility() const { return visibility_; }
  void set_visibility(std::string v) { visibility_ = std::move(v); }

  std::vector<Type>& arg_types() { return arg_types_; }
  const std::vector<Type>& arg_types() const { return arg_types_; }
  std::vector<Type>& result_types() { return result_types_; }
  const std::vector<Type>& result_types() const { return result_types_; }
  // One (possibly empty) attribute list per argument / result.
  std::vector<AttributeList>& arg_attrs() { return arg_attrs_; }
  const std::vector<AttributeList>& arg_attrs() const { return arg_attrs_; }
  std::vector<AttributeList>& result_attrs() { return result_attrs_; }
  const std::vector<AttributeList>& result_attrs() const { return result_attrs_; }
  // Attributes of the function itself (besides name, type, visibility).
  AttributeList& attrs() { return attrs_; }
  const AttributeList& attrs() const { return attrs_; }

  Region& body() { return body_; }
  const Region& body() const { return body_; }
  // The entry block, or null for a declaration without a body.
  Block* entry() const { return body_.empty() ? nullptr : &body_.block(0); }

 private:
  std::string name_;
  Location loc_;
  std::string visibility_ = "public";
  std::vector<Type> arg_types_;
  std::vector<Type> result_types_;
  std::vector<AttributeList> arg_attrs_;
  std::vector<AttributeList> result_attrs_;
  AttributeList attrs_;
  Region body_;
};

// One entry of the file metadata block that follows a module:
// `{-# dialect_resources: { builtin: { name: "0x0400000001000000" } } #-}`.
// Kept verbatim so a printed module carries its resource blobs (the data of
// `dense_resource<name>` constants) along.
struct ResourceEntry {
  std::string section;  // "dialect_resources" or "external_resources"
  std::string group;    // the dialect, e.g. "builtin"
  std::string key;      // the resource name
  std::string value;    // the value as written: a "0x..." blob, string, bool
};

class Module {
 public:
  // `module @jit_main attributes {...}`; the name may be empty.
  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  AttributeList& attrs() { return attrs_; }
  const AttributeList& attrs() const { return attrs_; }

  const std::vector<std::unique_ptr<Function>>& functions() const { return functions_; }
  // Adds a function; fails if the name is taken.
  StatusOr<Function*> AddFunction(std::unique_ptr<Function> fn);
  Function* FindFunction(std::string_view name) const;
  // Destroys function `name`; false if there is none. Calls to it must be
  // gone first.
  bool RemoveFunction(std::string_view name);
  // The entry point: @main if present, else the only public function.
  Function* EntryFunction() const;

  std::vector<ResourceEntry>& resources() { return resources_; }
  const std::vector<ResourceEntry>& resources() const { return resources_; }
  // The bytes of builtin resource blob `key` (without MLIR's 4-byte
  // alignment prefix); nullopt if absent or not a hex blob.
  std::optional<std::vector<uint8_t>> FindResourceBlob(std::string_view key) const;

 private:
  std::string name_;
  AttributeList attrs_;
  std::vector<std::unique_ptr<Function>> functions_;
  std::unordered_map<std::string, Function*> by_name_;
  std::vector<ResourceEntry> resources_;
};

// ---- Mutation helpers (used by jit/passes) ---------------------------------
// The IR keeps no use lists, so these walk the IR they are given; passes batch
// their replacements into one RemapOperands sweep where that matters.

using ValueMap = std::unordered_map<const Value*, Value*>;

// A detached op with fresh results of `result_types` (one result group
// named `result_name`, or unnamed when empty).
std::unique_ptr<Op> CreateOp(OpCode code, Location loc, std::span<Value* const> operands,
                             std::span<const Type> result_types, AttributeList attrs = {},
                             std::string result_name = {});

// Calls `fn` on every op in `region`, nested regions included, in program
// order (an op before the ops of its regions). `fn` must not add or remove
// ops of the blocks being walked.
void WalkOps(Region& region, const std::function<void(Op&)>& fn);
void WalkOps(const Region& region, const std::function<void(const Op&)>& fn);

// Whether an operand or result of `op` has a quantized element type
// (Type::is_quantized). Such an op means dequantize -> op -> quantize, so
// backends that compute on storage integers must leave it to jit/eval.
inline bool HasQuantizedTypes(const Op& op) {
  for (const Value* v : op.operands()) {
    if (v->type().is_quantized()) return true;
  }
  for (size_t i = 0; i < op.num_results(); ++i) {
    if (op.result(i)->type().is_quantized()) return true;
  }
  return false;
}

// How deep regions nest inside `op`: 0 for an op without regions, 1 for one
// whose regions hold no ops with regions, and so on. Iterative.
int RegionNesting(const Op& op);

// Makes every operand in `region` (nested regions included) that is `from`
// use `to` instead.
void ReplaceAllUsesWith(Region& region, const Value* from, Value* to);
// Rewrites every operand in `region` found in `map` to its image, following
// chains (a -> b, b -> c rewrites a to c). The map must have no cycles.
void RemapOperands(Region& region, const ValueMap& map);
// How many operands in `region` (nested regions included) use each value.
std::unordered_map<const Value*, int> CountUses(const Region& region);

// A deep copy of `op` (attributes, result groups and names, regions with
// their block arguments). Operands found in `mapping` are replaced by their
// image, others are kept; the copy's results and block arguments are added to
// `mapping` as images of the originals, so values defined inside the copied
// regions are remapped too.
std::unique_ptr<Op> CloneOp(const Op& op, ValueMap& mapping);

// A deep copy of `module` (functions, attributes, resources).
std::unique_ptr<Module> CloneModule(const Module& module);

}  // namespace jitd::ir

#endif  // JITD_JIT_IR_MODULE_H_
