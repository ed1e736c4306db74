#include "matrix_store.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "app_support.hpp"

namespace petacomm::apps::madbench {
namespace {

constexpr int kTokenTag = 7301;

// Reads or writes exactly `bytes` bytes; returns "" or the reason for failing.
std::string transfer_all(int fd, char *data, std::size_t bytes, bool writing) {
  std::size_t done = 0;
  while (done < bytes) {
    const ssize_t n =
        writing ? ::write(fd, data + done, bytes - done) : ::read(fd, data + done, bytes - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::strerror(errno);
    if (n == 0) return "unexpected end of file";
    done += static_cast<std::size_t>(n);
  }
  return "";
}

}  // namespace

MatrixStore::MatrixStore(std::string directory, int rmod, int wmod, MPI_Comm comm)
    : directory_(std::move(directory)), rmod_(rmod), wmod_(wmod), comm_(comm) {
  PETACOMM_APP_MPI(MPI_Comm_rank(comm, &rank_));
  PETACOMM_APP_MPI(MPI_Comm_size(comm, &size_));
}

std::string MatrixStore::path(const std::string &name) const {
  return directory_ + "/madbench." + name + ".r" + std::to_string(rank_) + ".dat";
}

void MatrixStore::check_writable() {
  std::string error;
  struct stat info;
  if (rank_ == 0 && ::stat(directory_.c_str(), &info) != 0 && errno == ENOENT &&
      ::mkdir(directory_.c_str(), 0755) != 0 && errno != EEXIST)
    error = std::string("cannot create '") + directory_ + "': " + std::strerror(errno);
  PETACOMM_APP_MPI(MPI_Barrier(comm_));
  if (error.empty()) {
    const std::string probe = path("probe");
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
      error = std::string("cannot write in '") + directory_ + "': " + std::strerror(errno);
    } else {
      ::close(fd);
      ::unlink(probe.c_str());
    }
  }
  agree_on_error(error.empty() ? "" : "--iodir: " + error, comm_);
}

template <typename Io>
void MatrixStore::throttled(int mod, Io &&io) {
  // Chains of `mod` consecutive ranks: wait for the token from the previous rank of the
  // chain, do the I/O, pass the token on.
  const int position = rank_ % mod;
  if (position > 0)
    PETACOMM_APP_MPI(
        MPI_Recv(nullptr, 0, MPI_BYTE, rank_ - 1, kTokenTag, comm_, MPI_STATUS_IGNORE));
  const std::string error = io();
  if (position + 1 < mod && rank_ + 1 < size_)
    PETACOMM_APP_MPI(MPI_Send(nullptr, 0, MPI_BYTE, rank_ + 1, kTokenTag, comm_));
  if (error_.empty() && !error.empty()) error_ = "--iodir: " + error;
}

void MatrixStore::agree() { agree_on_error(error_, comm_); }

void MatrixStore::write(const std::string &name, const std::vector<double> &local) {
  const std::string file = path(name);
  throttled(wmod_, [&]() -> std::string {
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return "cannot write '" + file + "': " + std::strerror(errno);
    std::string why = transfer_all(fd, reinterpret_cast<char *>(const_cast<double *>(local.data())),
                                   local.size() * sizeof(double), true);
    if (::close(fd) != 0 && why.empty()) why = std::strerror(errno);
    if (!why.empty()) return "cannot write '" + file + "': " + why;
    return "";
  });
  if (std::find(written_.begin(), written_.end(), file) == written_.end()) written_.push_back(file);
  bytes_written_ += static_cast<double>(local.size() * sizeof(double));
}

void MatrixStore::read(const std::string &name, std::vector<double> &local) {
  const std::string file = path(name);
  throttled(rmod_, [&]() -> std::string {
    const int fd = ::open(file.c_str(), O_RDONLY);
    if (fd < 0) return "cannot read '" + file + "': " + std::strerror(errno);
    const std::string why = transfer_all(fd, reinterpret_cast<char *>(local.data()),
                                         local.size() * sizeof(double), false);
    ::close(fd);
    return why.empty() ? "" : "cannot read '" + file + "': " + why;
  });
  bytes_read_ += static_cast<double>(local.size() * sizeof(double));
}

void MatrixStore::remove_all() {
  for (const auto &file : written_) ::unlink(file.c_str());
  written_.clear();
}

}  // namespace petacomm::apps::madbench
