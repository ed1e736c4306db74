// A minimal JSON text builder for describe() outputs: objects, arrays, strings, numbers
// (NaN and infinities become null), booleans. Header-only so any family can use it.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace petacomm {

class JsonOut {
 public:
  JsonOut &begin_object(const char *key = nullptr) { return open(key, '{'); }
  JsonOut &end_object() { return close('}'); }
  JsonOut &begin_array(const char *key = nullptr) { return open(key, '['); }
  JsonOut &end_array() { return close(']'); }
  JsonOut &value(const char *key, const std::string &text) {
    prefix(key);
    quote(text);
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
      std::snprintf(text, sizeof text, "%.10g", number);
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
  // A ready-made JSON value (an object built by another JsonOut).
  JsonOut &raw(const char *key, const std::string &json) {
    prefix(key);
    out_ += json;
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
      quote(key);
      out_ += ':';
    }
  }
  void quote(const std::string &text) {
    out_ += '"';
    for (unsigned char c : text) {
      if (c == '"' || c == '\\') {
        out_ += '\\';
        out_ += static_cast<char>(c);
      } else if (c < 0x20) {
        char escaped[8];
        std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
        out_ += escaped;
      } else {
        out_ += static_cast<char>(c);
      }
    }
    out_ += '"';
  }
  std::string out_;
  std::vector<bool> first_;  // per open container: nothing written in it yet
};

}  // namespace petacomm
