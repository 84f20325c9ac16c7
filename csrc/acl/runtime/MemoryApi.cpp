// AscendCL memory: device memory straight from the simulated HBM of the current device (not
// through the caching allocator PyTorch uses, as aclrtMalloc sits below torch_npu's allocator),
// page-locked host memory, and copies and memsets that move real bytes and are priced on the
// simulated timeline.
#include <cstring>

#include "acl/acl.h"
#include "acl/runtime/AclErrors.h"
#include "acl/runtime/AclHandles.h"
#include "acl/runtime/ModelCapture.h"
#include "acl/runtime/TimelineCharges.h"
#include "runtime/HostAllocator.h"
#include "runtime/Runtime.h"

namespace {

using npusim::acl::AclFailure;
using npusim::acl::callAcl;
using npusim::acl::requireNotNull;
using npusim::acl::ResolvedStream;
using npusim::acl::Transfer;
using npusim::runtime::StreamId;

constexpr uint32_t kPagePolicyMask = 0xffU;
constexpr uint32_t kKnownPolicyBits = ACL_MEM_TYPE_LOW_BAND_WIDTH | ACL_MEM_TYPE_HIGH_BAND_WIDTH |
                                      ACL_MEM_ACCESS_USER_SPACE_READONLY;

void checkPolicy(int32_t policy) {
  const auto bits = static_cast<uint32_t>(policy);
  if ((bits & kPagePolicyMask) > ACL_MEM_MALLOC_HUGE1G_ONLY_P2P || (bits & ~(kPagePolicyMask | kKnownPolicyBits)) != 0) {
    throw AclFailure(ACL_ERROR_INVALID_PARAM, "unknown memory allocation policy " + std::to_string(bits));
  }
}

// aclrtMalloc's size: rounded up to 32 bytes, plus 32 bytes, as the real allocator sizes blocks.
size_t allocationSize(size_t size) { return (size + 31) / 32 * 32 + 32; }

void* mallocDevice(void** devPtr, size_t size, const aclrtMemMallocPolicy& policy) {
  requireNotNull(devPtr, "devPtr");
  if (size == 0) throw AclFailure(ACL_ERROR_INVALID_PARAM, "size must be greater than 0");
  checkPolicy(npusim::acl::enumValue(policy));
  *devPtr = npusim::acl::allocateDevice(allocationSize(size));
  return *devPtr;
}

// Where a copy's end lies: on which device (-1: host memory).
int locate(const void* pointer, size_t bytes, const char* which) {
  const int device = npusim::acl::deviceOfRange(pointer, bytes);
  if (device == -2) {
    throw AclFailure(ACL_ERROR_RT_PARAM_INVALID,
                     std::string(which) + " runs past the end of its device allocation (" + std::to_string(bytes) +
                         " bytes)");
  }
  return device;
}

struct CopyPlan {
  Transfer transfer = Transfer::kDeviceToDevice;
  bool hostOnly = false;     // host to host: a plain memcpy, no device work
  bool pinnedHost = false;   // the host end is page-locked (aclrtMallocHost or pin_memory)
  int device = -1;           // the device whose copy engine moves the bytes
};

CopyPlan planCopy(void* dst, const void* src, size_t count, int32_t raw) {
  if (raw < ACL_MEMCPY_HOST_TO_HOST || raw > ACL_MEMCPY_INTER_DEVICE_TO_DEVICE) {
    throw AclFailure(ACL_ERROR_INVALID_PARAM, "unknown memcpy kind " + std::to_string(raw));
  }
  auto kind = static_cast<aclrtMemcpyKind>(raw);
  const int dstDevice = locate(dst, count, "the destination");
  const int srcDevice = locate(src, count, "the source");
  const bool dstOnDevice = dstDevice >= 0;
  const bool srcOnDevice = srcDevice >= 0;
  if (kind == ACL_MEMCPY_DEFAULT) {
    kind = dstOnDevice ? (srcOnDevice ? ACL_MEMCPY_DEVICE_TO_DEVICE : ACL_MEMCPY_HOST_TO_DEVICE)
                       : (srcOnDevice ? ACL_MEMCPY_DEVICE_TO_HOST : ACL_MEMCPY_HOST_TO_HOST);
  }
  bool wantDst = false, wantSrc = false;
  CopyPlan plan;
  switch (kind) {
    case ACL_MEMCPY_HOST_TO_HOST: plan.hostOnly = true; break;
    case ACL_MEMCPY_HOST_TO_DEVICE:
    case ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE:
      wantDst = true;
      plan.transfer = Transfer::kHostToDevice;
      break;
    case ACL_MEMCPY_DEVICE_TO_HOST:
      wantSrc = true;
      plan.transfer = Transfer::kDeviceToHost;
      break;
    case ACL_MEMCPY_DEVICE_TO_DEVICE:
    case ACL_MEMCPY_INNER_DEVICE_TO_DEVICE:
    case ACL_MEMCPY_INTER_DEVICE_TO_DEVICE:
      wantDst = wantSrc = true;
      plan.transfer = Transfer::kDeviceToDevice;
      break;
    default: throw AclFailure(ACL_ERROR_INVALID_PARAM, "unknown memcpy kind " + std::to_string(raw));
  }
  if (dstOnDevice != wantDst || srcOnDevice != wantSrc) {
    throw AclFailure(ACL_ERROR_RT_PARAM_INVALID,
                     std::string("memcpy kind ") + std::to_string(static_cast<int>(kind)) + " does not match the addresses: " +
                         "the destination is " + (dstOnDevice ? "device" : "host") + " memory, the source is " +
                         (srcOnDevice ? "device" : "host") + " memory");
  }
  if (kind == ACL_MEMCPY_INNER_DEVICE_TO_DEVICE && dstDevice != srcDevice) {
    throw AclFailure(ACL_ERROR_RT_PARAM_INVALID, "ACL_MEMCPY_INNER_DEVICE_TO_DEVICE between two devices");
  }
  const void* hostEnd = wantDst ? (wantSrc ? nullptr : src) : dst;
  plan.pinnedHost = hostEnd != nullptr && npusim::runtime::HostAllocator::instance().isPinned(hostEnd);
  plan.device = srcOnDevice ? srcDevice : dstDevice;
  return plan;
}

// What a capture forbids (ModelCapture.h): a synchronous copy while a capture forbids such calls;
// a copy from or to pageable host memory, which the chip stages through the host, likewise,
// and never on the capturing stream itself.
void checkCapture(const ResolvedStream& s, const CopyPlan& plan, bool synchronous, const char* api) {
  if (synchronous) {
    npusim::acl::requireUnsafeCallAllowed(api);
    return;
  }
  const bool pageable = !plan.hostOnly && plan.transfer != Transfer::kDeviceToDevice && !plan.pinnedHost;
  if (pageable) {
    npusim::acl::requireUnsafeCallAllowed((std::string(api) + " with pageable host memory").c_str());
    npusim::acl::refuseOnCapturingStream(s, (std::string(api) + " with pageable host memory").c_str());
  }
}

// The copy itself: the bytes move now (simulated work runs when it is queued), the timeline
// is charged on `stream`. A synchronous copy, or one from pageable host memory, makes the host
// wait for it.
void copy(void* dst, size_t destMax, const void* src, size_t count, int32_t kind, aclrtStream stream,
          bool synchronous) {
  requireNotNull(dst, "dst");
  requireNotNull(src, "src");
  if (count > destMax) {
    throw AclFailure(ACL_ERROR_INVALID_PARAM,
                     "count (" + std::to_string(count) + ") is larger than destMax (" + std::to_string(destMax) + ")");
  }
  const ResolvedStream s = npusim::acl::resolveStream(stream);
  if (count == 0) return;
  const CopyPlan plan = planCopy(dst, src, count, kind);
  checkCapture(s, plan, synchronous, synchronous ? "aclrtMemcpy" : "aclrtMemcpyAsync");
  if (!synchronous && npusim::acl::captureIfCapturing(s, {"aclrtMemcpyAsync", [=](int device, StreamId replay, std::string&) {
        // The memory must still be where it was captured.
        const CopyPlan again = planCopy(dst, src, count, kind);
        std::memmove(dst, src, count);
        if (!again.hostOnly) npusim::acl::chargeTransfer(device, replay, count, again.transfer, again.pinnedHost, false, true);
        return ACL_SUCCESS;
      }})) {
    return;
  }
  std::memmove(dst, src, count);
  if (plan.hostOnly) return;
  const bool hostWaits = synchronous || (plan.transfer == Transfer::kHostToDevice && !plan.pinnedHost);
  npusim::acl::chargeTransfer(s.device, s.stream, count, plan.transfer, plan.pinnedHost, hostWaits);
}

void memset(void* devPtr, size_t maxCount, int32_t value, size_t count, aclrtStream stream, bool synchronous) {
  requireNotNull(devPtr, "devPtr");
  if (count > maxCount) {
    throw AclFailure(ACL_ERROR_INVALID_PARAM,
                     "count (" + std::to_string(count) + ") is larger than maxCount (" + std::to_string(maxCount) + ")");
  }
  const ResolvedStream s = npusim::acl::resolveStream(stream);
  if (count == 0) return;
  if (locate(devPtr, count, "the memset range") < 0) {
    throw AclFailure(ACL_ERROR_RT_PARAM_INVALID, "devPtr is not device memory");
  }
  if (synchronous) npusim::acl::requireUnsafeCallAllowed("aclrtMemset");
  if (!synchronous && npusim::acl::captureIfCapturing(s, {"aclrtMemsetAsync", [=](int device, StreamId replay, std::string& detail) {
        if (locate(devPtr, count, "the memset range") < 0) {
          detail = "devPtr is no longer device memory";
          return static_cast<aclError>(ACL_ERROR_RT_PARAM_INVALID);
        }
        std::memset(devPtr, value & 0xff, count);
        npusim::acl::chargeTransfer(device, replay, count, Transfer::kMemset, false, false, true);
        return static_cast<aclError>(ACL_SUCCESS);
      }})) {
    return;
  }
  std::memset(devPtr, value & 0xff, count);
  npusim::acl::chargeTransfer(s.device, s.stream, count, Transfer::kMemset, false, synchronous);
}

}  // namespace

