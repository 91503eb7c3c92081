// The C API of include/jitd/jitd.h over the C++ client (libclient/client.h).
//
// This file is the only C/C++ seam: Status <-> jitd_status_t* conversion and
// the catching of C++ exceptions (bad_alloc, ...) happen here and nowhere
// else. Every entry point checks its pointers and struct sizes first, then
// calls the client inside Guard(), which turns a thrown exception into a
// status so nothing unwinds into C.
#include "jitd/jitd.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "libclient/c_api_internal.h"
#include "libclient/client.h"
#include "libclient/remote_link.h"
#include "jitd/jitd_builder.h"
#include "libclient/launcher.h"

struct jitd_status {
  jitd_status_code_t code;
  std::string message;
  bool is_static = false;  // the out-of-memory status below is never freed
};

struct jitd_client {
  std::shared_ptr<jitd::client::Client> client;
};

struct jitd_buffer {
  std::shared_ptr<jitd::client::Client> client;  // keeps the connection alive
  jitd::client::Buffer buffer;
  std::string device = {};  // set: device-resident (buffer.data empty)
};

struct jitd_executable {
  std::shared_ptr<jitd::client::Client> client;  // keeps the connection alive
  jitd::client::Executable executable;
  // The latest profiled execute's rows (jitd_executable_profile_row).
  mutable std::mutex profile_mu;
  std::vector<jitd::client::Timing::ProfileRow> profile;
  uint64_t profile_omitted = 0;
};

