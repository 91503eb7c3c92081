// Internal to libjitd.so: what the C API files share. The Status ->
// jitd_status_t* conversion and the exception guard are defined once, in
// jitd_c_api.cc; jitd_builder_c_api.cc uses them through here.
#ifndef JITD_LIBCLIENT_C_API_INTERNAL_H_
#define JITD_LIBCLIENT_C_API_INTERNAL_H_

#include <functional>
#include <memory>
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

}  // namespace jitd::c_api

#endif  // JITD_LIBCLIENT_C_API_INTERNAL_H_
