// State of the POSIX I/O wrappers (generated: prof_wrappers_posix.cpp).
#include "posix_io.hpp"

namespace petacomm::prof {

__thread bool t_main_thread __attribute__((tls_model("initial-exec"))) = false;

}  // namespace petacomm::prof
