#include "acl/runtime/ModelCapture.h"

#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_set>
#include <vector>

#include "acl/acl.h"
#include "acl/runtime/AclErrors.h"
#include "acl/runtime/TimelineCharges.h"
#include "runtime/Plog.h"
#include "runtime/Runtime.h"

// A model runtime instance: the tasks of one capture, for the device they were captured on.
struct NpusimModelRI {
  int device = 0;
  std::vector<npusim::acl::CapturedTask> tasks;
};

namespace npusim::acl {
namespace {

struct Capture {
  std::unique_ptr<NpusimModelRI> model;
  int32_t mode = ACL_MODEL_RI_CAPTURE_MODE_GLOBAL;
  std::thread::id thread;
};

struct Captures {
  std::mutex mutex;
  std::map<std::pair<int, runtime::StreamId>, Capture> active;  // by device and timeline stream
  std::unordered_set<NpusimModelRI*> models;                     // ended captures, until destroyed
};

Captures& captures() {
  static auto* instance = new Captures();
  return *instance;
}

std::pair<int, runtime::StreamId> keyOf(const ResolvedStream& s) { return {s.device, s.stream}; }

}  // namespace

bool captureIfCapturing(const ResolvedStream& s, CapturedTask task) {
  Captures& c = captures();
  std::lock_guard<std::mutex> lock(c.mutex);
  auto it = c.active.find(keyOf(s));
  if (it == c.active.end()) return false;
  it->second.model->tasks.push_back(std::move(task));
  return true;
}

void requireNotCapturing(const ResolvedStream& s, const char* what) {
  Captures& c = captures();
  std::lock_guard<std::mutex> lock(c.mutex);
  if (c.active.count(keyOf(s)) != 0) {
    throw AclFailure(ACL_ERROR_RT_STREAM_CAPTURED, std::string(what) +
                                                       " on a capturing stream: its work is recorded, not run, until "
                                                       "aclmdlRICaptureEnd and aclmdlRIExecuteAsync");
  }
}

void refuseOnCapturingStream(const ResolvedStream& s, const char* what) {
  Captures& c = captures();
  std::lock_guard<std::mutex> lock(c.mutex);
  if (c.active.count(keyOf(s)) != 0) {
    throw AclFailure(ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT,
                     std::string(what) + " on a capturing stream: npusim captures copies, memsets and aclnn "
                                         "operators into a model runtime instance, not event or callback tasks");
  }
}

void requireUnsafeCallAllowed(const char* what) {
  Captures& c = captures();
  std::lock_guard<std::mutex> lock(c.mutex);
  for (const auto& [key, capture] : c.active) {
    const bool forbids = capture.mode == ACL_MODEL_RI_CAPTURE_MODE_GLOBAL ||
                         (capture.mode == ACL_MODEL_RI_CAPTURE_MODE_THREAD_LOCAL &&
                          capture.thread == std::this_thread::get_id());
    if (forbids) {
      throw AclFailure(ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT,
                       std::string(what) + " is not permitted while stream " + std::to_string(key.second) +
                           " of device " + std::to_string(key.first) + " is capturing in " +
                           (capture.mode == ACL_MODEL_RI_CAPTURE_MODE_GLOBAL ? "GLOBAL" : "THREAD_LOCAL") +
                           " mode (it would wait for, or read, work that has not run)");
    }
  }
}

void discardCapture(int device, runtime::StreamId stream) {
  Captures& c = captures();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.active.erase({device, stream});
}

void discardDeviceCaptures(int device) {
  Captures& c = captures();
  std::lock_guard<std::mutex> lock(c.mutex);
  for (auto it = c.active.begin(); it != c.active.end();) {
    it = it->first.first == device ? c.active.erase(it) : std::next(it);
  }
}

}  // namespace npusim::acl

namespace {

using npusim::acl::AclFailure;
using npusim::acl::callAcl;
using npusim::acl::Captures;
using npusim::acl::captures;
using npusim::acl::ResolvedStream;

NpusimModelRI& liveModel(Captures& c, aclmdlRI modelRI) {
  npusim::acl::requireNotNull(modelRI, "modelRI");
  auto* model = static_cast<NpusimModelRI*>(modelRI);
  if (c.models.count(model) == 0) {
    throw AclFailure(ACL_ERROR_RT_PARAM_INVALID, "modelRI is not a live model runtime instance");
  }
  return *model;
}

}  // namespace

