/* The C API (include/jitd/jitd.h) from plain C11 against a real daemon.
 *
 *   jitd_c_api_test SOCKET_PATH AUTOSTART_SOCKET_PATH
 *
 * Run by jitd_c_api_test_driver, which starts `jitd serve` on SOCKET_PATH
 * with an empty cache and stops it afterwards. AUTOSTART_SOCKET_PATH is a
 * path where no daemon runs: the test starts one there through
 * start_daemon_if_missing (from several processes at once) and the driver
 * stops it by the pid in jitd.pid beside it. Exits 0 when every check
 * passes, 1 at the first failure (with file:line and the status message). */
#define _POSIX_C_SOURCE 200809L
#include <jitd/jitd.h>

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_api_test_util.h"

static const char* g_socket;
static const char* g_autostart_socket;

static const char kSoftmax[] =
    "func.func public @main(%arg0: tensor<2x4xf32>) -> tensor<2x4xf32> {\n"
    "  %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>\n"
    "  %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.maximum across dimensions = [1]"
    " : (tensor<2x4xf32>, tensor<f32>) -> tensor<2xf32>\n"
    "  %1 = stablehlo.broadcast_in_dim %0, dims = [0] : (tensor<2xf32>) -> tensor<2x4xf32>\n"
    "  %2 = stablehlo.subtract %arg0, %1 : tensor<2x4xf32>\n"
    "  %3 = stablehlo.exponential %2 : tensor<2x4xf32>\n"
    "  %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>\n"
    "  %4 = stablehlo.reduce(%3 init: %cst_0) applies stablehlo.add across dimensions = [1]"
    " : (tensor<2x4xf32>, tensor<f32>) -> tensor<2xf32>\n"
    "  %5 = stablehlo.broadcast_in_dim %4, dims = [0] : (tensor<2xf32>) -> tensor<2x4xf32>\n"
    "  %6 = stablehlo.divide %3, %5 : tensor<2x4xf32>\n"
    "  return %6 : tensor<2x4xf32>\n"
    "}\n";
static const float kInput[8] = {1, 2, 3, 4, -2, 0.5f, 0, 1.5f};

static jitd_client_t* connect_client(void) {
  jitd_client_options_t options;
  memset(&options, 0, sizeof(options));
  options.struct_size = JITD_CLIENT_OPTIONS_STRUCT_SIZE;
  options.socket_path = g_socket;
  options.timeout_ms = 30000;
  jitd_client_t* client = NULL;
  CHECK_OK(jitd_client_connect(&options, &client));
  CHECK(client != NULL);
  return client;
}

static void test_version_and_status(void) {
  CHECK(jitd_api_version() == JITD_API_VERSION);
  CHECK(jitd_status_code(NULL) == JITD_OK);
  CHECK(strcmp(jitd_status_message(NULL), "") == 0);
  jitd_status_free(NULL);
  jitd_string_free(NULL);
}

static void test_connect_errors(void) {
  jitd_client_options_t options;
  memset(&options, 0, sizeof(options));
  options.struct_size = JITD_CLIENT_OPTIONS_STRUCT_SIZE;
  options.socket_path = g_socket;
  jitd_client_t* client = NULL;

  CHECK_CODE(jitd_client_connect(&options, NULL), JITD_INVALID_ARGUMENT);

  options.struct_size = sizeof(size_t); /* too small */
  CHECK_CODE(jitd_client_connect(&options, &client), JITD_INVALID_ARGUMENT);
  CHECK(client == NULL);
  options.struct_size = JITD_CLIENT_OPTIONS_STRUCT_SIZE;

  options.socket_path = "/nonexistent/jitd/jitd.sock";
  CHECK_CODE(jitd_client_connect(&options, &client), JITD_UNAVAILABLE);
  CHECK(client == NULL);

  /* Calls on NULL handles are errors or no-ops, never crashes. */
  jitd_client_close(NULL);
  jitd_buffer_destroy(NULL);
  jitd_executable_release(NULL);
  CHECK(jitd_buffer_data(NULL) == NULL);
  CHECK(jitd_buffer_size_bytes(NULL) == 0);
  CHECK(jitd_executable_num_arguments(NULL) == 0);
  CHECK(jitd_executable_fingerprint(NULL) == NULL);
  char* json = NULL;
  CHECK_CODE(jitd_client_stats_json(NULL, 0, &json), JITD_INVALID_ARGUMENT);
}

