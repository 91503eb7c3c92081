// LoadCudaDriver's search and its messages (this machine has no driver;
// where one is installed, the last test loads it).
#include "devices/cuda/cuda_symbols.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace jitd::devices::cuda {
namespace {

TEST(CudaSymbols, NamesAreTheApiBaseNames) {
  std::vector<std::string> names = CudaSymbolNames();
  EXPECT_EQ(names.size() * sizeof(void*), sizeof(CudaSymbols));
  auto has = [&](const char* n) { return std::find(names.begin(), names.end(), n) != names.end(); };
  EXPECT_TRUE(has("cuMemHostRegister"));  // not cuMemHostRegister_v2
  EXPECT_TRUE(has("cuMemAllocFromPoolAsync"));
  EXPECT_TRUE(has("cuDevicePrimaryCtxReset"));
  for (const std::string& n : names) EXPECT_EQ(n.find("_v"), std::string::npos) << n;
}

TEST(CudaSymbols, NotFoundListsWhereItLooked) {
  CudaDriverSearch search;
  search.env_path = "/nonexistent/jitd-driver";
  search.use_loader_path = false;
  search.folders = {"/nonexistent/a", "/nonexistent/b"};
  auto driver = LoadCudaDriver(search);
  ASSERT_FALSE(driver.ok());
  EXPECT_EQ(driver.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(driver.status().message(),
            "libcuda.so.1 not found (searched /nonexistent/jitd-driver/libcuda.so.1, "
            "/nonexistent/a/libcuda.so.1, /nonexistent/b/libcuda.so.1; set JITD_CUDA_DRIVER to "
            "its file or folder)");
}

TEST(CudaSymbols, NeverLoadsTheToolkitStub) {
  CudaDriverSearch search;
  search.use_loader_path = false;
  search.folders = {"/usr/local/cuda/lib64/stubs"};
  auto driver = LoadCudaDriver(search);
  ASSERT_FALSE(driver.ok());
  EXPECT_NE(driver.status().message().find("is the CUDA toolkit's stub, not a driver"),
            std::string::npos)
      << driver.status().message();
}

TEST(CudaSymbols, NamesAFileThatIsNotALibrary) {
  char dir[] = "/tmp/jitd_cuda_symbols_XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/libcuda.so.1";
  std::ofstream(path) << "not an ELF file";
  CudaDriverSearch search;
  search.env_path = dir;  // a folder
  search.use_loader_path = false;
  search.folders = {};
  auto driver = LoadCudaDriver(search);
  ASSERT_FALSE(driver.ok());
  EXPECT_NE(driver.status().message().find(path + ": "), std::string::npos)
      << driver.status().message();
  std::remove(path.c_str());
  ::rmdir(dir);
}

TEST(CudaSymbols, DefaultSearch) {
  auto driver = LoadCudaDriver();
  if (!driver.ok()) {
    EXPECT_TRUE(driver.status().code() == StatusCode::kNotFound ||
                driver.status().code() == StatusCode::kFailedPrecondition)
        << driver.status().ToString();
    GTEST_SKIP() << "no CUDA driver here: " << driver.status().message();
  }
  const CudaSymbols& s = (*driver)->symbols();
#define JITD_CUDA_CHECK_SET(name) EXPECT_NE(reinterpret_cast<void*>(s.name), nullptr) << #name;
  JITD_CUDA_SYMBOLS(JITD_CUDA_CHECK_SET)
#undef JITD_CUDA_CHECK_SET
}

}  // namespace
}  // namespace jitd::devices::cuda
