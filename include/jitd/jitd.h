/* jitd.h: the C API of libjitd.so, the client of the jitd daemon.
 *
 * A process connects to the per-machine daemon (`jitd serve`), allocates
 * buffers in the shared memory the daemon gave it, compiles StableHLO programs
 * (or finds them in the daemon's cache by fingerprint) and executes them on
 * those buffers. libjitd.so links no compiler: all compiling happens in the
 * daemon. Changes to this header are listed in libclient/CHANGELOG.md. The
 * computation builder (xla_client's ComputationBuilder) is in jitd_builder.h.
 *
 * Errors. Every fallible function returns a jitd_status_t*: NULL means
 * success; otherwise the caller owns the status, reads its code and message
 * and frees it with jitd_status_free. Bad input (a NULL pointer, an options
 * struct whose struct_size is too small, dims that do not fit a shape, a
 * buffer of another client) is JITD_INVALID_ARGUMENT, never a crash. A
 * function that fails leaves its out_* parameters unchanged.
 *
 * Ownership and lifetime. A function that creates an object (jitd_*_connect,
 * jitd_*_create, jitd_client_compile*) hands the caller one reference that the
 * caller gives back exactly once with the matching jitd_*_close / _destroy /
 * _release. Accessors borrow: a pointer they return (jitd_status_message,
 * jitd_buffer_data, jitd_executable_fingerprint, the dims of a shape) lives as
 * long as the object it came from. Strings returned through char** out
 * parameters are owned by the caller and freed with jitd_string_free. Buffers
 * and executables keep their client's connection alive: jitd_client_close may
 * come before them, and the connection closes when the client and everything
 * made from it are gone. When the connection closes the daemon frees all it
 * held for this client.
 *
 * Thread safety. Any function may be called from any thread. Calls on one
 * client (and on its buffers and executables) are serialized: one request is
 * in flight per client; use several clients for parallel requests. Do not
 * touch a buffer's data while an execute that uses it runs, and do not use a
 * handle after (or while) it is closed, destroyed or released.
 *
 * Versioning. JITD_API_VERSION grows by one with every change to this header;
 * jitd_api_version() says which version the loaded library implements. Options
 * structs begin with `size_t struct_size` (set it to sizeof the struct, or use
 * the *_STRUCT_SIZE macros) and only ever grow at the end, so a program built
 * against an older header keeps working with a newer library.
 */
#ifndef JITD_JITD_H_
#define JITD_JITD_H_

#include <stddef.h>
#include <stdint.h>

#if defined(JITD_BUILDING_LIBRARY)
#define JITD_API __attribute__((visibility("default")))
#else
#define JITD_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define JITD_API_VERSION 13

/* Size of `type` up to and including `last_field`: the struct_size a
 * library needs at least. */
#define JITD_STRUCT_SIZE(type, last_field) \
  (offsetof(type, last_field) + sizeof(((type*)0)->last_field))

/* The JITD_API_VERSION the loaded library was built with. */
JITD_API int jitd_api_version(void);

/* ---- Status ------------------------------------------------------------- */

/* Status codes; the same values as jitd::StatusCode in base/status.h. */
typedef enum jitd_status_code_t {
  JITD_OK = 0,
  JITD_INVALID_ARGUMENT = 1,
  JITD_NOT_FOUND = 2,
  JITD_ALREADY_EXISTS = 3,
  JITD_RESOURCE_EXHAUSTED = 4,
  JITD_FAILED_PRECONDITION = 5,
  JITD_UNIMPLEMENTED = 6,
  JITD_UNAVAILABLE = 7, /* no daemon, or it has gone away */
  JITD_DEADLINE_EXCEEDED = 8,
  JITD_INTERNAL = 9,
  JITD_PERMISSION_DENIED = 10, /* the daemon refused this process (its uid/gid
                                  is not allowed: `jitd serve --allow-uid`);
                                  since version 5 */
} jitd_status_code_t;

/* An error: a code and a message. Opaque; NULL is success. */
typedef struct jitd_status jitd_status_t;

/* The code of `status`; JITD_OK for NULL. */
JITD_API jitd_status_code_t jitd_status_code(const jitd_status_t* status);
/* The message of `status` (borrowed, lives until jitd_status_free); "" for
 * NULL. */
