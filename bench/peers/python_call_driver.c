/* The C client's hot round trip for bench/peers/python_call_peer.py: the
 * f32[4] add that the peer runs from Python, executed back to back through
 * libjitd.so's C API on buffers made once, each call timed.
 *
 *   jitd_python_call_driver SOCKET DEVICE WARMUP CALLS
 *
 * Connects to the daemon at SOCKET (never starts one), compiles the program
 * for DEVICE, runs WARMUP untimed calls, then CALLS timed ones, and prints
 * each call's nanoseconds, one per line. Exit status 1 with a message on
 * stderr on any error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jitd/jitd.h"

static const char kAdd[] =
    "func.func public @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {\n"
    "  %0 = stablehlo.add %a, %b : tensor<4xf32>\n"
    "  return %0 : tensor<4xf32>\n"
    "}\n";

static int fail(const char* what, jitd_status_t* status) {
  fprintf(stderr, "python_call_driver: %s: %s\n", what, jitd_status_message(status));
  jitd_status_free(status);
  return 1;
}

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s SOCKET DEVICE WARMUP CALLS\n", argv[0]);
    return 2;
  }
  const long warmup = strtol(argv[3], NULL, 10);
  const long calls = strtol(argv[4], NULL, 10);
  if (warmup < 0 || calls <= 0) {
    fprintf(stderr, "python_call_driver: WARMUP must be >= 0 and CALLS > 0\n");
    return 2;
  }
  jitd_client_options_t options = {.struct_size = JITD_CLIENT_OPTIONS_STRUCT_SIZE, .socket_path = argv[1]};
  jitd_client_t* client = NULL;
  jitd_status_t* status = jitd_client_connect(&options, &client);
  if (status != NULL) return fail("connect", status);
  jitd_compile_options_t compile = {.struct_size = JITD_COMPILE_OPTIONS_STRUCT_SIZE, .device = argv[2]};
  jitd_executable_t* exe = NULL;
  status = jitd_client_compile(client, kAdd, strlen(kAdd), &compile, &exe);
  if (status != NULL) return fail("compile", status);
  const int64_t dims[1] = {4};
  jitd_buffer_t* buffers[3];
  for (int i = 0; i < 3; ++i) {
    status = jitd_buffer_create(client, JITD_DTYPE_F32, dims, 1, &buffers[i]);
    if (status != NULL) return fail("buffer", status);
    const float values[4] = {1, 2, 3, 4};
    memcpy(jitd_buffer_data(buffers[i]), values, sizeof(values));
  }
  long long* ns = malloc((size_t)calls * sizeof(long long));
  if (ns == NULL) return 1;
  for (long i = 0; i < warmup + calls; ++i) {
    const long long start = now_ns();
    status = jitd_executable_execute(exe, buffers, 2, buffers + 2, 1, NULL);
    const long long took = now_ns() - start;
    if (status != NULL) return fail("execute", status);
    if (i >= warmup) ns[i - warmup] = took;
  }
  const float* sum = jitd_buffer_data(buffers[2]);
  if (sum[0] != 2 || sum[3] != 8) {
    fprintf(stderr, "python_call_driver: wrong result %g %g\n", sum[0], sum[3]);
    return 1;
  }
  for (long i = 0; i < calls; ++i) printf("%lld\n", ns[i]);
  free(ns);
  for (int i = 0; i < 3; ++i) jitd_buffer_destroy(buffers[i]);
  jitd_executable_release(exe);
  jitd_client_close(client);
  return 0;
}
