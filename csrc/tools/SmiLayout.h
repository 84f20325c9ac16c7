// The text layouts of npu-smi (torch_npu contract §18): `info` (the exact
// A2/910B table of §18.1, which third-party parsers read with regexes and
// fixed columns), and the key/value and column layouts of `info -l`, `-m`,
// `-t usages|board|common|memory|proc-mem|topo`, `info watch`.
#pragma once

#include <string>

#include "tools/SmiSnapshot.h"

namespace npusim::tools {

std::string formatInfoTable(const SmiSnapshot& snapshot);
std::string formatCardList(const SmiSnapshot& snapshot);   // info -l
std::string formatChipMap(const SmiSnapshot& snapshot);    // info -m

// info -t TYPE -i N [-c C]: `chip` is -1 when -c was not given.
std::string formatUsages(const SmiDevice& device, int chip);
std::string formatBoard(const SmiSnapshot& snapshot, const SmiDevice& device, int chip);
std::string formatCommon(const SmiDevice& device, int chip);
std::string formatMemory(const SmiDevice& device, int chip);
std::string formatProcessMemory(const SmiDevice& device, int chip);
std::string formatTopology(const SmiSnapshot& snapshot, unsigned hostCpus);

// info watch: the header line, then one line per device and chip per sample.
std::string formatWatchHeader();
std::string formatWatchRows(const SmiSnapshot& snapshot, int onlyDevice, int onlyChip);

// "used / total" as npu-smi writes it: a 5-digit used value drops the space.
std::string usagePair(uint64_t used, uint64_t total);

}  // namespace npusim::tools