JITD_API const char* jitd_status_message(const jitd_status_t* status);
/* Frees `status`; NULL is a no-op. */
JITD_API void jitd_status_free(jitd_status_t* status);
/* Frees a string this library returned; NULL is a no-op. */
JITD_API void jitd_string_free(char* string);

/* ---- Client ------------------------------------------------------------- */

/* A connection to the daemon and this process's session in it. Opaque. */
typedef struct jitd_client jitd_client_t;

typedef struct jitd_client_options_t {
  size_t struct_size; /* JITD_CLIENT_OPTIONS_STRUCT_SIZE or more */
  /* The daemon's socket. NULL or "" = $JITD_SOCKET, else
   * $XDG_RUNTIME_DIR/jitd/jitd.sock, else /tmp/jitd-$UID/jitd.sock (the
   * places `jitd serve` listens on by default). Copied; need not outlive the
   * call. */
  const char* socket_path;
  /* Nonzero: when no daemon answers, start `jitd serve --socket PATH` in the
   * background (detached: it outlives this process; its log is jitd.log in
   * the socket's directory) and connect to it, waiting up to 10 s. The
   * binary is $JITD_BINARY, else ../bin/jitd relative to the directory of
   * libjitd.so, else jitd on $PATH. Safe when several processes do this at
   * once: one daemon wins the socket, the others exit, everyone connects to
   * the winner. UNAVAILABLE (with the daemon log's tail) when it cannot be
   * started. The process that started the daemon prints one line on stderr
   * ("jitd: started a daemon (pid P) at SOCKET; log LOG; ..."); the daemon
   * writes its pid to jitd.pid beside the socket (`jitd stop` stops it).
   * $JITD_NO_AUTOSTART set (not "" or "0") overrides this to 0, for every
   * client of the process. 0 here (and NULL options) = just connect; the
   * Python package and `jitd run` pass 1. */
  int start_daemon_if_missing;
  /* Longest wait for one reply, in milliseconds; 0 = 120000. */
  uint32_t timeout_ms;
  /* (Version 7.) Before sending anything, jitd_client_connect checks who
   * answers (the socket's peer credentials): the daemon must run as this
   * process's effective uid, as root, as this uid (0 = no other), or as one
   * of the comma-separated uids in $JITD_TRUST_DAEMON_UID; otherwise
   * PERMISSION_DENIED naming its uid (another user may have put an impostor
   * where this client looks). */
  uint32_t trust_daemon_uid;
  /* (Version 12.) Remote daemons: socket_path (or $JITD_SOCKET)
   * "tcp://HOST:PORT" ("tcp://[::1]:PORT" for IPv6) connects over TLS 1.3 to
   * a daemon run with `jitd serve --listen` (docs/USING.md, "Remote
   * clients"); start_daemon_if_missing is then ignored. Buffers are a local
   * copy that each execute sends (arguments) and refreshes (results).
   * tls_ca_file: PEM CA(s) the daemon's certificate must chain to (NULL/"" =
   * $JITD_TLS_CA, else the system's CAs); the certificate must name the host.
   * tls_cert_file + tls_key_file: a client certificate (mutual TLS; NULL/"" =
   * $JITD_TLS_CERT / $JITD_TLS_KEY). token_file: a file holding a bearer
   * token, "TOKEN" or "NAME TOKEN" (NULL/"" = $JITD_TOKEN_FILE).
   * insecure_loopback nonzero: plaintext TCP to a loopback address, for a
   * daemon run with --insecure-loopback (tests). A wrong CA, certificate or
   * token is PERMISSION_DENIED saying which. */
  const char* tls_ca_file;
  const char* tls_cert_file;
  const char* tls_key_file;
  const char* token_file;
  int insecure_loopback;
} jitd_client_options_t;
#define JITD_CLIENT_OPTIONS_STRUCT_SIZE \
  JITD_STRUCT_SIZE(jitd_client_options_t, timeout_ms)

/* Connects to the daemon. `options` may be NULL (all defaults). UNAVAILABLE
 * with the socket path when no daemon answers; PERMISSION_DENIED when the
 * daemon refuses this process's user (see jitd serve --allow-uid/gid) or runs
 * as a user this process does not trust (see trust_daemon_uid). */
JITD_API jitd_status_t* jitd_client_connect(const jitd_client_options_t* options,
                                            jitd_client_t** out_client);
/* Gives back the caller's client reference; NULL is a no-op. */
JITD_API void jitd_client_close(jitd_client_t* client);

