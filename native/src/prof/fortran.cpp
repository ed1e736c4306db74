// Support of the Fortran wrappers: the MPI library's own Fortran binding to forward to, and
// its sentinel addresses (MPI_IN_PLACE, MPI_BOTTOM, MPI_F_STATUS(ES)_IGNORE).
#include "fortran.hpp"

#include <dlfcn.h>

#include <atomic>

namespace petacomm::prof {

namespace {
// MPICH's Fortran bindings set their sentinels (MPI_F_STATUS_IGNORE, the addresses of the
// Fortran MPI_IN_PLACE and MPI_BOTTOM) on their first call, when MPIR_F_NeedInit is set. The
// wrappers compare arguments with them before forwarding: in a program whose first Fortran
// MPI call is not MPI_INIT (MPI initialised from C), do that initialisation first, as the
// binding would.
void mpich_fortran_init() {
  static std::atomic<bool> done{false};
  if (done.load(std::memory_order_acquire)) return;
  auto *need = static_cast<int *>(dlsym(RTLD_DEFAULT, "MPIR_F_NeedInit"));
  auto init = reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "mpirinitf_"));
  if (need && init && *need) {
    init();
    *need = 0;
  }
  done.store(true, std::memory_order_release);
}
}  // namespace

void *fortran_lookup(void **cache, const char *symbol) {
  void *fn = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
  if (!fn) {
    mpich_fortran_init();
    fn = dlsym(RTLD_NEXT, symbol);
    __atomic_store_n(cache, fn, __ATOMIC_RELEASE);
  }
  return fn;
}

namespace {
// The `use mpi_f08` sentinel SYMBOL names, when the MPI library defines it: MPICH's object
// MPIR_F08_MPI_STATUS(ES)_IGNORE_OBJ; the MPI-3 C pointer MPI_F08_STATUS(ES)_IGNORE to it.
const void *f08_sentinel(const char *object, const char *pointer) {
  if (const void *obj = dlsym(RTLD_DEFAULT, object)) return obj;
  auto *ptr = static_cast<const void *const *>(dlsym(RTLD_DEFAULT, pointer));
  return ptr ? *ptr : nullptr;
}
}  // namespace

bool fortran_status_ignored(const MPI_Fint *status) {
  if (status == MPI_F_STATUS_IGNORE) return true;
  static const void *f08 = f08_sentinel("MPIR_F08_MPI_STATUS_IGNORE_OBJ", "MPI_F08_STATUS_IGNORE");
  return f08 && status == f08;
}

bool fortran_statuses_ignored(const MPI_Fint *statuses) {
  if (statuses == MPI_F_STATUSES_IGNORE) return true;
  static const void *f08 =
      f08_sentinel("MPIR_F08_MPI_STATUSES_IGNORE_OBJ", "MPI_F08_STATUSES_IGNORE");
  return f08 && statuses == f08;
}

const void *fortran_buffer(const void *buffer) {
  struct Sentinels {
    const void *in_place[4];
    const void *bottom[4];
    void *const *mpich_in_place;  // MPICH keeps the addresses in variables, set at run time
    void *const *mpich_bottom;
  };
  static Sentinels s = [] {
    Sentinels t{};
    const char *in_place[] = {"mpi_fortran_in_place_", "mpi_fortran_in_place",
                              "mpi_fortran_in_place__", "MPI_FORTRAN_IN_PLACE"};
    const char *bottom[] = {"mpi_fortran_bottom_", "mpi_fortran_bottom", "mpi_fortran_bottom__",
                            "MPI_FORTRAN_BOTTOM"};
    for (int i = 0; i < 4; ++i) {
      t.in_place[i] = dlsym(RTLD_DEFAULT, in_place[i]);
      t.bottom[i] = dlsym(RTLD_DEFAULT, bottom[i]);
    }
    t.mpich_in_place = static_cast<void *const *>(dlsym(RTLD_DEFAULT, "MPIR_F_MPI_IN_PLACE"));
    t.mpich_bottom = static_cast<void *const *>(dlsym(RTLD_DEFAULT, "MPIR_F_MPI_BOTTOM"));
    return t;
  }();
  if (!buffer) return buffer;
  for (int i = 0; i < 4; ++i) {
    if (buffer == s.in_place[i]) return MPI_IN_PLACE;
    if (buffer == s.bottom[i]) return MPI_BOTTOM;
  }
  if (s.mpich_in_place && buffer == *s.mpich_in_place) return MPI_IN_PLACE;
  if (s.mpich_bottom && buffer == *s.mpich_bottom) return MPI_BOTTOM;
  return buffer;
}

}  // namespace petacomm::prof
