#include "tools/Json.h"

#include <gtest/gtest.h>

namespace npusim::tools {

TEST(Json, EscapesControlCharactersAndKeepsUtf8) {
  EXPECT_EQ(jsonString("a\"b\\c\n\t\x01"), "\"a\\\"b\\\\c\\n\\t\\u0001\"");
  EXPECT_EQ(jsonString("\xc3\xa9"), "\"\xc3\xa9\"");  // é stays as is
}

TEST(Json, InvalidUtf8BytesBecomeEscapes) {
  EXPECT_EQ(jsonString("a\xff" "b"), R"("a\\xffb")");
  EXPECT_EQ(jsonString("\xc3"), R"("\\xc3")");               // truncated sequence
  EXPECT_EQ(jsonString("\xc0\x80"), R"("\\xc0\\x80")");      // overlong NUL
  EXPECT_FALSE(isValidUtf8("\xed\xa0\x80"));                // a surrogate
  EXPECT_TRUE(isValidUtf8("plain \xe4\xb8\xad"));
}

TEST(Json, WriterPlacesCommas) {
  JsonWriter json;
  json.beginObject().field("a", 1).key("b").beginArray().value("x").value(true).null().endArray().field("c", "y").endObject();
  EXPECT_EQ(json.text(), "{\"a\":1,\"b\":[\"x\",true,null],\"c\":\"y\"}");
}

}  // namespace npusim::tools
