// Strategy registries and the planner's decision, shared by every algorithm family.
//
// A family (sparse reduction, transposes, node layer) describes each strategy by one entry
// type of its own (name, options, cost function, build function); each strategy lives in
// one source file that defines its entry, and the family's registry file lists the entries
// in one table:
//
//   extern const XchgStrategy kOwner;                 // strategy_owner.cpp defines it
//   const StrategyRegistry<XchgStrategy> &registry() {
//     static const StrategyRegistry<XchgStrategy> r({&kDense, &kAllgather, &kOwner});
//     return r;
//   }
//
// so adding a strategy touches its own file and one line of that table. Entry types must
// have a member `StrategyAbout about` (what the C API, the Python binding and the docs
// list). The planner is a pure function from costs to a Decision, testable without MPI.
#pragma once

#include <cmath>
#include <cstddef>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "error.hpp"
#include "petacomm/core.h"

namespace petacomm {

// The descriptive part of a registry entry (static strings).
struct StrategyAbout {
  const char *name;     // as callers spell it: "directory"
  const char *summary;  // one sentence
  const char *options;  // space-separated option names it reads, "" if none
};

template <class Entry>
class StrategyRegistry {
 public:
  explicit StrategyRegistry(std::vector<const Entry *> entries) : entries_(std::move(entries)) {
    for (std::size_t i = 0; i < entries_.size(); ++i)
      for (std::size_t j = 0; j < i; ++j)
        PETACOMM_CHECK_INTERNAL(
            std::string_view(entries_[i]->about.name) != entries_[j]->about.name, "strategy '",
            entries_[i]->about.name, "' registered twice");
  }

  std::size_t size() const { return entries_.size(); }
  const Entry &at(std::size_t i) const { return *entries_.at(i); }
  const std::vector<const Entry *> &entries() const { return entries_; }

  // nullptr when no strategy has this name.
  const Entry *find(std::string_view name) const {
    for (const Entry *e : entries_)
      if (name == e->about.name) return e;
    return nullptr;
  }

  // Index in registration order, or -1.
  int index_of(std::string_view name) const {
    for (std::size_t i = 0; i < entries_.size(); ++i)
      if (name == entries_[i]->about.name) return static_cast<int>(i);
    return -1;
  }

  // "a, b or c", optionally preceded by extra names ("auto") for error messages.
  std::string names(std::string_view first = {}) const {
    std::vector<std::string_view> all;
    if (!first.empty()) all.push_back(first);
    for (const Entry *e : entries_) all.emplace_back(e->about.name);
    std::string out;
    for (std::size_t i = 0; i < all.size(); ++i) {
      if (i > 0) out += i + 1 == all.size() ? " or " : ", ";
      out += all[i];
    }
    return out;
  }

  // The entry called `name`, or an ERR_ARG naming `argument`, the value and the choices.
  const Entry &require(const char *argument, std::string_view name) const {
    const Entry *e = find(name);
    if (e == nullptr)
      fail_arg(argument, ": unknown strategy '", name, "' (expected ", names(), ")");
    return *e;
  }

  // Fills the C API's description of entry i; ERR_ARG when i is out of range.
  void info(int i, petacomm_strategy_info *out) const {
    PETACOMM_CHECK_ARG(out != nullptr, "info: must not be NULL");
    PETACOMM_CHECK_ARG(i >= 0 && static_cast<std::size_t>(i) < entries_.size(), "index: ", i,
                       " is out of range [0, ", entries_.size(), ")");
    const StrategyAbout &a = entries_[static_cast<std::size_t>(i)]->about;
    *out = petacomm_strategy_info{a.name, a.summary, a.options};
  }

 private:
  std::vector<const Entry *> entries_;
};

// One candidate as the planner saw it.
struct CandidateCost {
  std::string name;
  bool applicable = true;
  std::string not_applicable_because;  // when !applicable: "needs a power-of-two p"
  double predicted_seconds = std::numeric_limits<double>::quiet_NaN();  // per execution
  double measured_seconds = std::numeric_limits<double>::quiet_NaN();   // NaN: not timed
};

// What a planner decided: the choice, every candidate's cost and a sentence saying why.
struct Decision {
  std::string choice;
  std::vector<CandidateCost> candidates;
  std::string reason;
  bool measured = false;  // chosen by measured rather than predicted time
};

// The applicable candidate with the least time: measured time when every applicable
// candidate was measured, predicted time otherwise; ties go to the earlier candidate
// (registry order). Pure: no MPI, no clocks. ERR_ARG when no candidate is applicable.
inline Decision decide_cheapest(std::vector<CandidateCost> candidates) {
  Decision d;
  bool all_measured = true, any = false;
  for (const CandidateCost &c : candidates)
    if (c.applicable) {
      any = true;
      all_measured = all_measured && !std::isnan(c.measured_seconds);
    }
  if (!any) {
    std::string why;
    for (const CandidateCost &c : candidates)
      why += concat(why.empty() ? "" : "; ", c.name, ": ", c.not_applicable_because);
    fail_arg("strategy: no candidate applies (", why, ")");
  }
  d.measured = all_measured;
  auto time_of = [&](const CandidateCost &c) {  // an unknown (NaN) time never wins
    const double t = all_measured ? c.measured_seconds : c.predicted_seconds;
    return std::isnan(t) ? std::numeric_limits<double>::infinity() : t;
  };
  const CandidateCost *best = nullptr, *second = nullptr;
  for (const CandidateCost &c : candidates) {
    if (!c.applicable) continue;
    const double t = time_of(c);
    if (best == nullptr || t < time_of(*best)) {
      second = best;
      best = &c;
    } else if (second == nullptr || t < time_of(*second)) {
      second = &c;
    }
  }
  std::ostringstream why;
  why << (all_measured ? "lowest measured time: " : "lowest predicted time: ") << best->name << " "
      << time_of(*best) * 1e6 << " us";
  if (second != nullptr) why << " vs " << second->name << " " << time_of(*second) * 1e6 << " us";
  d.choice = best->name;
  d.reason = why.str();
  d.candidates = std::move(candidates);
  return d;
}

}  // namespace petacomm
