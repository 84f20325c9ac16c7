// The npu-smi command line: `npu-smi info` and its subcommands (torch_npu
// contract §18.2), with npu-smi's style of usage errors. Takes the snapshot
// through a callback so that tests can give fixed devices.
//
//   npu-smi info                              the device and process table
//   npu-smi info -l                           card list
//   npu-smi info -m                           chip map
//   npu-smi info -t TYPE -i ID [-c CHIP]      TYPE: usages board common memory proc-mem; topo needs no -i
//   npu-smi info watch [-i ID] [-c CHIP] [-d SECONDS]
//   npu-smi -v | -h
//
// npusim extension: `info watch -n COUNT` stops after COUNT samples (the real
// one runs until interrupted; so does this one without -n).
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "tools/SmiSnapshot.h"

namespace npusim::tools {

struct SmiEnvironment {
  std::function<SmiSnapshot()> snapshot;
  std::function<void(int milliseconds)> sleep;
  unsigned hostCpus = 1;
};

int runNpuSmi(const std::vector<std::string>& arguments, const SmiEnvironment& environment, std::ostream& out,
              std::ostream& err);

}  // namespace npusim::tools
