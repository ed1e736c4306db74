// Mapping files written by `petacomm map` (python/petacomm/topology/launcher_files.py), read
// back as "rank r runs on node n, core c": Open MPI rankfile, Slurm arbitrary-distribution
// host file, petacomm's CSV, Cray MPICH rank order, Blue Gene/P and /Q map files. Nodes are
// numbered in the order the ranks first use them; for the Slurm file (hosts only) the core
// is the rank's position among the ranks of its host.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

namespace petacomm::apps::halo {

extern const char *const kMappingFormats[];  // "auto", then the formats

struct MappingFile {
  std::string path, format;
  std::vector<std::string> node_names;  // per node index: host name, node id or coordinates
  std::vector<int> node, core;          // per rank
  std::vector<std::string> host;        // per rank; empty for formats without host names
  int nodes() const { return static_cast<int>(node_names.size()); }
};

// Parses `text` (the file's contents) for `ranks` ranks; ERR_ARG naming --mapping, the file
// and the line at fault. format: "auto" or one of kMappingFormats.
MappingFile parse_mapping(const std::string &text, const std::string &path,
                          const std::string &format, int ranks);

// Collective: rank 0 reads the file and every rank parses the same text.
MappingFile read_mapping(const std::string &path, const std::string &format, MPI_Comm comm);

}  // namespace petacomm::apps::halo
