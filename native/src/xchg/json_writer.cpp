#include "json_writer.hpp"

#include <cmath>
#include <cstdio>

namespace petacomm::xchg {

std::string json_escape(const std::string &text) {
  std::string out = "\"";
  for (unsigned char ch : text) {
    switch (ch) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (ch < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", ch);
          out += buf;
        } else {
          out += static_cast<char>(ch);
        }
    }
  }
  return out + "\"";
}

void JsonWriter::prefix(const char *key) {
  if (!first_.empty()) {
    if (!first_.back()) out_ += ',';
    first_.back() = false;
  }
  if (key != nullptr) out_ += json_escape(key) + ':';
}

JsonWriter &JsonWriter::begin_object(const char *key) {
  prefix(key);
  out_ += '{';
  first_.push_back(true);
  return *this;
}

JsonWriter &JsonWriter::end_object() {
  out_ += '}';
  first_.pop_back();
  return *this;
}

JsonWriter &JsonWriter::begin_array(const char *key) {
  prefix(key);
  out_ += '[';
  first_.push_back(true);
  return *this;
}

JsonWriter &JsonWriter::end_array() {
  out_ += ']';
  first_.pop_back();
  return *this;
}

JsonWriter &JsonWriter::value(const char *key, const std::string &text) {
  prefix(key);
  out_ += json_escape(text);
  return *this;
}

JsonWriter &JsonWriter::value(const char *key, const char *text) {
  return value(key, std::string(text == nullptr ? "" : text));
}

JsonWriter &JsonWriter::value(const char *key, double number) {
  prefix(key);
  if (!std::isfinite(number)) {
    out_ += "null";
    return *this;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", number);
  out_ += buf;
  return *this;
}

JsonWriter &JsonWriter::value(const char *key, std::int64_t number) {
  prefix(key);
  out_ += std::to_string(number);
  return *this;
}

JsonWriter &JsonWriter::value(const char *key, bool flag) {
  prefix(key);
  out_ += flag ? "true" : "false";
  return *this;
}

JsonWriter &JsonWriter::null(const char *key) {
  prefix(key);
  out_ += "null";
  return *this;
}

}  // namespace petacomm::xchg
