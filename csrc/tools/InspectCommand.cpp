#include "tools/InspectCommand.h"

#include <cstdlib>

#include "tools/BoundedFile.h"
#include "tools/ElfFile.h"
#include "tools/Json.h"
#include "tools/KeyValueFile.h"
#include "tools/LibraryResolver.h"
#include "tools/PlogScan.h"

namespace npusim::tools {

namespace {

void writeElf(JsonWriter& json, const ElfInfo& elf) {
  json.beginObject();
  json.field("valid", elf.valid);
  json.field("error", elf.error);
  json.field("class", elf.elfClass);
  json.field("machine", machineName(elf.machine));
  json.field("soname", elf.soname);
  json.key("needed").beginArray();
  for (const auto& name : elf.needed) json.value(name);
  json.endArray();
  json.key("rpath").beginArray();
  for (const auto& entry : elf.rpath) json.value(entry);
  json.endArray();
  json.key("runpath").beginArray();
  for (const auto& entry : elf.runpath) json.value(entry);
  json.endArray();
  json.endObject();
}

std::vector<std::string> splitColon(const std::string& text) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(':', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) parts.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

bool parseCount(const std::string& text, uint64_t& value) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos || text.size() > 18) return false;
  value = std::stoull(text);
  return true;
}

int usage(std::ostream& err, const std::string& problem) {
  err << "npusim-inspect: " << problem << "\n"
      << "usage: npusim-inspect resolve|elf|keyvalue|plog|realpath [options] ARGUMENTS...\n";
  return 2;
}

int commandResolve(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  ResolveOptions options;
  if (const char* value = std::getenv("LD_LIBRARY_PATH")) options.ldLibraryPath = std::string(value);
  std::vector<std::string> names;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    const bool hasValue = i + 1 < args.size();
    if (arg == "--requester" && hasValue) {
      options.requester = args[++i];
    } else if (arg == "--ld-library-path" && hasValue) {
      options.ldLibraryPath = args[++i];
    } else if (arg == "--no-ld-library-path") {
      options.ldLibraryPath.reset();
    } else if (arg == "--cache" && hasValue) {
      options.cachePath = args[++i];
    } else if (arg == "--default-dirs" && hasValue) {
      options.defaultDirectories = splitColon(args[++i]);
    } else if (arg.rfind("--", 0) == 0) {
      return usage(err, "resolve: unknown or incomplete option " + arg);
    } else {
      names.push_back(arg);
    }
  }
  if (names.empty()) return usage(err, "resolve: give at least one library name");
  JsonWriter json;
  json.beginObject();
  json.field("host_class", hostElfClass());
  json.field("host_machine", machineName(hostElfMachine()));
  json.key("libraries").beginArray();
  for (const auto& name : names) {
    const LibraryResolution resolution = resolveLibrary(name, options);
    json.beginObject();
    json.field("name", resolution.name);
    json.field("selected", resolution.selected);
    json.key("notes").beginArray();
    for (const auto& note : resolution.notes) json.value(note);
    json.endArray();
    json.key("candidates").beginArray();
    for (const auto& candidate : resolution.candidates) {
      json.beginObject();
      json.field("path", candidate.path);
      json.field("real_path", candidate.realPath);
      json.field("source", candidate.source);
      json.field("source_entry", candidate.sourceEntry);
      json.field("position", candidate.position);
      json.field("status", candidateStatusName(candidate.status));
      json.field("reason", candidate.reason);
      if (candidate.status != CandidateStatus::kAbsent) {
        json.key("elf");
        writeElf(json, candidate.elf);
      }
      json.endObject();
    }
    json.endArray();
    json.endObject();
  }
  json.endArray();
  json.endObject();
  out << json.text() << "\n";
  return 0;
}

int commandElf(const std::vector<std::string>& args, std::ostream& out) {
  JsonWriter json;
  json.beginObject();
  for (const auto& path : args) {
    json.key(path);
    writeElf(json, readElf(path));
  }
  json.endObject();
  out << json.text() << "\n";
  return 0;
}

int commandKeyValue(const std::vector<std::string>& args, std::ostream& out) {
  JsonWriter json;
  json.beginObject();
  for (const auto& path : args) {
    const KeyValueFile file = readKeyValueFile(path);
    json.key(path).beginObject();
    json.field("readable", file.readable);
    json.field("error", file.error);
    json.key("entries").beginArray();
    for (const auto& [key, value] : file.entries) {
      json.beginArray().value(key).value(value).endArray();
    }
    json.endArray();
    json.key("problems").beginArray();
    for (const auto& problem : file.problems) json.value(problem);
    json.endArray();
    json.endObject();
  }
  json.endObject();
  out << json.text() << "\n";
  return 0;
}

