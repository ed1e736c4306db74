// The one JSON text builder of petacomm: describe() outputs of every family, the mini-apps'
// --json files, netbench's model. Objects, arrays, strings, numbers (NaN and infinities
// become null; doubles with 17 significant digits, so they read back exactly), booleans,
// null and ready-made JSON. Header-only, so the mini-apps, which link nothing of the library
// but its C API, use it too.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace petacomm {

// text as a JSON string, quotes included.
inline std::string json_quote(const std::string &text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
      out += escaped;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + '"';
}

class JsonOut {
 public:
  // key: the member's name inside an object; nullptr for an array element or the top value.
  JsonOut &begin_object(const char *key = nullptr) { return open(key, '{'); }
  JsonOut &end_object() { return close('}'); }
  JsonOut &begin_array(const char *key = nullptr) { return open(key, '['); }
  JsonOut &end_array() { return close(']'); }
  JsonOut &value(const char *key, const std::string &text) {
    prefix(key);
    out_ += json_quote(text);
    return *this;
  }
  JsonOut &value(const char *key, const char *text) {
    return value(key, std::string(text ? text : ""));
  }
  JsonOut &value(const char *key, double number) {
    prefix(key);
    if (!std::isfinite(number)) {
      out_ += "null";
    } else {
      char text[32];
      std::snprintf(text, sizeof text, "%.17g", number);
      out_ += text;
    }
    return *this;
  }
  JsonOut &value(const char *key, std::int64_t number) {
    prefix(key);
    out_ += std::to_string(number);
    return *this;
  }
  JsonOut &value(const char *key, int number) { return value(key, std::int64_t{number}); }
  JsonOut &value(const char *key, bool flag) {
    prefix(key);
    out_ += flag ? "true" : "false";
    return *this;
  }
  JsonOut &value(const char *key, const std::vector<double> &numbers) {
    begin_array(key);
    for (double number : numbers) value(nullptr, number);
    return end_array();
  }
  // An array element: value(x) is value(nullptr, x). Not for a null pointer (it would write
  // "" as an empty text) nor a char (its code): write those with null() or a string.
  template <class T>
  JsonOut &value(const T &element) {
    return value(static_cast<const char *>(nullptr), element);
  }
  JsonOut &value(std::nullptr_t) = delete;
  JsonOut &value(char) = delete;
  JsonOut &null(const char *key) {
    prefix(key);
    out_ += "null";
    return *this;
  }
  // Text that already is JSON (another JsonOut's, a plan's describe()); empty text is null.
  JsonOut &raw(const char *key, const std::string &json) {
    prefix(key);
    out_ += json.empty() ? "null" : json;
    return *this;
  }
  const std::string &str() const { return out_; }

 private:
  JsonOut &open(const char *key, char bracket) {
    prefix(key);
    out_ += bracket;
    first_.push_back(true);
    return *this;
  }
  JsonOut &close(char bracket) {
    out_ += bracket;
    first_.pop_back();
    return *this;
  }
  void prefix(const char *key) {
    if (!first_.empty()) {
      if (!first_.back()) out_ += ',';
      first_.back() = false;
    }
    if (key != nullptr) {
      out_ += json_quote(key);
      out_ += ':';
    }
  }
  std::string out_;
  std::vector<bool> first_;  // per open container: nothing written in it yet
};

}  // namespace petacomm
