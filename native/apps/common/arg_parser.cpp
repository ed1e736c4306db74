#include "arg_parser.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "error.hpp"

namespace petacomm::apps {

ArgParser::ArgParser(std::string program, std::string description)
    : program_(std::move(program)), description_(std::move(description)) {}

void ArgParser::section(const std::string &title) {
  Entry e;
  e.name = title;
  e.is_section = true;
  entries_.push_back(std::move(e));
}

void ArgParser::option(const std::string &name, const std::string &metavar, const std::string &help,
                       std::function<void(const std::string &)> set) {
  entries_.push_back(Entry{name, metavar, help, std::move(set)});
}

void ArgParser::flag(const std::string &name, const std::string &help, bool *target) {
  Entry e{name, "", help, nullptr};
  e.flag = target;
  entries_.push_back(std::move(e));
}

bool ArgParser::parse(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") return false;
    std::string value;
    bool has_value = false;
    const auto eq = arg.find('=');
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_value = true;
    }
    const Entry *entry = nullptr;
    for (const auto &e : entries_)
      if (!e.is_section && e.name == arg) entry = &e;
    if (!entry) fail_arg("unknown option '", arg, "' (see ", program_, " --help)");
    given_.insert(arg);
    if (entry->flag) {
      if (has_value) fail_arg(arg, ": takes no value, got '", value, "'");
      *entry->flag = true;
      continue;
    }
    if (!has_value) {
      if (i + 1 >= argc) fail_arg(arg, ": expects a value (", entry->metavar, ")");
      value = argv[++i];
    }
    entry->set(value);
  }
  return true;
}

std::string ArgParser::help() const {
  std::ostringstream out;
  out << "usage: " << program_ << " [options]\n\n" << description_ << "\n";
  for (const auto &e : entries_) {
    if (e.is_section) {
      out << "\n" << e.name << ":\n";
      continue;
    }
    std::string head = "  " + e.name + (e.metavar.empty() ? "" : " " + e.metavar);
    if (head.size() < 26) {
      head.append(26 - head.size(), ' ');
    } else {
      head += "\n" + std::string(26, ' ');
    }
    // Continuation lines of a long help text line up under its first line.
    std::string text = e.help;
    std::string::size_type at = 0;
    while ((at = text.find('\n', at)) != std::string::npos) {
      text.insert(at + 1, std::string(26, ' '));
      at += 27;
    }
    out << head << text << "\n";
  }
  out << "  -h, --help                this help\n";
  return out.str();
}

std::int64_t parse_int(const std::string &name, const std::string &text, std::int64_t min,
                       std::int64_t max) {
  errno = 0;
  char *end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || errno != 0 || *end != '\0' || v < min || v > max)
    fail_arg(name, ": expected an integer in [", min, ", ", max, "], got '", text, "'");
  return v;
}

double parse_real(const std::string &name, const std::string &text, double min, double max) {
  errno = 0;
  char *end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || errno != 0 || *end != '\0' || !std::isfinite(v) || v < min || v > max)
    fail_arg(name, ": expected a number in [", min, ", ", max, "], got '", text, "'");
  return v;
}

std::string parse_choice(const std::string &name, const std::string &text,
                         const std::vector<std::string> &choices) {
  std::string all;
  for (const auto &c : choices) {
    if (c == text) return text;
    all += (all.empty() ? "" : ", ") + c;
  }
  fail_arg(name, ": expected one of ", all, ", got '", text, "'");
}

std::vector<std::string> split_list(const std::string &text) {
  std::vector<std::string> items;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) items.push_back(item);
  return items;
}

}  // namespace petacomm::apps