/* The daemon's statistics as JSON (clients, executables, hits, misses,
 * latencies); nonzero `include_keys` lists the cache entries too. The caller
 * frees *out_json with jitd_string_free. */
JITD_API jitd_status_t* jitd_client_stats_json(jitd_client_t* client, int include_keys,
                                               char** out_json);

/* (Version 7.) The daemon's devices, as its Hello reply listed them: their
 * number (0 for a NULL client, or a daemon too old to say), the name of
 * device `index` (NULL out of range) and the daemon's default device ("" when
 * it did not say). The strings are borrowed from the client and live as long
 * as it does. */
JITD_API size_t jitd_client_num_devices(const jitd_client_t* client);
JITD_API const char* jitd_client_device_name(const jitd_client_t* client, size_t index);
JITD_API const char* jitd_client_default_device(const jitd_client_t* client);
/* (Version 12.) For a client of a remote daemon (tcp://), the identity the
 * daemon gave it ("cert:CN" or "token:NAME"); "" for a local client or
 * NULL. Borrowed; lives as long as the client. */
JITD_API const char* jitd_client_remote_identity(const jitd_client_t* client);

/* ---- Buffers ------------------------------------------------------------ */

/* Element types; the same values as ElementType in ipc/protocol.fbs.
 * Sub-byte types take one byte per element in a buffer. */
typedef enum jitd_dtype_t {
  JITD_DTYPE_INVALID = 0,
  JITD_DTYPE_PRED = 1, /* bool, one byte */
  JITD_DTYPE_S8 = 2,
  JITD_DTYPE_S16 = 3,
  JITD_DTYPE_S32 = 4,
  JITD_DTYPE_S64 = 5,
  JITD_DTYPE_U8 = 6,
  JITD_DTYPE_U16 = 7,
  JITD_DTYPE_U32 = 8,
  JITD_DTYPE_U64 = 9,
  JITD_DTYPE_F16 = 10,
  JITD_DTYPE_BF16 = 11,
  JITD_DTYPE_F32 = 12,
  JITD_DTYPE_F64 = 13,
  JITD_DTYPE_C64 = 14,
  JITD_DTYPE_C128 = 15,
  JITD_DTYPE_S2 = 16,
  JITD_DTYPE_S4 = 17,
  JITD_DTYPE_U2 = 18,
  JITD_DTYPE_U4 = 19,
  JITD_DTYPE_F8E4M3FN = 20,
  JITD_DTYPE_F8E5M2 = 21,
  JITD_DTYPE_F8E4M3FNUZ = 22,
  JITD_DTYPE_F8E5M2FNUZ = 23,
  JITD_DTYPE_F8E4M3B11FNUZ = 24,
  JITD_DTYPE_F8E3M4 = 25,
  JITD_DTYPE_F8E4M3 = 26,
  JITD_DTYPE_F8E8M0FNU = 27,
  JITD_DTYPE_F4E2M1FN = 28,
  JITD_DTYPE_F6E2M3FN = 29,
  JITD_DTYPE_F6E3M2FN = 30,
} jitd_dtype_t;

/* A dense row-major tensor in the shared memory of one client. Opaque. */
typedef struct jitd_buffer jitd_buffer_t;

/* Allocates a buffer of `dtype` and dims[0..rank) (dims may be NULL when
 * rank is 0) in `client`'s shared memory. Contents are unspecified. */
JITD_API jitd_status_t* jitd_buffer_create(jitd_client_t* client, jitd_dtype_t dtype,
                                           const int64_t* dims, size_t rank,
                                           jitd_buffer_t** out_buffer);
/* The buffer's bytes in shared memory, to fill (arguments) or read (results)
 * in place; valid until jitd_buffer_destroy. NULL for a NULL buffer. */
JITD_API void* jitd_buffer_data(jitd_buffer_t* buffer);
/* Bytes at jitd_buffer_data; 0 for a NULL buffer. */
JITD_API size_t jitd_buffer_size_bytes(const jitd_buffer_t* buffer);
/* Frees the buffer here and in the daemon; NULL is a no-op. */
JITD_API void jitd_buffer_destroy(jitd_buffer_t* buffer);

