// The layer's options: defaults, the PETACOMM_NODE_SIZE override, and the checks create runs
// on every rank before anything collective.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "petacomm/node.h"

namespace petacomm::node {

petacomm_node_options default_options();

// opts (or the defaults when NULL) with node_size resolved: 0 becomes PETACOMM_NODE_SIZE if
// set (a positive integer, else `problem` names it), otherwise stays 0 (whole domains).
petacomm_node_options resolve_options(const petacomm_node_options *opts, std::string &problem);

// "" when the options are usable, else the first problem, naming the field and the value.
std::string check_options(const petacomm_node_options &o);

// A hash of every option: create checks it agrees on all ranks.
std::uint64_t fingerprint(const petacomm_node_options &o);
// A hash of values that must agree between ranks.
std::uint64_t hash_values(std::initializer_list<std::int64_t> values);

}  // namespace petacomm::node