namespace {

using jitd::Status;
using jitd::StatusCode;
using jitd::StatusOr;
using jitd::client::Client;
namespace wire = jitd::wire;

// The C enums mirror base/status.h and ipc/protocol.fbs value for value.
static_assert(JITD_OK == static_cast<int>(StatusCode::kOk));
static_assert(JITD_INVALID_ARGUMENT == static_cast<int>(StatusCode::kInvalidArgument));
static_assert(JITD_NOT_FOUND == static_cast<int>(StatusCode::kNotFound));
static_assert(JITD_ALREADY_EXISTS == static_cast<int>(StatusCode::kAlreadyExists));
static_assert(JITD_RESOURCE_EXHAUSTED == static_cast<int>(StatusCode::kResourceExhausted));
static_assert(JITD_FAILED_PRECONDITION == static_cast<int>(StatusCode::kFailedPrecondition));
static_assert(JITD_UNIMPLEMENTED == static_cast<int>(StatusCode::kUnimplemented));
static_assert(JITD_UNAVAILABLE == static_cast<int>(StatusCode::kUnavailable));
static_assert(JITD_DEADLINE_EXCEEDED == static_cast<int>(StatusCode::kDeadlineExceeded));
static_assert(JITD_INTERNAL == static_cast<int>(StatusCode::kInternal));
static_assert(JITD_PERMISSION_DENIED == static_cast<int>(StatusCode::kPermissionDenied));

#define JITD_CHECK_DTYPE(name) \
  static_assert(JITD_DTYPE_##name == static_cast<int>(wire::ElementType_##name))
JITD_CHECK_DTYPE(INVALID);
JITD_CHECK_DTYPE(PRED);
JITD_CHECK_DTYPE(S8);
JITD_CHECK_DTYPE(S16);
JITD_CHECK_DTYPE(S32);
JITD_CHECK_DTYPE(S64);
JITD_CHECK_DTYPE(U8);
JITD_CHECK_DTYPE(U16);
JITD_CHECK_DTYPE(U32);
JITD_CHECK_DTYPE(U64);
JITD_CHECK_DTYPE(F16);
JITD_CHECK_DTYPE(BF16);
JITD_CHECK_DTYPE(F32);
JITD_CHECK_DTYPE(F64);
JITD_CHECK_DTYPE(C64);
JITD_CHECK_DTYPE(C128);
JITD_CHECK_DTYPE(S2);
JITD_CHECK_DTYPE(S4);
JITD_CHECK_DTYPE(U2);
JITD_CHECK_DTYPE(U4);
JITD_CHECK_DTYPE(F8E4M3FN);
JITD_CHECK_DTYPE(F8E5M2);
JITD_CHECK_DTYPE(F8E4M3FNUZ);
JITD_CHECK_DTYPE(F8E5M2FNUZ);
JITD_CHECK_DTYPE(F8E4M3B11FNUZ);
JITD_CHECK_DTYPE(F8E3M4);
JITD_CHECK_DTYPE(F8E4M3);
JITD_CHECK_DTYPE(F8E8M0FNU);
JITD_CHECK_DTYPE(F4E2M1FN);
JITD_CHECK_DTYPE(F6E2M3FN);
JITD_CHECK_DTYPE(F6E3M2FN);
static_assert(JITD_DTYPE_F6E3M2FN == static_cast<int>(wire::ElementType_MAX));
#undef JITD_CHECK_DTYPE

// Returned when even a status cannot be allocated; jitd_status_free skips it.
jitd_status kOutOfMemory{JITD_RESOURCE_EXHAUSTED, "jitd: out of memory", true};

// The one Status -> jitd_status_t* conversion: NULL for OK.
jitd_status_t* ToC(const Status& status) {
  if (status.ok()) return nullptr;
  try {
    return new jitd_status{static_cast<jitd_status_code_t>(status.code()), status.message()};
  } catch (...) {
    return &kOutOfMemory;
  }
}

jitd_status_t* Invalid(std::string message) {
  return ToC(jitd::InvalidArgument(std::move(message)));
}

// Runs `body` (returning Status) and converts its result; exceptions become
// statuses here so none crosses into C.
template <typename Body>
jitd_status_t* Guard(Body&& body) {
  try {
    return ToC(body());
  } catch (const std::bad_alloc&) {
    return &kOutOfMemory;
  } catch (const std::exception& e) {
    return ToC(jitd::Internal(std::string("jitd: unexpected C++ exception: ") + e.what()));
  } catch (...) {
    return ToC(jitd::Internal("jitd: unexpected C++ exception"));
  }
}

// Checks an options struct's struct_size against the size this library needs.
Status CheckStructSize(const char* what, size_t given, size_t needed) {
  if (given < needed) {
    return jitd::InvalidArgument(std::string(what) + ".struct_size is " + std::to_string(given) +
                                 ", at least " + std::to_string(needed) + " is needed");
  }
  return Status::Ok();
}

// The place `jitd serve` listens on by default (daemon::DefaultSocketPath,
// repeated here because libjitd.so does not link the daemon).
std::string DefaultSocketPath() {
  if (const char* env = std::getenv("JITD_SOCKET"); env != nullptr && *env != '\0') return env;
  if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg != nullptr && xdg[0] == '/') {
    return std::string(xdg) + "/jitd/jitd.sock";
  }
  return "/tmp/jitd-" + std::to_string(::getuid()) + "/jitd.sock";
}

Status ShapeAt(const std::vector<jitd::client::TensorShape>& shapes, size_t index,
               const char* what, jitd_dtype_t* out_dtype, size_t* out_rank,
               const int64_t** out_dims) {
  if (out_dtype == nullptr || out_rank == nullptr || out_dims == nullptr) {
    return jitd::InvalidArgument(std::string(what) + " shape: an out pointer is NULL");
  }
  if (index >= shapes.size()) {
    return jitd::InvalidArgument(std::string(what) + " index " + std::to_string(index) +
                                 " is out of range (the executable has " +
                                 std::to_string(shapes.size()) + ")");
  }
  const jitd::client::TensorShape& shape = shapes[index];
  *out_dtype = static_cast<jitd_dtype_t>(shape.element_type);
  *out_rank = shape.dims.size();
  *out_dims = shape.dims.empty() ? nullptr : shape.dims.data();
  return Status::Ok();
}

// Checks the buffers passed for one side of an execute and collects their
// handles. A shape with a negative (dynamic) dimension is left to the daemon.
Status CollectBuffers(const jitd_executable& exe, jitd_buffer_t* const* buffers, size_t count,
                      const std::vector<jitd::client::TensorShape>& expected, const char* what,
                      std::vector<uint64_t>* handles) {
  if (count != expected.size()) {
    return jitd::InvalidArgument("execute: " + std::to_string(count) + " " + what +
                                 " given, the executable has " +
                                 std::to_string(expected.size()));
  }
  if (count > 0 && buffers == nullptr) {
    return jitd::InvalidArgument(std::string("execute: the ") + what + " array is NULL");
  }
  handles->reserve(count);
  for (size_t i = 0; i < count; ++i) {
    const jitd_buffer_t* buffer = buffers[i];
    const std::string name = std::string(what) + " " + std::to_string(i);
    if (buffer == nullptr) return jitd::InvalidArgument("execute: " + name + " is NULL");
    if (buffer->client != exe.client) {
      return jitd::InvalidArgument("execute: " + name + " belongs to another client");
    }
    bool dynamic = false;
    for (int64_t d : expected[i].dims) dynamic |= d < 0;
    if (!dynamic && buffer->buffer.shape != expected[i]) {
      return jitd::InvalidArgument("execute: " + name + " is " + buffer->buffer.shape.ToString() +
                                   ", the executable expects " + expected[i].ToString());
    }
    handles->push_back(buffer->buffer.handle);
  }
  return Status::Ok();
}

// Executes `handle` into the `num_results` slots of `results`, each a
// buffer or nullptr (filled with a new buffer on success). With every slot
// empty one round trip allocates and fills the results; else the missing
// ones are allocated first. On an error nothing allocated here stays and
// `results` is unchanged.
StatusOr<jitd::client::Timing> ExecuteIntoSlots(
    const jitd_executable& executable, uint64_t handle, const std::vector<uint64_t>& arg_handles,
    jitd_buffer_t** results, size_t num_results,
    const std::vector<jitd::client::TensorShape>& shapes,
    const jitd::client::ExecuteOptions& execute_options) {
  const std::shared_ptr<Client>& client = executable.client;
  size_t missing = 0;
  for (size_t i = 0; i < num_results; ++i) missing += results[i] == nullptr ? 1 : 0;
  if (missing == num_results && num_results > 0) {
    std::vector<jitd::client::Buffer> made;
    JITD_ASSIGN_OR_RETURN(jitd::client::Timing timing,
                          client->ExecuteAllocatingResults(handle, arg_handles, shapes,
                                                           execute_options, &made));
    std::vector<jitd_buffer_t*> wrapped;
    try {
      for (jitd::client::Buffer& b : made) wrapped.push_back(new jitd_buffer{client, b});
    } catch (...) {
      for (jitd_buffer_t* w : wrapped) delete w;
      for (const jitd::client::Buffer& b : made) (void)client->DestroyBuffer(b.handle);
      throw;
    }
    for (size_t i = 0; i < num_results; ++i) results[i] = wrapped[i];
    return timing;
  }
  std::vector<jitd_buffer_t*> slots(results, results + num_results);
  std::vector<jitd_buffer_t*> made;
  auto destroy_made = [&] {
    for (jitd_buffer_t* b : made) jitd_buffer_destroy(b);
  };
  for (size_t i = 0; i < num_results; ++i) {
    if (slots[i] != nullptr) continue;
    StatusOr<jitd::client::Buffer> buffer = client->AllocateBuffer(shapes[i]);
    if (!buffer.ok()) {
      destroy_made();
      return buffer.status();
    }
    try {
      slots[i] = new jitd_buffer{client, *buffer};
    } catch (...) {
      (void)client->DestroyBuffer(buffer->handle);
      destroy_made();
      throw;
    }
    made.push_back(slots[i]);
  }
  std::vector<uint64_t> result_handles;
  Status collected =
      CollectBuffers(executable, slots.data(), num_results, shapes, "results", &result_handles);
  StatusOr<jitd::client::Timing> ran =
      collected.ok() ? client->Execute(handle, arg_handles, result_handles, execute_options)
                     : StatusOr<jitd::client::Timing>(collected);
  if (!ran.ok()) {
    destroy_made();
    return ran.status();
  }
  for (size_t i = 0; i < num_results; ++i) results[i] = slots[i];
  return ran;
}

// Keeps a profiled execute's rows on the executable.
void KeepProfile(jitd_executable_t& executable, jitd::client::Timing& timing) {
  if (timing.profile.empty() && timing.profile_omitted == 0) return;
  std::lock_guard<std::mutex> lock(executable.profile_mu);
  executable.profile = std::move(timing.profile);
  executable.profile_omitted = timing.profile_omitted;
}

StatusOr<jitd::client::TensorShape> MakeShape(const char* what, const jitd_dtype_t& dtype,
                                              const int64_t* dims, size_t rank);

// The compile options a C caller set (fields past its struct_size keep
// their defaults).
Status FromCCompileOptions(const jitd_compile_options_t* options,
                           jitd::client::CompileOptions* out) {
  if (options == nullptr) return Status::Ok();
  JITD_RETURN_IF_ERROR(CheckStructSize("jitd_compile_options_t", options->struct_size,
                                       JITD_COMPILE_OPTIONS_STRUCT_SIZE));
  if (options->device != nullptr) out->device = options->device;
  if (options->struct_size >= JITD_STRUCT_SIZE(jitd_compile_options_t, profile)) {
    out->profile = options->profile != 0;
  }
  if (options->struct_size >= JITD_STRUCT_SIZE(jitd_compile_options_t, dump_dir) &&
      options->dump_dir != nullptr) {
    out->dump_dir = options->dump_dir;
  }
  if (options->struct_size >= JITD_STRUCT_SIZE(jitd_compile_options_t, device_assignment_size)) {
    out->num_replicas = options->num_replicas;
    out->num_partitions = options->num_partitions;
    if (options->device_assignment_size != 0) {
      if (options->device_assignment == nullptr) {
        return jitd::InvalidArgument(
            "jitd_compile_options_t.device_assignment is NULL with device_assignment_size " +
            std::to_string(options->device_assignment_size));
      }
      out->device_assignment.assign(options->device_assignment,
                                    options->device_assignment + options->device_assignment_size);
    }
  }
  if (options->struct_size >= JITD_STRUCT_SIZE(jitd_compile_options_t, argument_dims) &&
      options->num_argument_shapes != 0) {
    if (options->argument_dtypes == nullptr || options->argument_ranks == nullptr) {
      return jitd::InvalidArgument(
          "jitd_compile_options_t: argument_dtypes or argument_ranks is NULL with "
          "num_argument_shapes " + std::to_string(options->num_argument_shapes));
    }
    size_t next_dim = 0;
    for (size_t i = 0; i < options->num_argument_shapes; ++i) {
      const size_t rank = options->argument_ranks[i];
      if (rank != 0 && options->argument_dims == nullptr) {
        return jitd::InvalidArgument("jitd_compile_options_t: argument_dims is NULL, argument " +
                                     std::to_string(i) + " has rank " + std::to_string(rank));
      }
      JITD_ASSIGN_OR_RETURN(
          jitd::client::TensorShape shape,
          MakeShape(("jitd_compile_options_t argument shape " + std::to_string(i)).c_str(),
                    options->argument_dtypes[i],
                    rank == 0 ? nullptr : options->argument_dims + next_dim, rank));
      next_dim += rank;
      out->argument_shapes.push_back(std::move(shape));
    }
  }
  return Status::Ok();
}

// Fills the fields of `out` (may be NULL) that fit in its struct_size.
void FillTiming(const jitd::client::Timing& timing, jitd_execute_timing_t* out) {
  if (out == nullptr) return;
  jitd_execute_timing_t full{sizeof(jitd_execute_timing_t), timing.queue_micros,
                             timing.execute_micros, timing.total_micros};
  const size_t size = std::min(out->struct_size, sizeof(full));
  std::memcpy(reinterpret_cast<char*>(out) + sizeof(size_t),
              reinterpret_cast<const char*>(&full) + sizeof(size_t), size - sizeof(size_t));
}

// A shape from C arguments (buffers, feed transfers): known dtype, dims present,
// none negative, a size that fits.
StatusOr<jitd::client::TensorShape> MakeShape(const char* what, const jitd_dtype_t& dtype,
                                              const int64_t* dims, size_t rank) {
  if (rank > 0 && dims == nullptr) {
    return jitd::InvalidArgument(std::string(what) + ": dims is NULL but rank is " +
                                 std::to_string(rank));
  }
  const int raw_dtype = jitd::c_api::RawEnum(dtype);
  if (raw_dtype <= JITD_DTYPE_INVALID || raw_dtype > JITD_DTYPE_F6E3M2FN) {
    return jitd::InvalidArgument(std::string(what) + ": unknown dtype " +
                                 std::to_string(raw_dtype));
  }
  jitd::client::TensorShape shape;
  shape.element_type = static_cast<wire::ElementType>(raw_dtype);
  if (rank > 0) shape.dims.assign(dims, dims + rank);
  for (size_t i = 0; i < rank; ++i) {
    if (dims[i] < 0) {
      return jitd::InvalidArgument(std::string(what) + ": dims[" + std::to_string(i) + "] is " +
                                   std::to_string(dims[i]));
    }
  }
  JITD_RETURN_IF_ERROR(jitd::client::ByteSize(shape).status());
  return shape;
}

// Wraps a compile's result in a new handle.
Status NewExecutable(const std::shared_ptr<Client>& client,
                     StatusOr<jitd::client::Executable> compiled,
                     jitd_executable_t** out_executable) {
  JITD_RETURN_IF_ERROR(compiled.status());
  const uint64_t handle = compiled->handle;
  try {
    auto* made = new jitd_executable;
    made->client = client;
    made->executable = std::move(compiled).value();
    *out_executable = made;
  } catch (...) {
    (void)client->Release(handle);
    throw;
  }
  return Status::Ok();
}

}  // namespace

