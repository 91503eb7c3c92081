// Internal to libjitd.so: what the C API files share. The Status ->
// jitd_status_t* conversion and the exception guard are defined once, in
// jitd_c_api.cc; jitd_builder_c_api.cc uses them through here.
#ifndef JITD_LIBCLIENT_C_API_INTERNAL_H_
#define JITD_LIBCLIENT_C_API_INTERNAL_H_

#include <cstring>
#include <functional>
#include <memory>
#include <type_traits>
#include <vector>

#include "base/status.h"
#include "jitd/jitd.h"
#include "libclient/builder.h"

// A built computation and the borrowed shapes its accessors hand out.
struct jitd_shape {
  jitd::client::Shape shape;
  std::vector<std::unique_ptr<jitd_shape>> elements;  // tuple elements
};

struct jitd_computation {
  std::shared_ptr<const jitd::client::Computation> computation;
  std::vector<std::unique_ptr<jitd_shape>> parameters;
  std::unique_ptr<jitd_shape> result;
};

namespace jitd::c_api {

// NULL for OK; otherwise a new status the caller frees.
jitd_status_t* ToC(const Status& status);
// Runs `body`, turning a thrown C++ exception into a status.
jitd_status_t* GuardStatus(const std::function<Status()>& body);

// The value a C caller passed for an enum parameter, read without loading
// it as the enum type (C may pass any int; C++ may assume enum values are in
// range, and UBSan checks that).
template <typename E>
int RawEnum(const E& e) {
  std::underlying_type_t<E> v;
  std::memcpy(&v, &e, sizeof(v));
  return static_cast<int>(v);
}

}  // namespace jitd::c_api

#endif  // JITD_LIBCLIENT_C_API_INTERNAL_H_
