#include "json_report.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace kpl::cli {
namespace {

// The length of the valid UTF-8 sequence at text[at] (1 to 4), or 0 when the
// byte there starts none: a stray continuation byte, an overlong form, a
// surrogate (U+D800 to U+DFFF), a code point past U+10FFFF, or a sequence
// cut short.
std::size_t utf8_sequence(std::string_view text, std::size_t at) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(at);
  std::size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;  // the range of the second byte
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;   // overlong
    if (lead == 0xED) high = 0x9F;  // surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;   // overlong
    if (lead == 0xF4) high = 0x8F;  // past U+10FFFF
  } else {
    return 0;  // 0x80-0xC1 (continuation, overlong lead), 0xF5-0xFF
  }
  if (at + length > text.size()) return 0;
  if (byte(at + 1) < low || byte(at + 1) > high) return 0;
  for (std::size_t i = 2; i < length; ++i)
    if (byte(at + i) < 0x80 || byte(at + i) > 0xBF) return 0;
  return length;
}

}  // namespace

std::string json_string(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out += '"';
  for (std::size_t at = 0; at < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[at]);
    const std::size_t length = utf8_sequence(text, at);
    if (length == 0) {
      out += "\\ufffd";  // a byte that is not UTF-8: the replacement character
      ++at;
      continue;
    }
    if (length > 1) {
      out.append(text.substr(at, length));
      at += length;
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7F) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
          out += escaped;
        } else {
          out += static_cast<char>(c);
        }
    }
    ++at;
  }
  out += '"';
  return out;
}

std::string json_number(double value) {
  if (!std::isfinite(value)) return "null";
  // The fewest significant digits that read back to the same value (17
  // always do).
  char text[32];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, value);
    if (std::strtod(text, nullptr) == value) break;
  }
  std::string out = text;
  // "3" would read back as an integer; a double stays one.
  if (out.find_first_of(".eE") == std::string::npos) out += ".0";
  return out;
}

JsonObject::Member& JsonObject::member(const std::string& key) {
  for (auto& member : members_)
    if (member.key == key) {
      member = Member{key, {}, nullptr, {}, false};
      return member;
    }
  members_.push_back(Member{key, {}, nullptr, {}, false});
  return members_.back();
}

JsonObject& JsonObject::set_text(const std::string& key, std::string text) {
  member(key).text = std::move(text);
  return *this;
}

JsonObject& JsonObject::set(const std::string& key, bool value) {
  return set_text(key, value ? "true" : "false");
}

JsonObject& JsonObject::set(const std::string& key, double value) {
  return set_text(key, json_number(value));
}

JsonObject& JsonObject::set(const std::string& key, std::string_view value) {
  return set_text(key, json_string(value));
}

JsonObject& JsonObject::set_null(const std::string& key) { return set_text(key, "null"); }

namespace {

template <class Values, class Write>
std::string json_array(const Values& values, Write write) {
  std::string out = "[";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    out += write(values[i]);
  }
  return out + "]";
}

}  // namespace

JsonObject& JsonObject::set(const std::string& key, const std::vector<std::string>& values) {
  return set_text(key, json_array(values, [](const std::string& value) {
                    return json_string(value);
                  }));
}

JsonObject& JsonObject::set(const std::string& key, const std::vector<double>& values) {
  return set_text(key, json_array(values, json_number));
}

JsonObject& JsonObject::set(const std::string& key, const std::vector<std::int64_t>& values) {
  return set_text(key, json_array(values, [](std::int64_t value) {
                    return std::to_string(value);
                  }));
}

JsonObject& JsonObject::object(const std::string& key) {
  for (auto& member : members_)
    if (member.key == key && member.object) return *member.object;
  auto& created = member(key);
  created.object = std::make_unique<JsonObject>();
  return *created.object;
}

JsonObject& JsonObject::append_object(const std::string& key) {
  Member* array = nullptr;
  for (auto& member : members_)
    if (member.key == key && member.is_array) array = &member;
  if (array == nullptr) {
    array = &member(key);
    array->is_array = true;
  }
  array->array.push_back(std::make_unique<JsonObject>());
  return *array->array.back();
}

bool JsonObject::contains(const std::string& key) const {
  for (const auto& member : members_)
    if (member.key == key) return true;
  return false;
}

void JsonObject::write(std::string& out) const {
  out += '{';
  for (std::size_t i = 0; i < members_.size(); ++i) {
    const Member& member = members_[i];
    if (i > 0) out += ',';
    out += json_string(member.key);
    out += ':';
    if (member.object) {
      member.object->write(out);
    } else if (member.is_array) {
      out += '[';
      for (std::size_t j = 0; j < member.array.size(); ++j) {
        if (j > 0) out += ',';
        member.array[j]->write(out);
      }
      out += ']';
    } else {
      out += member.text;
    }
  }
  out += '}';
}

std::string JsonObject::str() const {
  std::string out;
  write(out);
  return out;
}

}  // namespace kpl::cli
