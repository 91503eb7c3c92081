/* The C API (include/jitd/jitd.h) from plain C11 against remote daemons
 * (tcp://), as a program on another host would use it.
 *
 *   jitd_c_api_remote_test PLAIN_ADDRESS UNIX_SOCKET TOKEN_FILE WRONG_TOKEN_FILE
 *                          DEAD_ADDRESS
 *                          [TLS_ADDRESS CA CERT KEY ROGUE_CA ROGUE_CERT ROGUE_KEY]
 *
 * Run by jitd_c_api_remote_test_driver, which starts the daemons and always
 * stops them:
 * - PLAIN_ADDRESS: `jitd serve --listen tcp://127.0.0.1:P --insecure-loopback
 *   --token-file F` whose token file names TOKEN_FILE's token "alice" (and
 *   not WRONG_TOKEN_FILE's); UNIX_SOCKET is the same daemon's Unix socket,
 *   for the local run the remote results are compared with.
 * - DEAD_ADDRESS: a loopback port with nothing listening.
 * - TLS_ADDRESS (when the driver could make certificates): a daemon with
 *   --tls-cert/--tls-key/--tls-client-ca; CERT/KEY is the client "alice"
 *   signed by CA, ROGUE_* a CA and a client certificate the daemon does not
 *   trust.
 * Exits 0 when every check passes, 1 at the first failure (file:line, what
 * was checked, the status's code and message). */
#define _POSIX_C_SOURCE 200809L
#include <jitd/jitd.h>

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_api_test_util.h"

/* The run's arguments (see the top). */
static const char* g_plain;
static const char* g_unix_socket;
static const char* g_token;
static const char* g_wrong_token;
static const char* g_dead;
static const char* g_tls;
static const char* g_ca;
static const char* g_cert;
static const char* g_key;
static const char* g_rogue_ca;
static const char* g_rogue_cert;
static const char* g_rogue_key;

/* Options for `address` with every remote field given (the version-12
 * struct); the caller fills in the credentials. */
static jitd_client_options_t remote_options(const char* address) {
  jitd_client_options_t options;
  memset(&options, 0, sizeof(options));
  options.struct_size = sizeof(options);
  options.socket_path = address;
  options.timeout_ms = 30000;
  return options;
}

static jitd_client_options_t plain_options(const char* token_file) {
  jitd_client_options_t options = remote_options(g_plain);
  options.token_file = token_file;
  options.insecure_loopback = 1;
  return options;
}

static jitd_client_t* connect_or_die(const jitd_client_options_t* options, int line) {
  jitd_client_t* client = NULL;
  jitd_status_t* status = jitd_client_connect(options, &client);
  if (status != NULL) {
    fprintf(stderr, "%s:%d: connect to %s: code %d (\"%s\")\n", __FILE__, line,
            options != NULL && options->socket_path != NULL ? options->socket_path : "$JITD_SOCKET",
            (int)jitd_status_code(status), jitd_status_message(status));
    exit(1);
  }
  CHECK(client != NULL);
  return client;
}
#define CONNECT(options) connect_or_die((options), __LINE__)

/* ---- The program every connection runs ----------------------------------- */

/* Three arguments, three results of two dtypes:
 *   s = a * b + a, r = the column sums of s, q = k * 3 - 7 (i32, wrapping). */
static const char kProgram[] =
    "func.func public @main(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>, %k: tensor<3xi32>)"
    " -> (tensor<2x3xf32>, tensor<3xf32>, tensor<3xi32>) {\n"
    "  %p = stablehlo.multiply %a, %b : tensor<2x3xf32>\n"
    "  %s = stablehlo.add %p, %a : tensor<2x3xf32>\n"
    "  %zero = stablehlo.constant dense<0.000000e+00> : tensor<f32>\n"
    "  %r = stablehlo.reduce(%s init: %zero) applies stablehlo.add across dimensions = [0]"
    " : (tensor<2x3xf32>, tensor<f32>) -> tensor<3xf32>\n"
    "  %three = stablehlo.constant dense<3> : tensor<3xi32>\n"
    "  %m = stablehlo.multiply %k, %three : tensor<3xi32>\n"
    "  %seven = stablehlo.constant dense<7> : tensor<3xi32>\n"
    "  %q = stablehlo.subtract %m, %seven : tensor<3xi32>\n"
    "  return %s, %r, %q : tensor<2x3xf32>, tensor<3xf32>, tensor<3xi32>\n"
    "}\n";

