"""Formatting of times and sizes with their units, for the reports."""

from __future__ import annotations

from petacomm.units import format_bytes, format_exact_size


def seconds(value: float) -> str:
    """A time with a unit that keeps 3-4 significant digits: '1.23 s', '456 us', '12.0 ns'."""
    v = abs(value)
    if v == 0:
        return "0 s"
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns")):
        if v >= scale or unit == "ns":
            x = value / scale
            return f"{x:.3g} {unit}" if abs(x) < 1000 else f"{x:.0f} {unit}"
    return f"{value:.3g} s"


def size(value: float) -> str:
    """Bytes with binary units: '512 B', '4.0 KiB', '1.5 GiB'."""
    return format_bytes(value, decimals=1)


def size_class(value: int) -> str:
    """The lower bound of a power-of-two size class, exactly: '0 B', '512 B', '4 KiB'."""
    return format_exact_size(value)


def size_range(lo: int, hi: int) -> str:
    return size(lo) if lo == hi else f"{size(lo)}-{size(hi)}"


def count(value: int) -> str:
    return f"{value:,}"


def percent(value: float) -> str:
    return f"{value:.1f} %"
