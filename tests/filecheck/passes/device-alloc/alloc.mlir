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
