// The JSON writer behind `kpl <command> --json` (algorithms/cli/json_report.hpp):
// escaping, UTF-8 checking, number formatting and the object's structure.
#include "json_report.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

using kpl::cli::json_number;
using kpl::cli::json_string;
using kpl::cli::JsonObject;

TEST(JsonString, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(json_string(""), "\"\"");
  EXPECT_EQ(json_string("plain.h5"), "\"plain.h5\"");
  EXPECT_EQ(json_string("a\"b\\c/d"), "\"a\\\"b\\\\c/d\"");
  EXPECT_EQ(json_string("\b\f\n\r\t"), "\"\\b\\f\\n\\r\\t\"");
  EXPECT_EQ(json_string(std::string("\x01\x1f\x7f", 3)), "\"\\u0001\\u001f\\u007f\"");
  EXPECT_EQ(json_string(std::string("a\0b", 3)), "\"a\\u0000b\"");  // NUL inside the string
}

TEST(JsonString, PassesValidUtf8Through) {
  const std::string text = "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf";  // é € 😀 U+10FFFF
  EXPECT_EQ(json_string(text), "\"" + text + "\"");
  EXPECT_EQ(json_string("\xed\x9f\xbf"), "\"\xed\x9f\xbf\"");  // U+D7FF, below the surrogates
  EXPECT_EQ(json_string("\xee\x80\x80"), "\"\xee\x80\x80\"");  // U+E000, above them
}

TEST(JsonString, ReplacesEachByteThatIsNotUtf8) {
  const std::string r = "\\ufffd";
  EXPECT_EQ(json_string("\xff"), "\"" + r + "\"");
  EXPECT_EQ(json_string("a\x80z"), "\"a" + r + "z\"");                  // stray continuation
  EXPECT_EQ(json_string("\xc0\xaf"), "\"" + r + r + "\"");              // overlong '/'
  EXPECT_EQ(json_string("\xc1\xbf"), "\"" + r + r + "\"");              // overlong
  EXPECT_EQ(json_string("\xe0\x80\xaf"), "\"" + r + r + r + "\"");      // overlong, 3 bytes
  EXPECT_EQ(json_string("\xf0\x80\x80\xaf"), "\"" + r + r + r + r + "\"");  // overlong, 4
  EXPECT_EQ(json_string("\xed\xa0\x80"), "\"" + r + r + r + "\"");      // surrogate U+D800
  EXPECT_EQ(json_string("\xf4\x90\x80\x80"), "\"" + r + r + r + r + "\"");  // past U+10FFFF
  EXPECT_EQ(json_string("\xf5\x80"), "\"" + r + r + "\"");
  EXPECT_EQ(json_string("x\xc3"), "\"x" + r + "\"");                    // cut short at the end
  EXPECT_EQ(json_string("\xe2\x82z"), "\"" + r + r + "z\"");            // cut short inside
  EXPECT_EQ(json_string("\xc3\xa9\xff\xc3\xa9"), "\"\xc3\xa9" + r + "\xc3\xa9\"");
}

TEST(JsonNumber, ReadsBackToTheSameDouble) {
  EXPECT_EQ(json_number(0.1), "0.1");
  EXPECT_EQ(json_number(0.25), "0.25");
  EXPECT_EQ(json_number(1.0), "1.0");  // stays a double
  EXPECT_EQ(json_number(-3.0), "-3.0");
  EXPECT_EQ(json_number(0.0), "0.0");
  EXPECT_EQ(json_number(-0.0), "-0.0");
  EXPECT_EQ(json_number(1e300), "1e+300");
  EXPECT_EQ(json_number(1.0 / 3.0), "0.3333333333333333");
  EXPECT_EQ(json_number(0.022763361000000003), "0.022763361000000003");
  EXPECT_EQ(json_number(std::numeric_limits<double>::denorm_min()), "5e-324");
  EXPECT_EQ(json_number(std::numeric_limits<double>::max()), "1.7976931348623157e+308");
  std::mt19937_64 random(7);
  std::uniform_int_distribution<std::uint64_t> bits;
  for (int i = 0; i < 100000; ++i) {
    double value = 0;
    const std::uint64_t pattern = bits(random);
    static_assert(sizeof value == sizeof pattern);
    std::memcpy(&value, &pattern, sizeof value);
    if (!std::isfinite(value)) continue;
    const std::string text = json_number(value);
    ASSERT_EQ(std::strtod(text.c_str(), nullptr), value) << text;
    ASSERT_EQ(text.find_first_not_of("0123456789+-.e"), std::string::npos) << text;
  }
}