/* Device-resident buffers (API version 11). A buffer of `dtype` / `dims` on
 * `device` ("cuda"), allocated there by the daemon (counted on jitd serve
 * --max-device-bytes) and filled from `initial_or_null` (a shared-memory
 * buffer of the same shape and client) when given. Executes take it as an
 * argument or result like any buffer and keep its bytes on the device;
 * jitd_buffer_data is NULL and jitd_buffer_size_bytes 0 for it (its bytes
 * are not in shared memory: jitd_buffer_copy moves them). Destroy with
 * jitd_buffer_destroy. NOT_FOUND when the daemon has no such device. */
JITD_API jitd_status_t* jitd_buffer_create_on_device(jitd_client_t* client, const char* device,
                                                     jitd_dtype_t dtype, const int64_t* dims,
                                                     size_t rank, const jitd_buffer_t* initial_or_null,
                                                     jitd_buffer_t** out_buffer);
/* The device a buffer lives on ("cuda"), or "" for one in shared memory
 * (and for NULL). Valid while the buffer lives. */
JITD_API const char* jitd_buffer_device(const jitd_buffer_t* buffer);
/* Copies all of `src` into `dst`: one of them device-resident, the other
 * in shared memory, of the same shape and client. Returns once the copy is
 * done. */
JITD_API jitd_status_t* jitd_buffer_copy(jitd_buffer_t* dst, const jitd_buffer_t* src);

/* ---- Executables -------------------------------------------------------- */

/* A compiled program in one client's session. Opaque. */
typedef struct jitd_executable jitd_executable_t;

typedef struct jitd_compile_options_t {
  size_t struct_size; /* JITD_COMPILE_OPTIONS_STRUCT_SIZE or more */
  /* Device name ("interpreter", ...); NULL or "" = the daemon's default. */
  const char* device;
  /* Nonzero: every execute of the program reports where its time went (see
   * jitd_executable_profile_row). Part of the cache key. Since version 6. */
  int profile;
  /* Non-NULL and non-empty: the compile's dumps are written as files into
   * this directory (created if missing) before the call returns: the
   * program before ("000-input.mlir") and after each compiler pass
   * ("NNN-<pass>.mlir"), "optimized.mlir", and the device's own (the cpu
   * device: "kernels.txt", "buffers.txt", "llvm.ll", "llvm.opt.ll",
   * "asm.s"). The daemon
   * sends them; this library writes them. Such a compile always compiles (a
   * cached program has no dumps). Since version 6. */
  const char* dump_dir;
  /* (Version 9.) Replicated execution: the program runs as num_replicas x
   * num_partitions processes, executed with
   * jitd_executable_execute_replicated. 0 (and a struct_size ending before
   * these fields) = what the module's mhlo.num_replicas /
   * mhlo.num_partitions attributes say, else 1; a count contradicting the
   * attribute is JITD_INVALID_ARGUMENT naming both. Part of the cache key. */
  uint32_t num_replicas;
  uint32_t num_partitions;
  /* (Version 9.) Optional device assignment: device_assignment[r *
   * num_partitions + p] is the device id of process (r, p), distinct and
   * non-negative, device_assignment_size of them (one per process); NULL /
   * 0 = process i is device i. Copied. */
  const int64_t* device_assignment;
  size_t device_assignment_size;
  /* (Version 10.) The concrete argument shapes to compile for, one per
   * argument of the program's entry function: argument i has element type
   * argument_dtypes[i] and rank argument_ranks[i], its dims next in
   * argument_dims (all arguments' dims one after another). A program with
   * dynamic dimensions (`tensor<?x4xf32>`, shape polymorphism as jax.export
   * writes it) is refined for these shapes, each its own cache entry; a
   * static program must declare exactly these. 0 = the program's own shapes
   * (a program with dynamic arguments is then JITD_INVALID_ARGUMENT naming
   * one). Part of the cache key. Copied. */
  size_t num_argument_shapes;
  const jitd_dtype_t* argument_dtypes;
  const size_t* argument_ranks;
  const int64_t* argument_dims;
} jitd_compile_options_t;
#define JITD_COMPILE_OPTIONS_STRUCT_SIZE \
  JITD_STRUCT_SIZE(jitd_compile_options_t, device)

/* Compiles `text[0..length)` (StableHLO, MLIR text) in the daemon, or finds
 * it in the daemon's cache. `options` may be NULL. */
JITD_API jitd_status_t* jitd_client_compile(jitd_client_t* client, const char* text,
                                            size_t length,
                                            const jitd_compile_options_t* options,
                                            jitd_executable_t** out_executable);
