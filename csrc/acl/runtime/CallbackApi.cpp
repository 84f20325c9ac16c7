// AscendCL host callbacks: aclrtLaunchCallback queues a host function on a stream; the thread
// subscribed to that stream (aclrtSubscribeReport) runs it from aclrtProcessReport.
//
// Simulated work runs when it is queued, so a callback is ready as soon as it is launched. A
// blocking callback (ACL_CALLBACK_BLOCK) holds back the stream's later work on the chip; here
// later work runs at once on the launching thread, so aclrtLaunchCallback itself waits until
// the subscribed thread has run the callback, keeping its effects ordered before the stream's
// next task. When the launching thread is the subscribed one it cannot wait for itself: the
// callback then runs at its next aclrtProcessReport, as on the chip.
#include <condition_variable>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <mutex>

#include <pthread.h>

#include "acl/acl.h"
#include "acl/runtime/AclErrors.h"
#include "acl/runtime/AclHandles.h"
#include "acl/runtime/ModelCapture.h"
#include "acl/runtime/TimelineCharges.h"

namespace {

using npusim::acl::AclFailure;
using npusim::acl::callAcl;

struct StreamKey {
  int device;
  npusim::runtime::StreamId stream;
  bool operator<(const StreamKey& other) const {
    return device != other.device ? device < other.device : stream < other.stream;
  }
};

struct PendingCallback {
  aclrtCallback fn = nullptr;
  void* userData = nullptr;
  uint64_t thread = 0;
  bool done = false;
};

struct CallbackQueue {
  std::mutex mutex;
  std::condition_variable changed;
  std::map<StreamKey, uint64_t> subscribers;  // stream -> subscribed thread id
  std::deque<std::shared_ptr<PendingCallback>> pending;
};

CallbackQueue& queue() {
  static CallbackQueue* instance = new CallbackQueue();
  return *instance;
}

uint64_t selfThread() { return static_cast<uint64_t>(pthread_self()); }

StreamKey keyOf(aclrtStream stream) {
  const npusim::acl::ResolvedStream s = npusim::acl::resolveStream(stream);
  return {s.device, s.stream};
}

}  // namespace

extern "C" {

aclError aclrtSubscribeReport(uint64_t threadId, aclrtStream stream) {
  return callAcl("aclrtSubscribeReport", [&] {
    npusim::acl::refuseOnCapturingStream(npusim::acl::resolveStream(stream), "aclrtLaunchCallback");
    const StreamKey key = keyOf(stream);
    CallbackQueue& q = queue();
    std::lock_guard<std::mutex> lock(q.mutex);
    if (q.subscribers.count(key) != 0) {
      throw AclFailure(ACL_ERROR_REPEAT_SUBSCRIBE, "the stream is already subscribed by a thread");
    }
    q.subscribers.emplace(key, threadId);
  });
}

aclError aclrtUnSubscribeReport(uint64_t threadId, aclrtStream stream) {
  return callAcl("aclrtUnSubscribeReport", [&] {
    const StreamKey key = keyOf(stream);
    CallbackQueue& q = queue();
    std::lock_guard<std::mutex> lock(q.mutex);
    auto it = q.subscribers.find(key);
    if (it == q.subscribers.end() || it->second != threadId) {
      throw AclFailure(ACL_ERROR_STREAM_NOT_SUBSCRIBE, "the stream is not subscribed by this thread");
    }
    q.subscribers.erase(it);
  });
}

aclError aclrtLaunchCallback(aclrtCallback fn, void* userData, aclrtCallbackBlockType blockType, aclrtStream stream) {
  return callAcl("aclrtLaunchCallback", [&] {
    npusim::acl::requireNotNull(reinterpret_cast<const void*>(fn), "fn");
    const int32_t block = npusim::acl::enumValue(blockType);
    if (block != ACL_CALLBACK_NO_BLOCK && block != ACL_CALLBACK_BLOCK) {
      throw AclFailure(ACL_ERROR_INVALID_PARAM, "blockType must be ACL_CALLBACK_NO_BLOCK or ACL_CALLBACK_BLOCK");
    }
    const StreamKey key = keyOf(stream);
    CallbackQueue& q = queue();
    std::unique_lock<std::mutex> lock(q.mutex);
    auto subscriber = q.subscribers.find(key);
    if (subscriber == q.subscribers.end()) {
      throw AclFailure(ACL_ERROR_STREAM_NOT_SUBSCRIBE,
                       "no thread is subscribed to the stream: call aclrtSubscribeReport first");
    }
    auto callback = std::make_shared<PendingCallback>();
    callback->fn = fn;
    callback->userData = userData;
    callback->thread = subscriber->second;
    q.pending.push_back(callback);
    q.changed.notify_all();
    npusim::acl::chargeHostTask();
    if (block == ACL_CALLBACK_BLOCK && callback->thread != selfThread()) {
      q.changed.wait(lock, [&] { return callback->done; });
    }
  });
}

aclError aclrtProcessReport(int32_t timeout) {
  return callAcl("aclrtProcessReport", [&] {
    if (timeout != -1 && timeout <= 0) {
      throw AclFailure(ACL_ERROR_INVALID_PARAM, "timeout must be -1 or a positive number of milliseconds");
    }
    const uint64_t self = selfThread();
    CallbackQueue& q = queue();
    std::unique_lock<std::mutex> lock(q.mutex);
    bool subscribed = false;
    for (const auto& [key, thread] : q.subscribers) subscribed = subscribed || thread == self;
    if (!subscribed) {
      throw AclFailure(ACL_ERROR_THREAD_NOT_SUBSCRIBE, "the calling thread is not subscribed to any stream");
    }
    std::shared_ptr<PendingCallback> mine;
    auto findMine = [&] {
      for (auto it = q.pending.begin(); it != q.pending.end(); ++it) {
        if ((*it)->thread == self) {
          mine = *it;
          q.pending.erase(it);
          return true;
        }
      }
      return false;
    };
    if (timeout < 0) {
      q.changed.wait(lock, findMine);
    } else if (!q.changed.wait_for(lock, std::chrono::milliseconds(timeout), findMine)) {
      throw AclFailure(ACL_ERROR_WAIT_CALLBACK_TIMEOUT, "no callback arrived within " + std::to_string(timeout) + " ms");
    }
    lock.unlock();
    mine->fn(mine->userData);
    lock.lock();
    mine->done = true;
    q.changed.notify_all();
  });
}

}  // extern "C"