/* Inputs, chosen so that every result is exact in f32 (halves and small
 * integers) whatever order the daemon adds in; `round` varies them. */
typedef struct inputs_t {
  float a[6];
  float b[6];
  int32_t k[3];
} inputs_t;

static inputs_t make_inputs(int round) {
  inputs_t in;
  for (int i = 0; i < 6; ++i) {
    in.a[i] = 0.5f * (float)(i - 2 + round);
    in.b[i] = 1.5f + (float)(i * (round + 1));
  }
  in.k[0] = -5 - round;
  in.k[1] = 1 << 30; /* 3 * 2^30 wraps */
  in.k[2] = 1000000 + round;
  return in;
}

/* Checks the three results against values computed here. */
static void expect_results(const inputs_t* in, const float* s, const float* r, const int32_t* q,
                           int line) {
  float want_s[6];
  for (int i = 0; i < 6; ++i) {
    const float product = in->a[i] * in->b[i];
    want_s[i] = product + in->a[i];
    if (s[i] != want_s[i]) {
      fprintf(stderr, "%s:%d: s[%d] = %g, expected %g\n", __FILE__, line, i, s[i], want_s[i]);
      exit(1);
    }
  }
  for (int j = 0; j < 3; ++j) {
    const float want_r = want_s[j] + want_s[3 + j];
    /* Two's complement wrapping, computed without signed overflow. */
    const int32_t want_q = (int32_t)((uint32_t)in->k[j] * 3u - 7u);
    if (r[j] != want_r || q[j] != want_q) {
      fprintf(stderr, "%s:%d: r[%d] = %g, q[%d] = %d; expected %g and %d\n", __FILE__, line, j,
              r[j], j, q[j], want_r, want_q);
      exit(1);
    }
  }
}

/* A compiled kProgram with its argument and result buffers. */
typedef struct run_t {
  jitd_executable_t* exe;
  jitd_buffer_t* args[3];
  jitd_buffer_t* results[3];
} run_t;

static void create_buffer(jitd_client_t* client, jitd_executable_t* exe, int is_result,
                          size_t index, jitd_buffer_t** out) {
  jitd_dtype_t dtype = JITD_DTYPE_INVALID;
  size_t rank = 0;
  const int64_t* dims = NULL;
  if (is_result) {
    CHECK_OK(jitd_executable_result_shape(exe, index, &dtype, &rank, &dims));
  } else {
    CHECK_OK(jitd_executable_argument_shape(exe, index, &dtype, &rank, &dims));
  }
  CHECK_OK(jitd_buffer_create(client, dtype, dims, rank, out));
  CHECK(*out != NULL);
}

/* Buffers for `exe` (kProgram's), on `client`; the shapes checked first. */
static run_t prepare_run(jitd_client_t* client, jitd_executable_t* exe) {
  CHECK(jitd_executable_num_arguments(exe) == 3);
  CHECK(jitd_executable_num_results(exe) == 3);
  jitd_dtype_t dtype = JITD_DTYPE_INVALID;
  size_t rank = 0;
  const int64_t* dims = NULL;
  CHECK_OK(jitd_executable_argument_shape(exe, 0, &dtype, &rank, &dims));
  CHECK(dtype == JITD_DTYPE_F32 && rank == 2 && dims[0] == 2 && dims[1] == 3);
  CHECK_OK(jitd_executable_argument_shape(exe, 2, &dtype, &rank, &dims));
  CHECK(dtype == JITD_DTYPE_S32 && rank == 1 && dims[0] == 3);
  CHECK_OK(jitd_executable_result_shape(exe, 1, &dtype, &rank, &dims));
  CHECK(dtype == JITD_DTYPE_F32 && rank == 1 && dims[0] == 3);
  CHECK_STATUS(jitd_executable_result_shape(exe, 3, &dtype, &rank, &dims), JITD_INVALID_ARGUMENT,
               "");
  run_t run;
  run.exe = exe;
  for (size_t i = 0; i < 3; ++i) {
    create_buffer(client, exe, 0, i, &run.args[i]);
    create_buffer(client, exe, 1, i, &run.results[i]);
  }
  CHECK(jitd_buffer_size_bytes(run.args[0]) == sizeof(float) * 6);
  CHECK(jitd_buffer_size_bytes(run.results[2]) == sizeof(int32_t) * 3);
  return run;
}

static void fill_arguments(run_t* run, const inputs_t* in) {
  memcpy(jitd_buffer_data(run->args[0]), in->a, sizeof(in->a));
  memcpy(jitd_buffer_data(run->args[1]), in->b, sizeof(in->b));
  memcpy(jitd_buffer_data(run->args[2]), in->k, sizeof(in->k));
}

