#include "core/series/contents.h"

#include <gtest/gtest.h>

#include <string>

namespace headroom {
namespace {

std::string little_endian(std::uint64_t value) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i)
    out[static_cast<std::size_t>(i)] = static_cast<char>(value >> (8 * i));
  return out;
}

TEST(FormatDamage, AZipWithoutItsEndRecordIsCutShort) {
  const std::string head = std::string("PK\x03\x04", 4) + "rest";
  EXPECT_NE(format_damage_of("step_3.pt", 3000, head, std::string(100, 'x')).find("cut short"),
            std::string::npos);
  const std::string tail =
      std::string(40, 'x') + std::string("PK\x05\x06", 4) + std::string(18, '\0');
  EXPECT_EQ(format_damage_of("step_3.pt", 3000, head, tail), "");
  // Not a zip and not safetensors (a legacy pickle checkpoint): not checked.
  EXPECT_EQ(format_damage_of("old.pt", 3000, "\x80\x02\x8a\x0a", ""), "");
}

TEST(FormatDamage, ASafetensorsFileShorterThanItsHeaderSays) {
  const std::string json =
      R"({"__metadata__":{"format":"pt"},"w":{"dtype":"F32","shape":[256],"data_offsets":[0,1024]}})";
  const std::string head = little_endian(json.size()) + json;
  const std::uint64_t whole = head.size() + 1024;
  EXPECT_EQ(format_damage_of("model.safetensors", whole, head, ""), "");
  EXPECT_NE(format_damage_of("model.safetensors", whole - 100, head, "")
                .find("its safetensors header describes"),
            std::string::npos);
  EXPECT_NE(format_damage_of("model.safetensors", 50, head.substr(0, 8), "").find("header"),
            std::string::npos);
  EXPECT_NE(format_damage_of("model.safetensors", whole, little_endian(5) + "{oops", "")
                .find("does not parse"),
            std::string::npos);
}

}  // namespace
}  // namespace headroom
