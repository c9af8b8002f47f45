// RUN: irc-opt %s -p 'inference{device=tiny16-hbm}' | filecheck %s
// RUN: irc-opt %s -p 'rtensor-partition{device=tiny16-hbm},rtensor-to-shift,rotation-align,shift-to-device,preload-schedule,device-alloc' | filecheck %s

// Four 256 KB weights (2 MB) do not fit in tiny16-hbm's 1 MB of SRAM: rtensor-partition
// plans the model with ELK (seeds/004 s4.2-s4.4) instead of failing, and preload-schedule
// issues each operator's HBM loads while earlier operators run (s4.5), at the plan's
// frontiers (`irc.preload` on each kernel): w1 during the first matmul, w2 once the
// first relu is done, w3 once the second is (the matmuls take longer than their loads,
// so an earlier load would not let any of them start earlier), each waited for at the
// start of the operator reading it, which reads it where it was preloaded (its preload
// state is its execute state: held once, no redistribution).
func.func @main(%x: tensor<16x256xf32> {irc.name = "x"}, %w0: tensor<256x256xf32> {irc.name = "w0", irc.weight}, %w1: tensor<256x256xf32> {irc.name = "w1", irc.weight}, %w2: tensor<256x256xf32> {irc.name = "w2", irc.weight}, %w3: tensor<256x256xf32> {irc.name = "w3", irc.weight}) -> (tensor<16x256xf32> {irc.name = "y"}) {
  %h0 = te.op "H[m,n] += X[m,k] * W[k,n]" (%x, %w0) : (tensor<16x256xf32>, tensor<256x256xf32>) -> tensor<16x256xf32>
  %r0 = te.op "R[m,n] = relu(H[m,n])" (%h0) : (tensor<16x256xf32>) -> tensor<16x256xf32>
  %h1 = te.op "H[m,n] += X[m,k] * W[k,n]" (%r0, %w1) : (tensor<16x256xf32>, tensor<256x256xf32>) -> tensor<16x256xf32>
  %r1 = te.op "R[m,n] = relu(H[m,n])" (%h1) : (tensor<16x256xf32>) -> tensor<16x256xf32>
  %h2 = te.op "H[m,n] += X[m,k] * W[k,n]" (%r1, %w2) : (tensor<16x256xf32>, tensor<256x256xf32>) -> tensor<16x256xf32>
  %r2 = te.op "R[m,n] = relu(H[m,n])" (%h2) : (tensor<16x256xf32>) -> tensor<16x256xf32>
  %h3 = te.op "H[m,n] += X[m,k] * W[k,n]" (%r2, %w3) : (tensor<16x256xf32>, tensor<256x256xf32>) -> tensor<16x256xf32>
  %r3 = te.op "R[m,n] = relu(H[m,n])" (%h3) : (tensor<16x256xf32>) -> tensor<16x256xf32>
  func.return %r3 : tensor<16x256xf32>
}

// CHECK:      device.preload_async %w0 into %W_idle
// CHECK:      device.preload_async %x into %X
// CHECK:      device.preload_async %w1 into %W_idle_1
// CHECK:      device.wait %W_idle :
// CHECK-NEXT: device.wait %X :
// CHECK-NOT:  device.relayout %W_idle
// CHECK:      device.mma "H[m,n] += X[m,k] * W[k,n]" %H, (%X, %W_idle)
// CHECK:      device.reduce %H {irc.preload = {slot = 0 : i64, frontier = 3 : i64}
// CHECK-NOT:  device.wait
// CHECK:      device.reduce %R {irc.preload = {slot = 1 : i64, frontier = 3 : i64}
// CHECK:      device.preload_async %w2 into %W_idle_2
// CHECK:      device.wait %W_idle_1 :
// CHECK:      device.mma "H[m,n] += X[m,k] * W[k,n]" %H_2, (%X_1, %W_idle_1)
// CHECK:      device.reduce %H_2 {
// CHECK:      device.reduce %R_1 {
// CHECK:      device.preload_async %w3 into %W_idle_3
// CHECK:      device.wait %W_idle_2 :
// CHECK:      device.wait %W_idle_3 :
// CHECK-NOT:  device.preload_async
// CHECK-NOT:  device.load
// CHECK:      func.return