/* Executes into the run's result buffers (first poisoned) and checks them. */
static void execute_and_check(run_t* run, const inputs_t* in, int line) {
  for (int i = 0; i < 3; ++i) {
    memset(jitd_buffer_data(run->results[i]), 0xA5, jitd_buffer_size_bytes(run->results[i]));
  }
  jitd_execute_timing_t timing;
  memset(&timing, 0, sizeof(timing));
  timing.struct_size = sizeof(timing);
  jitd_status_t* status = jitd_executable_execute(run->exe, run->args, 3, run->results, 3, &timing);
  if (status != NULL) {
    fprintf(stderr, "%s:%d: execute: code %d (\"%s\")\n", __FILE__, line,
            (int)jitd_status_code(status), jitd_status_message(status));
    exit(1);
  }
  CHECK(timing.total_micros >= timing.execute_micros);
  expect_results(in, (const float*)jitd_buffer_data(run->results[0]),
                 (const float*)jitd_buffer_data(run->results[1]),
                 (const int32_t*)jitd_buffer_data(run->results[2]), line);
}

static void finish_run(run_t* run) {
  for (int i = 0; i < 3; ++i) {
    jitd_buffer_destroy(run->args[i]);
    jitd_buffer_destroy(run->results[i]);
  }
  jitd_executable_release(run->exe);
}

static jitd_executable_t* compile_program(jitd_client_t* client) {
  jitd_executable_t* exe = NULL;
  CHECK_OK(jitd_client_compile(client, kProgram, strlen(kProgram), NULL, &exe));
  CHECK(exe != NULL);
  return exe;
}

/* ---- Over the plaintext loopback daemon, with a token -------------------- */

/* Compile, buffers, execute (twice, with new argument values in between:
 * each execute sends the arguments again), library-allocated results, and
 * the same bytes as a local client of the same daemon gets. Returns the
 * program's fingerprint. */
static void test_compile_and_execute(jitd_client_t* client, uint8_t out_fingerprint[16]) {
  {
    const char bad[] = "func.func @main( this is not StableHLO";
    jitd_executable_t* exe = NULL;
    jitd_status_t* status = jitd_client_compile(client, bad, strlen(bad), NULL, &exe);
    CHECK(status != NULL && jitd_status_message(status)[0] != '\0');
    jitd_status_free(status);
    CHECK(exe == NULL);
  }
  jitd_executable_t* exe = compile_program(client);
  memcpy(out_fingerprint, jitd_executable_fingerprint(exe), 16);
  run_t run = prepare_run(client, exe);
  for (int round = 0; round < 3; ++round) {
    const inputs_t in = make_inputs(round);
    fill_arguments(&run, &in);
    execute_and_check(&run, &in, __LINE__);
  }

  /* Results the library allocates (one round trip), and a wrong count. */
  const inputs_t in = make_inputs(7);
  fill_arguments(&run, &in);
  jitd_buffer_t* allocated[3] = {NULL, NULL, NULL};
  CHECK_STATUS(jitd_executable_execute_ex(exe, run.args, 3, allocated, 2, NULL, NULL),
               JITD_INVALID_ARGUMENT, "");
  CHECK(allocated[0] == NULL);
  CHECK_OK(jitd_executable_execute_ex(exe, run.args, 3, allocated, 3, NULL, NULL));
  for (int i = 0; i < 3; ++i) CHECK(allocated[i] != NULL);
  expect_results(&in, (const float*)jitd_buffer_data(allocated[0]),
                 (const float*)jitd_buffer_data(allocated[1]),
                 (const int32_t*)jitd_buffer_data(allocated[2]), __LINE__);

  /* The same program, inputs and daemon through the Unix socket: the same
   * bytes. */
  jitd_client_options_t local_options;
  memset(&local_options, 0, sizeof(local_options));
  local_options.struct_size = sizeof(local_options);
  local_options.socket_path = g_unix_socket;
  jitd_client_t* local = CONNECT(&local_options);
  CHECK(strcmp(jitd_client_remote_identity(local), "") == 0);
  run_t local_run = prepare_run(local, compile_program(local));
  fill_arguments(&local_run, &in);
  execute_and_check(&local_run, &in, __LINE__);
  for (int i = 0; i < 3; ++i) {
    CHECK(jitd_buffer_size_bytes(local_run.results[i]) == jitd_buffer_size_bytes(allocated[i]));
    CHECK(memcmp(jitd_buffer_data(local_run.results[i]), jitd_buffer_data(allocated[i]),
                 jitd_buffer_size_bytes(allocated[i])) == 0);
  }
  finish_run(&local_run);
  jitd_client_close(local);

  for (int i = 0; i < 3; ++i) jitd_buffer_destroy(allocated[i]);
  finish_run(&run);
}

