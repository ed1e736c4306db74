"""Log-log plot of a machine model: measured medians (with min-max bars) and fitted lines."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from petacomm.errors import PetacommError
from petacomm.files import atomic_output
from petacomm.model.machine import MachineModel


def plot_model(model: MachineModel, path: str | os.PathLike) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [name for name, op in model.operations.items() if op.points]
    if not names:
        raise PetacommError("--plot: the model has no measured points to draw")
    columns = 2 if len(names) > 1 else 1
    rows = (len(names) + columns - 1) // columns
    fig, axes = plt.subplots(rows, columns, figsize=(6.4 * columns, 4.2 * rows), squeeze=False)
    for ax, name in zip(axes.flat, names, strict=False):
        op = model.operations[name]
        n = np.array([pt.nbytes for pt in op.points], dtype=float)
        med = np.array([pt.median_s for pt in op.points]) * 1e6
        low = med - np.array([pt.min_s for pt in op.points]) * 1e6
        high = np.array([pt.max_s for pt in op.points]) * 1e6 - med
        ax.errorbar(n, med, yerr=[low, high], fmt="o", ms=3, capsize=2, label="measured median")
        for i, piece in enumerate(op.pieces):
            x = np.geomspace(max(piece.from_bytes, 1), max(piece.to_bytes, 2), 50)
            y = (piece.alpha_s + piece.beta_s_per_byte * x) * 1e6
            bw = "inf" if piece.beta_s_per_byte <= 0 else f"{piece.bandwidth_gb_s:.2f}"
            ax.plot(
                x,
                y,
                "-",
                lw=1.6,
                label=f"fit {i + 1}: α={piece.alpha_s * 1e6:.2f} µs, 1/β={bw} GB/s, "
                f"R²={piece.r2:.3f}",
            )
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(f"{name} (p = {op.p})")
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel("time (µs)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, loc="upper left")
    for ax in list(axes.flat)[len(names) :]:
        ax.set_visible(False)
    hosts = ", ".join(model.machine.get("hosts", [])[:3])
    fig.suptitle(f"petacomm machine model — {hosts} — {model.machine.get('ranks', '?')} ranks")
    fig.tight_layout()
    out = Path(path)
    try:
        with atomic_output(out, "--plot", binary=True) as stream:
            fig.savefig(stream, format=out.suffix.lstrip(".").lower() or "png", dpi=110)
    finally:
        plt.close(fig)
    return out
