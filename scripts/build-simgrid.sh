#!/usr/bin/env bash
# Builds SimGrid 3.32 (the version Debian ships) from its source with one fix that lets
# SMPI simulate sparse exchanges of thousands of ranks: every actor's list of pending
# activities -- and the maestro's list of every detached send in flight -- becomes a set.
#   scripts/build-simgrid.sh SOURCE [--prefix DIR] [--jobs N]
# SOURCE: SimGrid's source at tag v3.32 (github simgrid/simgrid), a directory or a tarball;
# it is copied, never modified. DIR (default: PETACOMM_SIMGRID_PREFIX or
# ~/.cache/petacomm/simgrid-3.32-set) receives bin/smpicc, bin/smpirun, lib/libsimgrid.so;
# use it with `petacomm simulate --simgrid DIR` (or put DIR/bin first on PATH).
# Why: SimGrid 3.32 keeps those activities in std::list and calls list::remove when a
# communication finishes, which walks the whole list. Small sends are detached, so every
# finished send walks the list of all sends in flight in the whole simulation: a phase of
# M messages costs O(M^2). On `petacomm simulate sparse-reduce --ranks 256` with owner, 90 %
# of the simulation's time was in that walk (perf). SimGrid 4.x keeps a std::set; the patch
# (scripts/simgrid/3.32-activity-set.patch) does the same in 3.32, so simulated times are
# those of Debian's 3.32 (checked by tests/sim/test_simgrid_build.py when DIR exists).
# Needs: cmake, g++, libboost-dev, libboost-context-dev (as for Debian's own build).
set -euo pipefail
usage() { sed -n '2,10p' "$0"; }
[ $# -ge 1 ] || { usage >&2; exit 2; }
case $1 in -h|--help) usage; exit 0 ;; esac
source=$1
shift
root=$(cd "$(dirname "$0")/.." && pwd)
prefix=${PETACOMM_SIMGRID_PREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/petacomm/simgrid-3.32-set}
jobs=$(nproc)
while [ $# -gt 0 ]; do
  case $1 in
    --prefix) prefix=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "build-simgrid: unknown option '$1'" >&2; exit 2 ;;
  esac
done
[ -e "$source" ] || { echo "build-simgrid: SOURCE '$source' does not exist" >&2; exit 2; }
prefix=$(realpath -m "$prefix")
patch_file="$root/scripts/simgrid/3.32-activity-set.patch"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -d "$source" ]; then
  cp -a "$source" "$work/src"
else
  mkdir "$work/src" && tar -xf "$source" -C "$work/src" --strip-components=1
fi
version=$(sed -n 's/^set(SIMGRID_VERSION_MAJOR "\([0-9]*\)").*/\1/p; s/^set(SIMGRID_VERSION_MINOR "\([0-9]*\)").*/\1/p' \
  "$work/src/CMakeLists.txt" 2>/dev/null | paste -sd.) || true
[ "$version" = 3.32 ] ||
  { echo "build-simgrid: SOURCE is SimGrid '$version', the patch is for 3.32 (tag v3.32)" >&2; exit 2; }
log="$work/build.log"
fail() { echo "build-simgrid: $1 failed; last lines of the log:" >&2; tail -n 30 "$log" >&2; exit 1; }
cd "$work"  # SimGrid's configure compiles a probe program in the working directory
patch -d "$work/src" -p1 <"$patch_file" >"$log" 2>&1 || fail "applying $patch_file"
# No LTO (it triples the link time), no Fortran, Java or Python bindings: petacomm's SMPI
# programs are C and C++.
cmake -S "$work/src" -B "$work/build" -DCMAKE_INSTALL_PREFIX="$prefix" -Denable_lto=OFF \
  -Denable_fortran=OFF -Denable_java=OFF -Denable_python=OFF -Denable_documentation=OFF \
  -Denable_smpi=ON -Denable_model-checking=OFF >>"$log" 2>&1 || fail "cmake configure"
cmake --build "$work/build" -j "$jobs" >>"$log" 2>&1 || fail "make"
cmake --install "$work/build" >>"$log" 2>&1 || fail "install"
printf '{"simgrid": "3.32", "patch": "%s", "source": "%s"}\n' "$(sha256sum "$patch_file" | cut -c1-12)" \
  "$source" >"$prefix/petacomm-build.json"
echo "SimGrid 3.32 (activity-set patch) installed in $prefix"
echo "use: petacomm simulate --simgrid $prefix ..."