extern "C" {

int jitd_api_version(void) { return JITD_API_VERSION; }

jitd_status_code_t jitd_status_code(const jitd_status_t* status) {
  return status == nullptr ? JITD_OK : status->code;
}

const char* jitd_status_message(const jitd_status_t* status) {
  return status == nullptr ? "" : status->message.c_str();
}

void jitd_status_free(jitd_status_t* status) {
  if (status != nullptr && !status->is_static) delete status;
}

void jitd_string_free(char* string) { std::free(string); }

jitd_status_t* jitd_client_connect(const jitd_client_options_t* options,
                                   jitd_client_t** out_client) {
  if (out_client == nullptr) return Invalid("jitd_client_connect: out_client is NULL");
  return Guard([&]() -> Status {
    jitd::client::ClientOptions client_options;
    client_options.client_name = "libjitd";
    std::string socket_path;
    jitd::client::LaunchOptions launch;
    launch.start = false;
    if (options != nullptr) {
      JITD_RETURN_IF_ERROR(CheckStructSize("jitd_client_options_t", options->struct_size,
                                           JITD_CLIENT_OPTIONS_STRUCT_SIZE));
      if (options->socket_path != nullptr) socket_path = options->socket_path;
      launch.start = options->start_daemon_if_missing != 0;
      if (options->timeout_ms != 0) {
        client_options.timeout = std::chrono::milliseconds(options->timeout_ms);
      }
      if (options->struct_size >= JITD_STRUCT_SIZE(jitd_client_options_t, trust_daemon_uid) &&
          options->trust_daemon_uid != 0) {
        client_options.trusted_daemon_uids.push_back(options->trust_daemon_uid);
      }
      if (options->struct_size >= JITD_STRUCT_SIZE(jitd_client_options_t, insecure_loopback)) {
        auto copy = [](const char* from, std::string* to) {
          if (from != nullptr) *to = from;
        };
        copy(options->tls_ca_file, &client_options.tls_ca_file);
        copy(options->tls_cert_file, &client_options.tls_cert_file);
        copy(options->tls_key_file, &client_options.tls_key_file);
        copy(options->token_file, &client_options.token_file);
        client_options.insecure_loopback = options->insecure_loopback != 0;
      }
    }
    if (socket_path.empty()) socket_path = DefaultSocketPath();
    if (jitd::client::IsRemoteAddress(socket_path)) launch.start = false;  // not ours to start
    JITD_ASSIGN_OR_RETURN(std::unique_ptr<Client> client,
                          jitd::client::ConnectOrStart(socket_path, client_options, launch));
    *out_client = new jitd_client{std::shared_ptr<Client>(std::move(client))};
    return Status::Ok();
  });
}

void jitd_client_close(jitd_client_t* client) { delete client; }

jitd_status_t* jitd_client_stats_json(jitd_client_t* client, int include_keys, char** out_json) {
  if (client == nullptr) return Invalid("jitd_client_stats_json: client is NULL");
  if (out_json == nullptr) return Invalid("jitd_client_stats_json: out_json is NULL");
  return Guard([&]() -> Status {
    JITD_ASSIGN_OR_RETURN(std::string json, client->client->Stats(include_keys != 0));
    char* copy = static_cast<char*>(std::malloc(json.size() + 1));
    if (copy == nullptr) throw std::bad_alloc();
    std::memcpy(copy, json.c_str(), json.size() + 1);
    *out_json = copy;
    return Status::Ok();
  });
}

size_t jitd_client_num_devices(const jitd_client_t* client) {
  return client == nullptr ? 0 : client->client->daemon_devices().size();
}

const char* jitd_client_device_name(const jitd_client_t* client, size_t index) {
  if (client == nullptr || index >= client->client->daemon_devices().size()) return nullptr;
  return client->client->daemon_devices()[index].c_str();
}

const char* jitd_client_default_device(const jitd_client_t* client) {
  return client == nullptr ? "" : client->client->daemon_default_device().c_str();
}

const char* jitd_client_remote_identity(const jitd_client_t* client) {
  return client == nullptr ? "" : client->client->remote_identity().c_str();
}

jitd_status_t* jitd_buffer_create(jitd_client_t* client, jitd_dtype_t dtype, const int64_t* dims,
                                  size_t rank, jitd_buffer_t** out_buffer) {
  if (client == nullptr) return Invalid("jitd_buffer_create: client is NULL");
  if (out_buffer == nullptr) return Invalid("jitd_buffer_create: out_buffer is NULL");
  return Guard([&]() -> Status {
    JITD_ASSIGN_OR_RETURN(jitd::client::TensorShape shape,
                          MakeShape("jitd_buffer_create", dtype, dims, rank));
    JITD_ASSIGN_OR_RETURN(jitd::client::Buffer buffer, client->client->AllocateBuffer(shape));
    const uint64_t handle = buffer.handle;
    try {
      *out_buffer = new jitd_buffer{client->client, std::move(buffer)};
    } catch (...) {
      (void)client->client->DestroyBuffer(handle);
      throw;
    }
    return Status::Ok();
  });
}

jitd_status_t* jitd_buffer_create_on_device(jitd_client_t* client, const char* device,
                                            jitd_dtype_t dtype, const int64_t* dims, size_t rank,
                                            const jitd_buffer_t* initial_or_null,
                                            jitd_buffer_t** out_buffer) {
  if (client == nullptr) return Invalid("jitd_buffer_create_on_device: client is NULL");
  if (out_buffer == nullptr) return Invalid("jitd_buffer_create_on_device: out_buffer is NULL");
  if (device == nullptr || *device == '\0') {
    return Invalid("jitd_buffer_create_on_device: name a device (\"cuda\")");
  }
  return Guard([&]() -> Status {
    JITD_ASSIGN_OR_RETURN(jitd::client::TensorShape shape,
                          MakeShape("jitd_buffer_create_on_device", dtype, dims, rank));
    const jitd::client::Buffer* initial = nullptr;
    if (initial_or_null != nullptr) {
      if (initial_or_null->client != client->client || !initial_or_null->device.empty() ||
          initial_or_null->buffer.shape != shape) {
        return jitd::InvalidArgument(
            "jitd_buffer_create_on_device: the initial buffer must be a shared-memory buffer of " +
            shape.ToString() + " of the same client");
      }
      initial = &initial_or_null->buffer;
    }
    JITD_ASSIGN_OR_RETURN(uint64_t handle, client->client->CreateDeviceBuffer(device, shape, initial));
    try {
      *out_buffer = new jitd_buffer{client->client, jitd::client::Buffer{handle, shape, {}}, device};
    } catch (...) {
      (void)client->client->DestroyBuffer(handle);
      throw;
    }
    return Status::Ok();
  });
}

const char* jitd_buffer_device(const jitd_buffer_t* buffer) {
  return buffer == nullptr ? "" : buffer->device.c_str();
}

jitd_status_t* jitd_buffer_copy(jitd_buffer_t* dst, const jitd_buffer_t* src) {
  if (dst == nullptr || src == nullptr) return Invalid("jitd_buffer_copy: a buffer is NULL");
  return Guard([&]() -> Status {
    if (dst->client != src->client) return jitd::InvalidArgument("jitd_buffer_copy: the buffers belong to two clients");
    if (dst->buffer.shape != src->buffer.shape) {
      return jitd::InvalidArgument("jitd_buffer_copy: " + src->buffer.shape.ToString() + " into " +
                                   dst->buffer.shape.ToString());
    }
    if (dst->device.empty() == src->device.empty()) {
      return jitd::InvalidArgument(
          "jitd_buffer_copy: one buffer must be device-resident and the other in shared memory");
    }
    const bool to_device = !dst->device.empty();
    return to_device ? dst->client->CopyBuffer(dst->buffer.handle, src->buffer, true)
                     : dst->client->CopyBuffer(src->buffer.handle, dst->buffer, false);
  });
}

void* jitd_buffer_data(jitd_buffer_t* buffer) {
  return buffer == nullptr ? nullptr : buffer->buffer.data.data();
}

size_t jitd_buffer_size_bytes(const jitd_buffer_t* buffer) {
  return buffer == nullptr ? 0 : buffer->buffer.data.size();
}

void jitd_buffer_destroy(jitd_buffer_t* buffer) {
  if (buffer == nullptr) return;
  // A failure (the daemon has gone) leaves nothing to free: the daemon frees
  // a session's buffers when its connection closes.
  try {
    (void)buffer->client->DestroyBuffer(buffer->buffer.handle);
  } catch (...) {
  }
  delete buffer;
}

jitd_status_t* jitd_client_compile(jitd_client_t* client, const char* text, size_t length,
                                   const jitd_compile_options_t* options,
                                   jitd_executable_t** out_executable) {
  if (client == nullptr) return Invalid("jitd_client_compile: client is NULL");
  if (text == nullptr) return Invalid("jitd_client_compile: text is NULL");
  if (out_executable == nullptr) return Invalid("jitd_client_compile: out_executable is NULL");
  return Guard([&]() -> Status {
    jitd::client::CompileOptions compile_options;
    JITD_RETURN_IF_ERROR(FromCCompileOptions(options, &compile_options));
    return NewExecutable(client->client,
                         client->client->Compile(std::string_view(text, length), compile_options),
                         out_executable);
  });
}

jitd_status_t* jitd_client_compile_by_fingerprint(jitd_client_t* client,
                                                  const uint8_t fingerprint[16],
                                                  jitd_executable_t** out_executable) {
  if (client == nullptr) return Invalid("jitd_client_compile_by_fingerprint: client is NULL");
  if (fingerprint == nullptr) {
    return Invalid("jitd_client_compile_by_fingerprint: fingerprint is NULL");
  }
  if (out_executable == nullptr) {
    return Invalid("jitd_client_compile_by_fingerprint: out_executable is NULL");
  }
  return Guard([&]() -> Status {
    jitd::client::Fingerprint key;
    std::memcpy(key.data(), fingerprint, key.size());
    return NewExecutable(client->client, client->client->CompileByFingerprint(key),
                         out_executable);
  });
}

const uint8_t* jitd_executable_fingerprint(const jitd_executable_t* executable) {
  return executable == nullptr ? nullptr : executable->executable.fingerprint.data();
}

int jitd_executable_cache_hit(const jitd_executable_t* executable) {
  return executable != nullptr && executable->executable.cache_hit ? 1 : 0;
}

size_t jitd_executable_num_arguments(const jitd_executable_t* executable) {
  return executable == nullptr ? 0 : executable->executable.arguments.size();
}

size_t jitd_executable_num_results(const jitd_executable_t* executable) {
  return executable == nullptr ? 0 : executable->executable.results.size();
}

jitd_status_t* jitd_executable_argument_shape(const jitd_executable_t* executable, size_t index,
                                              jitd_dtype_t* out_dtype, size_t* out_rank,
                                              const int64_t** out_dims) {
  if (executable == nullptr) return Invalid("jitd_executable_argument_shape: executable is NULL");
  return ToC(ShapeAt(executable->executable.arguments, index, "argument", out_dtype, out_rank,
                     out_dims));
}

jitd_status_t* jitd_executable_result_shape(const jitd_executable_t* executable, size_t index,
                                            jitd_dtype_t* out_dtype, size_t* out_rank,
                                            const int64_t** out_dims) {
  if (executable == nullptr) return Invalid("jitd_executable_result_shape: executable is NULL");
  return ToC(ShapeAt(executable->executable.results, index, "result", out_dtype, out_rank,
                     out_dims));
}

const char* jitd_executable_argument_structure(const jitd_executable_t* executable) {
  return executable == nullptr ? "" : executable->executable.argument_structure.c_str();
}

const char* jitd_executable_result_structure(const jitd_executable_t* executable) {
  return executable == nullptr ? "" : executable->executable.result_structure.c_str();
}

jitd_status_t* jitd_executable_execute_ex(jitd_executable_t* executable,
                                          jitd_buffer_t* const* args, size_t num_args,
                                          jitd_buffer_t** results, size_t num_results,
                                          const jitd_execute_options_t* options,
                                          jitd_execute_timing_t* out_timing_or_null) {
  if (executable == nullptr) return Invalid("jitd_executable_execute_ex: executable is NULL");
  if (num_results > 0 && results == nullptr) {
    return Invalid("jitd_executable_execute_ex: the results array is NULL");
  }
  if (out_timing_or_null != nullptr) {
    jitd_status_t* bad = ToC(CheckStructSize("jitd_execute_timing_t",
                                             out_timing_or_null->struct_size,
                                             sizeof(size_t)));
    if (bad != nullptr) return bad;
  }
  return Guard([&]() -> Status {
    jitd::client::ExecuteOptions execute_options;
    if (options != nullptr) {
      JITD_RETURN_IF_ERROR(CheckStructSize("jitd_execute_options_t", options->struct_size,
                                           JITD_EXECUTE_OPTIONS_STRUCT_SIZE));
      execute_options.deadline = std::chrono::microseconds(
          std::min<uint64_t>(options->deadline_micros, uint64_t{1} << 50));
      if (options->has_resource_seed != 0) execute_options.resource_seed = options->resource_seed;
      if (options->struct_size >= JITD_STRUCT_SIZE(jitd_execute_options_t, resource_fill)) {
        switch (options->resource_fill) {
          case JITD_RESOURCE_FILL_UNIFORM:
            execute_options.resource_fill = jitd::client::ExecuteOptions::ResourceFill::kUniform;
            break;
          case JITD_RESOURCE_FILL_WEIGHTS:
            execute_options.resource_fill = jitd::client::ExecuteOptions::ResourceFill::kWeights;
            break;
          default:
            return jitd::InvalidArgument(
                "jitd_execute_options_t.resource_fill: " + std::to_string(options->resource_fill) +
                " is not a jitd_resource_fill_t (JITD_RESOURCE_FILL_UNIFORM = 0, "
                "JITD_RESOURCE_FILL_WEIGHTS = 1)");
        }
      }
    }
    const std::vector<jitd::client::TensorShape>& shapes = executable->executable.results;
    if (num_results != shapes.size()) {
      return jitd::InvalidArgument("execute: " + std::to_string(num_results) +
                                   " results given, the executable has " +
                                   std::to_string(shapes.size()));
    }
    std::vector<uint64_t> arg_handles;
    JITD_RETURN_IF_ERROR(CollectBuffers(*executable, args, num_args,
                                        executable->executable.arguments, "arguments",
                                        &arg_handles));
    JITD_ASSIGN_OR_RETURN(jitd::client::Timing timing,
                          ExecuteIntoSlots(*executable, executable->executable.handle, arg_handles,
                                           results, num_results, shapes, execute_options));
    FillTiming(timing, out_timing_or_null);
    KeepProfile(*executable, timing);
    return Status::Ok();
  });
}

size_t jitd_executable_num_replicas(const jitd_executable_t* executable) {
  return executable == nullptr ? 0 : executable->executable.num_replicas;
}

size_t jitd_executable_num_partitions(const jitd_executable_t* executable) {
  return executable == nullptr ? 0 : executable->executable.num_partitions;
}

jitd_status_t* jitd_executable_execute_replicated(jitd_executable_t* executable,
                                                  size_t num_processes,
                                                  jitd_buffer_t* const* args, size_t num_args,
                                                  jitd_buffer_t** results, size_t num_results,
                                                  const jitd_execute_options_t* options,
                                                  jitd_execute_timing_t* out_timing_or_null) {
  constexpr const char* kFn = "jitd_executable_execute_replicated";
  if (executable == nullptr) return Invalid(std::string(kFn) + ": executable is NULL");
  if (num_results > 0 && results == nullptr) {
    return Invalid(std::string(kFn) + ": the results array is NULL");
  }
  if (out_timing_or_null != nullptr) {
    jitd_status_t* bad = ToC(CheckStructSize("jitd_execute_timing_t",
                                             out_timing_or_null->struct_size, sizeof(size_t)));
    if (bad != nullptr) return bad;
  }
  return Guard([&]() -> Status {
    const jitd::client::Executable& exe = executable->executable;
    if (num_processes != exe.num_processes()) {
      return jitd::InvalidArgument(std::string(kFn) + ": " + std::to_string(num_processes) +
                                   " processes given, the executable runs " +
                                   std::to_string(exe.num_processes()) + " (" +
                                   std::to_string(exe.num_replicas) + " replicas x " +
                                   std::to_string(exe.num_partitions) + " partitions)");
    }
    jitd::client::ExecuteOptions execute_options;
    if (options != nullptr) {
      JITD_RETURN_IF_ERROR(CheckStructSize("jitd_execute_options_t", options->struct_size,
                                           JITD_EXECUTE_OPTIONS_STRUCT_SIZE));
      execute_options.deadline = std::chrono::microseconds(
          std::min<uint64_t>(options->deadline_micros, uint64_t{1} << 50));
      if (options->has_resource_seed != 0) execute_options.resource_seed = options->resource_seed;
      if (options->struct_size >= JITD_STRUCT_SIZE(jitd_execute_options_t, resource_fill) &&
          options->resource_fill == JITD_RESOURCE_FILL_WEIGHTS) {
        execute_options.resource_fill = jitd::client::ExecuteOptions::ResourceFill::kWeights;
      } else if (options->struct_size >= JITD_STRUCT_SIZE(jitd_execute_options_t, resource_fill) &&
                 options->resource_fill != JITD_RESOURCE_FILL_UNIFORM) {
        return jitd::InvalidArgument("jitd_execute_options_t.resource_fill: " +
                                     std::to_string(options->resource_fill) +
                                     " is not a jitd_resource_fill_t");
      }
    }
    execute_options.processes = static_cast<uint32_t>(num_processes);
    // Every process's expected shapes, in turn.
    std::vector<jitd::client::TensorShape> arg_shapes, result_shapes;
    for (size_t p = 0; p < num_processes; ++p) {
      arg_shapes.insert(arg_shapes.end(), exe.arguments.begin(), exe.arguments.end());
      result_shapes.insert(result_shapes.end(), exe.results.begin(), exe.results.end());
    }
    std::vector<uint64_t> arg_handles;
    JITD_RETURN_IF_ERROR(
        CollectBuffers(*executable, args, num_args, arg_shapes, "arguments", &arg_handles));
    if (num_results != result_shapes.size()) {
      return jitd::InvalidArgument(std::string(kFn) + ": " + std::to_string(num_results) +
                                   " result slots given, " + std::to_string(num_processes) +
                                   " processes of " + std::to_string(exe.results.size()) +
                                   " results need " + std::to_string(result_shapes.size()));
    }
    JITD_ASSIGN_OR_RETURN(jitd::client::Timing timing,
                          ExecuteIntoSlots(*executable, exe.handle, arg_handles, results,
                                           num_results, result_shapes, execute_options));
    FillTiming(timing, out_timing_or_null);
    KeepProfile(*executable, timing);
    return Status::Ok();
  });
}

jitd_status_t* jitd_executable_execute(jitd_executable_t* executable, jitd_buffer_t* const* args,
                                       size_t num_args, jitd_buffer_t* const* results,
                                       size_t num_results,
                                       jitd_execute_timing_t* out_timing_or_null) {
  return jitd_executable_execute_with_deadline(executable, args, num_args, results, num_results,
                                               0, out_timing_or_null);
}

jitd_status_t* jitd_executable_execute_with_deadline(jitd_executable_t* executable,
                                                     jitd_buffer_t* const* args, size_t num_args,
                                                     jitd_buffer_t* const* results,
                                                     size_t num_results, uint64_t deadline_micros,
                                                     jitd_execute_timing_t* out_timing_or_null) {
  if (executable == nullptr) return Invalid("jitd_executable_execute: executable is NULL");
  if (out_timing_or_null != nullptr) {
    jitd_status_t* bad = ToC(CheckStructSize("jitd_execute_timing_t",
                                             out_timing_or_null->struct_size,
                                             sizeof(size_t)));
    if (bad != nullptr) return bad;
  }
  return Guard([&]() -> Status {
    std::vector<uint64_t> arg_handles, result_handles;
    JITD_RETURN_IF_ERROR(CollectBuffers(*executable, args, num_args,
                                        executable->executable.arguments, "arguments",
                                        &arg_handles));
    JITD_RETURN_IF_ERROR(CollectBuffers(*executable, results, num_results,
                                        executable->executable.results, "results",
                                        &result_handles));
    const auto deadline = std::chrono::microseconds(
        static_cast<int64_t>(std::min<uint64_t>(deadline_micros, uint64_t{1} << 50)));
    JITD_ASSIGN_OR_RETURN(jitd::client::Timing timing,
                          executable->client->Execute(executable->executable.handle,
                                                      arg_handles, result_handles, deadline));
    FillTiming(timing, out_timing_or_null);
    KeepProfile(*executable, timing);
    return Status::Ok();
  });
}

void jitd_executable_release(jitd_executable_t* executable) {
  if (executable == nullptr) return;
  // As for buffers: when the daemon has gone there is nothing left to drop.
  try {
    (void)executable->client->Release(executable->executable.handle);
  } catch (...) {
  }
  delete executable;
}

jitd_status_t* jitd_client_transfer_to_infeed(jitd_client_t* client, const char* device,
                                              jitd_dtype_t dtype, const int64_t* dims,
                                              size_t rank, const void* data, size_t size_bytes) {
  if (client == nullptr) return Invalid("jitd_client_transfer_to_infeed: client is NULL");
  if (data == nullptr && size_bytes != 0) {
    return Invalid("jitd_client_transfer_to_infeed: data is NULL");
  }
  return Guard([&]() -> Status {
    JITD_ASSIGN_OR_RETURN(jitd::client::TensorShape shape,
                          MakeShape("jitd_client_transfer_to_infeed", dtype, dims, rank));
    return client->client->TransferToInfeed(
        device ? device : "", shape,
        std::span<const uint8_t>(static_cast<const uint8_t*>(data), size_bytes));
  });
}

jitd_status_t* jitd_client_transfer_buffer_to_infeed(jitd_client_t* client, const char* device,
                                                     jitd_buffer_t* buffer) {
  if (client == nullptr) return Invalid("jitd_client_transfer_buffer_to_infeed: client is NULL");
  if (buffer == nullptr) return Invalid("jitd_client_transfer_buffer_to_infeed: buffer is NULL");
  if (buffer->client != client->client) {
    return Invalid("jitd_client_transfer_buffer_to_infeed: the buffer belongs to another client");
  }
  return Guard([&]() -> Status {
    return client->client->TransferBufferToInfeed(device ? device : "", buffer->buffer);
  });
}

jitd_status_t* jitd_client_transfer_from_outfeed(jitd_client_t* client, const char* device,
                                                 jitd_dtype_t dtype, const int64_t* dims,
                                                 size_t rank, void* out_data, size_t size_bytes,
                                                 uint32_t timeout_ms) {
  if (client == nullptr) return Invalid("jitd_client_transfer_from_outfeed: client is NULL");
  if (out_data == nullptr && size_bytes != 0) {
    return Invalid("jitd_client_transfer_from_outfeed: out_data is NULL");
  }
  return Guard([&]() -> Status {
    JITD_ASSIGN_OR_RETURN(jitd::client::TensorShape shape,
                          MakeShape("jitd_client_transfer_from_outfeed", dtype, dims, rank));
    return client->client->TransferFromOutfeed(
        device ? device : "", shape,
        std::span<uint8_t>(static_cast<uint8_t*>(out_data), size_bytes),
        std::chrono::milliseconds(timeout_ms));
  });
}

jitd_status_t* jitd_client_transfer_to_infeed_replica(jitd_client_t* client, const char* device,
                                                      uint32_t replica, jitd_dtype_t dtype,
                                                      const int64_t* dims, size_t rank,
                                                      const void* data, size_t size_bytes) {
  if (client == nullptr) return Invalid("jitd_client_transfer_to_infeed_replica: client is NULL");
  if (data == nullptr && size_bytes != 0) {
    return Invalid("jitd_client_transfer_to_infeed_replica: data is NULL");
  }
  return Guard([&]() -> Status {
    JITD_ASSIGN_OR_RETURN(jitd::client::TensorShape shape,
                          MakeShape("jitd_client_transfer_to_infeed_replica", dtype, dims, rank));
    return client->client->TransferToInfeed(
        device ? device : "", shape,
        std::span<const uint8_t>(static_cast<const uint8_t*>(data), size_bytes), replica);
  });
}

jitd_status_t* jitd_client_transfer_from_outfeed_replica(jitd_client_t* client,
                                                         const char* device, uint32_t replica,
                                                         jitd_dtype_t dtype, const int64_t* dims,
                                                         size_t rank, void* out_data,
                                                         size_t size_bytes, uint32_t timeout_ms) {
  if (client == nullptr) {
    return Invalid("jitd_client_transfer_from_outfeed_replica: client is NULL");
  }
  if (out_data == nullptr && size_bytes != 0) {
    return Invalid("jitd_client_transfer_from_outfeed_replica: out_data is NULL");
  }
  return Guard([&]() -> Status {
    JITD_ASSIGN_OR_RETURN(
        jitd::client::TensorShape shape,
        MakeShape("jitd_client_transfer_from_outfeed_replica", dtype, dims, rank));
    return client->client->TransferFromOutfeed(
        device ? device : "", shape,
        std::span<uint8_t>(static_cast<uint8_t*>(out_data), size_bytes),
        std::chrono::milliseconds(timeout_ms), replica);
  });
}

jitd_status_t* jitd_client_transfer_from_outfeed_to_buffer(jitd_client_t* client,
                                                           const char* device,
                                                           jitd_buffer_t* buffer,
                                                           uint32_t timeout_ms) {
  if (client == nullptr) {
    return Invalid("jitd_client_transfer_from_outfeed_to_buffer: client is NULL");
  }
  if (buffer == nullptr) {
    return Invalid("jitd_client_transfer_from_outfeed_to_buffer: buffer is NULL");
  }
  if (buffer->client != client->client) {
    return Invalid(
        "jitd_client_transfer_from_outfeed_to_buffer: the buffer belongs to another client");
  }
  return Guard([&]() -> Status {
    return client->client->TransferFromOutfeedToBuffer(device ? device : "", buffer->buffer,
                                                       std::chrono::milliseconds(timeout_ms));
  });
}

}  // extern "C"

