"""Interpreter implementations of the `device` dialect: one `@impl` per instruction.

Each instruction is executed on all cores of its core set at once by ``Chip``
(``irc.interpreter.chip``), which holds the SRAM state and the timeline. The chip is
created on the first instruction from the module's ``irc.target`` and kept in the interpreter's data (``chips``), for the
run's report.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.interpreter import Interpreter, InterpreterFunctions, impl, register_impls

from irc.dialects.device import (
    AllocOp,
    FillOp,
    FreeOp,
    GatherOp,
    LoadOp,
    MmaOp,
    PreloadAsyncOp,
    ReduceOp,
    RelayoutOp,
    ShiftOp,
    StoreOp,
    SyncOp,
    VectorOp,
    WaitOp,
    array_values,
    core_table,
)
from irc.cost import OpWork, SubTask
from irc.diagnostics import location_of
from irc.interpreter.chip import Chip, ChipFault
from irc.interpreter.loops import Compute, Loop, Shift, Sync, run_loop
from irc.interpreter.loops import Product as LoopProduct
from irc.interpreter.numerics import fill_value
from irc.interpreter.te_eval import evaluate
from irc.dialects.dtypes import numpy_dtype
from irc.target import TargetError, chip_cost_of, device_of, require_target
from irc.dialects.target import TargetAttr


CHIPS_KEY = "chips"


def chips(interpreter: Interpreter) -> dict[TargetAttr, Chip]:
    """The chips a run has used, by target: interpreter data shared by every level that
    executes on a chip (`shift` kernels and `device` programs)."""
    return interpreter.get_data(DeviceFunctions, CHIPS_KEY, dict)


def chip_of(interpreter: Interpreter, target: TargetAttr) -> Chip:
    table = chips(interpreter)
    if target not in table:
        table[target] = Chip(device_of(target), chip_cost_of(target))
    return table[target]


def _pending(interpreter: Interpreter) -> set:
    """Instructions a batched loop run has executed ahead of their turn."""
    return interpreter.get_data(DeviceFunctions, "pending", set)


def _same_step(op: MmaOp, other) -> bool:
    return (isinstance(other, MmaOp) and other.operands == op.operands and other.expression == op.expression
            and other.tiles == op.tiles and other.cores == op.cores and other.kind == op.kind
            and other.roles == op.roles and other.dtype_bytes == op.dtype_bytes)


def _independent(op: MmaOp, products: list[MmaOp]) -> bool:
    """Whether ``op``'s output is no operand of the products met so far, nor theirs of
    ``op``: a further product of the same loop nest (a kernel of several products)."""
    return all(op.operands[0] not in other.operands and other.operands[0] not in op.operands for other in products)


def _loop_run(interpreter: Interpreter, op: MmaOp) -> list:
    """``op`` and the compute steps of the same kernel after it, with the shifts and
    syncs between them: a loop nest as ``shift-to-device`` unrolls it, with one compute
    step per product at each step (cached per op)."""
    runs = interpreter.get_data(DeviceFunctions, "runs", dict)
    found = runs.get(op)
    if found is None:
        found, tail, following, products = [op], [], op.next_op, [op]
        while isinstance(following, (MmaOp, ShiftOp, SyncOp)):
            if isinstance(following, MmaOp):
                if not any(_same_step(p, following) for p in products):
                    if not _independent(following, products):
                        break
                    products.append(following)
                found += tail + [following]
                tail = []
            else:
                tail.append(following)
            following = following.next_op
        runs[op] = found
    return found


def where(op) -> str:
    return f"{location_of(op)}: error: '{op.name}' op"


def _int(attr) -> int:
    return int(attr.value.data)


def moved(movements, whole: np.ndarray) -> np.ndarray:
    """``whole`` after the data movements of a load, store or relayout (in order)."""
    for expr, shape in movements:
        whole = evaluate(expr.expr.bind([whole.shape], shape), [whole], whole.dtype)
    return whole


@register_impls
class DeviceFunctions(InterpreterFunctions):
    def chip_for(self, interpreter: Interpreter, op) -> Chip:
        try:
            return chip_of(interpreter, require_target(op))
        except TargetError as error:
            raise ChipFault(f"{where(op)} {error}") from None

    @impl(AllocOp)
    def run_alloc(self, interpreter: Interpreter, op: AllocOp, args: tuple[Any, ...]):
        chip = self.chip_for(interpreter, op)
        offset = _int(op.offset)
        if offset < 0:
            raise ChipFault(f"{where(op)} buffer {op.buffer_name.data} has no SRAM offset; run device-alloc")
        type_ = op.buffer.type
        return (chip.alloc(op.buffer_name.data, type_.get_shape(), numpy_dtype(type_.element_type),
                           _int(op.cores), offset, where(op)),)

    @impl(FreeOp)
    def run_free(self, interpreter: Interpreter, op: FreeOp, args: tuple[Any, ...]):
        self.chip_for(interpreter, op).free(args[0], where(op))
        return ()

    @impl(LoadOp)
    def run_load(self, interpreter: Interpreter, op: LoadOp, args: tuple[Any, ...]):
        host, buffer = args
        origins = core_table(op.origins, len(buffer.shape), buffer.cores, "origins")
        host = moved(op.movements(), np.asarray(host))
        self.chip_for(interpreter, op).load(buffer, host, origins, where(op))
        return ()

    @impl(PreloadAsyncOp)
    def run_preload(self, interpreter: Interpreter, op: PreloadAsyncOp, args: tuple[Any, ...]):
        host, buffer = args
        origins = core_table(op.origins, len(buffer.shape), buffer.cores, "origins")
        share = 1.0 if op.link_share is None else float(op.link_share.value.data)
        host = moved(op.movements(), np.asarray(host))
        self.chip_for(interpreter, op).preload(buffer, host, origins, where(op), share,
                                               op.yields is not None)
        return ()

    @impl(WaitOp)
    def run_wait(self, interpreter: Interpreter, op: WaitOp, args: tuple[Any, ...]):
        self.chip_for(interpreter, op).wait(args[0], where(op))
        return ()

    @impl(StoreOp)
    def run_store(self, interpreter: Interpreter, op: StoreOp, args: tuple[Any, ...]):
        (buffer,) = args
        type_ = op.result.type
        dtype = numpy_dtype(type_.get_element_type())
        host = np.full(op.assembled_shape(), fill_value(op.fill.value.data, dtype), dtype=dtype)
        origins = core_table(op.origins, len(buffer.shape), buffer.cores, "origins")
        self.chip_for(interpreter, op).store(buffer, host, origins, op.writers(buffer.cores), where(op))
        return (moved(op.movements(), host),)

    @impl(RelayoutOp)
    def run_relayout(self, interpreter: Interpreter, op: RelayoutOp, args: tuple[Any, ...]):
        source, target = args
        shape = tuple(int(d) for d in array_values(op.shape))
        if op.pieces is not None:
            self.chip_for(interpreter, op).relayout_pieces(
                source, target, op.piece_table(target.cores), tuple(int(d) for d in array_values(op.piece_shape)),
                core_table(op.origins, len(target.shape), target.cores, "origins"), shape,
                int(op.bytes.value.data), int(op.barriers.value.data), where(op), setup=op.setup is not None,
            )
            return ()
        movements = op.movements()

        def move(whole):
            return moved(movements, whole)

        self.chip_for(interpreter, op).relayout(
            source, core_table(op.source_origins, len(source.shape), source.cores, "source_origins"),
            op.writers(source.cores), target, core_table(op.origins, len(target.shape), target.cores, "origins"),
            shape, int(op.bytes.value.data), int(op.barriers.value.data), where(op),
            move if movements else None, setup=op.setup is not None,
        )
        return ()

    @impl(FillOp)
    def run_fill(self, interpreter: Interpreter, op: FillOp, args: tuple[Any, ...]):
        self.chip_for(interpreter, op).fill(args[0], fill_value(op.value.value.data, args[0].dtype), where(op))
        return ()

    def _compute(self, interpreter, op, args):
        output, *inputs = args
        expr = op.parsed()
        tables = op.window_tables()
        roles = {k: _int(v) for k, v in op.roles.data.items()}
        tiles = op.tile_map()
        volume = int(np.prod(list(tiles.values()))) if tiles else 1
        subtask = SubTask(op.kind.data, op.subtask_bytes(), volume, roles)
        self.chip_for(interpreter, op).compute(
            expr, tiles, _int(op.cores), output, tables[0], list(zip(inputs, tables[1:])), subtask,
            where(op), f"{op.name} step {_int(op.step)}",
        )
        return ()

    @impl(MmaOp)
    def run_mma(self, interpreter: Interpreter, op: MmaOp, args: tuple[Any, ...]):
        if self._done(interpreter, op):
            return ()
        stepwise = interpreter.get_data(DeviceFunctions, "stepwise", set)
        if op in stepwise:  # in a run already refused as a whole: one step at a time
            stepwise.discard(op)
            return self._compute(interpreter, op, args)
        run = _loop_run(interpreter, op)
        chip = self.chip_for(interpreter, op)
        if run_loop(chip, self._loop(interpreter, run)):
            _pending(interpreter).update(run[1:])
            return ()
        stepwise.update(o for o in run[1:] if isinstance(o, MmaOp))
        return self._compute(interpreter, op, args)

    def _loop(self, interpreter: Interpreter, run: list) -> Loop:
        """The run's instructions with their tables, for ``irc.interpreter.loops``."""
        products, firsts = [], []
        events = []
        for op in run:
            if isinstance(op, MmaOp):
                index = next((i for i, first in enumerate(firsts) if _same_step(first, op)), None)
                if index is None:
                    index = len(firsts)
                    firsts.append(op)
                    output, *inputs = interpreter.get_values(op.operands)
                    tiles = op.tile_map()
                    volume = int(np.prod(list(tiles.values()))) if tiles else 1
                    roles = {k: _int(v) for k, v in op.roles.data.items()}
                    products.append(LoopProduct(op.parsed(), tiles, output, inputs,
                                                SubTask(op.kind.data, op.subtask_bytes(), volume, roles)))
                events.append(Compute(op.window_tables(), where(op), f"{op.name} step {_int(op.step)}", index))
            elif isinstance(op, ShiftOp):
                buffer, receive = interpreter.get_values(op.operands)
                events.append(Shift(buffer, receive, op.sources(buffer.cores), where(op)))
            else:
                events.append(Sync(_int(op.cores), where(op)))
        return Loop(products, _int(run[0].cores), events)

    @impl(VectorOp)
    def run_vector(self, interpreter: Interpreter, op: VectorOp, args: tuple[Any, ...]):
        return self._compute(interpreter, op, args)

    @staticmethod
    def _done(interpreter: Interpreter, op) -> bool:
        """Whether ``op`` was executed already, as part of a batched loop run."""
        pending = _pending(interpreter)
        if op in pending:
            pending.discard(op)
            return True
        return False
    @impl(GatherOp)
    def run_gather(self, interpreter: Interpreter, op: GatherOp, args: tuple[Any, ...]):
        output, *inputs = args
        tables = op.window_tables()
        roles = {k: _int(v) for k, v in op.roles.data.items()}
        tiles = op.tile_map()
        subtask = SubTask(op.kind.data, output.dtype.itemsize, int(np.prod(list(tiles.values()))) if tiles else 1, roles)
        self.chip_for(interpreter, op).gather(
            op.parsed(), tiles, _int(op.cores), output, tables[0], list(zip(inputs, tables[1:])), subtask,
            where(op), f"{op.name} step {_int(op.step)}",
        )
        return ()

    @impl(ShiftOp)
    def run_shift(self, interpreter: Interpreter, op: ShiftOp, args: tuple[Any, ...]):
        if self._done(interpreter, op):
            return ()
        buffer, receive = args
        self.chip_for(interpreter, op).shift(buffer, receive, op.sources(buffer.cores), where(op))
        return ()

    @impl(SyncOp)
    def run_sync(self, interpreter: Interpreter, op: SyncOp, args: tuple[Any, ...]):
        if self._done(interpreter, op):
            return ()
        self.chip_for(interpreter, op).sync(_int(op.cores), where(op))
        return ()

    @impl(ReduceOp)
    def run_reduce(self, interpreter: Interpreter, op: ReduceOp, args: tuple[Any, ...]):
        (buffer,) = args
        replicas = _int(op.replicas)
        rounded = None if op.result is None else numpy_dtype(op.result.type.get_element_type())
        work = OpWork(
            SubTask(op.kind.data, (rounded or buffer.dtype).itemsize, 1,
                    {k: _int(v) for k, v in op.roles.data.items()}),
            0, 0, 0, replicas,
            _int(op.out_step_elems), _int(op.out_resident_elems), _int(op.cores),
            partial_bytes=buffer.dtype.itemsize,
        )
        chip = self.chip_for(interpreter, op)
        result = chip.reduce(buffer, op.group_table(), op.combiner.data, work, where(op), rounded)
        if not _reduce_follows(op):   # a kernel ends with its (last) reduce
            chip.close_operator(where(op), buffer.name)
        return () if result is None else (result,)


def _reduce_follows(op: ReduceOp) -> bool:
    """Whether another ``device.reduce`` of the same kernel follows ``op`` (a kernel of
    several products, a fused gradient pair, reduces each product's output in turn, with
    stores and frees between): the operator ends with the last, as `preload-schedule`
    and the planner's timeline count it (`irc.passes.preload_schedule.operator_segments`)."""
    after = op.next_op
    while isinstance(after, (StoreOp, FreeOp)):
        after = after.next_op
    return isinstance(after, ReduceOp)
