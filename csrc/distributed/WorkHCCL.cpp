#include "distributed/WorkHCCL.h"

#include <future>
#include <memory>
#include <thread>

#include <ATen/core/jit_type.h>
#include <c10/util/Exception.h>

#include "backend/device/NpuErrors.h"
#include "backend/device/NpuStreams.h"
#include "distributed/CommunicationTiming.h"
#include "distributed/DeferredRelease.h"
#include "runtime/Runtime.h"

namespace npusim::distributed {
namespace {

bool mentionsTimeout(const std::string& text) {
  return text.find("timed out") != std::string::npos || text.find("Timed out") != std::string::npos ||
         text.find("Timeout") != std::string::npos;
}

std::string messageOf(std::exception_ptr error) {
  if (!error) return "no completion within the timeout";
  try {
    std::rethrow_exception(error);
  } catch (const c10::Error& e) {
    return e.what_without_backtrace();
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown error";
  }
}

}  // namespace

WorkHCCL::WorkHCCL(Description description, runtime::Event done, std::vector<c10::intrusive_ptr<c10d::Work>> inner,
                   std::vector<at::Tensor> outputs, std::function<void()> finish)
    : c10d::Work(description.rank, description.opType),
      description_(description),
      done_(done),
      inner_(std::move(inner)),
      outputs_(std::move(outputs)),
      finish_(std::move(finish)),
      started_(std::chrono::steady_clock::now()) {
  const c10::Device device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(description_.device));
  future_ = c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()),
                                                    std::vector<c10::Device>{device});
  // The completion chain holds no reference to this Work (a user may drop it).
  // It runs on a Gloo thread; what it held goes to releaseLater (DeferredRelease.h).
  auto complete = [future = future_, outputs = outputs_, finish = finish_, deviceIndex = description_.device,
                   stream = description_.hcclStream](c10::ivalue::Future& all) mutable {
    if (all.hasError()) {
      future->setError(all.exception_ptr());
    } else {
      try {
        if (finish) finish();
        // The Future's completion event belongs on the HCCL stream.
        const runtime::StreamId previous = backend::currentStream(deviceIndex);
        backend::setCurrentStream(deviceIndex, stream);
        future->markCompleted(c10::IValue(outputs));
        backend::setCurrentStream(deviceIndex, previous);
      } catch (...) {
        if (!future->completed()) future->setError(std::current_exception());
      }
    }
    releaseLater(std::move(outputs));
    releaseLater(std::move(finish));
    releaseLater(std::move(future));
  };
  c10::List<c10::intrusive_ptr<c10::ivalue::Future>> futures(c10::FutureType::create(c10::AnyType::get()));
  bool everyWorkHasFuture = true;
  for (const auto& work : inner_) {
    try {
      futures.push_back(work->getFuture());
    } catch (const c10::Error&) {
      everyWorkHasFuture = false;  // some Gloo works (reduce_scatter of a list) have none
      break;
    }
  }
  if (inner_.empty()) {
    auto none = c10::make_intrusive<c10::ivalue::Future>(c10::NoneType::get());
    none->markCompleted(c10::IValue());
    complete(*none);
  } else if (everyWorkHasFuture) {
    c10::collectAll(futures)->addCallback(std::move(complete));
  } else {
    // Without futures to chain on, a helper thread waits for the works so
    // that the Future still completes by itself.
    std::thread([inner = inner_, complete = std::move(complete)]() mutable {
      auto status = c10::make_intrusive<c10::ivalue::Future>(c10::NoneType::get());
      try {
        for (auto& work : inner) work->wait();
        status->markCompleted(c10::IValue());
      } catch (...) {
        status->setError(std::current_exception());
      }
      complete(*status);
    }).detach();
  }
}

bool WorkHCCL::isCompleted() { return future_->completed(); }

bool WorkHCCL::isSuccess() const { return future_->completed() && !future_->hasError(); }

std::exception_ptr WorkHCCL::exception() const {
  return future_->completed() && future_->hasError() ? future_->exception_ptr() : nullptr;
}

std::vector<at::Tensor> WorkHCCL::result() { return outputs_; }

int WorkHCCL::sourceRank() const {
  // recvAnysource: the sender is known to Gloo's work once it completed.
  TORCH_CHECK(inner_.size() == 1, "sourceRank() may only be called on a recv Work",
              backend::errorSuffix(backend::ErrorModule::kDist, backend::ErrorKind::kInvalidParameter));
  return inner_.front()->sourceRank();
}

std::string WorkHCCL::describe() const {
  return c10::str("WorkHCCL(SeqNum=", description_.sequence, ", OpType=", c10d::opTypeToString(description_.opType),
                  ", Timeout(ms)=", description_.timeout.count(), ")");
}

void WorkHCCL::throwAsHcclError(std::exception_ptr error, bool timedOut, std::chrono::milliseconds waited) const {
  const std::string cause = messageOf(error);
  if (timedOut || mentionsTimeout(cause)) {
    C10_THROW_ERROR(DistBackendError,
                    c10::str("[Rank ", description_.rank, "] Watchdog caught collective operation timeout: ",
                             describe(), " ran for ", waited.count(),
                             " milliseconds before timing out (HCCL_EXEC_TIMEOUT). A peer rank did not take part "
                             "in the collective: it exited, hung, or issued a different collective. (Gloo: ",
                             cause, ")",
                             backend::errorSuffix(backend::ErrorModule::kDist, backend::ErrorKind::kTimeout)));
  }
  C10_THROW_ERROR(DistBackendError,
                  c10::str("[Rank ", description_.rank, "] HCCL function error: ", describe(),
                           " failed, error code is 9.\nHCCL_E_REMOTE: A call failed possibly due to a network error "
                           "or a remote process exiting prematurely. (Gloo: ",
                           cause, ")",
                           backend::errorSuffix(backend::ErrorModule::kDist, backend::ErrorKind::kHcclCallFailed)));
}

void WorkHCCL::waitForData(std::chrono::milliseconds timeout) {
  // Waits on this Work's Future only: a Gloo send/recv buffer's completion can
  // be waited for once, and the completion chain already waits for it.
  const std::chrono::milliseconds limit = timeout == kNoTimeout ? description_.timeout : timeout;
  auto signal = std::make_shared<std::promise<void>>();
  std::future<void> completed = signal->get_future();
  future_->addCallback([signal](c10::ivalue::Future&) { signal->set_value(); });
  if (limit.count() > 0 && completed.wait_for(limit) == std::future_status::timeout) {
    throwAsHcclError(nullptr, true, limit);
  }
  completed.wait();
  if (future_->hasError()) {
    throwAsHcclError(future_->exception_ptr(), false,
                     std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started_));
  }
}

bool WorkHCCL::wait(std::chrono::milliseconds timeout) {
  waitForData(timeout);
  synchronize();
  if (description_.blockingWait) {
    NPUSIM_TRANSLATE_ERRORS(runtime::Runtime::instance().timeline(description_.device).synchronizeEvent(done_));
  }
  return true;
}

void WorkHCCL::synchronize() {
  NPUSIM_TRANSLATE_ERRORS(waitOnCurrentStream(description_.device, done_));
}

void WorkHCCL::blockCurrentStream() { synchronize(); }

c10::intrusive_ptr<c10::ivalue::Future> WorkHCCL::getFuture() { return future_; }

}  // namespace npusim::distributed