/* A tensor of several MiB: many DATA frames (<= 1 MiB each) both ways, an
 * element count that is no multiple of a chunk. */
static void test_large_tensor(jitd_client_t* client) {
  enum { kCount = (1 << 19) + 3 }; /* 2 MiB + 12 bytes of f32 */
  char text[512];
  snprintf(text, sizeof(text),
           "func.func @main(%%x: tensor<%dxf32>) -> tensor<%dxf32> {\n"
           "  %%two = stablehlo.constant dense<2.0> : tensor<%dxf32>\n"
           "  %%one = stablehlo.constant dense<1.0> : tensor<%dxf32>\n"
           "  %%m = stablehlo.multiply %%x, %%two : tensor<%dxf32>\n"
           "  %%r = stablehlo.add %%m, %%one : tensor<%dxf32>\n"
           "  return %%r : tensor<%dxf32>\n"
           "}\n",
           kCount, kCount, kCount, kCount, kCount, kCount, kCount);
  jitd_executable_t* exe = NULL;
  CHECK_OK(jitd_client_compile(client, text, strlen(text), NULL, &exe));
  const int64_t dims[1] = {kCount};
  jitd_buffer_t* x = NULL;
  CHECK_OK(jitd_buffer_create(client, JITD_DTYPE_F32, dims, 1, &x));
  float* xs = (float*)jitd_buffer_data(x);
  for (int i = 0; i < kCount; ++i) xs[i] = (float)(i % 4099) - 2049.0f;
  jitd_buffer_t* results[1] = {NULL};
  CHECK_OK(jitd_executable_execute_ex(exe, &x, 1, results, 1, NULL, NULL));
  CHECK(jitd_buffer_size_bytes(results[0]) == sizeof(float) * kCount);
  const float* ys = (const float*)jitd_buffer_data(results[0]);
  for (int i = 0; i < kCount; ++i) {
    const float want = xs[i] * 2.0f + 1.0f;
    if (ys[i] != want) {
      fprintf(stderr, "%s:%d: large result[%d] = %g, expected %g\n", __FILE__, __LINE__, i, ys[i],
              want);
      exit(1);
    }
  }
  jitd_buffer_destroy(results[0]);
  jitd_buffer_destroy(x);
  jitd_executable_release(exe);
}

/* Another connection finds the program by its fingerprint (no text sent);
 * it cannot use the first connection's buffers. */
static void test_compile_by_fingerprint(jitd_client_t* client, jitd_client_t* other,
                                        const uint8_t fingerprint[16]) {
  jitd_executable_t* exe = NULL;
  uint8_t unknown[16];
  memset(unknown, 0x5C, sizeof(unknown));
  CHECK_STATUS(jitd_client_compile_by_fingerprint(other, unknown, &exe), JITD_NOT_FOUND, "");
  CHECK(exe == NULL);
  CHECK_OK(jitd_client_compile_by_fingerprint(other, fingerprint, &exe));
  CHECK(exe != NULL);
  CHECK(jitd_executable_cache_hit(exe) == 1);
  CHECK(memcmp(jitd_executable_fingerprint(exe), fingerprint, 16) == 0);
  run_t run = prepare_run(other, exe);
  const inputs_t in = make_inputs(3);
  fill_arguments(&run, &in);
  execute_and_check(&run, &in, __LINE__);
  jitd_buffer_t* foreign = NULL;
  create_buffer(client, exe, 0, 0, &foreign);
  jitd_buffer_t* mixed[3] = {foreign, run.args[1], run.args[2]};
  CHECK_STATUS(jitd_executable_execute(exe, mixed, 3, run.results, 3, NULL),
               JITD_INVALID_ARGUMENT, "");
  jitd_buffer_destroy(foreign);
  finish_run(&run);
}

typedef struct blocked_execute_t {
  jitd_executable_t* exe;
  jitd_buffer_t* x;
  jitd_buffer_t* y;
  jitd_status_t* status;
  atomic_int done;
} blocked_execute_t;

