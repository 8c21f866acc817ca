// The tracer's side of correlation.hpp: which CUPTI functions push and pop the ids.
#pragma once

#include <cupti.h>

namespace memtool::cupti::detail {

using PushExternalId = decltype(&::cuptiActivityPushExternalCorrelationId);
using PopExternalId = decltype(&::cuptiActivityPopExternalCorrelationId);

// Before detail::g_correlating is set; the functions must stay valid for the process's life.
void install_correlation(PushExternalId push, PopExternalId pop) noexcept;

}  // namespace memtool::cupti::detail
