// A minimal JSON writer for describe(): objects, arrays, strings, numbers, booleans.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace petacomm::xchg {

class JsonWriter {
 public:
  JsonWriter &begin_object(const char *key = nullptr);
  JsonWriter &end_object();
  JsonWriter &begin_array(const char *key = nullptr);
  JsonWriter &end_array();
  JsonWriter &value(const char *key, const std::string &text);
  JsonWriter &value(const char *key, const char *text);
  JsonWriter &value(const char *key, double number);
  JsonWriter &value(const char *key, std::int64_t number);
  JsonWriter &value(const char *key, int number) { return value(key, std::int64_t{number}); }
  JsonWriter &value(const char *key, bool flag);
  JsonWriter &null(const char *key);
  const std::string &str() const { return out_; }

 private:
  void prefix(const char *key);
  std::string out_;
  std::vector<bool> first_;  // per open container: no element written yet
};

std::string json_escape(const std::string &text);

}  // namespace petacomm::xchg