/* Finds a program the daemon has cached by its 16-byte fingerprint (from
 * jitd_executable_fingerprint; it covers the device and options) without
 * sending the text. JITD_NOT_FOUND on a miss: compile the text then. */
JITD_API jitd_status_t* jitd_client_compile_by_fingerprint(
    jitd_client_t* client, const uint8_t fingerprint[16],
    jitd_executable_t** out_executable);

/* The cache key, 16 bytes, borrowed; NULL for a NULL executable. */
JITD_API const uint8_t* jitd_executable_fingerprint(const jitd_executable_t* executable);
/* Nonzero when the daemon found the program in its cache. */
JITD_API int jitd_executable_cache_hit(const jitd_executable_t* executable);
/* Number of arguments / results; 0 for a NULL executable. */
JITD_API size_t jitd_executable_num_arguments(const jitd_executable_t* executable);
JITD_API size_t jitd_executable_num_results(const jitd_executable_t* executable);
/* The shape of argument / result `index`: its dtype, rank and dims (*out_dims
 * borrowed from the executable; NULL when the rank is 0). INVALID_ARGUMENT
 * for an index out of range. */
JITD_API jitd_status_t* jitd_executable_argument_shape(const jitd_executable_t* executable,
                                                       size_t index, jitd_dtype_t* out_dtype,
                                                       size_t* out_rank,
                                                       const int64_t** out_dims);
JITD_API jitd_status_t* jitd_executable_result_shape(const jitd_executable_t* executable,
                                                     size_t index, jitd_dtype_t* out_dtype,
                                                     size_t* out_rank,
                                                     const int64_t** out_dims);
/* Tuples and tokens (since version 13). The shapes above are the tensor
 * leaves of the arguments / results, depth first; a program whose values
 * hold tuples or tokens takes and returns one buffer per leaf, and these
 * strings describe the trees, one item per top-level value: 't' a tensor
 * (the next leaf), 'k' a token (no buffer, no bytes), '(' items ')' a
 * tuple. E.g. a result tuple<tensor<2xf32>, tuple<tensor<i32>>> is "(t(t))"
 * over 2 leaves; a result !stablehlo.token is "k" over none. "" when every
 * value is a plain tensor (each leaf is one value). Borrowed from the
 * executable; "" for a NULL one. */
JITD_API const char* jitd_executable_argument_structure(const jitd_executable_t* executable);
JITD_API const char* jitd_executable_result_structure(const jitd_executable_t* executable);

/* Times the daemon measured for one execute, in microseconds. An output
 * struct: the caller sets struct_size and the library fills the fields that
 * fit in it. */
typedef struct jitd_execute_timing_t {
  size_t struct_size; /* JITD_EXECUTE_TIMING_STRUCT_SIZE or more */
  uint64_t queue_micros;   /* request taken -> execution start */
  uint64_t execute_micros; /* the device's run */
  uint64_t total_micros;   /* request taken -> reply built */
} jitd_execute_timing_t;
#define JITD_EXECUTE_TIMING_STRUCT_SIZE \
  JITD_STRUCT_SIZE(jitd_execute_timing_t, total_micros)

/* Runs `executable` on args[0..num_args) and writes results[0..num_results).
 * The caller supplies the result buffers: create one per result with the
 * dtype and dims of jitd_executable_result_shape. All buffers must belong to
 * the executable's client; counts and shapes must match the executable's
 * (INVALID_ARGUMENT otherwise). `out_timing_or_null` may be NULL. */
JITD_API jitd_status_t* jitd_executable_execute(jitd_executable_t* executable,
                                                jitd_buffer_t* const* args, size_t num_args,
                                                jitd_buffer_t* const* results,
                                                size_t num_results,
                                                jitd_execute_timing_t* out_timing_or_null);
/* Distributions of the data that fills dense_resource placeholders. */
typedef enum jitd_resource_fill_t {
  JITD_RESOURCE_FILL_UNIFORM = 0, /* uniform in [-1, 1) */
  /* like trained weights: kernels of a dot / convolution uniform in
   * +-sqrt(3/fan_in), vectors in [0.5, 1.5) (valid batch-norm variances) */
  JITD_RESOURCE_FILL_WEIGHTS = 1,
} jitd_resource_fill_t;

