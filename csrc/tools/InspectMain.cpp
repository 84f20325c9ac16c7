#include <iostream>

#include "tools/InspectCommand.h"

int main(int argc, char** argv) {
  std::vector<std::string> arguments(argv + 1, argv + argc);
  try {
    return npusim::tools::runInspect(arguments, std::cout, std::cerr);
  } catch (const std::exception& error) {
    std::cerr << "npusim-inspect: internal error: " << error.what() << "\n";
    return 3;
  }
}
