// The libcupti search: the order of the places tried, and what a failed search says.
#include <catch2/catch.hpp>

#include <algorithm>

#include "cupti_library.hpp"

using memtool::cupti::detail::candidate_paths;
using memtool::cupti::detail::LibrarySearch;
using memtool::cupti::detail::load_cupti;

namespace {
std::ptrdiff_t position(const std::vector<std::string>& paths, const std::string& path) {
  const auto it = std::find(paths.begin(), paths.end(), path);
  return it == paths.end() ? -1 : it - paths.begin();
}
}  // namespace

TEST_CASE("CUDA_HOME, /usr/local/cuda, pip wheels, then the loader", "[cupti][library]") {
  LibrarySearch search;
  search.cuda_home = "/opt/cuda";
  search.driver_major = 13;
  search.loaded_objects = {"/usr/lib/libc.so.6", "/venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so"};
  const auto paths = candidate_paths(search);
  const auto home13 = position(paths, "/opt/cuda/lib64/libcupti.so.13");
  const auto home12 = position(paths, "/opt/cuda/lib64/libcupti.so.12");
  const auto extras = position(paths, "/opt/cuda/extras/CUPTI/lib64/libcupti.so.13");
  const auto usr = position(paths, "/usr/local/cuda/lib64/libcupti.so.13");
  const auto cu13 = position(paths, "/venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcupti.so.13");
  const auto cu12 = position(paths, "/venv/lib/python3.12/site-packages/nvidia/cuda_cupti/lib/libcupti.so.12");
  const auto loader = position(paths, "libcupti.so.13");
  REQUIRE(home13 == 0);
  CHECK(home12 == 1);  // versioned names first, the driver's major first
  CHECK(extras > home12);
  CHECK(usr > extras);
  CHECK(cu13 > usr);
  CHECK(cu12 == cu13 + 1);
  CHECK(loader > cu12);
  CHECK(position(paths, "/usr/lib/nvidia/cu13/lib/libcupti.so.13") == -1);  // not a python package
}

TEST_CASE("a CUDA 12 driver tries libcupti.so.12 first", "[cupti][library]") {
  LibrarySearch search;
  search.driver_major = 12;
  search.loaded_objects = {"/x/dist-packages/nvidia/cuda_runtime/lib/libcudart.so.12"};
  const auto paths = candidate_paths(search);
  CHECK(paths.front() == "/usr/local/cuda/lib64/libcupti.so.12");
  CHECK(position(paths, "/x/dist-packages/nvidia/cuda_cupti/lib/libcupti.so.12") <
        position(paths, "/x/dist-packages/nvidia/cu13/lib/libcupti.so.13"));
}

TEST_CASE("MEMTOOL_CUPTI_LIBRARY is the only one tried", "[cupti][library]") {
  LibrarySearch search;
  search.explicit_library = "/nonexistent/libcupti.so";
  search.cuda_home = "/usr/local/cuda";
  CHECK(candidate_paths(search) == std::vector<std::string>{"/nonexistent/libcupti.so"});
  std::string why;
  CHECK_FALSE(load_cupti(search, &why).has_value());
  CHECK_THAT(why, Catch::Contains("/nonexistent/libcupti.so"));
}

TEST_CASE("a library without CUPTI's functions is refused", "[cupti][library]") {
  LibrarySearch search;
  search.explicit_library = "libm.so.6";  // loads, has no cupti*
  std::string why;
  CHECK_FALSE(load_cupti(search, &why).has_value());
  CHECK_THAT(why, Catch::Contains("has no cuptiGetVersion"));
}
