// RUN: irc-opt %s --split-input-file -p 'rtensor-partition{device=tiny16},rtensor-check' | filecheck %s
// RUN: irc-opt %s --split-input-file -p 'rtensor-partition{device=tiny16}' | irc-opt --split-input-file -p 'rtensor-to-shift,rotation-align,shift-to-device,device-alloc' | filecheck %s --check-prefix=DEVICE

// A gradient pair on an inter-core chip (igo-fuse{device=tiny16}): one plan for both
// products wins here (dY arrives in one layout instead of two), so the pair becomes an
// rtensor.grad_pair with its fused plan's cycles and the comparison it won.
// CHECK-LABEL: func.func @fused
// CHECK:         %[[DY:.*]] = rtensor.relayout %dy : tensor<256x64xf16> -> !rtensor.tensor<256x64xf16, fs=[2,1], ft=[1,1], replicas=8>
// CHECK:         rtensor.grad_pair dx "DX[m,k] += G[m,n] * W[k,n]" dw "DW[k,n] += G[m,n] * X[m,k]" (%[[DY]], %{{.*}}, %{{.*}}) F_op = array<i64: 2, 8, 1> {planned_cycles = {{.*}} : f64, irc.pair = "fused 15,584 cycles + 7,016 for its inputs' arrival vs the unfused pair 15,584 cycles + 11,839 for its inputs' arrival (dY twice)"}
// DEVICE-LABEL: func.func @fused
// DEVICE-COUNT-2: device.mma
func.func @fused(%dy: tensor<256x64xf16> {irc.name = "dy"}, %w: tensor<128x64xf16> {irc.name = "w"}, %x: tensor<256x128xf16> {irc.name = "x"}) -> (tensor<256x128xf16>, tensor<128x64xf16>) {
  %dx, %dw = igo.grad_pair dx "DX[m,k] += G[m,n] * W[k,n]" dw "DW[k,n] += G[m,n] * X[m,k]" (%dy, %w, %x) : (tensor<256x64xf16>, tensor<128x64xf16>, tensor<256x128xf16>) -> (tensor<256x128xf16>, tensor<128x64xf16>)
  func.return %dx, %dw : tensor<256x128xf16>, tensor<128x64xf16>
}

// -----

// Here the two products planned apart are faster: the pair goes back to its two te ops,
// each planned on its own, saying why.
// CHECK-LABEL: func.func @unfused
// CHECK:         rtensor.op "DX[m,k] += G[m,n] * W[k,n]" {{.*}}irc.unfused = "run as two operators, which is faster: fused {{[0-9,]+}} cycles
// CHECK:         rtensor.op "DW[k,n] += G[m,n] * X[m,k]" {{.*}}irc.unfused = "run as two operators
// CHECK-NOT:     grad_pair
func.func @unfused(%dy: tensor<64x64xf16> {irc.name = "dy"}, %w: tensor<1024x64xf16> {irc.name = "w"}, %x: tensor<64x1024xf16> {irc.name = "x"}) -> (tensor<64x1024xf16>, tensor<1024x64xf16>) {
  %dx, %dw = igo.grad_pair dx "DX[m,k] += G[m,n] * W[k,n]" dw "DW[k,n] += G[m,n] * X[m,k]" (%dy, %w, %x) : (tensor<64x64xf16>, tensor<1024x64xf16>, tensor<64x1024xf16>) -> (tensor<64x1024xf16>, tensor<1024x64xf16>)
  func.return %dx, %dw : tensor<64x1024xf16>, tensor<1024x64xf16>
}

// -----

// A convolution's dX writes a compound index (h+r): no plan describes the pair, whose
// dX then runs on the host like any op the planner cannot describe.
// CHECK-LABEL: func.func @conv
// CHECK:         te.op "DX[n,c,h+r,w+s] += DY[n,f,h,w] * W[f,c,r,s]" {{.*}}irc.unfused = "no fused plan: the planner cannot describe the pair as one plan (output dimension 2 of DX is indexed by 'h+r'
// CHECK:         rtensor.op "DW[f,c,r,s] += DY[n,f,h,w] * X[n,c,h+r,w+s]"
func.func @conv(%x: tensor<1x2x5x5xf32>, %w: tensor<3x2x3x3xf32>, %dy: tensor<1x3x3x3xf32>) -> (tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32>) {
  %dx, %dw = igo.grad_pair dx "DX[n,c,h+r,w+s] += DY[n,f,h,w] * W[f,c,r,s]" dw "DW[f,c,r,s] += DY[n,f,h,w] * X[n,c,h+r,w+s]" (%dy, %w, %x) : (tensor<1x3x3x3xf32>, tensor<3x2x3x3xf32>, tensor<1x2x5x5xf32>) -> (tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32>)
  func.return %dx, %dw : tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32>
}

// -----

// The fused pair wins alone, but %r stays on chip across it: the model-wide plan, whose
// table for the pair holds its fused plans and its unfused points, finds no fused plan in
// the pair's budget and chooses an unfused point, so the pair goes back to its two te ops
// (saying why) and the function is planned again; device-alloc places the result.
// CHECK-LABEL: func.func @no_room
// CHECK:         rtensor.op "DX[m,k] += G[m,n] * W[k,n]" {{.*}}irc.unfused = "run as two operators: the model-wide plan's point for this pair within its budget of 40,960 bytes per core is unfused (dX {{[0-9,]+}} + dW {{[0-9,]+}} cycles in {{[0-9,]+}} bytes per core); no fused plan fits in it"
// CHECK:         rtensor.op "DW[k,n] += G[m,n] * X[m,k]" {{.*}}irc.unfused = "run as two operators: the model-wide plan's point
// CHECK-NOT:     grad_pair
// DEVICE-LABEL: func.func @no_room
// DEVICE:         device.alloc
func.func @no_room(%dy: tensor<128x32xf32> {irc.name = "dy"}, %w: tensor<512x32xf32> {irc.name = "w"},
                %x: tensor<128x512xf32> {irc.name = "x"}, %a: tensor<384x256xf32> {irc.name = "a"})
    -> (tensor<128x512xf32>, tensor<512x32xf32>, tensor<f32>) {
  %r = te.op "R[i,j] = relu(A[i,j])" (%a) : (tensor<384x256xf32>) -> tensor<384x256xf32>
  %dx, %dw = igo.grad_pair dx "DX[m,k] += G[m,n] * W[k,n]" dw "DW[k,n] += G[m,n] * X[m,k]" (%dy, %w, %x)
    : (tensor<128x32xf32>, tensor<512x32xf32>, tensor<128x512xf32>) -> (tensor<128x512xf32>, tensor<512x32xf32>)
  %s = te.op "S[] += R[i,j]" (%r) : (tensor<384x256xf32>) -> tensor<f32>
  func.return %dx, %dw, %s : tensor<128x512xf32>, tensor<512x32xf32>, tensor<f32>
}
