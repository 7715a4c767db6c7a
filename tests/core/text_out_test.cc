// Names from other users and programs, shown to people and written as JSON.

#include "core/text_out.h"

#include <gtest/gtest.h>

namespace headroom {
namespace {

TEST(Printable, ControlCharactersAreShownNotSent) {
  EXPECT_EQ(printable("ckpt-100.pt"), "ckpt-100.pt");
  EXPECT_EQ(printable("a\x1b]2;x\x07"), "a\\x1b]2;x\\x07");
  EXPECT_EQ(printable("two\nlines\tand\r"), "two\\nlines\\tand\\x0d");
  EXPECT_EQ(printable("del\x7f"), "del\\x7f");
  EXPECT_EQ(printable("csi\xc2\x9b"
                      "31m"),
            "csi\\u009b31m");  // C1 CSI, as UTF-8
  // Printable UTF-8 (é is 0xC3 0xA9; U+00A0 is 0xC2 0xA0), bytes that are not UTF-8, and a
  // backslash stay as they are.
  EXPECT_EQ(printable("caf\xc3\xa9 \xc2\xa0 \xe9t\xe9 a\\b"),
            "caf\xc3\xa9 \xc2\xa0 \xe9t\xe9 a\\b");
  EXPECT_EQ(printable("end\xc2"), "end\xc2");  // a lead byte with nothing after it
  EXPECT_EQ(printable(""), "");
}

TEST(JsonText, BytesThatAreNotUtf8BecomeTheReplacementCharacter) {
  const nlohmann::json value = {{"name", "latin1-\xe9t\xe9"}, {"ok", "caf\xc3\xa9"}};
  const std::string text = json_text(value);
  EXPECT_EQ(text, "{\"name\":\"latin1-\xef\xbf\xbdt\xef\xbf\xbd\",\"ok\":\"caf\xc3\xa9\"}");
  EXPECT_EQ(json_text(nlohmann::json{{"a", 1}}, 2), "{\n  \"a\": 1\n}");
  EXPECT_THROW((void)nlohmann::json(value).dump(), nlohmann::json::type_error);  // what it spares
}

TEST(JsonText, AnOrderedDocumentKeepsItsKeyOrder) {
  nlohmann::ordered_json value;
  value["verdict"] = "host_oom";
  value["candidates"] = nlohmann::ordered_json::array();
  value["bad"] = "\xff";
  EXPECT_EQ(json_text(value),
            "{\"verdict\":\"host_oom\",\"candidates\":[],\"bad\":\"\xef\xbf\xbd\"}");
}

}  // namespace
}  // namespace headroom
