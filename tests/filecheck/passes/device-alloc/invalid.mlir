// RUN: irc-opt %s -p device-alloc --split-input-file --verify-diagnostics | filecheck %s

func.func @overflow() attributes {irc.target = #irc.target<"tiny4", "t10", {}>} {
  %a = device.alloc {name = "a", cores = 4 : i64, bytes = 2048 : i64, offset = -1 : i64} : !device.buffer<1024xf16>
  %b = device.alloc {name = "b", cores = 4 : i64, bytes = 1024 : i64, offset = -1 : i64} : !device.buffer<512xf16>
  %c = device.alloc {name = "c", cores = 4 : i64, bytes = 2048 : i64, offset = -1 : i64} : !device.buffer<1024xf16>
  func.return
}
// CHECK: invalid.mlir:6:3: error: 'device.alloc' op SRAM overflow on core 0: buffer c (2048 B) does not fit next to the live buffers a (2048 B), b (1024 B): 5120 bytes needed (first free offset 3072), core has 4096 bytes on tiny4

// -----

func.func @cores() attributes {irc.target = #irc.target<"tiny4", "t10", {}>} {
  %a = device.alloc {name = "a", cores = 8 : i64, bytes = 2048 : i64, offset = -1 : i64} : !device.buffer<1024xf16>
  func.return
}
// CHECK: error: 'device.alloc' op buffer a is placed on 8 cores but tiny4 has 4

// -----

func.func @nodevice() {
  %a = device.alloc {name = "a", cores = 4 : i64, bytes = 2048 : i64, offset = -1 : i64} : !device.buffer<1024xf16>
  func.return
}
// CHECK: invalid.mlir:21:1: error: device-alloc: the module has no irc.target; run rtensor-partition{device=... cost=...} (or irc-target{device=... cost=...}) first
