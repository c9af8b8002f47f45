"""Device descriptions as data (DESIGN.md section 4).

    >>> from irc.devices import load_device
    >>> load_device("ipu-mk2").cores
    1472
"""

from irc.devices.device import Device
from irc.devices.loader import DEVICE_DIR, DeviceError, device_from_fields, known_devices, load_device

__all__ = ["DEVICE_DIR", "Device", "DeviceError", "device_from_fields", "known_devices", "load_device"]
