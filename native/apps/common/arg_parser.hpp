// Command-line options of the mini-apps: --name VALUE (or --name=VALUE) and flags, a
// generated --help, and errors that name the option and the value at fault.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

namespace petacomm::apps {

class ArgParser {
 public:
  ArgParser(std::string program, std::string description);
  void section(const std::string &title);
  void option(const std::string &name, const std::string &metavar, const std::string &help,
              std::function<void(const std::string &)> set);
  void flag(const std::string &name, const std::string &help, bool *target);
  // Parses argv; returns false when --help was asked (the help is then in help()).
  // Throws petacomm::Error (PETACOMM_ERR_ARG) naming the option on bad input.
  bool parse(int argc, char **argv);
  bool given(const std::string &name) const { return given_.count(name) != 0; }
  std::string help() const;

 private:
  struct Entry {
    std::string name, metavar, help;
    std::function<void(const std::string &)> set;
    bool *flag = nullptr;
    bool is_section = false;
  };
  std::string program_, description_;
  std::vector<Entry> entries_;
  std::set<std::string> given_;
};

// Value parsers: throw "NAME: expected ..., got 'TEXT'".
std::int64_t parse_int(const std::string &name, const std::string &text, std::int64_t min,
                       std::int64_t max);
double parse_real(const std::string &name, const std::string &text, double min, double max);
std::string parse_choice(const std::string &name, const std::string &text,
                         const std::vector<std::string> &choices);
std::vector<std::string> split_list(const std::string &text);

}  // namespace petacomm::apps