static void* execute_on_thread(void* arg) {
  blocked_execute_t* run = (blocked_execute_t*)arg;
  run->status = jitd_executable_execute_with_deadline(run->exe, &run->x, 1, &run->y, 1,
                                                      20u * 1000 * 1000, NULL);
  atomic_store(&run->done, 1);
  return NULL;
}

/* Infeed / outfeed remotely: feed then execute then read on one client;
 * the buffer variants; and an execute that waits for its infeed on one
 * connection while another connection of this process feeds it (the
 * connections of one process share the queues, as locally). */
static void test_infeed_outfeed(jitd_client_t* client, jitd_client_t* other) {
  const int64_t dims[1] = {2};
  const float fed[2] = {10, 20};
  float out[2] = {0, 0};
  CHECK_STATUS(jitd_client_transfer_to_infeed(client, NULL, JITD_DTYPE_F32, dims, 1, fed, 4),
               JITD_INVALID_ARGUMENT, "");
  CHECK_STATUS(jitd_client_transfer_to_infeed(client, "no-such-device", JITD_DTYPE_F32, dims, 1,
                                              fed, 8),
               JITD_NOT_FOUND, "no-such-device");
  CHECK_OK(jitd_client_transfer_to_infeed(client, NULL, JITD_DTYPE_F32, dims, 1, fed, 8));

  jitd_executable_t* exe = NULL;
  CHECK_OK(jitd_client_compile(client, kFeedProgram, strlen(kFeedProgram), NULL, &exe));
  jitd_buffer_t* x = NULL;
  jitd_buffer_t* y = NULL;
  CHECK_OK(jitd_buffer_create(client, JITD_DTYPE_F32, dims, 1, &x));
  CHECK_OK(jitd_buffer_create(client, JITD_DTYPE_F32, dims, 1, &y));
  float* xs = (float*)jitd_buffer_data(x);
  const float* ys = (const float*)jitd_buffer_data(y);
  xs[0] = 1;
  xs[1] = 2;
  CHECK_OK(jitd_executable_execute(exe, &x, 1, &y, 1, NULL));
  CHECK(ys[0] == 11 && ys[1] == 22);
  const int64_t dims3[1] = {3};
  float out3[3];
  CHECK_STATUS(jitd_client_transfer_from_outfeed(client, NULL, JITD_DTYPE_F32, dims3, 1, out3, 12,
                                                 2000),
               JITD_INVALID_ARGUMENT, "");
  CHECK_OK(jitd_client_transfer_from_outfeed(client, NULL, JITD_DTYPE_F32, dims, 1, out, 8,
                                             2000));
  CHECK(out[0] == 11 && out[1] == 22);
  CHECK_STATUS(jitd_client_transfer_from_outfeed(client, NULL, JITD_DTYPE_F32, dims, 1, out, 8,
                                                 50),
               JITD_DEADLINE_EXCEEDED, "");
  CHECK_STATUS(jitd_executable_execute_with_deadline(exe, &x, 1, &y, 1, 100000, NULL),
               JITD_DEADLINE_EXCEEDED, "");

  /* Buffer variants: feed x's contents, read the outfeed into x. */
  xs[0] = 5;
  xs[1] = 6;
  CHECK_OK(jitd_client_transfer_buffer_to_infeed(client, NULL, x));
  CHECK_OK(jitd_executable_execute(exe, &x, 1, &y, 1, NULL));
  CHECK_OK(jitd_client_transfer_from_outfeed_to_buffer(client, NULL, x, 2000));
  CHECK(xs[0] == 10 && xs[1] == 12 && ys[0] == 10 && ys[1] == 12);

  /* The execute waits on `client`; `other` feeds it. */
  xs[0] = 0.5f;
  xs[1] = -0.5f;
  blocked_execute_t blocked;
  blocked.exe = exe;
  blocked.x = x;
  blocked.y = y;
  blocked.status = NULL;
  atomic_init(&blocked.done, 0);
  pthread_t thread;
  CHECK(pthread_create(&thread, NULL, execute_on_thread, &blocked) == 0);
  const struct timespec pause = {0, 200 * 1000 * 1000};
  nanosleep(&pause, NULL);
  if (atomic_load(&blocked.done)) { /* it cannot finish unfed: it failed */
    CHECK(pthread_join(thread, NULL) == 0);
    fprintf(stderr, "%s:%d: the execute waiting for its infeed ended early: code %d (\"%s\")\n",
            __FILE__, __LINE__, (int)jitd_status_code(blocked.status),
            jitd_status_message(blocked.status));
    exit(1);
  }
  const float late[2] = {100, 200};
  CHECK_OK(jitd_client_transfer_to_infeed(other, NULL, JITD_DTYPE_F32, dims, 1, late, 8));
  CHECK(pthread_join(thread, NULL) == 0);
  CHECK_OK(blocked.status);
  CHECK(ys[0] == 100.5f && ys[1] == 199.5f);
  CHECK_OK(jitd_client_transfer_from_outfeed(other, NULL, JITD_DTYPE_F32, dims, 1, out, 8, 2000));
  CHECK(out[0] == 100.5f && out[1] == 199.5f);

  jitd_buffer_destroy(x);
  jitd_buffer_destroy(y);
  jitd_executable_release(exe);
}

