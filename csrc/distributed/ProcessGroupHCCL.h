// The hccl process group of npusim: a c10d::Backend for npu tensors that runs
// every operation of torch_npu's ProcessGroupHCCL through PyTorch's own Gloo
// backend on zero-copy CPU aliases of the device buffers, and charges the
// modelled HCCL time to an HCCL stream of the simulated timeline.
//
// Gloo's TCP transport is what connects the ranks, so a job spans processes
// on one host or several (MASTER_ADDR / a rank table). The Gloo backend is
// created by the Python face (PyTorch ships no Gloo headers to build against)
// and handed in; this class checks the arguments as torch_npu does, maps
// ReduceOps (AVG = SUM then divide, bool SUM = MAX), implements what Gloo
// lacks (uneven all-gather, coalescing) and wraps each result in a WorkHCCL.
#pragma once


#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/Backend.hpp>

#include "distributed/CommunicationTiming.h"
#include "distributed/WorkHCCL.h"

namespace npusim::distributed {

class ProcessGroupHCCL : public c10d::Backend {
 public:
  struct Config {
    std::chrono::milliseconds execTimeout{1836 * 1000};  // HCCL_EXEC_TIMEOUT
    bool blockingWait = false;                           // TORCH_HCCL_BLOCKING_WAIT
    int ranksPerServer = 8;                              // LOCAL_WORLD_SIZE or the rank table
    bool server910A = false;                             // two 4-NPU meshes over PCIe
    uint64_t bufferBytes = 200ull << 20;                 // HCCL_BUFFSIZE
  };

  ProcessGroupHCCL(c10::intrusive_ptr<c10d::Backend> gloo, int rank, int size, Config config);
  ~ProcessGroupHCCL() override;

  const std::string getBackendName() const override { return "hccl"; }
  bool supportsCoalescing() const override { return true; }
  void startCoalescing() override;
  c10::intrusive_ptr<c10d::Work> endCoalescing() override;
  void setTimeout(std::chrono::milliseconds timeout) override;

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts = {}) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts = {}) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                     const c10d::AllreduceCoalescedOptions& opts = {}) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts = {}) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts = {}) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts = {}) override;
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::AllgatherOptions& opts = {}) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts = {}) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts = {}) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts = {}) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                      const c10d::ReduceScatterOptions& opts = {}) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::ReduceScatterOptions& opts = {}) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& outputSplitSizes,
                                               std::vector<int64_t>& inputSplitSizes,
                                               const c10d::AllToAllOptions& opts = {}) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts = {}) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dstRank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int srcRank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts = {}) override;

  void abort() override;
  void shutdown() override;

  // torch_npu's recovery (restart_device, stop_device) sets its watchdog
  // thread's status (1 run, 2 stop) and clears the watchdog's list of
  // in-flight work records. npusim has neither: a work checks its own timeout
  // when waited on, and a stopped device already fails its collectives
  // (placementFor), so both calls have nothing to change.
  void setWatchdogStatus(int /*status*/) noexcept {}
  void clearWorkMetaList() noexcept {}

  const Config& config() const noexcept { return config_; }
  c10::intrusive_ptr<c10d::Backend> glooBackend() const { return gloo_; }

 private:
  // The device of this rank's tensors; fixes the HCCL stream on first use.
  CommunicationPlacement placementFor(int device);
  c10::intrusive_ptr<c10d::Work> finish(c10d::OpType type, int device, const runtime::Event& done,
                                        std::vector<c10::intrusive_ptr<c10d::Work>> inner,
                                        std::vector<at::Tensor> outputs, std::function<void()> post = {});
  void checkUsable() const;

  c10::intrusive_ptr<c10d::Backend> gloo_;
  Config config_;
  std::mutex mutex_;
  std::optional<CommunicationPlacement> placement_;
  uint64_t sequence_ = 0;
  bool coalescing_ = false;
  std::vector<c10::intrusive_ptr<c10d::Work>> coalesced_;
  bool aborted_ = false;
};

}  // namespace npusim::distributed
