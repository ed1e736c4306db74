#!/usr/bin/env bash
# Builds a peer profiler (IPM or mpiP) from its source release against one MPI, into the
# cache where `petacomm bench profiler-overhead --peers ipm,mpip` finds it.
#   scripts/build-profiler-peer.sh ipm|mpip SOURCE [--mpicc PATH] [--cache DIR]
# SOURCE: a source directory or a tarball (IPM: github nerscadmin/IPM; mpiP: github
# LLNL/mpiP), copied before building: the source is never modified. --mpicc: the MPI's C
# compiler wrapper (default: the one petacomm was built with, .venv/bin/mpicc). The library
# lands in CACHE/peers/NAME-<hash of mpicc>/lib/ with peer.json (name, mpicc, libmpi, source);
# CACHE is PETACOMM_PROF_CACHE or ~/.cache/petacomm/profilers, as for `petacomm profiler`.
# Needs: autoconf, automake, libtool (IPM); binutils-dev, libunwind-dev, libiberty-dev (mpiP).
set -euo pipefail
usage() { sed -n '2,11p' "$0"; }
case ${1:-} in -h|--help) usage; exit 0 ;; esac
[ $# -ge 2 ] || { usage >&2; exit 2; }
name=$1 source=$2
shift 2
root=$(cd "$(dirname "$0")/.." && pwd)
mpicc="$root/.venv/bin/mpicc"
cache=${PETACOMM_PROF_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/petacomm/profilers}
cache_from="the cache (PETACOMM_PROF_CACHE or ~/.cache/petacomm/profilers)"
while [ $# -gt 0 ]; do
  case $1 in
    --mpicc|--cache)
      [ $# -ge 2 ] || { echo "build-profiler-peer: $1 needs a value" >&2; exit 2; }
      if [ "$1" = --mpicc ]; then mpicc=$2; else cache=$2 cache_from=--cache; fi
      shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "build-profiler-peer: unknown option '$1'" >&2; exit 2 ;;
  esac
done
case $name in ipm|mpip) ;; *) echo "build-profiler-peer: NAME must be ipm or mpip, got '$name'" >&2; exit 2 ;; esac
die() { echo "build-profiler-peer: $1" >&2; exit 2; }
[ -e "$source" ] || die "SOURCE '$source' does not exist"
[ -n "$mpicc" ] || die "--mpicc '' is empty"
[ ! -d "$mpicc" ] || die "--mpicc '$mpicc' is a directory, not a compiler"
found=$(command -v -- "$mpicc") && [ -x "$found" ] && [ ! -d "$found" ] || {
  [ -e "$mpicc" ] && die "--mpicc '$mpicc' is not executable"
  die "--mpicc '$mpicc' not found"
}
mpicc=$(realpath -s "$found")  # the build runs in another directory
# The cache must take the result: checked now, not after the whole build.
why=$(mkdir -p -- "$cache/peers" 2>&1 && mktemp -d "$cache/peers/.probe.XXXXXX" 2>&1) ||
  die "$cache_from '$cache' cannot be written (${why%%$'\n'*})"
rmdir -- "$why"
mpicxx=${mpicc%mpicc}mpicxx
[ -x "$mpicxx" ] || mpicxx=$mpicc
key=$(printf '%s' "$mpicc" | sha256sum | cut -c1-12)
target="$cache/peers/$name-$key"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -d "$source" ]; then
  cp -a "$source" "$work/src"
else
  mkdir "$work/src"
  tar -xf "$source" -C "$work/src" --strip-components=1 2>"$work/tar.log" ||
    die "SOURCE '$source' is neither a directory nor a tarball tar can read ($(head -n 1 "$work/tar.log"))"
fi
cd "$work/src"
log="$work/build.log"
fail() { echo "build-profiler-peer: $1 failed; last lines of the log:" >&2; tail -n 30 "$log" >&2; exit 1; }
if [ "$name" = ipm ]; then
  [ -x configure ] || ./bootstrap.sh >"$log" 2>&1 || fail "IPM bootstrap (autoreconf)"
  # The Fortran interface library is not needed (and cannot be built where the MPI has no
  # Fortran bindings): only libipm, which wraps the C API.
  ./configure MPICC="$mpicc" MPIFC=gfortran CC=gcc CFLAGS="-O3 -fPIC" >>"$log" 2>&1 ||
    fail "IPM configure"
  # libtool does not know how an MPI wrapper passes linker options: tell it (-Wl,).
  sed -i 's/^wl=""$/wl="-Wl,"/' libtool
  make -C src libipm.la >>"$log" 2>&1 || fail "IPM make"
  built=src/.libs/libipm.so
  lib=libipm.so
else
  # mpiP's helper that reads the Fortran MPI_IN_PLACE/MPI_BOTTOM addresses includes mpif.h:
  # compiled with this MPI's own Fortran wrapper when it has one that finds mpif.h.
  mpifort=
  for f in "${mpicc%mpicc}mpifort" "${mpicc%mpicc}mpif90"; do
    if [ -x "$f" ] && printf "      program t\n      include 'mpif.h'\n      end\n" >"$work/t.f" &&
      "$f" -c "$work/t.f" -o "$work/t.o" >/dev/null 2>&1; then
      mpifort=$f
      break
    fi
  done
  ./configure --with-cc="$mpicc" --with-cxx="$mpicxx" --with-f77="${mpifort:-gfortran}" \
    CFLAGS="-O3 -fPIC" >"$log" 2>&1 || fail "mpiP configure"
  fortran_vars=fortran_vars.o
  if [ -z "$mpifort" ]; then
    # An MPI without Fortran bindings (no Fortran wrapper, as the PyPI Open MPI): the helper
    # cannot be compiled; no Fortran call can happen, so it reports none. mpiP's C profiling
    # is unchanged.
    printf '#include <stddef.h>\nvoid fortran_vars(size_t *a, size_t *b, size_t *c, size_t *d) { *a = *b = *c = *d = 0; }\n' >fortran_vars_none.c
    fortran_vars=fortran_vars_none.o
  fi
  LOGNAME=${LOGNAME:-petacomm} make shared FORTRAN_VARS_OBJ=$fortran_vars >>"$log" 2>&1 ||
    fail "mpiP make"
  built=libmpiP.so
  lib=libmpiP.so
fi
libmpi=$(ldd "$built" | awk '/libmpi(ch)?\.so/ {print $3; exit}')
rm -rf "$target.tmp" && mkdir -p "$target.tmp/lib"
cp -L "$built" "$target.tmp/lib/$lib"
printf '{"name": "%s", "mpicc": "%s", "libmpi": "%s", "source": "%s", "library": "%s"}\n' \
  "$name" "$mpicc" "$(readlink -f "$libmpi")" "$(readlink -f "$source")" "lib/$lib" \
  >"$target.tmp/peer.json"
rm -rf "$target" && mv "$target.tmp" "$target"
echo "built $name: $target/lib/$lib (links $(readlink -f "$libmpi"))"