/* The stats a remote client sees list its session with its identity and
 * address. */
static void test_stats(jitd_client_t* client, const char* identity) {
  char* json = NULL;
  CHECK_OK(jitd_client_stats_json(client, 1, &json));
  CHECK(json != NULL && json[0] == '{');
  char expected[128];
  snprintf(expected, sizeof(expected), "\"remote\":\"%s\",\"address\":\"127.0.0.1:", identity);
  if (strstr(json, expected) == NULL) {
    fprintf(stderr, "%s:%d: the stats do not list %s: %s\n", __FILE__, __LINE__, expected, json);
    exit(1);
  }
  jitd_string_free(json);
}

static void test_plaintext_with_token(void) {
  jitd_client_options_t options = plain_options(g_token);
  jitd_client_t* client = CONNECT(&options);
  jitd_client_t* other = CONNECT(&options);
  CHECK(strcmp(jitd_client_remote_identity(client), "token:alice") == 0);
  CHECK(strcmp(jitd_client_remote_identity(other), "token:alice") == 0);
  CHECK(jitd_client_num_devices(client) >= 1);
  CHECK(jitd_client_default_device(client)[0] != '\0');

  uint8_t fingerprint[16];
  test_compile_and_execute(client, fingerprint);
  test_compile_by_fingerprint(client, other, fingerprint);
  test_large_tensor(client);
  test_infeed_outfeed(client, other);
  test_stats(client, "token:alice");

  /* Buffers and executables outlive their client's handle, remotely too. */
  jitd_executable_t* exe = compile_program(other);
  run_t run = prepare_run(other, exe);
  jitd_client_close(other);
  const inputs_t in = make_inputs(5);
  fill_arguments(&run, &in);
  execute_and_check(&run, &in, __LINE__);
  finish_run(&run);
  jitd_client_close(client);
}

/* The address, token and plaintext flag from the environment: JITD_SOCKET,
 * JITD_TOKEN_FILE, JITD_INSECURE_LOOPBACK, with NULL options and with an
 * options struct of the size before version 12. */
static void test_environment(void) {
  CHECK(setenv("JITD_SOCKET", g_plain, 1) == 0);
  CHECK(setenv("JITD_TOKEN_FILE", g_token, 1) == 0);
  CHECK(setenv("JITD_INSECURE_LOOPBACK", "1", 1) == 0);
  jitd_client_t* client = CONNECT(NULL);
  CHECK(strcmp(jitd_client_remote_identity(client), "token:alice") == 0);
  run_t run = prepare_run(client, compile_program(client));
  const inputs_t in = make_inputs(2);
  fill_arguments(&run, &in);
  execute_and_check(&run, &in, __LINE__);
  finish_run(&run);
  jitd_client_close(client);

  jitd_client_options_t old;
  memset(&old, 0, sizeof(old));
  old.struct_size = JITD_CLIENT_OPTIONS_STRUCT_SIZE;
  old.timeout_ms = 30000;
  client = CONNECT(&old);
  CHECK(strcmp(jitd_client_remote_identity(client), "token:alice") == 0);
  jitd_client_close(client);
  CHECK(unsetenv("JITD_SOCKET") == 0 && unsetenv("JITD_TOKEN_FILE") == 0 &&
        unsetenv("JITD_INSECURE_LOOPBACK") == 0);
}

