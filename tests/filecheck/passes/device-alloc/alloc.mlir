// RUN: irc-opt %s -p device-alloc | filecheck %s
// RUN: irc-opt %s -p 'device-alloc{device=tiny4}' | filecheck %s

// First fit in program order; a freed range is reused.
func.func @main() attributes {irc.target = #irc.target<"tiny4", "t10", {}>} {
  %a = device.alloc {name = "a", cores = 4 : i64, bytes = 2048 : i64, offset = -1 : i64} : !device.buffer<1024xf16>
  %b = device.alloc {name = "b", cores = 4 : i64, bytes = 1024 : i64, offset = -1 : i64} : !device.buffer<512xf16>
  device.free %a : !device.buffer<1024xf16>
  %c = device.alloc {name = "c", cores = 2 : i64, bytes = 1024 : i64, offset = -1 : i64} : !device.buffer<512xf16>
  %d = device.alloc {name = "d", cores = 4 : i64, bytes = 1024 : i64, offset = -1 : i64} : !device.buffer<512xf16>
  func.return
}
// CHECK: name = "a", cores = 4 : i64, bytes = 2048 : i64, offset = 0 : i64
// CHECK: name = "b", cores = 4 : i64, bytes = 1024 : i64, offset = 2048 : i64
// CHECK: name = "c", cores = 2 : i64, bytes = 1024 : i64, offset = 0 : i64
// CHECK: name = "d", cores = 4 : i64, bytes = 1024 : i64, offset = 1024 : i64

// A reduce that rounds an f32 accumulator to f16 does so in place: the rounded buffer
// keeps the accumulator's offset and its first 8 of 16 bytes; the other 8 are free for
// the next buffer.
func.func @rounded() attributes {irc.target = #irc.target<"tiny4", "t10", {}>} {
  %acc = device.alloc {name = "acc", cores = 2 : i64, bytes = 16 : i64, offset = -1 : i64} : !device.buffer<1x4xf32>
  %x = device.alloc {name = "x", cores = 2 : i64, bytes = 16 : i64, offset = -1 : i64} : !device.buffer<1x4xf32>
  %r = device.reduce %acc {group = array<i64: 0, 1>, replicas = 1 : i64, combiner = "+=", kind = "matmul", roles = {}, out_step_elems = 4 : i64, out_resident_elems = 4 : i64, cores = 2 : i64} : !device.buffer<1x4xf32> -> !device.buffer<1x4xf16>
  %y = device.alloc {name = "y", cores = 2 : i64, bytes = 8 : i64, offset = -1 : i64} : !device.buffer<1x4xf16>
  device.free %r : !device.buffer<1x4xf16>
  %z = device.alloc {name = "z", cores = 2 : i64, bytes = 16 : i64, offset = -1 : i64} : !device.buffer<1x4xf32>
  func.return
}
// CHECK-LABEL: func.func @rounded
// CHECK: name = "acc", cores = 2 : i64, bytes = 16 : i64, offset = 0 : i64
// CHECK: name = "x", cores = 2 : i64, bytes = 16 : i64, offset = 16 : i64
// CHECK: %r = device.reduce %acc {{.*}} : !device.buffer<1x4xf32> -> !device.buffer<1x4xf16>
// CHECK: name = "y", cores = 2 : i64, bytes = 8 : i64, offset = 8 : i64
// CHECK: name = "z", cores = 2 : i64, bytes = 16 : i64, offset = 32 : i64
