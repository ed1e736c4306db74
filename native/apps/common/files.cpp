#include "files.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "error.hpp"

namespace petacomm::apps {
namespace {

constexpr char kNpyMagic[] = "\x93NUMPY";

std::string describe_errno() { return std::strerror(errno); }

// The value text after 'key': in a numpy header dict, e.g. "'<f8'", "False", "(3, 12)".
std::string header_value(const std::string &header, const std::string &key, const std::string &path,
                         const std::string &option) {
  const auto at = header.find("'" + key + "'");
  if (at == std::string::npos)
    fail_arg(option, ": '", path, "' is not a valid .npy file (no '", key, "' in its header)");
  auto start = header.find(':', at);
  if (start == std::string::npos) fail_arg(option, ": '", path, "' has a malformed .npy header");
  ++start;
  while (start < header.size() && header[start] == ' ') ++start;
  std::size_t stop = start;
  if (stop < header.size() && header[stop] == '(') {
    stop = header.find(')', stop);
    if (stop == std::string::npos) fail_arg(option, ": '", path, "' has a malformed .npy shape");
    ++stop;
  } else {
    while (stop < header.size() && header[stop] != ',' && header[stop] != '}') ++stop;
  }
  auto value = header.substr(start, stop - start);
  while (!value.empty() && value.back() == ' ') value.pop_back();
  return value;
}

std::vector<std::int64_t> parse_shape(const std::string &text, const std::string &path,
                                      const std::string &option) {
  std::vector<std::int64_t> shape;
  std::string inner = text.substr(1, text.size() - 2);
  std::stringstream in(inner);
  std::string item;
  while (std::getline(in, item, ',')) {
    std::size_t a = item.find_first_not_of(' ');
    if (a == std::string::npos) continue;  // trailing comma of a 1-tuple
    char *end = nullptr;
    const long long n = std::strtoll(item.c_str() + a, &end, 10);
    if (n < 0) fail_arg(option, ": '", path, "' has a negative dimension in its shape");
    shape.push_back(n);
  }
  return shape;
}

}  // namespace

void check_parent_writable(const std::string &path, const std::string &option) {
  if (path.empty()) return;
  const auto slash = path.find_last_of('/');
  const std::string dir =
      slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  if (::access(dir.c_str(), W_OK) != 0)
    fail_arg(option, ": cannot write '", path, "': directory '", dir, "' ",
             ::access(dir.c_str(), F_OK) == 0 ? "is not writable" : "does not exist");
}

void write_file_atomic(const std::string &path, const std::string &bytes,
                       const std::string &option) {
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) fail_arg(option, ": cannot write '", path, "': ", describe_errno());
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = describe_errno();
      ::close(fd);
      ::unlink(temporary.c_str());
      fail_arg(option, ": cannot write '", path, "': ", why);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0 || std::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string why = describe_errno();
    ::unlink(temporary.c_str());
    fail_arg(option, ": cannot write '", path, "': ", why);
  }
}

NpyArray read_npy(const std::string &path, const std::string &option) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail_arg(option, ": cannot read '", path, "': ", describe_errno());
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, kNpyMagic, 6) != 0)
    fail_arg(option, ": '", path, "' is not a .npy file (numpy.save writes them)");
  const int major = static_cast<unsigned char>(magic[6]);
  std::uint32_t header_length = 0;
  if (major == 1) {
    unsigned char b[2];
    if (!in.read(reinterpret_cast<char *>(b), 2)) fail_arg(option, ": '", path, "' is truncated");
    header_length = b[0] | (b[1] << 8);
  } else if (major == 2 || major == 3) {
    unsigned char b[4];
    if (!in.read(reinterpret_cast<char *>(b), 4)) fail_arg(option, ": '", path, "' is truncated");
    header_length = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<std::uint32_t>(b[3]) << 24);
  } else {
    fail_arg(option, ": '", path, "' has .npy format version ", major, " (1 to 3 supported)");
  }
  std::string header(header_length, '\0');
  if (!in.read(header.data(), header_length)) fail_arg(option, ": '", path, "' is truncated");
  const std::string descr = header_value(header, "descr", path, option);
  if (descr != "'<f8'" && descr != "'=f8'" && descr != "'f8'")
    fail_arg(option, ": '", path, "' holds ", descr,
             " values; expected float64 '<f8' (convert with numpy.save(path, a.astype('<f8')))");
  if (header_value(header, "fortran_order", path, option) != "False")
    fail_arg(option, ": '", path, "' is in Fortran order; save numpy.ascontiguousarray(a) instead");
  NpyArray array;
  array.shape = parse_shape(header_value(header, "shape", path, option), path, option);
  std::int64_t count = 1;
  for (auto n : array.shape) count *= n;
  array.data.resize(static_cast<std::size_t>(count));
  if (count > 0 && !in.read(reinterpret_cast<char *>(array.data.data()),
                            static_cast<std::streamsize>(count * sizeof(double))))
    fail_arg(option, ": '", path, "' is truncated (expected ", count, " float64 values)");
  return array;
}

void write_npy(const std::string &path, const std::vector<std::int64_t> &shape,
               const std::vector<double> &data, const std::string &option) {
  std::string dims;
  for (std::size_t i = 0; i < shape.size(); ++i) dims += std::to_string(shape[i]) + ", ";
  if (shape.size() > 1) dims.erase(dims.size() - 2);  // "(3, 12)"; a 1-tuple keeps "(12,)"
  if (shape.size() == 1) dims.erase(dims.size() - 1);
  std::string header = "{'descr': '<f8', 'fortran_order': False, 'shape': (" + dims + "), }";
  // Magic (6) + version (2) + length (2) + header + '\n', padded to a multiple of 64.
  const std::size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::string bytes(kNpyMagic, 6);
  bytes += '\x01';
  bytes += '\x00';
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>((header.size() >> 8) & 0xff);
  bytes += header;
  bytes.append(reinterpret_cast<const char *>(data.data()), data.size() * sizeof(double));
  write_file_atomic(path, bytes, option);
}

}  // namespace petacomm::apps
