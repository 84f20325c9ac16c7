// npusim-inspect: the native checks of `npusim doctor`, as a program that
// prints JSON (the Python front end runs it in a subprocess with a timeout, so
// a crash or hang in a check can never take the doctor down).
//
//   npusim-inspect resolve [--requester ELF] [--ld-library-path PATH | --no-ld-library-path]
//                          [--cache FILE] [--default-dirs DIR:DIR...] NAME...
//   npusim-inspect elf FILE...
//   npusim-inspect keyvalue FILE...
//   npusim-inspect plog [--max-bytes-per-file N] [--max-total-bytes N] ROOT...
//   npusim-inspect realpath PATH...
//
// Without --ld-library-path, resolve uses this process's LD_LIBRARY_PATH.
// Exit status: 0 with the JSON on stdout, 2 for a usage error (text on stderr).
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace npusim::tools {

int runInspect(const std::vector<std::string>& arguments, std::ostream& out, std::ostream& err);

}  // namespace npusim::tools
