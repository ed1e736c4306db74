// Writing JSON text: numbers, and strings escaped so that the result is always valid JSON
// and valid UTF-8 whatever the bytes (argv, region names, hostnames are bytes, not text):
// a byte that is not part of a valid UTF-8 sequence is written as \u00XX (the character of
// that value), control characters as \uXXXX.
#pragma once

#include <cstdint>
#include <string>

namespace petacomm::prof {

class JsonOut {
 public:
  explicit JsonOut(std::string *target) : out_(target) {}
  JsonOut &s(const char *raw);  // verbatim (JSON syntax)
  JsonOut &s(const std::string &raw) {
    out_->append(raw);
    return *this;
  }
  JsonOut &u(uint64_t v);
  JsonOut &i(int64_t v);
  JsonOut &q(const char *text);  // a quoted, escaped string
  JsonOut &q(const char *text, size_t n);

 private:
  std::string *out_;
};

// Length of the valid UTF-8 sequence at `p` (n bytes available), or 0 when invalid.
int utf8_sequence(const unsigned char *p, size_t n);

// `args` (n NUL-separated words, as /proc/self/cmdline) as a JSON array of strings, and as
// shell words for people ("./app 'two words'"); both escaped/quoted.
std::string command_json(const char *args, size_t n);
std::string command_shell(const char *args, size_t n);

}  // namespace petacomm::prof
