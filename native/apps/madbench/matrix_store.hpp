// MADbench's out-of-core matrices: every process writes and reads its own local block of
// each matrix to and from its own file (one file per process per matrix), in --iodir.
// Concurrency is throttled by token passing: processes form chains of MOD consecutive
// ranks and a process does its I/O only after the previous one in its chain has finished,
// so 1/MOD of the processes do I/O at once (RMOD for reads, WMOD for writes).
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

namespace petacomm::apps::madbench {

class MatrixStore {
 public:
  MatrixStore(std::string directory, int rmod, int wmod, MPI_Comm comm);
  // Collective: checks that every process can create files in the directory (creating it
  // when missing); throws on every rank, naming --iodir and the first failing rank's reason.
  void check_writable();
  // Write or read this process's local array of matrix `name` (collective only through
  // the token passing when RMOD/WMOD > 1). A failure is remembered, not thrown: the ranks
  // would otherwise have to agree after every file, which synchronises them.
  void write(const std::string &name, const std::vector<double> &local);
  void read(const std::string &name, std::vector<double> &local);
  // Collective: throws on every rank, naming --iodir and the first failing rank's reason,
  // when any process's I/O has failed so far.
  void agree();
  void remove_all();  // deletes the files this process wrote
  double bytes_written() const { return bytes_written_; }
  double bytes_read() const { return bytes_read_; }

 private:
  std::string path(const std::string &name) const;
  template <typename Io>
  void throttled(int mod, Io &&io);
  std::string directory_;
  int rmod_, wmod_;
  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  std::vector<std::string> written_;
  std::string error_;  // this process's first I/O failure
  double bytes_written_ = 0, bytes_read_ = 0;
};

}  // namespace petacomm::apps::madbench
