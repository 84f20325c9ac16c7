// The prices of what a compiled npu graph launches, for the Python side of
// npusim.compile (loaded with ctypes: plain C entry points, no ATen here).
//
// A kernel Inductor generated runs on the host outside the dispatcher, so
// nothing else charges it: each call is one fused Vector kernel whose HBM
// traffic is its operands read once and its results written once (not the sum
// of the eager operators it replaces). A graph replay is one launch from the
// host; the kernels inside it pay no per-kernel dispatch (GraphLaunch.h).
#include <cstdint>

#include "backend/timing/GraphLaunch.h"
#include "backend/timing/OperatorTiming.h"
#include "perf/FusedKernelModel.h"
#include "perf/OperatorKind.h"

using namespace npusim;

extern "C" {

// Charges one generated kernel on the current stream of `device`; returns its
// modelled device time in nanoseconds.
uint64_t npusim_compile_charge_fused_kernel(int device, double readBytes, double writtenBytes, double elements,
                                            double opsPerElement) {
  perf::FusedKernelWork work;
  work.vectorElements = elements;
  work.opsPerElement = opsPerElement > 0 ? opsPerElement : 1.0;
  work.hbmBytes = readBytes + writtenBytes;
  const perf::FusedKernelCost cost = perf::priceFusedKernel(backend::chipRates(), work);
  const auto deviceNs = static_cast<runtime::SimTimeNs>(cost.seconds * 1e9 + 0.5);
  return backend::chargeModelledKernel(device, perf::OperatorKind::kElementwise, deviceNs, cost.unit, 0.0,
                                       cost.bytes);
}

// One graph launch from the host (its kernels are charged as they replay).
void npusim_compile_charge_graph_launch(int device) {
  const bool replaying = backend::replayingGraph();
  backend::setReplayingGraph(false);
  backend::chargeModelledKernel(device, perf::OperatorKind::kOther, 0, perf::Unit::kVector, 0.0, 0.0);
  backend::setReplayingGraph(replaying);
}

void npusim_compile_set_replaying_graph(int replaying) { backend::setReplayingGraph(replaying != 0); }

// The device time charged so far by unit (perf::Unit order) and the useful cube
// FLOPs: an NPUGraph capture reads it around each operator, so that a replay,
// which reruns the kernel on the captured memory outside the executor, charges
// what the operator cost when it was captured.
void npusim_compile_timing_snapshot(uint64_t* deviceNsByUnit, double* cubeFlops) {
  const backend::TimingTotals totals = backend::timingTotals();
  for (size_t i = 0; i < totals.deviceNsByUnit.size(); ++i) deviceNsByUnit[i] = totals.deviceNsByUnit[i];
  *cubeFlops = totals.cubeFlops;
}

// One captured kernel replayed from a graph: its captured device time on the
// current stream, launched by the device (no host dispatch while replaying).
uint64_t npusim_compile_charge_replayed_kernel(int device, int unit, uint64_t deviceNs, double cubeFlops) {
  const auto kernelUnit = static_cast<perf::Unit>(unit);
  const auto kind = kernelUnit == perf::Unit::kCube ? perf::OperatorKind::kMatmul : perf::OperatorKind::kElementwise;
  return backend::chargeModelledKernel(device, kind, static_cast<runtime::SimTimeNs>(deviceNs), kernelUnit, cubeFlops,
                                       0.0);
}

}  // extern "C"