/* Options of jitd_executable_execute_ex. */
typedef struct jitd_execute_options_t {
  size_t struct_size; /* JITD_EXECUTE_OPTIONS_STRUCT_SIZE or more */
  /* Longest run in microseconds; 0 = the daemon's default (the daemon cuts
   * it to this client's execution-time quota either way). */
  uint64_t deadline_micros;
  /* Nonzero: fill dense_resource placeholders (elided weights) with data
   * seeded by resource_seed, as `jitd run --resource-seed` does; zero: such
   * a program fails asking for a seed. */
  int has_resource_seed;
  uint64_t resource_seed;
  /* (Version 8.) How that data is distributed, a jitd_resource_fill_t:
   * JITD_RESOURCE_FILL_UNIFORM (0, also when struct_size ends before this
   * field) or JITD_RESOURCE_FILL_WEIGHTS, as `jitd run --resource-fill`.
   * Other values are INVALID_ARGUMENT. */
  int32_t resource_fill;
} jitd_execute_options_t;
#define JITD_EXECUTE_OPTIONS_STRUCT_SIZE \
  JITD_STRUCT_SIZE(jitd_execute_options_t, resource_seed)

/* jitd_executable_execute with options and library-allocated results.
 * `results` is an array of num_results slots (num_results must equal the
 * executable's result count): a slot holding a buffer is written into as
 * with jitd_executable_execute; a NULL slot gets a new buffer, allocated by
 * the library in shared memory with the result's shape, which the caller
 * owns and destroys with jitd_buffer_destroy. When every slot is NULL the
 * allocation and the execute take one round trip. On failure the slots are
 * unchanged (nothing is left allocated). `options` and `out_timing_or_null`
 * may be NULL. Since version 5. */
JITD_API jitd_status_t* jitd_executable_execute_ex(jitd_executable_t* executable,
                                                   jitd_buffer_t* const* args, size_t num_args,
                                                   jitd_buffer_t** results, size_t num_results,
                                                   const jitd_execute_options_t* options,
                                                   jitd_execute_timing_t* out_timing_or_null);
/* ---- Replicated execution (since version 9) ----------------------------- */
/* The process grid an executable runs as: replicas and partitions (1 each
 * unless it was compiled replicated; 0 for NULL). Its processes are
 * numbered r * num_partitions + p. */
JITD_API size_t jitd_executable_num_replicas(const jitd_executable_t* executable);
JITD_API size_t jitd_executable_num_partitions(const jitd_executable_t* executable);
/* Runs every process of a replicated executable at once: num_processes
 * must be replicas x partitions; args holds num_processes x
 * jitd_executable_num_arguments buffers, process 0's first, then process
 * 1's, ...; results likewise num_processes x jitd_executable_num_results
 * slots, each a buffer to write into or NULL for a new buffer the library
 * allocates (the caller destroys it). The processes' collectives meet in
 * the daemon; one that never completes (a mismatched program) ends at the
 * deadline with JITD_DEADLINE_EXCEEDED naming the op and the processes.
 * stablehlo.infeed / outfeed of process i use replica i's queues. On
 * failure the slots are unchanged. `options` and `out_timing_or_null` may
 * be NULL. jitd_executable_execute* of a replicated executable is
 * JITD_INVALID_ARGUMENT pointing here. */
JITD_API jitd_status_t* jitd_executable_execute_replicated(
    jitd_executable_t* executable, size_t num_processes, jitd_buffer_t* const* args,
    size_t num_args, jitd_buffer_t** results, size_t num_results,
    const jitd_execute_options_t* options, jitd_execute_timing_t* out_timing_or_null);
/* Drops the executable handle here and in the daemon (the daemon's cache
 * keeps the compiled program); NULL is a no-op. */
JITD_API void jitd_executable_release(jitd_executable_t* executable);

/* The profile of the latest successful execute of `executable` (compiled
 * with jitd_compile_options_t.profile): rows slowest first, each an op
 * (interpreter) or a kernel / library call (cpu) with its runs and their
 * total nanoseconds. Rows of ops with regions (while, if, ...) include
 * their bodies. 0 rows when not profiled (or for NULL). *out_name is
 * borrowed until the next execute of this executable. INVALID_ARGUMENT for
 * an index out of range. Since version 6. */
JITD_API size_t jitd_executable_profile_size(const jitd_executable_t* executable);
JITD_API jitd_status_t* jitd_executable_profile_row(const jitd_executable_t* executable,
                                                    size_t index, const char** out_name,
                                                    uint64_t* out_count, uint64_t* out_nanos);