int commandPlog(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  PlogScanLimits limits;
  std::vector<std::string> roots;
  for (size_t i = 0; i < args.size(); ++i) {
    const bool hasValue = i + 1 < args.size();
    if (args[i] == "--max-bytes-per-file" && hasValue) {
      if (!parseCount(args[++i], limits.maxBytesPerFile)) return usage(err, "plog: --max-bytes-per-file needs a number");
    } else if (args[i] == "--max-total-bytes" && hasValue) {
      if (!parseCount(args[++i], limits.maxTotalBytes)) return usage(err, "plog: --max-total-bytes needs a number");
    } else if (args[i].rfind("--", 0) == 0) {
      return usage(err, "plog: unknown or incomplete option " + args[i]);
    } else {
      roots.push_back(args[i]);
    }
  }
  const PlogScanResult result = scanPlogRoots(roots, limits);
  JsonWriter json;
  json.beginObject();
  json.key("roots").beginArray();
  for (const auto& root : result.roots) json.value(root);
  json.endArray();
  json.key("missing_roots").beginArray();
  for (const auto& root : result.missingRoots) json.value(root);
  json.endArray();
  json.key("files").beginArray();
  for (const auto& file : result.files) json.value(file);
  json.endArray();
  json.key("skipped").beginArray();
  for (const auto& [path, reason] : result.skipped) json.beginObject().field("path", path).field("reason", reason).endObject();
  json.endArray();
  json.key("truncated_files").beginArray();
  for (const auto& file : result.truncatedFiles) json.value(file);
  json.endArray();
  json.field("lines", result.lines);
  json.field("unparsed_lines", result.unparsedLines);
  json.field("non_utf8_lines", result.nonUtf8Lines);
  json.key("levels").beginObject();
  for (const auto& [level, count] : result.levelCounts) json.field(level, count);
  json.endObject();
  const auto occurrence = [&json](const PlogOccurrence& o) {
    json.beginObject();
    json.field("file", o.file);
    json.field("line_number", o.lineNumber);
    json.field("module", o.line.module);
    json.field("pid", o.line.pid);
    json.field("process_name", o.line.processName);
    json.field("timestamp", o.line.timestamp);
    json.field("source", o.line.source);
    json.field("content", o.line.content);
    json.key("codes").beginArray();
    for (const auto& code : errorCodesIn(o.line.content)) json.value(code);
    json.endArray();
    json.endObject();
  };
  json.key("groups").beginArray();
  for (const auto& group : result.groups) {
    json.beginObject();
    json.field("module", group.module);
    json.field("code", group.code);
    json.field("count", group.count);
    json.field("last_timestamp", group.lastTimestamp);
    json.key("first");
    occurrence(group.first);
    json.endObject();
  }
  json.endArray();
  json.key("first_error_per_process").beginArray();
  for (const auto& first : result.firstErrorPerProcess) occurrence(first);
  json.endArray();
  json.endObject();
  out << json.text() << "\n";
  return 0;
}

int commandRealpath(const std::vector<std::string>& args, std::ostream& out) {
  JsonWriter json;
  json.beginObject();
  for (const auto& path : args) {
    std::string error;
    const auto resolved = resolvePath(path, &error);
    json.key(path).beginObject();
    if (resolved) {
      json.field("path", *resolved);
    } else {
      json.key("path").null();
      json.field("error", error);
    }
    json.endObject();
  }
  json.endObject();
  out << json.text() << "\n";
  return 0;
}

}  // namespace

int runInspect(const std::vector<std::string>& arguments, std::ostream& out, std::ostream& err) {
  if (arguments.empty()) return usage(err, "missing command");
  const std::string& command = arguments[0];
  const std::vector<std::string> rest(arguments.begin() + 1, arguments.end());
  if (command == "resolve") return commandResolve(rest, out, err);
  if (rest.empty()) return usage(err, command + ": missing arguments");
  if (command == "elf") return commandElf(rest, out);
  if (command == "keyvalue") return commandKeyValue(rest, out);
  if (command == "plog") return commandPlog(rest, out, err);
  if (command == "realpath") return commandRealpath(rest, out);
  return usage(err, "unknown command " + command);
}

}  // namespace npusim::tools