static void test_buffer_errors(jitd_client_t* client) {
  const int64_t dims[2] = {2, 4};
  const int64_t negative[2] = {2, -1};
  jitd_buffer_t* buffer = NULL;
  CHECK_CODE(jitd_buffer_create(NULL, JITD_DTYPE_F32, dims, 2, &buffer), JITD_INVALID_ARGUMENT);
  CHECK_CODE(jitd_buffer_create(client, JITD_DTYPE_F32, dims, 2, NULL), JITD_INVALID_ARGUMENT);
  CHECK_CODE(jitd_buffer_create(client, JITD_DTYPE_F32, NULL, 2, &buffer), JITD_INVALID_ARGUMENT);
  CHECK_CODE(jitd_buffer_create(client, JITD_DTYPE_F32, negative, 2, &buffer),
             JITD_INVALID_ARGUMENT);
  CHECK_CODE(jitd_buffer_create(client, JITD_DTYPE_INVALID, dims, 2, &buffer),
             JITD_INVALID_ARGUMENT);
  CHECK_CODE(jitd_buffer_create(client, (jitd_dtype_t)200, dims, 2, &buffer),
             JITD_INVALID_ARGUMENT);
  CHECK(buffer == NULL);

  /* A scalar: rank 0, dims may be NULL. */
  CHECK_OK(jitd_buffer_create(client, JITD_DTYPE_F64, NULL, 0, &buffer));
  CHECK(jitd_buffer_size_bytes(buffer) == 8);
  CHECK(jitd_buffer_data(buffer) != NULL);
  jitd_buffer_destroy(buffer);
}

static void expect_softmax(const float* out) {
  for (int row = 0; row < 2; ++row) {
    const float* in = kInput + 4 * row;
    float max = in[0], sum = 0;
    for (int i = 1; i < 4; ++i) max = in[i] > max ? in[i] : max;
    for (int i = 0; i < 4; ++i) sum += expf(in[i] - max);
    for (int i = 0; i < 4; ++i) {
      const float want = expf(in[i] - max) / sum;
      if (fabsf(out[4 * row + i] - want) > 1e-5f) {
        fprintf(stderr, "result[%d] = %g, expected %g\n", 4 * row + i, out[4 * row + i], want);
        exit(1);
      }
    }
  }
}

/* Compiles softmax, checks its shapes, runs it; returns its fingerprint. */
static void test_compile_and_execute(jitd_client_t* client, jitd_client_t* other,
                                     uint8_t out_fingerprint[16]) {
  jitd_executable_t* exe = NULL;
  jitd_compile_options_t options;
  memset(&options, 0, sizeof(options));
  options.struct_size = JITD_COMPILE_OPTIONS_STRUCT_SIZE;
  options.device = "interpreter";

  CHECK_CODE(jitd_client_compile(client, NULL, 0, NULL, &exe), JITD_INVALID_ARGUMENT);
  options.struct_size = 1;
  CHECK_CODE(jitd_client_compile(client, kSoftmax, strlen(kSoftmax), &options, &exe),
             JITD_INVALID_ARGUMENT);
  options.struct_size = JITD_COMPILE_OPTIONS_STRUCT_SIZE;
  {
    const char bad[] = "func.func @main( this is not StableHLO";
    jitd_status_t* status = jitd_client_compile(client, bad, strlen(bad), &options, &exe);
    CHECK(status != NULL);
    CHECK(jitd_status_message(status)[0] != '\0');
    jitd_status_free(status);
    CHECK(exe == NULL);
  }

  CHECK_OK(jitd_client_compile(client, kSoftmax, strlen(kSoftmax), &options, &exe));
  CHECK(exe != NULL);
  CHECK(jitd_executable_cache_hit(exe) == 0); /* the daemon's cache starts empty */
  CHECK(jitd_executable_num_arguments(exe) == 1);
  CHECK(jitd_executable_num_results(exe) == 1);
  jitd_dtype_t dtype = JITD_DTYPE_INVALID;
  size_t rank = 0;
  const int64_t* dims = NULL;
  CHECK_OK(jitd_executable_argument_shape(exe, 0, &dtype, &rank, &dims));
  CHECK(dtype == JITD_DTYPE_F32 && rank == 2 && dims[0] == 2 && dims[1] == 4);
  CHECK_CODE(jitd_executable_argument_shape(exe, 1, &dtype, &rank, &dims), JITD_INVALID_ARGUMENT);
  CHECK_CODE(jitd_executable_result_shape(exe, 0, NULL, &rank, &dims), JITD_INVALID_ARGUMENT);
  CHECK_OK(jitd_executable_result_shape(exe, 0, &dtype, &rank, &dims));
  CHECK(dtype == JITD_DTYPE_F32 && rank == 2 && dims[0] == 2 && dims[1] == 4);
  memcpy(out_fingerprint, jitd_executable_fingerprint(exe), 16);

  /* Buffers: the argument from the argument shape, the result from the
   * result shape. */
  jitd_buffer_t* arg = NULL;
  jitd_buffer_t* result = NULL;
  CHECK_OK(jitd_buffer_create(client, dtype, dims, rank, &arg));
  CHECK_OK(jitd_buffer_create(client, dtype, dims, rank, &result));
  CHECK(jitd_buffer_size_bytes(arg) == sizeof(kInput));
  memcpy(jitd_buffer_data(arg), kInput, sizeof(kInput));

  /* Bad executes. */
  const int64_t wrong_dims[2] = {4, 2};
  jitd_buffer_t* wrong = NULL;
  jitd_buffer_t* foreign = NULL;
  CHECK_OK(jitd_buffer_create(client, JITD_DTYPE_F32, wrong_dims, 2, &wrong));
  CHECK_OK(jitd_buffer_create(other, JITD_DTYPE_F32, dims, 2, &foreign));
  CHECK_CODE(jitd_executable_execute(NULL, &arg, 1, &result, 1, NULL), JITD_INVALID_ARGUMENT);
  CHECK_CODE(jitd_executable_execute(exe, &arg, 0, &result, 1, NULL), JITD_INVALID_ARGUMENT);
  CHECK_CODE(jitd_executable_execute(exe, NULL, 1, &result, 1, NULL), JITD_INVALID_ARGUMENT);
  CHECK_CODE(jitd_executable_execute(exe, &wrong, 1, &result, 1, NULL), JITD_INVALID_ARGUMENT);
  CHECK_CODE(jitd_executable_execute(exe, &foreign, 1, &result, 1, NULL), JITD_INVALID_ARGUMENT);
  jitd_buffer_t* null_buffer = NULL;
  CHECK_CODE(jitd_executable_execute(exe, &arg, 1, &null_buffer, 1, NULL), JITD_INVALID_ARGUMENT);
  jitd_execute_timing_t timing;
  memset(&timing, 0, sizeof(timing));
  CHECK_CODE(jitd_executable_execute(exe, &arg, 1, &result, 1, &timing), JITD_INVALID_ARGUMENT);
  jitd_buffer_destroy(wrong);
  jitd_buffer_destroy(foreign);

  /* The real run, twice (the second on the same buffers). */
  for (int round = 0; round < 2; ++round) {
    memset(jitd_buffer_data(result), 0, jitd_buffer_size_bytes(result));
    memset(&timing, 0, sizeof(timing));
    timing.struct_size = JITD_EXECUTE_TIMING_STRUCT_SIZE;
    CHECK_OK(jitd_executable_execute(exe, &arg, 1, &result, 1, &timing));
    CHECK(timing.total_micros >= timing.execute_micros);
    CHECK(timing.total_micros > 0);
    expect_softmax((const float*)jitd_buffer_data(result));
  }
  /* NULL timing is fine. */
  CHECK_OK(jitd_executable_execute(exe, &arg, 1, &result, 1, NULL));
  expect_softmax((const float*)jitd_buffer_data(result));

  jitd_buffer_destroy(arg);
  jitd_buffer_destroy(result);
  jitd_executable_release(exe);
}

