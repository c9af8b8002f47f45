"""`device-alloc`'s placement packs what a plan counts where its fixed orders cannot
(issue 23, item 5): when first fit in program order and the offline placements largest
first and longest-lived first all leave a buffer past the capacity although the bytes
live at every point fit, orders near largest first are searched."""

from xdsl.dialects.func import FuncOp

from irc.passes.device_alloc import (
    STRATEGIES,
    live_intervals,
    offline_placement,
    online_first_fit,
    peak_live_bytes,
    place,
    searched_placement,
)
from irc.runner import parse_module

# a (1280 B) beside b (1536 B), then c (768 B) beside a, then beside d and e in turn
# (1536 B each): never more than 2816 bytes live. It packs only with c above a (a 0-1280,
# b and c 1280-2816, d and e 0-1536); first fit puts c right above a, largest first puts
# a above b (and c above both), longest-lived first c right above a.
FIVE_BUFFERS = """
builtin.module attributes {irc.target = #irc.target<"tiny4", "t10", {}>} {
func.func @main() {
  %a = device.alloc {name = "a", cores = 4 : i64, bytes = 1280 : i64, offset = -1 : i64} : !device.buffer<640xf16>
  %b = device.alloc {name = "b", cores = 4 : i64, bytes = 1536 : i64, offset = -1 : i64} : !device.buffer<768xf16>
  device.free %b : !device.buffer<768xf16>
  %c = device.alloc {name = "c", cores = 4 : i64, bytes = 768 : i64, offset = -1 : i64} : !device.buffer<384xf16>
  device.free %a : !device.buffer<640xf16>
  %d = device.alloc {name = "d", cores = 4 : i64, bytes = 1536 : i64, offset = -1 : i64} : !device.buffer<768xf16>
  device.free %d : !device.buffer<768xf16>
  %e = device.alloc {name = "e", cores = 4 : i64, bytes = 1536 : i64, offset = -1 : i64} : !device.buffer<768xf16>
  device.free %c : !device.buffer<384xf16>
  device.free %e : !device.buffer<768xf16>
  func.return
}
}
"""


def _intervals():
    module = parse_module(FIVE_BUFFERS, "five.mlir")
    (func,) = [op for op in module.walk() if isinstance(op, FuncOp)]
    return live_intervals(func)


def _height(intervals, offsets) -> int:
    return max(offsets[i.op] + i.size for i in intervals)


def test_the_search_packs_what_the_fixed_orders_fragment():
    intervals = _intervals()
    live = peak_live_bytes(intervals)
    assert live == 2816
    assert _height(intervals, online_first_fit(intervals)) > live
    assert all(_height(intervals, offline_placement(intervals, key)) > live for key in STRATEGIES)
    offsets, culprit = place(intervals, live)
    assert culprit is None and _height(intervals, offsets) == live
    for x in intervals:   # no two buffers live at once share a byte
        for y in intervals:
            if x is not y and x.start < y.end and y.start < x.end:
                assert offsets[x.op] + x.size <= offsets[y.op] or offsets[y.op] + y.size <= offsets[x.op]
    assert offsets == searched_placement(intervals, live)   # seeded: the same program, the same placement


def test_a_program_no_order_packs_names_its_buffer():
    intervals = _intervals()
    offsets, culprit = place(intervals, 2815)   # one byte short of the live peak
    assert culprit is not None and searched_placement(intervals, 2815) is None
