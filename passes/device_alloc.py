"""`device-alloc`: assign SRAM offsets to device buffers and check capacity (T10 s4.4).

T10 s4.4 "Sub-tensor placement": allocate every partition in each core's local memory
and reuse the memory of buffers that are dead. Walking each block in program order, a
``device.alloc`` takes the lowest offset where it fits among the buffers live at that
point (first fit) and a ``device.free`` releases its range; the same offset is used on
every core of the buffer's core set (SPMD). A ``device.reduce`` that rounds an accumulator
in place hands the first bytes of its range to the rounded result and frees the rest. A program whose live buffers exceed a core's
SRAM is an error naming the core, the live buffers with their bytes, and the total.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from irc.dialects.device import AllocOp, FreeOp, ReduceOp, i64_attr
from irc.diagnostics import location_of


def first_fit(live: list[tuple[int, int]], size: int) -> int:
    """The lowest offset where ``size`` bytes fit between the live ``[start, end)`` ranges."""
    offset = 0
    for start, end in sorted(live):
        if offset + size <= start:
            return offset
        offset = max(offset, end)
    return offset


def _name(op) -> str:
    """The buffer name of an alloc, or of the accumulator a reduce rounds in place."""
    while isinstance(op, ReduceOp):
        op = op.buffer.owner
    return op.buffer_name.data


@dataclass(frozen=True)
class DeviceAlloc(ModulePass):
    """``device-alloc{device=...}``: SRAM offsets for every buffer; overflow is an error.
    The chip is the ``irc.target`` of the function (or of the module around it);
    ``device``, when given, must be the same chip (a module without a target gets it)."""

    name = "device-alloc"

    device: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from xdsl.dialects.func import FuncOp

        from irc.lowering.target import TargetError, device_of, require_target, set_target

        if not any(isinstance(o, AllocOp) for o in op.walk()):
            return
        if self.device:
            try:
                set_target(op, self.device)
            except TargetError as error:
                raise DiagnosticException(f"{location_of(op)}: error: device-alloc: {error}") from None
        for func in op.walk():
            if not isinstance(func, FuncOp) or not func.body.blocks:
                continue
            if not any(isinstance(o, AllocOp) for o in func.walk()):
                continue
            try:
                device = device_of(require_target(func))
            except TargetError as error:
                raise DiagnosticException(f"{location_of(func)}: error: device-alloc: {error}") from None
            live: dict[AllocOp, tuple[int, int]] = {}
            for inner in func.walk():
                if isinstance(inner, AllocOp):
                    size = int(inner.bytes.value.data)
                    offset = first_fit(list(live.values()), size)
                    cores = int(inner.cores.value.data)
                    if cores > device.cores:
                        raise DiagnosticException(
                            f"{location_of(inner)}: error: 'device.alloc' op buffer {inner.buffer_name.data} "
                            f"is placed on {cores} cores but {device.name} has {device.cores}"
                        )
                    if offset + size > device.sram_bytes:
                        listing = ", ".join(
                            f"{_name(a)} ({e - s} B)" for a, (s, e) in sorted(live.items(), key=lambda x: x[1])
                        )
                        need = sum(e - s for s, e in live.values()) + size
                        raise DiagnosticException(
                            f"{location_of(inner)}: error: 'device.alloc' op SRAM overflow on core 0: "
                            f"buffer {inner.buffer_name.data} ({size} B) does not fit next to the live buffers "
                            f"{listing or 'none'}: {need} bytes needed (first free offset {offset}), "
                            f"core has {device.sram_bytes} bytes on {device.name}"
                        )
                    inner.properties["offset"] = i64_attr(offset)
                    live[inner] = (offset, offset + size)
                elif isinstance(inner, ReduceOp) and inner.result is not None:
                    # rounded in place: the result takes the first bytes of the accumulator
                    start, _ = live.pop(inner.buffer.owner)
                    live[inner] = (start, start + inner.result.type.bytes)
                elif isinstance(inner, FreeOp):
                    owner = inner.buffer.owner
                    live.pop(owner, None)