static void test_compile_by_fingerprint(jitd_client_t* other, const uint8_t fingerprint[16]) {
  jitd_executable_t* exe = NULL;
  CHECK_CODE(jitd_client_compile_by_fingerprint(other, NULL, &exe), JITD_INVALID_ARGUMENT);
  uint8_t unknown[16];
  memset(unknown, 0xAB, sizeof(unknown));
  CHECK_CODE(jitd_client_compile_by_fingerprint(other, unknown, &exe), JITD_NOT_FOUND);
  CHECK(exe == NULL);

  /* Another client finds the program compiled by the first one. */
  CHECK_OK(jitd_client_compile_by_fingerprint(other, fingerprint, &exe));
  CHECK(jitd_executable_cache_hit(exe) == 1);
  CHECK(memcmp(jitd_executable_fingerprint(exe), fingerprint, 16) == 0);
  CHECK(jitd_executable_num_arguments(exe) == 1);

  /* Close the client first: the buffers and executable keep working. */
  jitd_dtype_t dtype;
  size_t rank;
  const int64_t* dims;
  CHECK_OK(jitd_executable_argument_shape(exe, 0, &dtype, &rank, &dims));
  jitd_buffer_t* arg = NULL;
  jitd_buffer_t* result = NULL;
  CHECK_OK(jitd_buffer_create(other, dtype, dims, rank, &arg));
  CHECK_OK(jitd_executable_result_shape(exe, 0, &dtype, &rank, &dims));
  CHECK_OK(jitd_buffer_create(other, dtype, dims, rank, &result));
  jitd_client_close(other);
  memcpy(jitd_buffer_data(arg), kInput, sizeof(kInput));
  CHECK_OK(jitd_executable_execute(exe, &arg, 1, &result, 1, NULL));
  expect_softmax((const float*)jitd_buffer_data(result));
  jitd_executable_release(exe);
  jitd_buffer_destroy(arg);
  jitd_buffer_destroy(result);
}

static void test_stats(jitd_client_t* client) {
  char* json = NULL;
  CHECK_CODE(jitd_client_stats_json(client, 0, NULL), JITD_INVALID_ARGUMENT);
  CHECK_OK(jitd_client_stats_json(client, 0, &json));
  CHECK(json != NULL && json[0] == '{');
  jitd_string_free(json);
  json = NULL;
  CHECK_OK(jitd_client_stats_json(client, 1, &json));
  CHECK(json != NULL && json[0] == '{');
  jitd_string_free(json);
}