/* Refusals: each a clear error, and nothing handed out. */
static void test_plaintext_refusals(void) {
  jitd_client_t* client = NULL;
  jitd_client_options_t options = plain_options(g_wrong_token);
  CHECK_STATUS(jitd_client_connect(&options, &client), JITD_PERMISSION_DENIED, "bearer token");
  CHECK(client == NULL);

  options = plain_options(NULL); /* and $JITD_TOKEN_FILE is unset */
  CHECK_STATUS(jitd_client_connect(&options, &client), JITD_PERMISSION_DENIED,
               "requires a bearer token");
  CHECK(client == NULL);

  char missing[512];
  snprintf(missing, sizeof(missing), "%s.missing", g_token);
  options = plain_options(missing);
  CHECK_STATUS(jitd_client_connect(&options, &client), JITD_INVALID_ARGUMENT, missing);
  CHECK(client == NULL);

  /* Nothing listens there. */
  options = remote_options(g_dead);
  options.token_file = g_token;
  options.insecure_loopback = 1;
  CHECK_STATUS(jitd_client_connect(&options, &client), JITD_UNAVAILABLE, "no jitd daemon answers");
  jitd_status_t* status = jitd_client_connect(&options, &client);
  CHECK(strstr(jitd_status_message(status), g_dead) != NULL); /* names the address */
  jitd_status_free(status);
  CHECK(client == NULL);

  /* Plaintext only to loopback: refused before any connection is tried
   * (192.0.2.1 is TEST-NET-1, where a connect would hang, not be refused). */
  options = remote_options("tcp://192.0.2.1:7070");
  options.token_file = g_token;
  options.insecure_loopback = 1;
  CHECK_STATUS(jitd_client_connect(&options, &client), JITD_INVALID_ARGUMENT, "loopback");
  CHECK(client == NULL);

  /* Addresses that are not HOST:PORT. */
  const char* bad[] = {"tcp://127.0.0.1", "tcp://127.0.0.1:0", "tcp://127.0.0.1:70000",
                       "tcp://:7070"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) {
    options = remote_options(bad[i]);
    options.token_file = g_token;
    options.insecure_loopback = 1;
    status = jitd_client_connect(&options, &client);
    if (jitd_status_code(status) != JITD_INVALID_ARGUMENT) {
      fprintf(stderr, "%s:%d: connect to '%s': code %d (\"%s\"), expected INVALID_ARGUMENT\n",
              __FILE__, __LINE__, bad[i], (int)jitd_status_code(status),
              jitd_status_message(status));
      exit(1);
    }
    jitd_status_free(status);
    CHECK(client == NULL);
  }

  /* TLS to the plaintext listener: the handshake fails, nothing hangs. */
  options = remote_options(g_plain);
  options.token_file = g_token;
  options.tls_ca_file = g_ca; /* NULL without the TLS part: the system's */
  options.timeout_ms = 10000;
  status = jitd_client_connect(&options, &client);
  if (jitd_status_code(status) != JITD_UNAVAILABLE ||
      strstr(jitd_status_message(status), "TLS handshake") == NULL) {
    fprintf(stderr, "%s:%d: TLS to a plaintext daemon: code %d (\"%s\"), expected UNAVAILABLE\n",
            __FILE__, __LINE__, (int)jitd_status_code(status), jitd_status_message(status));
    exit(1);
  }
  jitd_status_free(status);
  CHECK(client == NULL);
}

/* ---- Over the mutual-TLS daemon ------------------------------------------ */

static jitd_client_options_t tls_options(const char* ca, const char* cert, const char* key) {
  jitd_client_options_t options = remote_options(g_tls);
  options.tls_ca_file = ca;
  options.tls_cert_file = cert;
  options.tls_key_file = key;
  return options;
}

static void test_mutual_tls(void) {
  jitd_client_options_t options = tls_options(g_ca, g_cert, g_key);
  jitd_client_t* client = CONNECT(&options);
  CHECK(strcmp(jitd_client_remote_identity(client), "cert:alice") == 0);
  run_t run = prepare_run(client, compile_program(client));
  for (int round = 0; round < 2; ++round) {
    const inputs_t in = make_inputs(round + 10);
    fill_arguments(&run, &in);
    execute_and_check(&run, &in, __LINE__);
  }
  finish_run(&run);
  /* The cpu device (LLVM-compiled code) gives the same exact results. */
  jitd_compile_options_t cpu;
  memset(&cpu, 0, sizeof(cpu));
  cpu.struct_size = sizeof(cpu);
  cpu.device = "cpu";
  jitd_executable_t* exe = NULL;
  CHECK_OK(jitd_client_compile(client, kProgram, strlen(kProgram), &cpu, &exe));
  run = prepare_run(client, exe);
  const inputs_t in = make_inputs(4);
  fill_arguments(&run, &in);
  execute_and_check(&run, &in, __LINE__);
  finish_run(&run);
  test_stats(client, "cert:alice");
  jitd_client_close(client);

  /* The same from the environment. */
  CHECK(setenv("JITD_SOCKET", g_tls, 1) == 0 && setenv("JITD_TLS_CA", g_ca, 1) == 0 &&
        setenv("JITD_TLS_CERT", g_cert, 1) == 0 && setenv("JITD_TLS_KEY", g_key, 1) == 0);
  client = CONNECT(NULL);
  CHECK(strcmp(jitd_client_remote_identity(client), "cert:alice") == 0);
  jitd_client_close(client);
  CHECK(unsetenv("JITD_SOCKET") == 0 && unsetenv("JITD_TLS_CA") == 0 &&
        unsetenv("JITD_TLS_CERT") == 0 && unsetenv("JITD_TLS_KEY") == 0);
}

