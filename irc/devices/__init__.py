"""Device descriptions as data (DESIGN.md section 4).

    >>> from irc.devices import load_device
    >>> load_device("ipu-mk2").cores
    1472
"""

from irc.devices.device import Device
from irc.devices.families import FAMILIES, family_named, family_of
from irc.devices.family import ChipFamily
from irc.devices.loader import DEVICE_DIR, DeviceError, device_from_fields, known_devices, load_device

__all__ = ["DEVICE_DIR", "FAMILIES", "ChipFamily", "Device", "DeviceError", "device_from_fields", "family_named",
           "family_of", "known_devices", "load_device"]