/* Version 7: the daemon's devices, from its Hello reply. */
static void test_devices(jitd_client_t* client) {
  CHECK(jitd_client_num_devices(NULL) == 0);
  CHECK(jitd_client_device_name(NULL, 0) == NULL);
  CHECK(strcmp(jitd_client_default_device(NULL), "") == 0);
  const size_t n = jitd_client_num_devices(client);
  CHECK(n >= 1);
  int has_interpreter = 0, has_default = 0;
  for (size_t i = 0; i < n; ++i) {
    const char* name = jitd_client_device_name(client, i);
    CHECK(name != NULL && name[0] != '\0');
    if (strcmp(name, "interpreter") == 0) has_interpreter = 1;
    if (strcmp(name, jitd_client_default_device(client)) == 0) has_default = 1;
  }
  CHECK(has_interpreter && has_default);
  CHECK(jitd_client_device_name(client, n) == NULL);
}

/* start_daemon_if_missing from several processes at once: every one
 * connects, all to the one daemon that won the socket. */
static void test_start_daemon_if_missing(void) {
  enum { kProcesses = 4 };
  jitd_client_options_t options;
  memset(&options, 0, sizeof(options));
  options.struct_size = JITD_CLIENT_OPTIONS_STRUCT_SIZE;
  options.socket_path = g_autostart_socket;
  jitd_client_t* client = NULL;
  /* Off: no daemon there, none started. */
  CHECK_CODE(jitd_client_connect(&options, &client), JITD_UNAVAILABLE);
  options.start_daemon_if_missing = 1;
  pid_t children[kProcesses];
  for (int i = 0; i < kProcesses; ++i) {
    children[i] = fork();
    CHECK(children[i] >= 0);
    if (children[i] == 0) {
      jitd_client_t* c = NULL;
      jitd_status_t* status = jitd_client_connect(&options, &c);
      if (status != NULL) {
        fprintf(stderr, "child %d: %s\n", i, jitd_status_message(status));
        _exit(1);
      }
      jitd_executable_t* exe = NULL;
      status = jitd_client_compile(c, kSoftmax, strlen(kSoftmax), NULL, &exe);
      if (status != NULL) {
        fprintf(stderr, "child %d: compile: %s\n", i, jitd_status_message(status));
        _exit(1);
      }
      jitd_executable_release(exe);
      jitd_client_close(c);
      _exit(0);
    }
  }
  for (int i = 0; i < kProcesses; ++i) {
    int status = 0;
    CHECK(waitpid(children[i], &status, 0) == children[i]);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  /* One daemon served them all: it opened every session and compiled once. */
  options.start_daemon_if_missing = 0;
  CHECK_OK(jitd_client_connect(&options, &client));
  char* json = NULL;
  CHECK_OK(jitd_client_stats_json(client, 0, &json));
  char expected[64];
  snprintf(expected, sizeof(expected), "\"sessions_opened\":%d,", kProcesses + 1);
  if (strstr(json, expected) == NULL || strstr(json, "\"compiles\":1,") == NULL) {
    fprintf(stderr, "unexpected stats of the started daemon: %s\n", json);
    exit(1);
  }
  jitd_string_free(json);
  jitd_client_close(client);
}

/* jitd_executable_execute_ex: library-allocated results, a mix of given
 * and allocated slots, options (resource seed, struct_size checks). */
static void test_execute_ex(jitd_client_t* client) {
  jitd_executable_t* exe = NULL;
  CHECK_OK(jitd_client_compile(client, kSoftmax, strlen(kSoftmax), NULL, &exe));
  const int64_t dims[2] = {2, 4};
  jitd_buffer_t* arg = NULL;
  CHECK_OK(jitd_buffer_create(client, JITD_DTYPE_F32, dims, 2, &arg));
  memcpy(jitd_buffer_data(arg), kInput, sizeof(kInput));
  jitd_buffer_t* results[1] = {NULL};
  jitd_execute_timing_t timing;
  memset(&timing, 0, sizeof(timing));
  timing.struct_size = JITD_EXECUTE_TIMING_STRUCT_SIZE;
  CHECK_OK(jitd_executable_execute_ex(exe, &arg, 1, results, 1, NULL, &timing));
  CHECK(results[0] != NULL);
  CHECK(jitd_buffer_size_bytes(results[0]) == 8 * sizeof(float));
  const float* out = (const float*)jitd_buffer_data(results[0]);
  CHECK(fabsf(out[3] - 0.6439143f) < 1e-5f);
  CHECK(timing.total_micros >= timing.execute_micros);
  /* A given slot is written in place and stays the caller's buffer. */
  jitd_buffer_t* given = results[0];
  memset(jitd_buffer_data(given), 0, jitd_buffer_size_bytes(given));
  CHECK_OK(jitd_executable_execute_ex(exe, &arg, 1, results, 1, NULL, NULL));
  CHECK(results[0] == given);
  CHECK(fabsf(((const float*)jitd_buffer_data(given))[3] - 0.6439143f) < 1e-5f);
  jitd_buffer_destroy(given);
  /* Errors leave the slots unchanged. */
  results[0] = NULL;
  CHECK_CODE(jitd_executable_execute_ex(exe, &arg, 1, results, 2, NULL, NULL),
             JITD_INVALID_ARGUMENT);
  CHECK_CODE(jitd_executable_execute_ex(exe, &arg, 1, NULL, 1, NULL, NULL), JITD_INVALID_ARGUMENT);
  jitd_execute_options_t options;
  memset(&options, 0, sizeof(options));
  options.struct_size = sizeof(size_t); /* too small */
  CHECK_CODE(jitd_executable_execute_ex(exe, &arg, 1, results, 1, &options, NULL),
             JITD_INVALID_ARGUMENT);
  CHECK(results[0] == NULL);
  jitd_executable_release(exe);

  /* dense_resource weights: a seed fills them, the same seed the same way. */
  static const char kResource[] =
      "func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
      "  %w = stablehlo.constant dense_resource<weights> : tensor<4xf32>\n"
      "  %0 = stablehlo.add %arg0, %w : tensor<4xf32>\n"
      "  return %0 : tensor<4xf32>\n"
      "}\n";
  CHECK_OK(jitd_client_compile(client, kResource, strlen(kResource), NULL, &exe));
  const int64_t four[1] = {4};
  jitd_buffer_t* zeros = NULL;
  CHECK_OK(jitd_buffer_create(client, JITD_DTYPE_F32, four, 1, &zeros));
  memset(jitd_buffer_data(zeros), 0, 16);
  CHECK_CODE(jitd_executable_execute_ex(exe, &zeros, 1, results, 1, NULL, NULL),
             JITD_INVALID_ARGUMENT);
  CHECK(results[0] == NULL);
  options.struct_size = JITD_EXECUTE_OPTIONS_STRUCT_SIZE;
  options.has_resource_seed = 1;
  options.resource_seed = 42;
  jitd_buffer_t* first[1] = {NULL};
  jitd_buffer_t* second[1] = {NULL};
  CHECK_OK(jitd_executable_execute_ex(exe, &zeros, 1, first, 1, &options, NULL));
  CHECK_OK(jitd_executable_execute_ex(exe, &zeros, 1, second, 1, &options, NULL));
  CHECK(memcmp(jitd_buffer_data(first[0]), jitd_buffer_data(second[0]), 16) == 0);
  /* A vector of weights (version 8) lies in [0.5, 1.5), unlike the uniform
   * fill's [-1, 1) (which, at seed 42, has a value below 0.5). */
  const float* uniform = (const float*)jitd_buffer_data(first[0]);
  int below_half = 0;
  for (int i = 0; i < 4; ++i) below_half += uniform[i] < 0.5f;
  CHECK(below_half > 0);
  jitd_buffer_t* weights[1] = {NULL};
  options.struct_size = sizeof(options);
  options.resource_fill = JITD_RESOURCE_FILL_WEIGHTS;
  CHECK_OK(jitd_executable_execute_ex(exe, &zeros, 1, weights, 1, &options, NULL));
  for (int i = 0; i < 4; ++i) {
    const float w = ((const float*)jitd_buffer_data(weights[0]))[i];
    CHECK(w >= 0.5f && w < 1.5f);
  }
  /* An older struct_size ends before resource_fill: uniform, as before. */
  options.struct_size = JITD_EXECUTE_OPTIONS_STRUCT_SIZE;
  jitd_buffer_t* old_size[1] = {NULL};
  CHECK_OK(jitd_executable_execute_ex(exe, &zeros, 1, old_size, 1, &options, NULL));
  CHECK(memcmp(jitd_buffer_data(first[0]), jitd_buffer_data(old_size[0]), 16) == 0);
  options.struct_size = sizeof(options);
  options.resource_fill = 7;
  jitd_buffer_t* bad_fill[1] = {NULL};
  CHECK_CODE(jitd_executable_execute_ex(exe, &zeros, 1, bad_fill, 1, &options, NULL),
             JITD_INVALID_ARGUMENT);
  CHECK(bad_fill[0] == NULL);
  jitd_buffer_destroy(old_size[0]);
  jitd_buffer_destroy(weights[0]);
  jitd_buffer_destroy(first[0]);
  jitd_buffer_destroy(second[0]);
  jitd_buffer_destroy(zeros);
  jitd_buffer_destroy(arg);
  jitd_executable_release(exe);
}

/* Tuples and tokens (version 13): a program taking a tuple and returning a
 * nested tuple and the token of its outfeed runs on one buffer per tensor
 * leaf; the structures describe the trees. */
static const char kTupleProgram[] =
    "func.func @main(%p: tuple<tensor<2xf32>, tensor<i32>>) -> (tuple<tensor<i32>, "
    "tuple<tensor<2xf32>>>, !stablehlo.token) {\n"
    "  %a = stablehlo.get_tuple_element %p[0] : (tuple<tensor<2xf32>, tensor<i32>>) -> "
    "tensor<2xf32>\n"
    "  %b = stablehlo.get_tuple_element %p[1] : (tuple<tensor<2xf32>, tensor<i32>>) -> "
    "tensor<i32>\n"
    "  %d = stablehlo.add %a, %a : tensor<2xf32>\n"
    "  %t = stablehlo.create_token : !stablehlo.token\n"
    "  %t2 = \"stablehlo.outfeed\"(%d, %t) {outfeed_config = \"\"} : (tensor<2xf32>, "
    "!stablehlo.token) -> !stablehlo.token\n"
    "  %in = stablehlo.tuple %d : tuple<tensor<2xf32>>\n"
    "  %r = stablehlo.tuple %b, %in : tuple<tensor<i32>, tuple<tensor<2xf32>>>\n"
    "  return %r, %t2 : tuple<tensor<i32>, tuple<tensor<2xf32>>>, !stablehlo.token\n"
    "}\n";

static void test_tuples_and_tokens(jitd_client_t* client) {
  CHECK(strcmp(jitd_executable_argument_structure(NULL), "") == 0);
  CHECK(strcmp(jitd_executable_result_structure(NULL), "") == 0);
  jitd_executable_t* exe = NULL;
  CHECK_OK(jitd_client_compile(client, kTupleProgram, sizeof(kTupleProgram) - 1, NULL, &exe));
  CHECK(strcmp(jitd_executable_argument_structure(exe), "(tt)") == 0);
  CHECK(strcmp(jitd_executable_result_structure(exe), "(t(t))k") == 0);
  CHECK(jitd_executable_num_arguments(exe) == 2);
  CHECK(jitd_executable_num_results(exe) == 2);
  jitd_dtype_t dtype = JITD_DTYPE_INVALID;
  size_t rank = 9;
  const int64_t* dims = NULL;
  CHECK_OK(jitd_executable_result_shape(exe, 0, &dtype, &rank, &dims));
  CHECK(dtype == JITD_DTYPE_S32 && rank == 0);
  CHECK_OK(jitd_executable_result_shape(exe, 1, &dtype, &rank, &dims));
  CHECK(dtype == JITD_DTYPE_F32 && rank == 1 && dims[0] == 2);

  const int64_t two[1] = {2};
  jitd_buffer_t* args[2] = {NULL, NULL};
  jitd_buffer_t* results[2] = {NULL, NULL};
  CHECK_OK(jitd_buffer_create(client, JITD_DTYPE_F32, two, 1, &args[0]));
  CHECK_OK(jitd_buffer_create(client, JITD_DTYPE_S32, NULL, 0, &args[1]));
  CHECK_OK(jitd_buffer_create(client, JITD_DTYPE_S32, NULL, 0, &results[0]));
  CHECK_OK(jitd_buffer_create(client, JITD_DTYPE_F32, two, 1, &results[1]));
  ((float*)jitd_buffer_data(args[0]))[0] = 1.5f;
  ((float*)jitd_buffer_data(args[0]))[1] = -3.0f;
  *(int32_t*)jitd_buffer_data(args[1]) = 77;
  CHECK_OK(jitd_executable_execute(exe, args, 2, results, 2, NULL));
  CHECK(*(int32_t*)jitd_buffer_data(results[0]) == 77);
  CHECK(((float*)jitd_buffer_data(results[1]))[0] == 3.0f);
  CHECK(((float*)jitd_buffer_data(results[1]))[1] == -6.0f);
  float out[2] = {0, 0};
  CHECK_OK(jitd_client_transfer_from_outfeed(client, NULL, JITD_DTYPE_F32, two, 1, out, 8,
                                             20000));
  CHECK(out[0] == 3.0f && out[1] == -6.0f);
  /* A leaf short: refused, naming the counts. */
  CHECK_CODE(jitd_executable_execute(exe, args, 1, results, 2, NULL), JITD_INVALID_ARGUMENT);
  for (int i = 0; i < 2; ++i) {
    jitd_buffer_destroy(args[i]);
    jitd_buffer_destroy(results[i]);
  }
  jitd_executable_release(exe);
}

/* Infeed and outfeed on one client (kFeedProgram): feed first, then execute
 * (the execute would otherwise hold the client while it waits), then read
 * the outfeed. */
static void test_infeed_outfeed(jitd_client_t* client) {
  const int64_t dims[1] = {2};
  const float fed[2] = {10, 20};
  float out[2] = {0, 0};
  CHECK_CODE(jitd_client_transfer_to_infeed(NULL, NULL, JITD_DTYPE_F32, dims, 1, fed, 8),
             JITD_INVALID_ARGUMENT);
  CHECK_CODE(jitd_client_transfer_to_infeed(client, NULL, JITD_DTYPE_F32, dims, 1, fed, 4),
             JITD_INVALID_ARGUMENT); /* wrong byte count */
  CHECK_CODE(jitd_client_transfer_to_infeed(client, "no-such-device", JITD_DTYPE_F32, dims, 1,
                                            fed, 8),
             JITD_NOT_FOUND);
  CHECK_OK(jitd_client_transfer_to_infeed(client, NULL, JITD_DTYPE_F32, dims, 1, fed, 8));

  jitd_executable_t* exe = NULL;
  CHECK_OK(jitd_client_compile(client, kFeedProgram, sizeof(kFeedProgram) - 1, NULL, &exe));
  jitd_buffer_t* x = NULL;
  jitd_buffer_t* y = NULL;
  CHECK_OK(jitd_buffer_create(client, JITD_DTYPE_F32, dims, 1, &x));
  CHECK_OK(jitd_buffer_create(client, JITD_DTYPE_F32, dims, 1, &y));
  float* xs = (float*)jitd_buffer_data(x);
  xs[0] = 1;
  xs[1] = 2;
  CHECK_OK(jitd_executable_execute(exe, &x, 1, &y, 1, NULL));
  CHECK(((float*)jitd_buffer_data(y))[0] == 11 && ((float*)jitd_buffer_data(y))[1] == 22);

  /* The outfeed holds {11, 22}: a wrong shape takes nothing, the right one reads it. */
  const int64_t dims3[1] = {3};
  float out3[3];
  CHECK_CODE(jitd_client_transfer_from_outfeed(client, NULL, JITD_DTYPE_F32, dims3, 1, out3, 12,
                                               1000),
             JITD_INVALID_ARGUMENT);
  CHECK_OK(jitd_client_transfer_from_outfeed(client, NULL, JITD_DTYPE_F32, dims, 1, out, 8,
                                             1000));
  CHECK(out[0] == 11 && out[1] == 22);
  /* Empty now: a short timeout expires. */
  CHECK_CODE(jitd_client_transfer_from_outfeed(client, NULL, JITD_DTYPE_F32, dims, 1, out, 8, 50),
             JITD_DEADLINE_EXCEEDED);

  /* Nothing fed: the execute stops at its deadline. */
  CHECK_CODE(jitd_executable_execute_with_deadline(exe, &x, 1, &y, 1, 100000, NULL),
             JITD_DEADLINE_EXCEEDED);

  /* Buffer variants. */
  xs[0] = 5;
  xs[1] = 6;
  CHECK_OK(jitd_client_transfer_buffer_to_infeed(client, NULL, x));
  CHECK_OK(jitd_executable_execute(exe, &x, 1, &y, 1, NULL));
  CHECK_OK(jitd_client_transfer_from_outfeed_to_buffer(client, NULL, x, 1000));
  CHECK(xs[0] == 10 && xs[1] == 12);
  jitd_buffer_destroy(x);
  jitd_buffer_destroy(y);
  jitd_executable_release(exe);
}

/* Version 6: profiles and dump directories. */
static void test_profile_and_dumps(jitd_client_t* client, const char* dump_dir) {
  jitd_compile_options_t options;
  memset(&options, 0, sizeof(options));
  options.struct_size = sizeof(options);
  options.device = "cpu";
  options.profile = 1;
  options.dump_dir = dump_dir;
  jitd_executable_t* exe = NULL;
  CHECK_OK(jitd_client_compile(client, kSoftmax, strlen(kSoftmax), &options, &exe));
  CHECK(jitd_executable_cache_hit(exe) == 0);
  char path[512];
  const char* names[] = {"000-input.mlir", "optimized.mlir", "llvm.ll", "asm.s"};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); ++i) {
    snprintf(path, sizeof(path), "%s/%s", dump_dir, names[i]);
    FILE* f = fopen(path, "r");
    CHECK(f != NULL);
    fclose(f);
  }
  CHECK(jitd_executable_profile_size(exe) == 0); /* no execute yet */
  const int64_t dims[2] = {2, 4};
  jitd_buffer_t* arg = NULL;
  CHECK_OK(jitd_buffer_create(client, JITD_DTYPE_F32, dims, 2, &arg));
  memcpy(jitd_buffer_data(arg), kInput, sizeof(kInput));
  jitd_buffer_t* results[1] = {NULL};
  CHECK_OK(jitd_executable_execute_ex(exe, &arg, 1, results, 1, NULL, NULL));
  const size_t rows = jitd_executable_profile_size(exe);
  CHECK(rows > 0);
  CHECK(jitd_executable_profile_omitted(exe) == 0);
  uint64_t previous = UINT64_MAX;
  for (size_t i = 0; i < rows; ++i) {
    const char* name = NULL;
    uint64_t count = 0, nanos = 0;
    CHECK_OK(jitd_executable_profile_row(exe, i, &name, &count, &nanos));
    CHECK(name != NULL && name[0] != '\0' && count >= 1 && nanos <= previous);
    previous = nanos;
  }
  const char* name = NULL;
  uint64_t count = 0, nanos = 0;
  CHECK_CODE(jitd_executable_profile_row(exe, rows, &name, &count, &nanos), JITD_INVALID_ARGUMENT);
  CHECK_CODE(jitd_executable_profile_row(exe, 0, NULL, &count, &nanos), JITD_INVALID_ARGUMENT);
  jitd_buffer_destroy(results[0]);
  jitd_buffer_destroy(arg);
  jitd_executable_release(exe);
}

