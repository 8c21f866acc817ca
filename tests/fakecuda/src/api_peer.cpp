// Entry points: how the devices see each other. PCI bus ids, peer capability and link attributes,
// peer access between contexts (cuCtxEnablePeerAccess: a kernel may then touch the peer context's
// cuMemAlloc memory; without it, it faults), and which device a stream belongs to.
#include "cuda_abi_devices.hpp"
#include "devices.hpp"
#include "driver.hpp"
#include "streams.hpp"

#include <cstdio>
#include <cstring>
#include <string>

using namespace fakecuda;

namespace {

// The link attributes of an all-to-all NVLink node: full access, native atomics, no arrays here.
int p2p_attribute(CUdevice_P2PAttribute attribute, bool& known) {
  known = true;
  switch (attribute) {
    case CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK:
      return 0;
    case CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED:
      return 1;
    case CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED:
      return 1;
    case CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED:
      return 0;
    case CU_DEVICE_P2P_ATTRIBUTE_ONLY_PARTIAL_NATIVE_ATOMIC_SUPPORTED:
      return 0;
    default:
      known = false;
      return 0;
  }
}

// Parses "[domain:]bus:device[.function]" (hexadecimal); false when it is none of the forms.
bool parse_pci_bus_id(const char* text, unsigned& bus) {
  unsigned a = 0;
  unsigned b = 0;
  unsigned c = 0;
  unsigned d = 0;
  int used = 0;
  const std::size_t n = std::strlen(text);
  if (std::sscanf(text, "%x:%x:%x.%x%n", &a, &b, &c, &d, &used) == 4 && static_cast<std::size_t>(used) == n) {
    bus = b;
    return true;
  }
  if (std::sscanf(text, "%x:%x:%x%n", &a, &b, &c, &used) == 3 && static_cast<std::size_t>(used) == n) {
    bus = b;
    return true;
  }
  if (std::sscanf(text, "%x:%x.%x%n", &b, &c, &d, &used) == 3 && static_cast<std::size_t>(used) == n) {
    bus = b;
    return true;
  }
  return false;
}

Context* as_context(CUcontext ctx) { return reinterpret_cast<Context*>(ctx); }

}  // namespace

FAKECUDA_API CUresult cuDeviceGetPCIBusId(char* pciBusId, int len, CUdevice dev) {
  FC_TRY(check_init());
  FC_TRY(check_device(dev));
  if (pciBusId == nullptr || len <= 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const std::string id = pci_bus_id(dev);
  std::strncpy(pciBusId, id.c_str(), static_cast<std::size_t>(len));
  pciBusId[len - 1] = '\0';
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuDeviceGetByPCIBusId(CUdevice* dev, const char* pciBusId) {
  FC_TRY(check_init());
  if (dev == nullptr || pciBusId == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  unsigned bus = 0;
  if (!parse_pci_bus_id(pciBusId, bus)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  for (int d = 0; d < device_count(); ++d) {
    if (static_cast<unsigned>(d + 1) == bus) {
      *dev = d;
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_INVALID_DEVICE;
}

FAKECUDA_API CUresult cuDeviceCanAccessPeer(int* canAccessPeer, CUdevice dev, CUdevice peerDev) {
  FC_TRY(check_init());
  FC_TRY(check_device(dev));
  FC_TRY(check_device(peerDev));
  if (canAccessPeer == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *canAccessPeer = can_access_peer(dev, peerDev) ? 1 : 0;  // a device is not its own peer
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuDeviceGetP2PAttribute(int* value, CUdevice_P2PAttribute attrib, CUdevice srcDevice,
                                              CUdevice dstDevice) {
  FC_TRY(check_init());
  FC_TRY(check_device(srcDevice));
  FC_TRY(check_device(dstDevice));
  if (srcDevice == dstDevice) {
    return CUDA_ERROR_INVALID_DEVICE;  // "or if they represent the same device"
  }
  bool known = false;
  const int v = p2p_attribute(attrib, known);
  if (value == nullptr || !known) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *value = v;
  return CUDA_SUCCESS;
}

// The documented order: flags, then the current context, then the peer (live, not the current
// one), then whether the devices can be peers, then whether it is enabled already.
FAKECUDA_API CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags) {
  FC_TRY(check_init());
  if (Flags != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Context* ctx = nullptr;
  FC_TRY(current_context(ctx));
  Context* peer = as_context(peerContext);
  if (peer == nullptr || peer == ctx || !is_live_context(peer)) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  if (!can_access_peer(ctx->device, peer->device)) {
    return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
  }
  return guarded([&] {
    std::lock_guard<std::mutex> lock(ctx->peer_mutex);
    for (const Context* p : ctx->peers) {
      if (p == peer) {
        return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
      }
    }
    ctx->peers.push_back(peer);
    return CUDA_SUCCESS;
  });
}

FAKECUDA_API CUresult cuCtxDisablePeerAccess(CUcontext peerContext) {
  FC_TRY(check_init());
  Context* ctx = nullptr;
  FC_TRY(current_context(ctx));
  Context* peer = as_context(peerContext);
  if (peer == nullptr || !is_live_context(peer)) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  std::lock_guard<std::mutex> lock(ctx->peer_mutex);
  for (auto it = ctx->peers.begin(); it != ctx->peers.end(); ++it) {
    if (*it == peer) {
      ctx->peers.erase(it);
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
}

namespace {

CUresult stream_device(CUstream hStream, CUdevice* device, bool per_thread) {
  FC_TRY(check_init());
  if (device == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return guarded([&] {
    std::shared_ptr<Stream> s;
    FC_TRY(resolve_stream(hStream, per_thread, s));
    *device = s->context->device;
    return CUDA_SUCCESS;
  });
}

}  // namespace

FAKECUDA_API CUresult cuStreamGetDevice(CUstream hStream, CUdevice* device) {
  return stream_device(hStream, device, false);
}
FAKECUDA_API CUresult cuStreamGetDevice_ptsz(CUstream hStream, CUdevice* device) {
  return stream_device(hStream, device, true);
}
