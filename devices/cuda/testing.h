// Test-only helpers shared by the cuda device's tests.
#ifndef JITD_DEVICES_CUDA_TESTING_H_
#define JITD_DEVICES_CUDA_TESTING_H_

#include "devices/cuda/cuda_device.h"

namespace jitd::devices::cuda::testing {

// Library calls for problems of any size: tests of the library paths use
// small dots and convolutions, which the device otherwise gives jitd's
// exact kernels (CudaDeviceSettings::library_min_multiply_adds). For the
// process, from here on.
inline void LibrariesForSmallProblems() {
  CudaDeviceSettings settings = GetCudaDeviceSettings();
  settings.library_min_multiply_adds = 0;
  SetCudaDeviceSettings(settings);
}

}  // namespace jitd::devices::cuda::testing

#endif  // JITD_DEVICES_CUDA_TESTING_H_
