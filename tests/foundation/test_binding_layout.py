"""The ctypes mirrors of every family's header against the C compiler: a C program generated
from a family's mirrors (its ``_capi.STRUCTS``) prints sizeof and every field's offsetof and
size as the compiler lays them out; any difference (a field added, removed, reordered or
retyped in the header) fails here instead of corrupting memory at run time."""

from __future__ import annotations

import ctypes
import importlib
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# family -> (its binding module, its public header, the fewest mirrored entries expected:
# a binding that lost its STRUCTS table would otherwise pass with nothing compared)
FAMILIES = {
    "xchg": ("petacomm.xchg._capi", "xchg.h", 40),
    "transpose": ("petacomm.transpose._capi", "transpose.h", 40),
    "node": ("petacomm.node._capi", "node.h", 30),
}


def _header_dir(header: str) -> Path:
    """The headers the library was built from: installed beside it, else the source tree."""
    from petacomm.native import native_dir

    installed = native_dir() / "include"
    return installed if (installed / "petacomm" / header).exists() else ROOT / "native/include"


def _mirrored_layout(structs: dict) -> dict[str, tuple[int, ...]]:
    out = {}
    for c_name, mirror in structs.items():
        out[c_name] = (ctypes.sizeof(mirror),)
        for field, _ in mirror._fields_:
            descriptor = getattr(mirror, field)
            out[f"{c_name}.{field}"] = (descriptor.offset, descriptor.size)
    return out


def _c_program(structs: dict, header: str) -> str:
    lines = [
        "#include <stddef.h>",
        "#include <stdio.h>",
        f"#include <petacomm/{header}>",
        "int main(void) {",
    ]
    for c_name, mirror in structs.items():
        lines.append(f'  printf("{c_name} %zu\\n", sizeof({c_name}));')
        for field, _ in mirror._fields_:
            lines.append(
                f'  printf("{c_name}.{field} %zu %zu\\n", offsetof({c_name}, {field}), '
                f"sizeof((({c_name} *)0)->{field}));"
            )
    lines += ["  return 0;", "}"]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_ctypes_structures_match_the_compiler(family, tmp_path):
    from petacomm.native import build_info

    module, header, fewest = FAMILIES[family]
    structs = importlib.import_module(module).STRUCTS
    source = tmp_path / "layout.c"
    source.write_text(_c_program(structs, header))
    program = tmp_path / "layout"
    compiled = subprocess.run(
        [build_info()["mpicc"], f"-I{_header_dir(header)}", str(source), "-o", str(program)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert compiled.returncode == 0, compiled.stderr  # a renamed/removed field fails here
    printed = subprocess.run([str(program)], capture_output=True, text=True, check=True).stdout
    compiler = {
        line.split()[0]: tuple(int(v) for v in line.split()[1:]) for line in printed.splitlines()
    }
    mirrored = _mirrored_layout(structs)
    assert len(compiler) == len(mirrored) >= fewest
    differences = {k: (mirrored[k], compiler[k]) for k in mirrored if mirrored[k] != compiler[k]}
    assert not differences, f"ctypes (offset, size) vs C: {differences}"


def test_the_repetition_bound_is_the_library_s():
    """petacomm.native.MAX_REPS (the plans' checks before ctypes' C int could wrap a value,
    and the benchmarks' bound) is core.h's PETACOMM_MAX_REPS, as the header defines it."""
    import re

    from petacomm.native import MAX_REPS

    core = (_header_dir("core.h") / "petacomm" / "core.h").read_text()
    defined = re.search(r"^#define PETACOMM_MAX_REPS (\d+)$", core, re.M)
    assert defined, "core.h no longer defines PETACOMM_MAX_REPS as a number"
    assert int(defined[1]) == MAX_REPS
