// npusim._C entry points of private memory pools (torch.npu.MemPool,
// use_mem_pool, graph pools), named as torch_npu's _C names them after
// torch._C's _cuda_* functions. Pool ids are (int, int) tuples.
#include <thread>

#include <torch/csrc/Exceptions.h>
#include <torch/csrc/utils/pybind.h>

#include "backend/device/NpuErrors.h"
#include "runtime/CachingAllocator.h"
#include "runtime/Runtime.h"

namespace py = pybind11;

namespace npusim::backend {
namespace {

runtime::CachingAllocator& allocatorOf(int device) { return runtime::Runtime::instance().allocator(device); }

}  // namespace

void registerMemPoolBindings(py::module& m) {
  m.def("_npu_mempool_new_id", [](bool userCreated) { return runtime::newMempoolId(userCreated); },
        py::arg("is_user_created") = true);
  m.def("_npu_createOrIncrefPool", torch::wrap_pybind_function([](int device, runtime::MempoolId id, bool noSplit,
                                                                  bool useOnOom) {
          NPUSIM_TRANSLATE_ERRORS(allocatorOf(device).createOrIncrefPool(id, runtime::PoolOptions{noSplit, useOnOom}));
        }));
  // use_mem_pool: only the calling thread's allocations go to the pool.
  m.def("_npu_beginAllocateCurrentThreadToPool", torch::wrap_pybind_function([](int device, runtime::MempoolId id) {
          const std::thread::id owner = std::this_thread::get_id();
          NPUSIM_TRANSLATE_ERRORS(allocatorOf(device).beginAllocateToPool(
              id, [owner](runtime::StreamId) { return std::this_thread::get_id() == owner; }));
        }));
  // Graph capture: every allocation on the capturing stream, from any thread.
  m.def("_npu_beginAllocateStreamToPool", torch::wrap_pybind_function([](int device, runtime::MempoolId id,
                                                                        int64_t stream) {
          NPUSIM_TRANSLATE_ERRORS(allocatorOf(device).beginAllocateToPool(
              id, [stream](runtime::StreamId requested) { return requested == stream; }));
        }));
  m.def("_npu_endAllocateToPool", torch::wrap_pybind_function([](int device, runtime::MempoolId id) {
          NPUSIM_TRANSLATE_ERRORS(allocatorOf(device).endAllocateToPool(id));
        }));
  m.def("_npu_releasePool", torch::wrap_pybind_function([](int device, runtime::MempoolId id) {
          NPUSIM_TRANSLATE_ERRORS(allocatorOf(device).releasePool(id));
        }));
  m.def("_npu_getPoolUseCount", torch::wrap_pybind_function([](int device, runtime::MempoolId id) {
          int count = 0;
          NPUSIM_TRANSLATE_ERRORS(count = allocatorOf(device).poolUseCount(id));
          return count;
        }));
  m.def("_npu_emptyCachePool", torch::wrap_pybind_function([](int device, runtime::MempoolId id) {
          NPUSIM_TRANSLATE_ERRORS(allocatorOf(device).emptyCache(id));
        }));
}

}  // namespace npusim::backend
