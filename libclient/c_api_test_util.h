/* Checks and a program shared by the plain-C tests of the C API
 * (c_api_test.c, c_api_remote_test.c). Header-only C11; a failed check
 * prints file:line and what was checked to stderr and exits 1. */
#ifndef JITD_LIBCLIENT_C_API_TEST_UTIL_H_
#define JITD_LIBCLIENT_C_API_TEST_UTIL_H_

#include <jitd/jitd.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

/* `expr` must return a status of `code` (JITD_OK: NULL) whose message, for an
 * error, contains `part` ("" = any non-empty message). Frees the status. */
#define CHECK_STATUS(expr, code, part) \
  jitd_test_check_status((expr), (code), (part), #expr, __FILE__, __LINE__)
#define CHECK_CODE(expr, code) CHECK_STATUS(expr, code, "")
#define CHECK_OK(expr) CHECK_STATUS(expr, JITD_OK, "")

static inline void jitd_test_check_status(jitd_status_t* status, jitd_status_code_t code,
                                          const char* part, const char* expr, const char* file,
                                          int line) {
  const char* message = jitd_status_message(status);
  if (jitd_status_code(status) != code) {
    fprintf(stderr, "%s:%d: %s returned code %d (\"%s\"), expected %d\n", file, line, expr,
            (int)jitd_status_code(status), message, (int)code);
    exit(1);
  }
  if (status != NULL && message[0] == '\0') {
    fprintf(stderr, "%s:%d: %s: an error status without a message\n", file, line, expr);
    exit(1);
  }
  if (status != NULL && strstr(message, part) == NULL) {
    fprintf(stderr, "%s:%d: %s: the message \"%s\" does not say \"%s\"\n", file, line, expr,
            message, part);
    exit(1);
  }
  jitd_status_free(status);
}

/* Adds an infeed value to x and sends the sum to the outfeed: the execute
 * waits for its infeed. */
static const char kFeedProgram[] =
    "func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
    "  %t = stablehlo.create_token : !stablehlo.token\n"
    "  %v:2 = \"stablehlo.infeed\"(%t) : (!stablehlo.token) -> (tensor<2xf32>, !stablehlo.token)\n"
    "  %s = stablehlo.add %x, %v#0 : tensor<2xf32>\n"
    "  %t2 = \"stablehlo.outfeed\"(%s, %v#1) : (tensor<2xf32>, !stablehlo.token) -> "
    "!stablehlo.token\n"
    "  return %s : tensor<2xf32>\n"
    "}\n";

#endif /* JITD_LIBCLIENT_C_API_TEST_UTIL_H_ */
