// AscendCL streams and events on the simulated timeline: work is charged to stream clocks and
// events capture them, so elapsed times are the modelled chip's, independent of the host.
#include "acl/acl.h"
#include "acl/runtime/AclErrors.h"
#include "acl/runtime/AclHandles.h"
#include "acl/runtime/ModelCapture.h"
#include "runtime/Runtime.h"

namespace {

using npusim::acl::AclFailure;
using npusim::acl::callAcl;
using npusim::acl::requireNotNull;
using npusim::acl::ResolvedStream;

npusim::runtime::DeviceTimeline& timelineOf(int device) { return npusim::runtime::Runtime::instance().timeline(device); }

constexpr uint32_t kKnownStreamFlags = ACL_STREAM_FAST_LAUNCH | ACL_STREAM_FAST_SYNC | ACL_STREAM_PERSISTENT |
                                       ACL_STREAM_HUGE | ACL_STREAM_CPU_SCHEDULE | ACL_STREAM_DEVICE_USE_ONLY;
constexpr uint32_t kKnownEventFlags = ACL_EVENT_SYNC | ACL_EVENT_CAPTURE_STREAM_PROGRESS | ACL_EVENT_TIME_LINE |
                                      ACL_EVENT_DEVICE_USE_ONLY | ACL_EVENT_EXTERNAL;
constexpr uint32_t kLowestStreamPriority = 7;  // priorities are 0 (highest) to 7

void checkTimeout(int32_t timeout) {
  if (timeout != -1 && timeout <= 0) {
    throw AclFailure(ACL_ERROR_INVALID_PARAM,
                     "timeout must be -1 (wait forever) or a positive number of milliseconds, got " +
                         std::to_string(timeout));
  }
}

// Waits for `until` on the simulated clock unless that is more than `timeout` ms away; then the
// host waits the timeout and the call fails with `code`.
void waitWithTimeout(npusim::runtime::DeviceTimeline& timeline, uint64_t until, int32_t timeout, aclError code,
                     const char* what) {
  npusim::runtime::HostClock& host = timeline.hostClock();
  const uint64_t limit = timeout < 0 ? UINT64_MAX : host.now() + static_cast<uint64_t>(timeout) * 1'000'000;
  if (until > limit) {
    host.waitUntil(limit);
    throw AclFailure(code, std::string(what) + " did not complete within " + std::to_string(timeout) + " ms");
  }
  host.waitUntil(until);
}

}  // namespace

