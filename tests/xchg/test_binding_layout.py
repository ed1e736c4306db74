"""The ctypes mirrors of xchg.h/core.h against the C compiler: a C program generated from
the mirrors prints sizeof and every field's offsetof and size as the compiler lays them out;
any difference (a field added, removed, reordered or retyped in the header) fails here
instead of corrupting memory at run time."""

from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _header_dir() -> Path:
    """The headers the library was built from: installed beside it, else the source tree."""
    from petacomm.native import native_dir

    installed = native_dir() / "include"
    return installed if (installed / "petacomm" / "xchg.h").exists() else ROOT / "native/include"


def _mirrored_layout() -> dict[str, tuple[int, ...]]:
    from petacomm.xchg import _capi

    out = {}
    for c_name, mirror in _capi.STRUCTS.items():
        out[c_name] = (ctypes.sizeof(mirror),)
        for field, _ in mirror._fields_:
            descriptor = getattr(mirror, field)
            out[f"{c_name}.{field}"] = (descriptor.offset, descriptor.size)
    return out


def _c_program() -> str:
    from petacomm.xchg import _capi

    lines = [
        "#include <stddef.h>",
        "#include <stdio.h>",
        "#include <petacomm/xchg.h>",
        "int main(void) {",
    ]
    for c_name, mirror in _capi.STRUCTS.items():
        lines.append(f'  printf("{c_name} %zu\\n", sizeof({c_name}));')
        for field, _ in mirror._fields_:
            lines.append(
                f'  printf("{c_name}.{field} %zu %zu\\n", offsetof({c_name}, {field}), '
                f"sizeof((({c_name} *)0)->{field}));"
            )
    lines += ["  return 0;", "}"]
    return "\n".join(lines) + "\n"


def test_ctypes_structures_match_the_compiler(tmp_path):
    from petacomm.native import build_info

    source = tmp_path / "layout.c"
    source.write_text(_c_program())
    program = tmp_path / "layout"
    compiled = subprocess.run(
        [build_info()["mpicc"], f"-I{_header_dir()}", str(source), "-o", str(program)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert compiled.returncode == 0, compiled.stderr  # a renamed/removed field fails here
    printed = subprocess.run([str(program)], capture_output=True, text=True, check=True).stdout
    compiler = {
        line.split()[0]: tuple(int(v) for v in line.split()[1:]) for line in printed.splitlines()
    }
    mirrored = _mirrored_layout()
    assert len(compiler) == len(mirrored) > 40
    differences = {k: (mirrored[k], compiler[k]) for k in mirrored if mirrored[k] != compiler[k]}
    assert not differences, f"ctypes (offset, size) vs C: {differences}"
