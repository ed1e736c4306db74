// A small streaming JSON writer for the mini-apps' --json files (figures of merit).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace petacomm::apps {

class JsonWriter {
 public:
  JsonWriter &begin_object(const char *key = nullptr);
  JsonWriter &end_object();
  JsonWriter &begin_array(const char *key = nullptr);
  JsonWriter &end_array();
  JsonWriter &field(const char *key, double value);  // NaN and infinities as null
  JsonWriter &field(const char *key, std::int64_t value);
  JsonWriter &field(const char *key, int value) { return field(key, std::int64_t{value}); }
  JsonWriter &field(const char *key, bool value);
  JsonWriter &field(const char *key, const std::string &value);
  JsonWriter &field(const char *key, const char *value) { return field(key, std::string(value)); }
  JsonWriter &field(const char *key, const std::vector<double> &values);
  // A value that already is JSON text (e.g. a plan's describe()), inserted as it is.
  JsonWriter &raw(const char *key, const std::string &json);
  JsonWriter &value(double value);  // array elements
  JsonWriter &value(const std::string &value);
  const std::string &text() const { return out_; }

 private:
  void separate(const char *key);
  std::string out_;
  std::vector<bool> first_{true};
};

std::string json_escape(const std::string &text);

}  // namespace petacomm::apps