/* Rows the daemon left out of that profile to keep its reply small. */
JITD_API uint64_t jitd_executable_profile_omitted(const jitd_executable_t* executable);

/* As jitd_executable_execute, with a deadline for this execution in
 * microseconds (0 = the daemon's default; the daemon cuts it to its
 * per-client limit). Past it the execution stops with JITD_DEADLINE_EXCEEDED
 * (for example a stablehlo.infeed that nobody feeds). Since version 3. */
JITD_API jitd_status_t* jitd_executable_execute_with_deadline(
    jitd_executable_t* executable, jitd_buffer_t* const* args, size_t num_args,
    jitd_buffer_t* const* results, size_t num_results, uint64_t deadline_micros,
    jitd_execute_timing_t* out_timing_or_null);

/* ---- Infeed and outfeed (since version 3) ------------------------------- */

/* The daemon keeps one FIFO queue of tensors per device and replica (0 here;
 * the _replica variants below name others, version 9) for
 * infeed and one for outfeed per client process (since version 7; before,
 * all clients shared them): every client of one process feeds and reads the
 * same queues, and no other process ever sees them. A `stablehlo.infeed` op
 * with N tensor results takes the next N values of its device's infeed
 * queue, waiting for them up to its execution's deadline (then
 * JITD_DEADLINE_EXCEEDED); a `stablehlo.outfeed` op appends its tensor
 * operands to the outfeed queue, where they wait for the process's read.
 * `device` NULL or "" = the daemon's default device.
 *
 * Calls on one client are serialized, so an execute blocked on infeed holds
 * its client: feed from another client of the same process (a second
 * connection). */

/* Queues a copy of data[0..size_bytes) as a value of `dtype` and
 * dims[0..rank) (size_bytes must be its exact byte size) on `device`'s
 * infeed. */
JITD_API jitd_status_t* jitd_client_transfer_to_infeed(jitd_client_t* client, const char* device,
                                                       jitd_dtype_t dtype, const int64_t* dims,
                                                       size_t rank, const void* data,
                                                       size_t size_bytes);
/* Queues the contents and shape of `buffer` (a buffer of `client`). */
JITD_API jitd_status_t* jitd_client_transfer_buffer_to_infeed(jitd_client_t* client,
                                                              const char* device,
                                                              jitd_buffer_t* buffer);
/* Takes the next value of `device`'s outfeed, waiting up to `timeout_ms`
 * (0 = the daemon's default execute deadline; then JITD_DEADLINE_EXCEEDED),
 * and writes its bytes to out_data[0..size_bytes). The value must have
 * `dtype` and dims[0..rank): otherwise JITD_INVALID_ARGUMENT and it stays
 * queued. */
JITD_API jitd_status_t* jitd_client_transfer_from_outfeed(jitd_client_t* client,
                                                          const char* device, jitd_dtype_t dtype,
                                                          const int64_t* dims, size_t rank,
                                                          void* out_data, size_t size_bytes,
                                                          uint32_t timeout_ms);
/* The same, into `buffer` (a buffer of `client`; its shape is the one
 * expected). */
JITD_API jitd_status_t* jitd_client_transfer_from_outfeed_to_buffer(jitd_client_t* client,
                                                                    const char* device,
                                                                    jitd_buffer_t* buffer,
                                                                    uint32_t timeout_ms);
/* (Version 9.) jitd_client_transfer_to_infeed and
 * jitd_client_transfer_from_outfeed for the queues of replica `replica`:
 * the process index (r * num_partitions + p) of a replicated executable on
 * that device. Replica 0 is the queues above. A replica at or past the
 * process count of this process's programs on the device is
 * JITD_INVALID_ARGUMENT naming the range. */
JITD_API jitd_status_t* jitd_client_transfer_to_infeed_replica(
    jitd_client_t* client, const char* device, uint32_t replica, jitd_dtype_t dtype,
    const int64_t* dims, size_t rank, const void* data, size_t size_bytes);
JITD_API jitd_status_t* jitd_client_transfer_from_outfeed_replica(
    jitd_client_t* client, const char* device, uint32_t replica, jitd_dtype_t dtype,
    const int64_t* dims, size_t rank, void* out_data, size_t size_bytes, uint32_t timeout_ms);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif  /* JITD_JITD_H_ */
