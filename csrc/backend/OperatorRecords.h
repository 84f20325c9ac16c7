// What npusim knows about each aten operator it has run: its name, how often
// it ran, and the facts the executor needs per call, computed once per
// operator so that a call does no string work.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/dispatch/Dispatcher.h>

namespace npusim::backend {

struct OperatorRecord {
  std::string name;                  // "aten::add.Tensor"
  std::atomic<uint64_t> calls{0};
  bool acceptsCpuTensors = false;    // indexing ops take CPU index tensors, as on CUDA
  std::vector<size_t> writtenArguments;  // indices of Tensor(a!) arguments
  std::vector<size_t> generatorArguments;  // indices of Generator? arguments
};

// The record of `op`, created on its first call.
OperatorRecord& operatorRecord(const c10::OperatorHandle& op);

// name -> calls, for every operator run since the last reset.
std::vector<std::pair<std::string, uint64_t>> operatorCounts();
void resetOperatorCounts();

}  // namespace npusim::backend
