// Regions from C++ (PETACOMM_PROF_REGION and the inline C functions), nesting, pausing with
// MPI_Pcontrol(0), MPI_Pcontrol(1) without a name (as mpi4py calls it), a name that is not
// UTF-8, and nameless calls whose variadic register holds garbage.
//   outer: 1 MPI_Allreduce (8 B), 1 MPI_Barrier (closes it: LBST)
//   inner (inside outer, entered twice): per entry 1 MPI_Bcast (16 B, root 0), 1 MPI_Barrier
//   paused: 1 MPI_Allreduce that must not be recorded
//   "caf\xe9" (Latin-1, not UTF-8): 1 MPI_Barrier; the log calls it "caf\u00e9"
//   garbage: 4 nameless MPI_Pcontrol(1) with the name register pointing at binary bytes,
//            300 bytes without a terminator, a control character and an unmapped address:
//            none opens a region
#include <petacomm/prof.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

namespace {
// MPI_Pcontrol(1) with `garbage` where a name would be (x86-64: the second argument
// register); elsewhere a plain nameless call.
void nameless_pcontrol(const void *garbage) {
#if defined(__x86_64__)
  int (*fn)(int, ...) = MPI_Pcontrol;
  asm volatile("" : "+r"(fn));  // no inlining across the register set-up
  register const void *rsi asm("rsi") = garbage;
  register long edi asm("rdi") = 1;
  register long eax asm("rax") = 0;
  asm volatile("call *%[fn]"
               : "+r"(edi), "+r"(rsi), "+r"(eax)
               : [fn] "r"(fn)
               : "rcx", "rdx", "r8", "r9", "r10", "r11", "memory", "cc");
#else
  (void)garbage;
  MPI_Pcontrol(1);
#endif
}
}  // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int failures = 0;
  {
    PETACOMM_PROF_REGION("outer");
    double x = 1.0, sum = 0.0;
    MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (sum != size) ++failures;
    for (int i = 0; i < 2; ++i) {
      petacomm_prof_begin("inner");
      int v[4] = {rank, rank, rank, rank};
      MPI_Bcast(v, 4, MPI_INT, 0, MPI_COMM_WORLD);
      if (v[3] != 0) ++failures;
      MPI_Barrier(MPI_COMM_WORLD);
      petacomm_prof_end("inner");
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  MPI_Pcontrol(0);
  int one = 1, n = 0;
  MPI_Allreduce(&one, &n, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Pcontrol(1);  // no name: resumes recording, opens no region
  if (n != size) ++failures;
  MPI_Pcontrol(1, "caf\xe9");
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Pcontrol(-1, "caf\xe9");
  static const unsigned char binary[] = {0x48, 0x89, 0xe5, 0x01, 0x90, 0x00};
  static char unterminated[300];
  std::memset(unterminated, 'a', sizeof(unterminated));
  static const char control[] = "tab\there";
  nameless_pcontrol(binary);
  nameless_pcontrol(unterminated);  // no NUL within the 256 bytes a name may have
  nameless_pcontrol(control);
  nameless_pcontrol(reinterpret_cast<const void *>(static_cast<uintptr_t>(16)));
  MPI_Finalize();
  if (rank == 0) std::printf("prof_regions: %d ranks, %d failures\n", size, failures);
  return failures ? 1 : 0;
}