extern "C" {

aclError aclrtMalloc(void** devPtr, size_t size, aclrtMemMallocPolicy policy) {
  return callAcl("aclrtMalloc", [&] { mallocDevice(devPtr, size, policy); });
}

aclError aclrtMallocAlign32(void** devPtr, size_t size, aclrtMemMallocPolicy policy) {
  return callAcl("aclrtMallocAlign32", [&] { mallocDevice(devPtr, size, policy); });
}

aclError aclrtMallocCached(void** devPtr, size_t size, aclrtMemMallocPolicy policy) {
  return callAcl("aclrtMallocCached", [&] { mallocDevice(devPtr, size, policy); });
}

aclError aclrtFree(void* devPtr) {
  return callAcl("aclrtFree", [&] { npusim::acl::freeDevice(devPtr); });
}

aclError aclrtMallocHost(void** hostPtr, size_t size) {
  return callAcl("aclrtMallocHost", [&] {
    requireNotNull(hostPtr, "hostPtr");
    if (size == 0) throw AclFailure(ACL_ERROR_INVALID_PARAM, "size must be greater than 0");
    *hostPtr = npusim::runtime::HostAllocator::instance().allocate(size);
  });
}

aclError aclrtFreeHost(void* hostPtr) {
  return callAcl("aclrtFreeHost", [&] {
    requireNotNull(hostPtr, "hostPtr");
    npusim::runtime::HostAllocator& host = npusim::runtime::HostAllocator::instance();
    if (host.allocationSize(hostPtr) == 0) {
      throw AclFailure(ACL_ERROR_INVALID_PARAM, "the address is not host memory allocated by aclrtMallocHost");
    }
    host.free(hostPtr);
  });
}

aclError aclrtMemcpy(void* dst, size_t destMax, const void* src, size_t count, aclrtMemcpyKind kind) {
  return callAcl("aclrtMemcpy", [&] { copy(dst, destMax, src, count, npusim::acl::enumValue(kind), nullptr, true); });
}

aclError aclrtMemcpyAsync(void* dst, size_t destMax, const void* src, size_t count, aclrtMemcpyKind kind,
                          aclrtStream stream) {
  return callAcl("aclrtMemcpyAsync", [&] { copy(dst, destMax, src, count, npusim::acl::enumValue(kind), stream, false); });
}

static void copy2d(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                   int32_t kind, aclrtStream stream, bool synchronous) {
  requireNotNull(dst, "dst");
  requireNotNull(src, "src");
  if (width > dpitch || width > spitch) {
    throw AclFailure(ACL_ERROR_INVALID_PARAM, "width must not exceed dpitch and spitch");
  }
  if (height == 0 || width == 0) return;
  const ResolvedStream s = npusim::acl::resolveStream(stream);
  const size_t dstSpan = dpitch * (height - 1) + width;
  const size_t srcSpan = spitch * (height - 1) + width;
  CopyPlan plan = planCopy(dst, src, 1, kind);
  // The whole spans must lie inside their allocations.
  locate(dst, dstSpan, "the destination");
  locate(src, srcSpan, "the source");
  checkCapture(s, plan, synchronous, synchronous ? "aclrtMemcpy2d" : "aclrtMemcpy2dAsync");
  auto move = [=] {
    for (size_t row = 0; row < height; ++row) {
      std::memmove(static_cast<char*>(dst) + row * dpitch, static_cast<const char*>(src) + row * spitch, width);
    }
  };
  if (!synchronous && npusim::acl::captureIfCapturing(s, {"aclrtMemcpy2dAsync", [=](int device, StreamId replay, std::string&) {
        locate(dst, dstSpan, "the destination");
        locate(src, srcSpan, "the source");
        move();
        if (!plan.hostOnly) {
          npusim::acl::chargeTransfer(device, replay, width * height, plan.transfer, plan.pinnedHost, false, true);
        }
        return static_cast<aclError>(ACL_SUCCESS);
      }})) {
    return;
  }
  move();
  if (plan.hostOnly) return;
  const bool hostWaits = synchronous || (plan.transfer == Transfer::kHostToDevice && !plan.pinnedHost);
  npusim::acl::chargeTransfer(s.device, s.stream, width * height, plan.transfer, plan.pinnedHost, hostWaits);
}

aclError aclrtMemcpy2d(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                       aclrtMemcpyKind kind) {
  return callAcl("aclrtMemcpy2d", [&] { copy2d(dst, dpitch, src, spitch, width, height, npusim::acl::enumValue(kind), nullptr, true); });
}

aclError aclrtMemcpy2dAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                            aclrtMemcpyKind kind, aclrtStream stream) {
  return callAcl("aclrtMemcpy2dAsync", [&] { copy2d(dst, dpitch, src, spitch, width, height, npusim::acl::enumValue(kind), stream, false); });
}

