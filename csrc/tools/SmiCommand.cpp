#include "tools/SmiCommand.h"

#include "tools/SmiLayout.h"

namespace npusim::tools {

namespace {

constexpr int kUsageError = 255;  // npu-smi exits with -1 (255) on a command error

const char* kTopUsage =
    "Usage: npu-smi <command> [<args>]\n"
    "Commands:\n"
    "\tinfo                 Show device information.\n"
    "Options:\n"
    "\t-h, --help           Show this help text.\n"
    "\t-v, --version        Show the version.\n";

const char* kInfoUsage =
    "Usage: npu-smi info [Options...]\n"
    "Options:\n"
    "\t-l                   Show the list of NPUs.\n"
    "\t-m                   Show the mapping of NPU, chip and logic IDs.\n"
    "\t-t <type> -i <id> [-c <chip_id>]\n"
    "\t                     Show one kind of information of NPU <id>. <type>: usages, board, common,\n"
    "\t                     memory, proc-mem, topo (topo needs no -i).\n"
    "\twatch [-i <id>] [-c <chip_id>] [-d <delay_seconds>]\n"
    "\t                     Refresh the status of the NPUs every <delay_seconds> (default 1).\n";

int commandError(std::ostream& err, const std::string& problem, const char* usage) {
  if (!problem.empty()) err << problem << "\n";
  err << "Command error, please input correct command.\n" << usage;
  return kUsageError;
}

bool parseNumber(const std::string& text, int& value) {
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos) return false;
  value = std::stoi(text);
  return true;
}

struct InfoOptions {
  std::string type;
  int id = -1;
  int chip = -1;
  int delaySeconds = 1;
  int count = -1;  // watch: samples, -1 = until interrupted
  bool list = false;
  bool map = false;
  bool watch = false;
};

int runInfo(const std::vector<std::string>& args, const SmiEnvironment& environment, std::ostream& out, std::ostream& err) {
  InfoOptions options;
  size_t i = 0;
  if (!args.empty() && args[0] == "watch") {
    options.watch = true;
    i = 1;
  }
  for (; i < args.size(); ++i) {
    const std::string& arg = args[i];
    const bool hasValue = i + 1 < args.size();
    const auto number = [&](int& target) {
      if (!hasValue || !parseNumber(args[i + 1], target)) return false;
      ++i;
      return true;
    };
    if (arg == "-h" || arg == "--help") {
      out << kInfoUsage;
      return 0;
    } else if (arg == "-l" && !options.watch) {
      options.list = true;
    } else if (arg == "-m" && !options.watch) {
      options.map = true;
    } else if (arg == "-t" && !options.watch) {
      if (!hasValue) return commandError(err, "The option -t needs a type.", kInfoUsage);
      options.type = args[++i];
    } else if (arg == "-i") {
      if (!number(options.id)) return commandError(err, "Invalid parameter for -i: it needs an NPU ID.", kInfoUsage);
    } else if (arg == "-c") {
      if (!number(options.chip)) return commandError(err, "Invalid parameter for -c: it needs a chip ID.", kInfoUsage);
    } else if (arg == "-d" && options.watch) {
      if (!number(options.delaySeconds) || options.delaySeconds < 1) {
        return commandError(err, "Invalid parameter for -d: it needs a delay of 1 second or more.", kInfoUsage);
      }
    } else if (arg == "-n" && options.watch) {
      if (!number(options.count) || options.count < 1) {
        return commandError(err, "Invalid parameter for -n: it needs a sample count of 1 or more.", kInfoUsage);
      }
    } else if (arg == "-s" && options.watch && hasValue) {
      ++i;  // the real tool's column selection: every column is always shown here
    } else {
      return commandError(err, "Invalid parameter " + arg + ".", kInfoUsage);
    }
  }
  const int modes = int(options.list) + int(options.map) + int(!options.type.empty()) + int(options.watch);
  if (modes > 1) return commandError(err, "Options -l, -m, -t and watch cannot be combined.", kInfoUsage);
  if ((options.list || options.map || (modes == 0)) && (options.id >= 0 || options.chip >= 0)) {
    return commandError(err, "Options -i and -c need -t <type> or watch.", kInfoUsage);
  }

  SmiSnapshot snapshot = environment.snapshot();
  for (const auto& note : snapshot.notes) err << "npu-smi (npusim): " << note << "\n";
  const int deviceCount = static_cast<int>(snapshot.devices.size());
  const auto checkIds = [&]() -> int {
    if (options.id >= deviceCount) {
      err << "The NPU ID " << options.id << " is invalid. Valid NPU IDs: 0-" << deviceCount - 1
          << " (see npu-smi info -l).\n";
      return kUsageError;
    }
    if (options.chip > 0) {
      err << "The chip ID " << options.chip << " is invalid. Valid chip IDs: 0 (see npu-smi info -m).\n";
      return kUsageError;
    }
    return 0;
  };

  if (options.list) {
    out << formatCardList(snapshot);
    return 0;
  }
  if (options.map) {
    out << formatChipMap(snapshot);
    return 0;
  }
  if (options.watch) {
    if (const int status = checkIds()) return status;
    out << formatWatchHeader();
    for (int sample = 0; options.count < 0 || sample < options.count; ++sample) {
      if (sample > 0) {
        environment.sleep(options.delaySeconds * 1000);
        snapshot = environment.snapshot();
      }
      out << formatWatchRows(snapshot, options.id, options.chip);
      out.flush();
    }
    return 0;
  }
  if (!options.type.empty()) {
    static const char* kTypes[] = {"usages", "board", "common", "memory", "proc-mem", "topo"};
    bool known = false;
    for (const char* type : kTypes) known = known || options.type == type;
    if (!known) {
      return commandError(err, "Invalid type " + options.type + ". Types: usages, board, common, memory, proc-mem, topo.",
                          kInfoUsage);
    }
    if (options.type == "topo") {
      if (options.chip >= 0) return commandError(err, "The type topo takes no -c.", kInfoUsage);
      if (options.id >= 0) {
        if (const int status = checkIds()) return status;
      }
      out << formatTopology(snapshot, environment.hostCpus);
      return 0;
    }
    if (options.id < 0) return commandError(err, "The type " + options.type + " needs -i <id>.", kInfoUsage);
    if (const int status = checkIds()) return status;
    const SmiDevice& device = snapshot.devices[static_cast<size_t>(options.id)];
    if (options.type == "usages") out << formatUsages(device, options.chip);
    if (options.type == "board") out << formatBoard(snapshot, device, options.chip);
    if (options.type == "common") out << formatCommon(device, options.chip);
    if (options.type == "memory") out << formatMemory(device, options.chip);
    if (options.type == "proc-mem") out << formatProcessMemory(device, options.chip);
    return 0;
  }
  out << formatInfoTable(snapshot);
  return 0;
}

}  // namespace

int runNpuSmi(const std::vector<std::string>& arguments, const SmiEnvironment& environment, std::ostream& out,
              std::ostream& err) {
  if (arguments.empty()) {
    out << kTopUsage;
    return 0;
  }
  const std::string& command = arguments[0];
  if (command == "-h" || command == "--help") {
    out << kTopUsage;
    return 0;
  }
  if (command == "-v" || command == "--version") {
    out << "npu-smi version: " << environment.snapshot().driverVersion << " (npusim simulated driver)\n";
    return 0;
  }
  if (command == "info") return runInfo({arguments.begin() + 1, arguments.end()}, environment, out, err);
  return commandError(err, "Invalid command " + command + ".", kTopUsage);
}

}  // namespace npusim::tools
