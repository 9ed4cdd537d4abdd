// A small JSON writer for `kpl <command> --json`: one object whose members
// keep the order they were first set in, nested objects by key, and arrays of
// numbers, strings or objects. It only writes (kpl reads no JSON).
//
//   JsonObject summary;
//   summary.set("systems", 16).set("output", path);
//   summary.object("seconds").set("solve", 0.25);
//   summary.str()  // {"systems":16,"output":"x.h5","seconds":{"solve":0.25}}
//
// Numbers: integers as they are; finite doubles in the fewest digits that
// read back to the same double (with ".0" when they would look like an
// integer), NaN and +-Inf as null. Strings: '"', '\' and control characters
// escaped, valid UTF-8 passed through, and each byte that is not part of
// valid UTF-8 (file names are bytes) replaced by U+FFFD, written "\ufffd":
// the document is valid UTF-8 whatever the names (stderr keeps the bytes).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace kpl::cli {

// `text` as a JSON string, quotes included.
std::string json_string(std::string_view text);
// `value` as a JSON number, or null when it is not finite.
std::string json_number(double value);

class JsonObject {
 public:
  // Sets member `key` (one already set keeps its place and takes the value).
  JsonObject& set(const std::string& key, bool value);
  JsonObject& set(const std::string& key, double value);
  JsonObject& set(const std::string& key, std::string_view value);
  JsonObject& set(const std::string& key, const std::string& value) {
    return set(key, std::string_view(value));
  }
  JsonObject& set(const std::string& key, const char* value) {
    return set(key, std::string_view(value));
  }
  template <class Integer, std::enable_if_t<std::is_integral_v<Integer> &&
                                                !std::is_same_v<Integer, bool>,
                                            int> = 0>
  JsonObject& set(const std::string& key, Integer value) {
    return set_text(key, std::to_string(value));
  }
  JsonObject& set(const std::string& key, const std::vector<std::string>& values);
  JsonObject& set(const std::string& key, const std::vector<double>& values);
  JsonObject& set(const std::string& key, const std::vector<std::int64_t>& values);
  JsonObject& set_null(const std::string& key);

  // The object member `key`, created empty at the first call.
  JsonObject& object(const std::string& key);
  // A new, empty object at the end of the array member `key`.
  JsonObject& append_object(const std::string& key);

  bool contains(const std::string& key) const;
  // The document on one line, without a newline.
  std::string str() const;

 private:
  struct Member {
    std::string key;
    std::string text;                                // a value already written
    std::unique_ptr<JsonObject> object;              // or an object
    std::vector<std::unique_ptr<JsonObject>> array;  // or an array of objects
    bool is_array = false;
  };
  Member& member(const std::string& key);  // cleared, or appended
  JsonObject& set_text(const std::string& key, std::string text);
  void write(std::string& out) const;

  std::vector<Member> members_;
};

}  // namespace kpl::cli
