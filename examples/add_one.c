/* A C client of jitd in one file: compile a StableHLO program in the daemon
 * (started in the background if none runs), run it on a buffer in shared
 * memory, print the result.
 *
 *   cc add_one.c $(pkg-config --cflags --libs jitd) -o add_one && ./add_one
 *
 * (From a build tree: cc examples/add_one.c -Iinclude -Lbuild/lib -ljitd
 * -Wl,-rpath,$PWD/build/lib.) Prints "2 3 4 5 (compile miss)", then "hit"
 * on the next run: the daemon keeps the program for every process. */
#include <stdio.h>
#include <string.h>

#include <jitd/jitd.h>

/* Prints a failed status, frees it, and says so. */
static int failed(jitd_status_t* status, const char* what) {
  if (status == NULL) return 0;
  fprintf(stderr, "%s: %s\n", what, jitd_status_message(status));
  jitd_status_free(status);
  return 1;
}

int main(void) {
  static const char kProgram[] =
      "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
      "  %one = stablehlo.constant dense<1.0> : tensor<4xf32>\n"
      "  %y = stablehlo.add %x, %one : tensor<4xf32>\n"
      "  return %y : tensor<4xf32>\n"
      "}\n";

  /* 1. Connect: the default socket, starting a daemon when none answers. */
  jitd_client_options_t options;
  memset(&options, 0, sizeof(options));
  options.struct_size = JITD_CLIENT_OPTIONS_STRUCT_SIZE;
  options.start_daemon_if_missing = 1;
  jitd_client_t* client = NULL;
  if (failed(jitd_client_connect(&options, &client), "connect")) return 1;

  /* 2. Compile (or find it in the daemon's cache) on its default device. */
  jitd_executable_t* exe = NULL;
  if (failed(jitd_client_compile(client, kProgram, strlen(kProgram), NULL, &exe), "compile")) {
    return 1;
  }

  /* 3. The argument: a buffer in shared memory, filled in place. */
  const int64_t dims[1] = {4};
  jitd_buffer_t* x = NULL;
  if (failed(jitd_buffer_create(client, JITD_DTYPE_F32, dims, 1, &x), "buffer")) return 1;
  float* data = (float*)jitd_buffer_data(x);
  for (int i = 0; i < 4; ++i) data[i] = (float)(i + 1);

  /* 4. Execute; the library allocates the result (a NULL slot). */
  jitd_buffer_t* y = NULL;
  if (failed(jitd_executable_execute_ex(exe, &x, 1, &y, 1, NULL, NULL), "execute")) return 1;

  /* 5. Read the result in place, then free everything. */
  const float* out = (const float*)jitd_buffer_data(y);
  printf("%g %g %g %g (compile %s)\n", out[0], out[1], out[2], out[3],
         jitd_executable_cache_hit(exe) ? "hit" : "miss");
  jitd_buffer_destroy(y);
  jitd_buffer_destroy(x);
  jitd_executable_release(exe);
  jitd_client_close(client);
  return 0;
}