/* Replicated execution (version 9): a 2-replica all_reduce, per-process
 * arguments and library-allocated results, per-replica feeds. */
static const char kReplicatedSum[] =
    "func.func public @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
    "  %s = \"stablehlo.all_reduce\"(%x) ({\n"
    "    ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n"
    "      %t = stablehlo.add %a, %b : tensor<f32>\n"
    "      stablehlo.return %t : tensor<f32>\n"
    "  }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<2xf32>) -> "
    "tensor<2xf32>\n"
    "  return %s : tensor<2xf32>\n"
    "}\n";

static void test_replicated(jitd_client_t* client) {
  jitd_compile_options_t options;
  memset(&options, 0, sizeof(options));
  options.struct_size = sizeof(options);
  options.device = "interpreter";
  options.num_replicas = 2;
  jitd_executable_t* exe = NULL;
  CHECK_OK(jitd_client_compile(client, kReplicatedSum, strlen(kReplicatedSum), &options, &exe));
  CHECK(jitd_executable_num_replicas(exe) == 2);
  CHECK(jitd_executable_num_partitions(exe) == 1);
  CHECK(jitd_executable_num_replicas(NULL) == 0);
  const int64_t dims[1] = {2};
  jitd_buffer_t* args[2] = {NULL, NULL};
  for (int p = 0; p < 2; ++p) {
    CHECK_OK(jitd_buffer_create(client, JITD_DTYPE_F32, dims, 1, &args[p]));
    float* data = (float*)jitd_buffer_data(args[p]);
    data[0] = 1.0f + (float)p * 10;
    data[1] = 2.0f + (float)p * 10;
  }
  jitd_buffer_t* results[2] = {NULL, NULL};
  /* The one-process entry points refuse it, naming the replicated one. */
  jitd_status_t* status = jitd_executable_execute_ex(exe, args, 1, results, 1, NULL, NULL);
  CHECK(jitd_status_code(status) == JITD_INVALID_ARGUMENT);
  CHECK(strstr(jitd_status_message(status), "ExecutePerReplica") != NULL);
  jitd_status_free(status);
  CHECK(results[0] == NULL);
  CHECK_CODE(jitd_executable_execute_replicated(exe, 3, args, 2, results, 2, NULL, NULL),
             JITD_INVALID_ARGUMENT);
  CHECK_CODE(jitd_executable_execute_replicated(exe, 2, args, 1, results, 2, NULL, NULL),
             JITD_INVALID_ARGUMENT);
  CHECK(results[0] == NULL && results[1] == NULL);
  jitd_execute_timing_t timing;
  memset(&timing, 0, sizeof(timing));
  timing.struct_size = sizeof(timing);
  CHECK_OK(jitd_executable_execute_replicated(exe, 2, args, 2, results, 2, NULL, &timing));
  for (int p = 0; p < 2; ++p) {
    CHECK(results[p] != NULL);
    const float* out = (const float*)jitd_buffer_data(results[p]);
    CHECK(out[0] == 12.0f && out[1] == 14.0f);
  }
  CHECK(timing.total_micros >= timing.execute_micros);
  /* Per-replica feeds: replica 1 exists now on this device, replica 2 not. */
  const float value[2] = {5, 6};
  CHECK_OK(jitd_client_transfer_to_infeed_replica(client, "interpreter", 1, JITD_DTYPE_F32, dims,
                                                  1, value, sizeof(value)));
  status = jitd_client_transfer_to_infeed_replica(client, "interpreter", 2, JITD_DTYPE_F32, dims,
                                                  1, value, sizeof(value));
  CHECK(jitd_status_code(status) == JITD_INVALID_ARGUMENT);
  CHECK(strstr(jitd_status_message(status), "out of range [0, 2)") != NULL);
  jitd_status_free(status);
  float back[2] = {0, 0};
  CHECK_CODE(jitd_client_transfer_from_outfeed_replica(client, "interpreter", 1, JITD_DTYPE_F32,
                                                       dims, 1, back, sizeof(back), 20),
             JITD_DEADLINE_EXCEEDED);
  for (int p = 0; p < 2; ++p) {
    jitd_buffer_destroy(results[p]);
    jitd_buffer_destroy(args[p]);
  }
  jitd_executable_release(exe);
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s SOCKET_PATH AUTOSTART_SOCKET_PATH\n", argv[0]);
    return 2;
  }
  g_socket = argv[1];
  g_autostart_socket = argv[2];
  test_version_and_status();
  test_connect_errors();
  jitd_client_t* client = connect_client();
  jitd_client_t* other = connect_client();
  test_buffer_errors(client);
  uint8_t fingerprint[16];
  test_compile_and_execute(client, other, fingerprint);
  test_compile_by_fingerprint(other, fingerprint); /* closes `other` */
  test_stats(client);
  test_devices(client);
  test_execute_ex(client);
  test_infeed_outfeed(client);
  test_tuples_and_tokens(client);
  test_replicated(client);
  {
    char dump_dir[512];
    snprintf(dump_dir, sizeof(dump_dir), "%s.dumps", g_socket);
    test_profile_and_dumps(client, dump_dir);
  }
  jitd_client_close(client);
  test_start_daemon_if_missing();
  printf("jitd_c_api_test: all checks passed\n");
  return 0;
}