aclError aclrtMemset(void* devPtr, size_t maxCount, int32_t value, size_t count) {
  return callAcl("aclrtMemset", [&] { memset(devPtr, maxCount, value, count, nullptr, true); });
}

aclError aclrtMemsetAsync(void* devPtr, size_t maxCount, int32_t value, size_t count, aclrtStream stream) {
  return callAcl("aclrtMemsetAsync", [&] { memset(devPtr, maxCount, value, count, stream, false); });
}

aclError aclrtGetMemInfo(aclrtMemAttr attr, size_t* free, size_t* total) {
  return callAcl("aclrtGetMemInfo", [&] {
    requireNotNull(free, "free");
    requireNotNull(total, "total");
    const int32_t raw = npusim::acl::enumValue(attr);
    if (raw < ACL_DDR_MEM || raw > ACL_HBM_MEM_P2P_HUGE1G) {
      throw AclFailure(ACL_ERROR_INVALID_PARAM, "unknown memory attribute " + std::to_string(raw));
    }
    const int device = npusim::acl::currentDeviceOrThrow();
    const bool hbm = raw == ACL_HBM_MEM || raw == ACL_HBM_MEM_HUGE || raw == ACL_HBM_MEM_NORMAL ||
                     raw == ACL_HBM_MEM_P2P_HUGE || raw == ACL_HBM_MEM_P2P_NORMAL || raw == ACL_HBM_MEM_HUGE1G ||
                     raw == ACL_HBM_MEM_P2P_HUGE1G;
    if (!hbm) {
      // A 910B card has no DDR of its own (its memory is HBM), as the real call reports.
      *free = 0;
      *total = 0;
      return;
    }
    npusim::runtime::DeviceMemory& memory = npusim::runtime::Runtime::instance().memory(device);
    *free = memory.freeBytes();
    *total = memory.capacity();
  });
}

}  // extern "C"
