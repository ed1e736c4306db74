#include "json_writer.hpp"

#include <cmath>
#include <cstdio>

namespace petacomm::apps {

std::string json_escape(const std::string &text) {
  std::string out;
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

void JsonWriter::separate(const char *key) {
  if (!first_.back()) out_ += ", ";
  first_.back() = false;
  if (key) out_ += "\"" + json_escape(key) + "\": ";
}

JsonWriter &JsonWriter::begin_object(const char *key) {
  separate(key);
  out_ += "{";
  first_.push_back(true);
  return *this;
}

JsonWriter &JsonWriter::end_object() {
  first_.pop_back();
  out_ += "}";
  if (first_.size() == 1) out_ += "\n";
  return *this;
}

JsonWriter &JsonWriter::begin_array(const char *key) {
  separate(key);
  out_ += "[";
  first_.push_back(true);
  return *this;
}

JsonWriter &JsonWriter::end_array() {
  first_.pop_back();
  out_ += "]";
  return *this;
}

JsonWriter &JsonWriter::value(double v) {
  separate(nullptr);
  if (!std::isfinite(v)) {
    out_ += "null";
  } else {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    out_ += buf;
  }
  return *this;
}

JsonWriter &JsonWriter::value(const std::string &v) {
  separate(nullptr);
  out_ += "\"" + json_escape(v) + "\"";
  return *this;
}

JsonWriter &JsonWriter::field(const char *key, double v) {
  separate(key);
  first_.push_back(true);  // value() separates again: present it as a fresh list
  value(v);
  first_.pop_back();
  return *this;
}

JsonWriter &JsonWriter::field(const char *key, std::int64_t v) {
  separate(key);
  out_ += std::to_string(v);
  return *this;
}

JsonWriter &JsonWriter::field(const char *key, bool v) {
  separate(key);
  out_ += v ? "true" : "false";
  return *this;
}

JsonWriter &JsonWriter::field(const char *key, const std::string &v) {
  separate(key);
  out_ += "\"" + json_escape(v) + "\"";
  return *this;
}

JsonWriter &JsonWriter::raw(const char *key, const std::string &json) {
  separate(key);
  out_ += json.empty() ? "null" : json;
  return *this;
}

JsonWriter &JsonWriter::field(const char *key, const std::vector<double> &values) {
  begin_array(key);
  for (const double v : values) value(v);
  return end_array();
}

}  // namespace petacomm::apps
