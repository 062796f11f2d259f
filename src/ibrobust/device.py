"""The config key ``device`` (auto | cpu | cuda): where a job's tensors live.

Two readings of the one key:

* :func:`resolve_device` (in a job, before it computes): the torch device. ``"auto"`` / None
  = CUDA when ``torch.cuda.is_available()``, else the CPU; ``"cuda"`` where CUDA is not
  available is a ValueError naming the key.
* :func:`planned_cuda` (in the Snakefile, at planning time, without importing torch): whether
  a job will run on CUDA, for the ``gpu`` resource it claims. ``"cuda"`` -> True, ``"cpu"``
  -> False, ``"auto"`` -> :func:`cuda_present`, a cheap probe of this machine: a torch build
  with CUDA (its ``torch/version.py``, read as text), an NVIDIA device node (``/dev/nvidia0``,
  ...) and ``CUDA_VISIBLE_DEVICES`` not hiding every device. It agrees with
  ``torch.cuda.is_available()`` except where the driver is installed but broken (the job then
  runs on the CPU while holding the ``gpu`` token: slower scheduling, never wrong numbers).

:func:`cuda_build_problem` is the config-validation check: ``device: cuda`` with a torch built
without CUDA can never run, on any host. A torch with CUDA on a planning host without a GPU
passes (SLURM login nodes plan the GPU jobs of compute nodes); the job itself then fails
before it computes, in :func:`resolve_device`.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch is imported where a device is resolved, not at planning time
    import torch

DEVICES = ("auto", "cpu", "cuda")  # the schema's enum


def resolve_device(device: torch.device | str | None = None) -> torch.device:
    """The torch device of the config key ``device``: ``"auto"`` / None = CUDA when
    ``torch.cuda.is_available()``, else the CPU; ``"cpu"``, ``"cuda"`` or any torch device
    as given. ``"cuda"`` where CUDA is not available is a ValueError naming the key (not a
    torch error deep inside the first step)."""
    import torch

    if device is None or device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(
            f"config key device: {str(device)!r}, but torch.cuda.is_available() is False on "
            "this machine; use device: auto (CUDA when present, else the CPU) or cpu"
        )
    return dev


def torch_cuda_version() -> str | None:
    """The CUDA version the installed torch was built with (``torch.version.cuda``), read
    from ``torch/version.py`` as text without importing torch; None for a CPU-only build or
    when torch is not found."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "version.py"
    try:
        text = path.read_text()
    except OSError:
        return None
    m = re.search(r"^cuda\s*(?::[^=]*)?=\s*['\"]([^'\"]+)['\"]", text, flags=re.M)
    return m.group(1) if m else None


def cuda_present() -> bool:
    """Cheap planning-time probe (no torch import): a CUDA build of torch, an NVIDIA device
    node, and ``CUDA_VISIBLE_DEVICES`` not set to hide every device."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return False
    return torch_cuda_version() is not None and bool(glob.glob("/dev/nvidia[0-9]*"))


def planned_cuda(device: str) -> bool:
    """Whether a job of config value ``device`` will run on CUDA, as planning can tell."""
    if device == "cpu":
        return False
    if device == "auto":
        return cuda_present()
    return device.startswith("cuda")


def cuda_build_problem(device: str) -> str | None:
    """The config-validation message for ``device: cuda`` with a torch built without CUDA
    (None when there is nothing to say)."""
    if device.startswith("cuda") and torch_cuda_version() is None:
        return (
            f"device: {device!r}, but the installed torch is built without CUDA "
            "(torch.version.cuda is None); use device: auto or cpu, or install a CUDA build"
        )
    return None
