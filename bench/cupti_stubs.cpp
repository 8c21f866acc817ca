// No-op stand-ins for CUPTI's external correlation push and pop, installed as the tracer would
// install the real ones (bench_cupti_tracer.cpp; cupti.h and the interposer's cuda.h view cannot
// share a translation unit).
#include <benchmark/benchmark.h>

#include "correlation_install.hpp"

namespace {
CUptiResult CUPTIAPI push_stub(CUpti_ExternalCorrelationKind, std::uint64_t id) {
  benchmark::DoNotOptimize(id);
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI pop_stub(CUpti_ExternalCorrelationKind, std::uint64_t* last) {
  benchmark::DoNotOptimize(last);
  return CUPTI_SUCCESS;
}
}  // namespace

void install_cupti_stubs() { memtool::cupti::detail::install_correlation(&push_stub, &pop_stub); }
