// npu-smi for the simulated server. Sampling interval of the activity
// (AI Core %, power): NPUSIM_SMI_SAMPLE_MS, default 300 ms, 0 to not wait.
#include <chrono>
#include <iostream>
#include <thread>

#include "runtime/EnvironmentVariables.h"
#include "tools/SmiCommand.h"

int main(int argc, char** argv) {
  std::vector<std::string> arguments(argv + 1, argv + argc);
  try {
    const int sampleMs = static_cast<int>(npusim::runtime::integerEnvironmentValue("NPUSIM_SMI_SAMPLE_MS", 300, 0, 10000));
    npusim::tools::SmiEnvironment environment;
    environment.snapshot = [sampleMs] { return npusim::tools::takeSnapshot(sampleMs); };
    environment.sleep = [](int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); };
    environment.hostCpus = std::thread::hardware_concurrency();
    return npusim::tools::runNpuSmi(arguments, environment, std::cout, std::cerr);
  } catch (const std::exception& error) {
    // Configuration errors (NPUSIM_DEVICE_COUNT, NPUSIM_SOC, an unsafe status directory).
    std::cerr << "npu-smi: " << error.what() << "\n";
    return 1;
  }
}
