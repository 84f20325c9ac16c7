// A small JSON writer for the doctor's native helper (npusim-inspect), whose
// output the Python front end parses. Bytes that are not valid UTF-8 become
// the text \xNN (backslash, x, two hex digits), so that a non-UTF-8 file name
// or log line never produces invalid JSON and still shows which bytes it held.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace npusim::tools {

// `text` as a JSON string literal, quotes included.
std::string jsonString(std::string_view text);

// Builds one JSON value. Objects and arrays are opened and closed explicitly;
// commas are inserted as needed.
class JsonWriter {
 public:
  JsonWriter& beginObject();
  JsonWriter& endObject();
  JsonWriter& beginArray();
  JsonWriter& endArray();
  JsonWriter& key(std::string_view name);
  JsonWriter& value(std::string_view text);
  JsonWriter& value(const char* text) { return value(std::string_view(text)); }
  JsonWriter& value(const std::string& text) { return value(std::string_view(text)); }
  JsonWriter& value(int64_t number);
  JsonWriter& value(uint64_t number);
  JsonWriter& value(int number) { return value(static_cast<int64_t>(number)); }
  JsonWriter& value(bool flag);
  JsonWriter& null();

  // key(name).value(v) in one call.
  template <typename T>
  JsonWriter& field(std::string_view name, const T& v) {
    key(name);
    return value(v);
  }

  const std::string& text() const { return text_; }

 private:
  void separate();
  std::string text_;
  std::vector<bool> hasElement_;  // per open container
  bool afterKey_ = false;
};

// Whether `text` is valid UTF-8.
bool isValidUtf8(std::string_view text);

}  // namespace npusim::tools