extern "C" {

aclError aclmdlRICaptureBegin(aclrtStream stream, aclmdlRICaptureMode mode) {
  return callAcl("aclmdlRICaptureBegin", [&] {
    const int32_t raw = npusim::acl::enumValue(mode);
    if (raw < ACL_MODEL_RI_CAPTURE_MODE_GLOBAL || raw > ACL_MODEL_RI_CAPTURE_MODE_RELAXED) {
      throw AclFailure(ACL_ERROR_INVALID_PARAM, "unknown capture mode " + std::to_string(raw));
    }
    if (stream == nullptr) {
      throw AclFailure(ACL_ERROR_RT_PARAM_INVALID, "the default stream cannot be captured: capture a created stream");
    }
    const ResolvedStream s = npusim::acl::resolveStream(stream);
    Captures& c = captures();
    std::lock_guard<std::mutex> lock(c.mutex);
    npusim::acl::Capture capture;
    capture.model = std::make_unique<NpusimModelRI>();
    capture.model->device = s.device;
    capture.mode = raw;
    capture.thread = std::this_thread::get_id();
    if (!c.active.emplace(std::make_pair(s.device, s.stream), std::move(capture)).second) {
      throw AclFailure(ACL_ERROR_RT_STREAM_CAPTURED, "the stream is capturing already");
    }
  });
}

aclError aclmdlRICaptureGetInfo(aclrtStream stream, aclmdlRICaptureStatus* status, aclmdlRI* modelRI) {
  return callAcl("aclmdlRICaptureGetInfo", [&] {
    npusim::acl::requireNotNull(status, "status");
    npusim::acl::requireNotNull(modelRI, "modelRI");
    const ResolvedStream s = npusim::acl::resolveStream(stream);
    Captures& c = captures();
    std::lock_guard<std::mutex> lock(c.mutex);
    auto it = c.active.find({s.device, s.stream});
    *status = it == c.active.end() ? ACL_MODEL_RI_CAPTURE_STATUS_NONE : ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE;
    *modelRI = it == c.active.end() ? nullptr : it->second.model.get();
  });
}

aclError aclmdlRICaptureEnd(aclrtStream stream, aclmdlRI* modelRI) {
  return callAcl("aclmdlRICaptureEnd", [&] {
    npusim::acl::requireNotNull(modelRI, "modelRI");
    const ResolvedStream s = npusim::acl::resolveStream(stream);
    Captures& c = captures();
    std::lock_guard<std::mutex> lock(c.mutex);
    auto it = c.active.find({s.device, s.stream});
    if (it == c.active.end()) throw AclFailure(ACL_ERROR_RT_STREAM_NOT_CAPTURED, "the stream is not capturing");
    if (it->second.mode != ACL_MODEL_RI_CAPTURE_MODE_RELAXED && it->second.thread != std::this_thread::get_id()) {
      throw AclFailure(ACL_ERROR_RT_STREAM_CAPTURE_WRONG_THREAD,
                       "the capture was begun on another thread (only a RELAXED capture ends on any thread)");
    }
    NpusimModelRI* model = it->second.model.release();
    c.active.erase(it);
    c.models.insert(model);
    *modelRI = model;
    NPUSIM_PLOG(npusim::runtime::LogLevel::kInfo, "RUNTIME",
                "aclmdlRICaptureEnd: model runtime instance of " + std::to_string(model->tasks.size()) + " tasks");
  });
}

aclError aclmdlRIExecuteAsync(aclmdlRI modelRI, aclrtStream stream) {
  return callAcl("aclmdlRIExecuteAsync", [&] {
    const ResolvedStream s = npusim::acl::resolveStream(stream);
    npusim::acl::refuseOnCapturingStream(s, "aclmdlRIExecuteAsync");
    std::vector<npusim::acl::CapturedTask> tasks;
    {
      Captures& c = captures();
      std::lock_guard<std::mutex> lock(c.mutex);
      NpusimModelRI& model = liveModel(c, modelRI);
      if (model.device != s.device) {
        throw AclFailure(ACL_ERROR_RT_MODEL_CONTEXT, "the model was captured on device " + std::to_string(model.device) +
                                                         ", the stream is on device " + std::to_string(s.device));
      }
      tasks = model.tasks;
    }
    // One launch from the host; the tasks are launched by the device.
    npusim::acl::chargeModelLaunch(s.device, s.stream);
    for (const npusim::acl::CapturedTask& task : tasks) {
      std::string detail;
      aclError code = ACL_SUCCESS;
      try {
        code = task.run(s.device, s.stream, detail);
      } catch (const AclFailure& failure) {
        code = failure.code();
        detail = failure.what();
      }
      if (code != ACL_SUCCESS) {
        throw AclFailure(ACL_ERROR_RT_MODEL_EXECUTE, "the captured " + task.what + " failed (error " +
                                                         std::to_string(code) + "): " + detail);
      }
    }
  });
}

aclError aclmdlRIDestroy(aclmdlRI modelRI) {
  return callAcl("aclmdlRIDestroy", [&] {
    std::unique_ptr<NpusimModelRI> owned;
    {
      Captures& c = captures();
      std::lock_guard<std::mutex> lock(c.mutex);
      owned.reset(&liveModel(c, modelRI));
      c.models.erase(owned.get());
    }
    // Its work may still be queued: the device finishes it first, as on the chip.
    npusim::runtime::Runtime::instance().synchronizeDevice(owned->device);
  });
}

}  // extern "C"
