// AscendCL process-level calls: aclInit / aclFinalize, versions, the last error and its text,
// application logging, data types, float16 conversions and data buffers.
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>

#include "acl/acl.h"
#include "acl/runtime/AclErrors.h"
#include "acl/runtime/AclHandles.h"
#include "runtime/Plog.h"
#include "runtime/Runtime.h"

#ifndef NPUSIM_CANN_VERSION
#error "NPUSIM_CANN_VERSION (the simulated CANN version, from simulated_stack.ini) must be defined"
#endif

namespace {

using npusim::acl::AclFailure;
using npusim::acl::callAcl;

enum class InitState { kNever, kInitialized, kFinalized };
std::mutex initMutex;
InitState initState = InitState::kNever;

// aclInit's configuration file: JSON. npusim uses none of its settings, but a file that does not
// exist or is not a JSON object is refused as by the real stack.
void checkConfigFile(const char* path) {
  if (path == nullptr || *path == '\0') return;
  std::ifstream file(path);
  if (!file) throw AclFailure(ACL_ERROR_INVALID_FILE, std::string("cannot read the configuration file ") + path);
  std::stringstream text;
  text << file.rdbuf();
  std::string content = text.str();
  const auto first = content.find_first_not_of(" \t\r\n");
  const auto last = content.find_last_not_of(" \t\r\n");
  if (first == std::string::npos) return;  // an empty file configures nothing
  if (content[first] != '{' || content[last] != '}') {
    throw AclFailure(ACL_ERROR_PARSE_FILE, std::string("the configuration file ") + path + " is not a JSON object");
  }
}

// "9.1.0" -> {"9", "1", "0", ""}; "8.3.RC1" -> {"8", "3", "RC1", ""}.
void splitVersion(const std::string& text, aclCANNPackageVersion* version) {
  std::memset(version, 0, sizeof *version);
  std::snprintf(version->version, sizeof version->version, "%s", text.c_str());
  char* parts[] = {version->majorVersion, version->minorVersion, version->releaseVersion, version->patchVersion};
  size_t start = 0;
  for (char* part : parts) {
    if (start > text.size()) break;
    const size_t dot = text.find('.', start);
    const std::string piece = text.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    std::snprintf(part, ACL_PKG_VERSION_PARTS_MAX_SIZE, "%s", piece.c_str());
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
}

uint32_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

float bitsFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

}  // namespace

extern "C" {

aclError aclInit(const char* configPath) {
  return callAcl("aclInit", [&] {
    std::lock_guard<std::mutex> lock(initMutex);
    if (initState == InitState::kInitialized) throw AclFailure(ACL_ERROR_REPEAT_INITIALIZE, "acl is already initialized");
    checkConfigFile(configPath);
    npusim::runtime::Runtime::instance();  // reads the environment; a malformed variable fails here
    initState = InitState::kInitialized;
    NPUSIM_PLOG(npusim::runtime::LogLevel::kInfo, "ASCENDCL", "aclInit success");
  });
}

aclError aclFinalize(void) {
  return callAcl("aclFinalize", [&] {
    std::lock_guard<std::mutex> lock(initMutex);
    if (initState == InitState::kFinalized) throw AclFailure(ACL_ERROR_REPEAT_FINALIZE, "acl is already finalized");
    if (initState == InitState::kNever) throw AclFailure(ACL_ERROR_UNINITIALIZE, "aclInit has not been called");
    npusim::acl::resetAllDevices();
    initState = InitState::kFinalized;
    NPUSIM_PLOG(npusim::runtime::LogLevel::kInfo, "ASCENDCL", "aclFinalize success");
  });
}

aclError aclFinalizeReference(uint64_t* refCount) {
  return callAcl("aclFinalizeReference", [&] {
    if (refCount != nullptr) *refCount = 0;  // one reference: this finalize is the last
    if (aclError code = aclFinalize(); code != ACL_SUCCESS) throw AclFailure(code, "aclFinalize failed");
  });
}

const char* aclGetRecentErrMsg(void) { return npusim::acl::takeRecentErrorMessage(); }

aclError aclrtPeekAtLastError(aclrtLastErrLevel level) {
  return npusim::acl::enumValue(level) == ACL_RT_THREAD_LEVEL ? npusim::acl::lastError(false) : ACL_ERROR_INVALID_PARAM;
}

aclError aclrtGetLastError(aclrtLastErrLevel level) {
  return npusim::acl::enumValue(level) == ACL_RT_THREAD_LEVEL ? npusim::acl::lastError(true) : ACL_ERROR_INVALID_PARAM;
}

aclError aclrtGetVersion(int32_t* majorVersion, int32_t* minorVersion, int32_t* patchVersion) {
  return callAcl("aclrtGetVersion", [&] {
    npusim::acl::requireNotNull(majorVersion, "majorVersion");
    npusim::acl::requireNotNull(minorVersion, "minorVersion");
    npusim::acl::requireNotNull(patchVersion, "patchVersion");
    *majorVersion = ACL_MAJOR_VERSION;
    *minorVersion = ACL_MINOR_VERSION;
    *patchVersion = ACL_PATCH_VERSION;
  });
}

aclError aclsysGetCANNVersion(aclCANNPackageName name, aclCANNPackageVersion* version) {
  return callAcl("aclsysGetCANNVersion", [&] {
    npusim::acl::requireNotNull(version, "version");
    const int32_t package = npusim::acl::enumValue(name);
    if (package < ACL_PKG_NAME_CANN || package > ACL_PKG_NAME_DRIVER) {
      throw AclFailure(ACL_ERROR_INVALID_PARAM, "unknown package name " + std::to_string(package));
    }
    // Every CANN package of the simulated stack has its version; the driver has its own.
    splitVersion(package == ACL_PKG_NAME_DRIVER ? NPUSIM_DRIVER_VERSION : NPUSIM_CANN_VERSION, version);
  });
}

void aclAppLog(aclLogLevel logLevel, const char* func, const char* file, uint32_t line, const char* fmt, ...) {
  using npusim::runtime::LogLevel;
  const int32_t raw = npusim::acl::enumValue(logLevel);
  const LogLevel level = raw == ACL_DEBUG     ? LogLevel::kDebug
                         : raw == ACL_INFO    ? LogLevel::kInfo
                         : raw == ACL_WARNING ? LogLevel::kWarning
                                              : LogLevel::kError;
  npusim::runtime::Plog& plog = npusim::runtime::Plog::instance();
  if (fmt == nullptr || !plog.enabled(level)) return;
  char message[1024];
  va_list arguments;
  va_start(arguments, fmt);
  std::vsnprintf(message, sizeof message, fmt, arguments);
  va_end(arguments);
  const std::string text = std::string(func != nullptr ? func : "") + ": " + message;
  plog.write(level, "APP", npusim::runtime::detail::plogBasename(file != nullptr ? file : ""),
             static_cast<int>(line), text);
}

size_t aclDataTypeSize(aclDataType dataType) {
  switch (npusim::acl::enumValue(dataType)) {
    case ACL_BOOL:
    case ACL_INT8:
    case ACL_UINT8:
    case ACL_HIFLOAT8:
    case ACL_FLOAT8_E5M2:
    case ACL_FLOAT8_E4M3FN:
    case ACL_FLOAT8_E8M0: return 1;
    case ACL_FLOAT16:
    case ACL_BF16:
    case ACL_INT16:
    case ACL_UINT16: return 2;
    case ACL_FLOAT:
    case ACL_INT32:
    case ACL_UINT32:
    case ACL_COMPLEX32: return 4;
    case ACL_INT64:
    case ACL_UINT64:
    case ACL_DOUBLE:
    case ACL_COMPLEX64: return 8;
    case ACL_COMPLEX128: return 16;
    default: return 0;  // undefined, strings and sub-byte types have no element size
  }
}

float aclFloat16ToFloat(aclFloat16 value) {
  const uint32_t sign = (value & 0x8000u) << 16;
  const uint32_t exponent = (value >> 10) & 0x1fu;
  const uint32_t mantissa = value & 0x3ffu;
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24.
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign != 0 ? -magnitude : magnitude;
  }
  if (exponent == 0x1f) return bitsFloat(sign | 0x7f800000u | (mantissa << 13));  // inf / nan
  return bitsFloat(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

aclFloat16 aclFloatToFloat16(float value) {
  const uint32_t bits = floatBits(value);
  const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude >= 0x7f800000u) {  // inf or nan (nan keeps a quiet payload)
    return static_cast<aclFloat16>(sign | 0x7c00u | (magnitude > 0x7f800000u ? 0x200u : 0u));
  }
  if (magnitude >= 0x477ff000u) return static_cast<aclFloat16>(sign | 0x7c00u);  // rounds to inf
  if (magnitude < 0x38800000u) {
    // Subnormal half (or zero): round magnitude * 2^24 to the nearest even integer.
    const float scaled = std::ldexp(bitsFloat(magnitude), 24);
    return static_cast<aclFloat16>(sign | static_cast<uint16_t>(std::nearbyint(scaled)));
  }
  // Normal: rebias the exponent and round the mantissa to nearest even.
  const uint32_t rebased = magnitude - (112u << 23);
  const uint32_t roundBit = 0x1000u;
  const uint32_t rounded = rebased + (roundBit - 1) + ((rebased >> 13) & 1u);
  return static_cast<aclFloat16>(sign | (rounded >> 13));
}

struct aclDataBuffer {
  void* data;
  size_t size;
};

aclDataBuffer* aclCreateDataBuffer(void* data, size_t size) {
  return new (std::nothrow) aclDataBuffer{data, size};
}

aclError aclDestroyDataBuffer(const aclDataBuffer* dataBuffer) {
  return callAcl("aclDestroyDataBuffer", [&] {
    npusim::acl::requireNotNull(dataBuffer, "dataBuffer");
    delete dataBuffer;
  });
}

aclError aclUpdateDataBuffer(aclDataBuffer* dataBuffer, void* data, size_t size) {
  return callAcl("aclUpdateDataBuffer", [&] {
    npusim::acl::requireNotNull(dataBuffer, "dataBuffer");
    dataBuffer->data = data;
    dataBuffer->size = size;
  });
}

void* aclGetDataBufferAddr(const aclDataBuffer* dataBuffer) { return dataBuffer == nullptr ? nullptr : dataBuffer->data; }

uint32_t aclGetDataBufferSize(const aclDataBuffer* dataBuffer) {
  return dataBuffer == nullptr ? 0 : static_cast<uint32_t>(dataBuffer->size);
}

size_t aclGetDataBufferSizeV2(const aclDataBuffer* dataBuffer) { return dataBuffer == nullptr ? 0 : dataBuffer->size; }

}  // extern "C"
