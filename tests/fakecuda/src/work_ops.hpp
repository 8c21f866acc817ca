// The work a kernel launch, a copy or a memset does on a stream worker, shared by ordinary stream
// operations (api_launch.cpp, api_copy.cpp) and graph nodes (graph_exec.cpp), so a graph's
// kernel runs through exactly the path a launch does: argument packing, managed-memory residency,
// the link model, the launch counters and the work observer (tests/fakecupti).
#pragma once

#include "cuda_abi.hpp"
#include "fakecuda/kernel_abi.h"

#include <functional>
#include <vector>

namespace fakecuda {

struct Context;
struct Function;
class Stream;

// ---- kernels (api_launch.cpp) ----

// Grid, block, dynamic shared memory and cooperative limits, as cuLaunchKernel checks them.
CUresult check_launch(const Function& fn, const fakecuda_launch_dims& dims, bool cooperative);
// The argument bytes of one launch, packed at the kernel's parameter offsets (kernelParams or
// the `extra` buffer form; both non-null is CUDA_ERROR_INVALID_VALUE).
CUresult pack_arguments(const Function& fn, void** params, void** extra, std::vector<unsigned char>& packed);
// What the stream worker runs for one kernel issued now to `s`: counts the launch and tells the
// work observer.
std::function<void()> kernel_op(Function& fn, std::vector<unsigned char> packed, const fakecuda_launch_dims& dims,
                                const Stream& s);

// ---- copies and memsets (api_copy.cpp) ----

// A graph memcpy node's descriptor: the checks cuMemcpy3DAsync makes when it is issued.
CUresult check_memcpy3d(const CUDA_MEMCPY3D& copy);
// What the stream worker runs for the copy `copy` issued now to `s` (checked first).
CUresult memcpy3d_op(const CUDA_MEMCPY3D& copy, const Stream& s, std::function<void()>& out);
// A graph memset node's parameters: the checks cuMemsetD2D*Async makes when it is issued.
CUresult check_memset_node(const CUDA_MEMSET_NODE_PARAMS& memset);
CUresult memset_node_op(const CUDA_MEMSET_NODE_PARAMS& memset, const Stream& s, std::function<void()>& out);

}  // namespace fakecuda