extern "C" {

aclError aclrtCreateStream(aclrtStream* stream) {
  return callAcl("aclrtCreateStream", [&] {
    requireNotNull(stream, "stream");
    *stream = npusim::acl::createStream(0, 0);
  });
}

aclError aclrtCreateStreamWithConfig(aclrtStream* stream, uint32_t priority, uint32_t flag) {
  return callAcl("aclrtCreateStreamWithConfig", [&] {
    requireNotNull(stream, "stream");
    if (priority > kLowestStreamPriority) {
      throw AclFailure(ACL_ERROR_INVALID_PARAM, "priority must be in [0, 7], got " + std::to_string(priority));
    }
    if ((flag & ~kKnownStreamFlags) != 0) {
      throw AclFailure(ACL_ERROR_INVALID_PARAM, "unknown stream flag bits " + std::to_string(flag & ~kKnownStreamFlags));
    }
    *stream = npusim::acl::createStream(priority, flag);
  });
}

aclError aclrtDestroyStream(aclrtStream stream) {
  return callAcl("aclrtDestroyStream", [&] { npusim::acl::destroyStream(stream, false); });
}

aclError aclrtDestroyStreamForce(aclrtStream stream) {
  return callAcl("aclrtDestroyStreamForce", [&] { npusim::acl::destroyStream(stream, true); });
}

aclError aclrtSynchronizeStream(aclrtStream stream) {
  return callAcl("aclrtSynchronizeStream", [&] {
    const ResolvedStream s = npusim::acl::resolveStream(stream);
    npusim::acl::requireNotCapturing(s, "aclrtSynchronizeStream");
    timelineOf(s.device).synchronizeStream(s.stream);
  });
}

aclError aclrtSynchronizeStreamWithTimeout(aclrtStream stream, int32_t timeout) {
  return callAcl("aclrtSynchronizeStreamWithTimeout", [&] {
    checkTimeout(timeout);
    const ResolvedStream s = npusim::acl::resolveStream(stream);
    npusim::acl::requireNotCapturing(s, "aclrtSynchronizeStreamWithTimeout");
    npusim::runtime::DeviceTimeline& timeline = timelineOf(s.device);
    waitWithTimeout(timeline, timeline.streamClock(s.stream), timeout, ACL_ERROR_RT_STREAM_SYNC_TIMEOUT,
                    "the stream's work");
  });
}

aclError aclrtStreamQuery(aclrtStream stream, aclrtStreamStatus* status) {
  return callAcl("aclrtStreamQuery", [&] {
    requireNotNull(status, "status");
    const ResolvedStream s = npusim::acl::resolveStream(stream);
    npusim::acl::requireNotCapturing(s, "aclrtStreamQuery");
    *status = timelineOf(s.device).queryStream(s.stream) ? ACL_STREAM_STATUS_COMPLETE : ACL_STREAM_STATUS_NOT_READY;
  });
}

aclError aclrtStreamGetPriority(aclrtStream stream, uint32_t* priority) {
  return callAcl("aclrtStreamGetPriority", [&] {
    requireNotNull(priority, "priority");
    const ResolvedStream s = npusim::acl::resolveStream(stream);
    *priority = s.created != nullptr ? s.created->priority : 0;
  });
}

aclError aclrtStreamGetId(aclrtStream stream, int32_t* streamId) {
  return callAcl("aclrtStreamGetId", [&] {
    requireNotNull(streamId, "streamId");
    *streamId = static_cast<int32_t>(npusim::acl::resolveStream(stream).stream);  // its timeline stream id
  });
}

aclError aclrtSetStreamFailureMode(aclrtStream stream, uint64_t mode) {
  return callAcl("aclrtSetStreamFailureMode", [&] {
    if (mode != ACL_CONTINUE_ON_FAILURE && mode != ACL_STOP_ON_FAILURE) {
      throw AclFailure(ACL_ERROR_INVALID_PARAM, "mode must be ACL_CONTINUE_ON_FAILURE or ACL_STOP_ON_FAILURE");
    }
    const ResolvedStream s = npusim::acl::resolveStream(stream);
    if (s.created == nullptr) throw AclFailure(ACL_ERROR_INVALID_PARAM, "the default stream's failure mode is fixed");
    s.created->failureMode = mode;  // simulated tasks never fail, so the mode changes nothing
  });
}

aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event) {
  return callAcl("aclrtStreamWaitEvent", [&] {
    npusim::acl::AclEvent& e = npusim::acl::resolveEvent(event);
    const ResolvedStream s = npusim::acl::resolveStream(stream);
    npusim::acl::refuseOnCapturingStream(s, "aclrtStreamWaitEvent");
    timelineOf(s.device).streamWaitEvent(s.stream, e.event);
  });
}

aclError aclrtCreateEvent(aclrtEvent* event) {
  return callAcl("aclrtCreateEvent", [&] {
    requireNotNull(event, "event");
    *event = npusim::acl::createEvent(0, true);
  });
}

aclError aclrtCreateEventWithFlag(aclrtEvent* event, uint32_t flag) {
  return callAcl("aclrtCreateEventWithFlag", [&] {
    requireNotNull(event, "event");
    if ((flag & ~kKnownEventFlags) != 0) {
      throw AclFailure(ACL_ERROR_INVALID_PARAM, "unknown event flag bits " + std::to_string(flag & ~kKnownEventFlags));
    }
    // Only an event created with ACL_EVENT_TIME_LINE carries a timestamp for aclrtEventElapsedTime.
    *event = npusim::acl::createEvent(flag, (flag & ACL_EVENT_TIME_LINE) != 0);
  });
}

aclError aclrtCreateEventExWithFlag(aclrtEvent* event, uint32_t flag) {
  return callAcl("aclrtCreateEventExWithFlag", [&] {
    requireNotNull(event, "event");
    if ((flag & ~kKnownEventFlags) != 0) {
      throw AclFailure(ACL_ERROR_INVALID_PARAM, "unknown event flag bits " + std::to_string(flag & ~kKnownEventFlags));
    }
    *event = npusim::acl::createEvent(flag, (flag & ACL_EVENT_TIME_LINE) != 0);
  });
}

aclError aclrtDestroyEvent(aclrtEvent event) {
  return callAcl("aclrtDestroyEvent", [&] { npusim::acl::destroyEvent(event); });
}

aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream) {
  return callAcl("aclrtRecordEvent", [&] {
    npusim::acl::AclEvent& e = npusim::acl::resolveEvent(event);
    const ResolvedStream s = npusim::acl::resolveStream(stream);
    npusim::acl::refuseOnCapturingStream(s, "aclrtRecordEvent");
    timelineOf(s.device).recordEvent(e.event, s.stream, e.event.timing);
    e.device = s.device;
  });
}

aclError aclrtResetEvent(aclrtEvent event, aclrtStream stream) {
  return callAcl("aclrtResetEvent", [&] {
    npusim::acl::AclEvent& e = npusim::acl::resolveEvent(event);
    npusim::acl::resolveStream(stream);  // the stream must be valid
    e.event.recorded = false;
  });
}

aclError aclrtQueryEvent(aclrtEvent event, aclrtEventStatus* status) {
  return callAcl("aclrtQueryEvent", [&] {
    requireNotNull(status, "status");
    npusim::acl::AclEvent& e = npusim::acl::resolveEvent(event);
    *status = timelineOf(e.device).queryEvent(e.event) ? ACL_EVENT_STATUS_COMPLETE : ACL_EVENT_STATUS_NOT_READY;
  });
}

aclError aclrtQueryEventStatus(aclrtEvent event, aclrtEventRecordedStatus* status) {
  return callAcl("aclrtQueryEventStatus", [&] {
    requireNotNull(status, "status");
    npusim::acl::AclEvent& e = npusim::acl::resolveEvent(event);
    *status = timelineOf(e.device).queryEvent(e.event) ? ACL_EVENT_RECORDED_STATUS_COMPLETE
                                                       : ACL_EVENT_RECORDED_STATUS_NOT_READY;
  });
}

aclError aclrtQueryEventWaitStatus(aclrtEvent event, aclrtEventWaitStatus* status) {
  return callAcl("aclrtQueryEventWaitStatus", [&] {
    requireNotNull(status, "status");
    npusim::acl::AclEvent& e = npusim::acl::resolveEvent(event);
    *status = timelineOf(e.device).queryEvent(e.event) ? ACL_EVENT_WAIT_STATUS_COMPLETE : ACL_EVENT_WAIT_STATUS_NOT_READY;
  });
}

aclError aclrtSynchronizeEvent(aclrtEvent event) {
  return callAcl("aclrtSynchronizeEvent", [&] {
    npusim::acl::AclEvent& e = npusim::acl::resolveEvent(event);
    timelineOf(e.device).synchronizeEvent(e.event);
  });
}

aclError aclrtSynchronizeEventWithTimeout(aclrtEvent event, int32_t timeout) {
  return callAcl("aclrtSynchronizeEventWithTimeout", [&] {
    checkTimeout(timeout);
    npusim::acl::AclEvent& e = npusim::acl::resolveEvent(event);
    if (!e.event.recorded) return;
    waitWithTimeout(timelineOf(e.device), e.event.time, timeout, ACL_ERROR_RT_EVENT_SYNC_TIMEOUT, "the event");
  });
}

aclError aclrtEventElapsedTime(float* ms, aclrtEvent startEvent, aclrtEvent endEvent) {
  return callAcl("aclrtEventElapsedTime", [&] {
    requireNotNull(ms, "ms");
    npusim::acl::AclEvent& start = npusim::acl::resolveEvent(startEvent);
    npusim::acl::AclEvent& end = npusim::acl::resolveEvent(endEvent);
    if (!start.event.timing || !end.event.timing) {
      throw AclFailure(ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID,
                       "both events must be made by aclrtCreateEvent, or with the ACL_EVENT_TIME_LINE flag");
    }
    if (!start.event.recorded || !end.event.recorded) {
      throw AclFailure(ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID, "both events must be recorded");
    }
    // Both must have completed (the real call fails for events still pending on the device).
    if (!timelineOf(start.device).queryEvent(start.event) || !timelineOf(end.device).queryEvent(end.event)) {
      throw AclFailure(ACL_ERROR_RT_EVENT_NOT_COMPLETE,
                       "both events must have completed: synchronize the end event first");
    }
    *ms = static_cast<float>(npusim::runtime::elapsedTimeMs(start.event, end.event));
  });
}

}  // extern "C"