// ---- Shared with the builder's C API (libclient/c_api_internal.h) ---------

namespace jitd::c_api {

jitd_status_t* ToC(const Status& status) { return ::ToC(status); }

jitd_status_t* GuardStatus(const std::function<Status()>& body) {
  return Guard([&]() -> Status { return body(); });
}

}  // namespace jitd::c_api

namespace {

jitd_status_t* CompileModuleBytes(jitd_client_t* client, const uint8_t* bytes, size_t size,
                                  const jitd_compile_options_t* options,
                                  jitd_executable_t** out_executable, const char* what) {
  if (client == nullptr) return Invalid(std::string(what) + ": client is NULL");
  if (bytes == nullptr) return Invalid(std::string(what) + ": the module is NULL");
  if (out_executable == nullptr) return Invalid(std::string(what) + ": out_executable is NULL");
  return Guard([&]() -> Status {
    jitd::client::CompileOptions compile_options;
    compile_options.flatbuffer_module = true;
    JITD_RETURN_IF_ERROR(FromCCompileOptions(options, &compile_options));
    return NewExecutable(
        client->client,
        client->client->Compile(std::string_view(reinterpret_cast<const char*>(bytes), size),
                                compile_options),
        out_executable);
  });
}

}  // namespace

jitd_status_t* jitd_client_compile_module(jitd_client_t* client, const uint8_t* module_bytes,
                                          size_t size, const jitd_compile_options_t* options,
                                          jitd_executable_t** out_executable) {
  return CompileModuleBytes(client, module_bytes, size, options, out_executable,
                            "jitd_client_compile_module");
}