TEST(JsonNumber, NonFiniteIsNull) {
  EXPECT_EQ(json_number(std::numeric_limits<double>::quiet_NaN()), "null");
  EXPECT_EQ(json_number(std::numeric_limits<double>::infinity()), "null");
  EXPECT_EQ(json_number(-std::numeric_limits<double>::infinity()), "null");
}

TEST(JsonObject, WritesMembersInTheOrderFirstSet) {
  JsonObject object;
  EXPECT_EQ(object.str(), "{}");
  object.set("command", "nnls").set_null("exit_status").set("systems", 16);
  object.set("ok", true).set("bad", false).set("seconds", 0.5);
  object.set("exit_status", 3);  // keeps its place
  EXPECT_EQ(object.str(),
            "{\"command\":\"nnls\",\"exit_status\":3,\"systems\":16,\"ok\":true,"
            "\"bad\":false,\"seconds\":0.5}");
  EXPECT_TRUE(object.contains("ok"));
  EXPECT_FALSE(object.contains("error"));
}

TEST(JsonObject, WritesIntegersOfEveryWidthExactly) {
  JsonObject object;
  object.set("min", std::numeric_limits<std::int64_t>::min())
      .set("max", std::numeric_limits<std::uint64_t>::max())
      .set("int", -7)
      .set("size", std::size_t(1) << 40);
  EXPECT_EQ(object.str(),
            "{\"min\":-9223372036854775808,\"max\":18446744073709551615,\"int\":-7,"
            "\"size\":1099511627776}");
}

TEST(JsonObject, NestsObjectsAndArrays) {
  JsonObject object;
  object.object("seconds").set("solve", 0.25);
  object.set("names", std::vector<std::string>{"Serial", "Open\"MP"})
      .set("values", std::vector<double>{1.5, std::nan(""), 2})
      .set("counts", std::vector<std::int64_t>{1, -2})
      .set("empty", std::vector<std::string>{});
  object.append_object("checks").set("passed", true);
  object.append_object("checks").set("passed", false).object("inner").set("x", 1);
  object.object("seconds").set("total", 1.0);  // the same nested object
  EXPECT_EQ(object.str(),
            "{\"seconds\":{\"solve\":0.25,\"total\":1.0},\"names\":[\"Serial\",\"Open\\\"MP\"],"
            "\"values\":[1.5,null,2.0],\"counts\":[1,-2],\"empty\":[],"
            "\"checks\":[{\"passed\":true},{\"passed\":false,\"inner\":{\"x\":1}}]}");
}

TEST(JsonObject, KeysAreEscapedAndAMemberCanChangeKind) {
  JsonObject object;
  object.set("a\"\n", 1);
  object.set("x", 1);
  object.object("x").set("y", 2);  // a number replaced by an object
  object.set("a\"\n", "s");
  EXPECT_EQ(object.str(), "{\"a\\\"\\n\":\"s\",\"x\":{\"y\":2}}");
}

TEST(JsonObject, NestedReferencesSurviveLaterMembers) {
  JsonObject object;
  JsonObject& first = object.object("first");
  for (int i = 0; i < 100; ++i) object.set("k" + std::to_string(i), i);
  first.set("still", true);
  EXPECT_NE(object.str().find("\"first\":{\"still\":true}"), std::string::npos);
}

}  // namespace