static void test_tls_refusals(void) {
  jitd_client_t* client = NULL;
  /* The daemon's certificate does not chain to the CA given. */
  jitd_client_options_t options = tls_options(g_rogue_ca, g_cert, g_key);
  CHECK_STATUS(jitd_client_connect(&options, &client), JITD_PERMISSION_DENIED, "does not verify");
  CHECK(client == NULL);
  /* A client certificate from a CA the daemon does not trust; none. */
  options = tls_options(g_ca, g_rogue_cert, g_rogue_key);
  CHECK_STATUS(jitd_client_connect(&options, &client), JITD_PERMISSION_DENIED,
               "client certificate");
  CHECK(client == NULL);
  options = tls_options(g_ca, NULL, NULL);
  CHECK_STATUS(jitd_client_connect(&options, &client), JITD_PERMISSION_DENIED,
               "client certificate");
  CHECK(client == NULL);
  /* A CA file that is not there: named. */
  char missing[512];
  snprintf(missing, sizeof(missing), "%s.missing", g_ca);
  options = tls_options(missing, g_cert, g_key);
  CHECK_STATUS(jitd_client_connect(&options, &client), JITD_INVALID_ARGUMENT, missing);
  CHECK(client == NULL);
  /* Plaintext to the TLS listener: refused, not hung. */
  options = tls_options(g_ca, g_cert, g_key);
  options.insecure_loopback = 1;
  options.timeout_ms = 10000;
  jitd_status_t* status = jitd_client_connect(&options, &client);
  if (jitd_status_code(status) != JITD_UNAVAILABLE) {
    fprintf(stderr, "%s:%d: plaintext to a TLS daemon: code %d (\"%s\"), expected UNAVAILABLE\n",
            __FILE__, __LINE__, (int)jitd_status_code(status), jitd_status_message(status));
    exit(1);
  }
  jitd_status_free(status);
  CHECK(client == NULL);
}

int main(int argc, char** argv) {
  if (argc != 6 && argc != 13) {
    fprintf(stderr,
            "usage: %s PLAIN_ADDRESS UNIX_SOCKET TOKEN_FILE WRONG_TOKEN_FILE DEAD_ADDRESS "
            "[TLS_ADDRESS CA CERT KEY ROGUE_CA ROGUE_CERT ROGUE_KEY]\n",
            argv[0]);
    return 2;
  }
  g_plain = argv[1];
  g_unix_socket = argv[2];
  g_token = argv[3];
  g_wrong_token = argv[4];
  g_dead = argv[5];
  if (argc == 13) {
    g_tls = argv[6];
    g_ca = argv[7];
    g_cert = argv[8];
    g_key = argv[9];
    g_rogue_ca = argv[10];
    g_rogue_cert = argv[11];
    g_rogue_key = argv[12];
  }
  /* Nothing from the caller's environment picks a daemon or credentials. */
  const char* inherited[] = {"JITD_SOCKET",   "JITD_TOKEN_FILE", "JITD_INSECURE_LOOPBACK",
                             "JITD_TLS_CA",   "JITD_TLS_CERT",   "JITD_TLS_KEY"};
  for (size_t i = 0; i < sizeof(inherited) / sizeof(inherited[0]); ++i) {
    CHECK(unsetenv(inherited[i]) == 0);
  }
  CHECK(jitd_api_version() >= 12);

  test_plaintext_with_token();
  test_environment();
  test_plaintext_refusals();
  if (g_tls != NULL) {
    test_mutual_tls();
    test_tls_refusals();
  } else {
    printf("jitd_c_api_remote_test: no TLS daemon given; the TLS checks did not run\n");
  }
  printf("jitd_c_api_remote_test: all checks passed\n");
  return 0;
}