jitd_status_t* jitd_client_compile_computation(jitd_client_t* client,
                                               const jitd_computation_t* computation,
                                               const jitd_compile_options_t* options,
                                               jitd_executable_t** out_executable) {
  if (computation == nullptr) {
    return Invalid("jitd_client_compile_computation: computation is NULL");
  }
  const std::vector<uint8_t>& bytes = computation->computation->module_bytes();
  return CompileModuleBytes(client, bytes.data(), bytes.size(), options, out_executable,
                            "jitd_client_compile_computation");
}

size_t jitd_executable_profile_size(const jitd_executable_t* executable) {
  if (executable == nullptr) return 0;
  std::lock_guard<std::mutex> lock(executable->profile_mu);
  return executable->profile.size();
}

jitd_status_t* jitd_executable_profile_row(const jitd_executable_t* executable, size_t index,
                                           const char** out_name, uint64_t* out_count,
                                           uint64_t* out_nanos) {
  if (executable == nullptr) return Invalid("jitd_executable_profile_row: executable is NULL");
  if (out_name == nullptr || out_count == nullptr || out_nanos == nullptr) {
    return Invalid("jitd_executable_profile_row: an out parameter is NULL");
  }
  std::lock_guard<std::mutex> lock(executable->profile_mu);
  if (index >= executable->profile.size()) {
    return Invalid("jitd_executable_profile_row: index " + std::to_string(index) +
                   " is out of range (the latest profile has " +
                   std::to_string(executable->profile.size()) + " rows)");
  }
  const jitd::client::Timing::ProfileRow& row = executable->profile[index];
  *out_name = row.name.c_str();
  *out_count = row.count;
  *out_nanos = row.nanos;
  return nullptr;
}

uint64_t jitd_executable_profile_omitted(const jitd_executable_t* executable) {
  if (executable == nullptr) return 0;
  std::lock_guard<std::mutex> lock(executable->profile_mu);
  return executable->profile_omitted;
}
