// The Work of the hccl process group: Gloo moves the data (on CPU aliases of
// the npu buffers), the simulated HCCL stream carries the time.
//
// The Work completes when Gloo's works do and any post-processing is done
// (dividing for ReduceOp.AVG, unpacking an uneven all-gather); its Future
// then holds the npu outputs, as torch_npu's Work does, so DDP's comm hooks
// work unchanged. wait() makes the current stream wait for the collective's
// end on the HCCL stream (and, with TORCH_HCCL_BLOCKING_WAIT=1, the host too).
// Gloo failures and timeouts reach the user as torch_npu-style
// DistBackendErrors that name the operation.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include <ATen/core/ivalue.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include "runtime/Timeline.h"

namespace npusim::distributed {

class WorkHCCL : public c10d::Work {
 public:
  struct Description {
    int rank = 0;
    int device = 0;
    runtime::StreamId hcclStream = 0;
    c10d::OpType opType = c10d::OpType::UNKNOWN;
    uint64_t sequence = 0;
    std::chrono::milliseconds timeout{0};
    bool blockingWait = false;
  };

  // `inner`: the works to wait for (Gloo's, or other WorkHCCLs when
  // coalescing); `finish` runs once after they complete, on the completing
  // thread; `outputs` are the npu tensors the Work yields.
  WorkHCCL(Description description, runtime::Event done, std::vector<c10::intrusive_ptr<c10d::Work>> inner,
           std::vector<at::Tensor> outputs, std::function<void()> finish = {});

  bool isCompleted() override;
  bool isSuccess() const override;
  int sourceRank() const override;
  std::exception_ptr exception() const override;
  std::vector<at::Tensor> result() override;
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  void synchronize() override;
  void blockCurrentStream() override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;

  const runtime::Event& doneEvent() const noexcept { return done_; }
  // Blocks until the data has moved and any post-processing is done, without
  // touching the simulated streams: npusim executes device work when it is
  // issued, so code that orders on streams and events alone (FSDP) must find
  // the data in place. Raises the HCCL-style error of a failure or timeout.
  void waitForData(std::chrono::milliseconds timeout = kNoTimeout);
  std::string describe() const;

 private:
  [[noreturn]] void throwAsHcclError(std::exception_ptr error, bool timedOut, std::chrono::milliseconds waited) const;

  Description description_;
  runtime::Event done_;
  std::vector<c10::intrusive_ptr<c10d::Work>> inner_;
  std::vector<at::Tensor> outputs_;
  std::function<void()> finish_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::chrono::steady_clock::time_point started_;
};

}  // namespace npusim::distributed
