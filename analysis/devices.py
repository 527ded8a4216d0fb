"""Which storage a kernel device was: (host, device) -> backend and profile, from the `devices` table.

The one place a page or a model turns a device name into the backend it held or the storage profile it stood for
(metrics layer: takes tables). The table itself comes from the hosts' storage records (analysis/parsers/storage.py).
"""
from __future__ import annotations

import pandas as pd


def backend_profiles(devices: pd.DataFrame) -> dict[str, str]:
    """Backend name -> the storage profile it stands for (a real mount: its own name)."""
    if devices.empty:
        return {}
    return dict(zip(devices["backend"], devices["profile"]))


def profile_of(devices: pd.DataFrame, backend) -> str:
    """A backend name as its profile (`fast` -> `nvme`); `-` for none."""
    if backend is None or pd.isna(backend):
        return "-"
    return backend_profiles(devices).get(backend, str(backend))


def device_backends(devices: pd.DataFrame) -> dict[tuple[str, str], str]:
    """(host, kernel device) -> the backend on it (the device the filesystem is on, not an emulation's lower one)."""
    if devices.empty:
        return {}
    on_device = devices[devices["device"] != ""]
    return dict(zip(zip(on_device["host"], on_device["device"]), on_device["backend"]))


def device_profiles(devices: pd.DataFrame) -> dict[tuple[str, str], str]:
    """(host, kernel device) -> the storage profile it stood for, for the device and an emulation's lower device
    alike (a block trace may have recorded either)."""
    profiles = {}
    for row in devices.itertuples():
        for name in (row.device, row.lower_device):
            if name:
                profiles[(row.host, name)] = row.profile
    return profiles


def device_labels(devices: pd.DataFrame) -> dict[tuple[str, str], str]:
    """(host, kernel device) -> `device (profile)` (device_profiles)."""
    return {(host, name): f"{name} ({profile})" for (host, name), profile in device_profiles(devices).items()}


def role_devices(devices: pd.DataFrame, backend: str) -> dict[str, str]:
    """host -> the device of `backend` on that host (the hosts that have it)."""
    return {host: device for (host, device), name in device_backends(devices).items() if name == backend}


def local_devices(workloads: pd.DataFrame, devices: pd.DataFrame) -> dict[tuple[str, str], str]:
    """(host, workload_id) -> the device of the backend holding that workload run's local (shuffle) dirs."""
    if workloads.empty or "placement_local" not in workloads:
        return {}
    return {(host, w.workload_id): device for w in workloads.itertuples()
            for host, device in role_devices(devices, w.placement_local).items()}
