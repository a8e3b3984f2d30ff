"""What a rerun knows about Vertex AI machines and accelerators: the machine types whose accelerators are fixed,
the accelerators with more memory per device, and the machine type with more memory than another.
"""

from __future__ import annotations

# Machine types whose accelerators are fixed by the type: machine -> (accelerator, count).
FIXED_GPU_MACHINES: dict[str, tuple[str, int]] = {
    **{f"a2-highgpu-{n}g": ("NVIDIA_TESLA_A100", n) for n in (1, 2, 4, 8)},
    "a2-megagpu-16g": ("NVIDIA_TESLA_A100", 16),
    **{f"a2-ultragpu-{n}g": ("NVIDIA_A100_80GB", n) for n in (1, 2, 4, 8)},
    **{f"a3-highgpu-{n}g": ("NVIDIA_H100_80GB", n) for n in (1, 2, 4, 8)},
    "a3-megagpu-8g": ("NVIDIA_H100_MEGA_80GB", 8),
    "a3-ultragpu-8g": ("NVIDIA_H200_141GB", 8),
    **{f"g2-standard-{n}": ("NVIDIA_L4", 1) for n in (4, 8, 12, 16, 32)},
    "g2-standard-24": ("NVIDIA_L4", 2),
    "g2-standard-48": ("NVIDIA_L4", 4),
    "g2-standard-96": ("NVIDIA_L4", 8),
}


# The machine type to suggest for an accelerator and count (the first one listed above wins).
MACHINE_FOR: dict[tuple[str, int], str] = {
    **{spec: machine for machine, spec in reversed(FIXED_GPU_MACHINES.items())},
    ("NVIDIA_L4", 1): "g2-standard-8",
}


N1_GPUS = frozenset(
    {"NVIDIA_TESLA_K80", "NVIDIA_TESLA_P100", "NVIDIA_TESLA_V100", "NVIDIA_TESLA_P4", "NVIDIA_TESLA_T4"}
)


# Accelerators with more memory per device, best first, and memory in GB for the explanation.
LARGER_ACCELERATORS: dict[str, tuple[str, ...]] = {
    "NVIDIA_TESLA_K80": ("NVIDIA_TESLA_T4",),
    "NVIDIA_TESLA_P4": ("NVIDIA_TESLA_T4",),
    "NVIDIA_TESLA_T4": ("NVIDIA_L4", "NVIDIA_TESLA_A100"),
    "NVIDIA_TESLA_P100": ("NVIDIA_L4", "NVIDIA_TESLA_A100"),
    "NVIDIA_TESLA_V100": ("NVIDIA_TESLA_A100",),
    "NVIDIA_L4": ("NVIDIA_TESLA_A100",),
    "NVIDIA_TESLA_A100": ("NVIDIA_A100_80GB",),
    "NVIDIA_A100_80GB": ("NVIDIA_H200_141GB",),
    "NVIDIA_H100_80GB": ("NVIDIA_H200_141GB",),
    "NVIDIA_H100_MEGA_80GB": ("NVIDIA_H200_141GB",),
}


_MEMORY_GB = {
    "NVIDIA_TESLA_K80": 12,
    "NVIDIA_TESLA_P4": 8,
    "NVIDIA_TESLA_T4": 16,
    "NVIDIA_TESLA_P100": 16,
    "NVIDIA_TESLA_V100": 16,
    "NVIDIA_L4": 24,
    "NVIDIA_TESLA_A100": 40,
    "NVIDIA_A100_80GB": 80,
    "NVIDIA_H100_80GB": 80,
    "NVIDIA_H100_MEGA_80GB": 80,
    "NVIDIA_H200_141GB": 141,
}


_MORE_MEMORY_FAMILIES = ("n1", "n2", "n2d", "e2")


_HIGHMEM_SIZES = {
    "n1": (2, 4, 8, 16, 32, 64, 96),
    "n2": (2, 4, 8, 16, 32, 48, 64, 80, 96, 128),
    "n2d": (2, 4, 8, 16, 32, 48, 64, 80, 96),
    "e2": (2, 4, 8, 16),
}


def more_memory_machine(machine_type: str | None) -> str | None:
    parts = (machine_type or "").split("-")
    if len(parts) != 3 or parts[0] not in _MORE_MEMORY_FAMILIES or not parts[2].isdigit():
        return None
    family, kind, size = parts[0], parts[1], int(parts[2])
    if kind in ("standard", "highcpu"):
        return f"{family}-{'highmem' if kind == 'standard' else 'standard'}-{size}"
    if kind == "highmem":
        bigger = next((s for s in _HIGHMEM_SIZES[family] if s > size), None)
        return f"{family}-highmem-{bigger}" if bigger else None
    return None


def gpu_text(name: str) -> str:
    memory = _MEMORY_GB.get(name)
    return f"{name} ({memory} GB)" if memory else name
