// RUN: irc-opt %s -p 'te-autodiff{wrt=all}' | filecheck %s

// Convolution gradients from the tensor expression, with an explicit output gradient
// (irc.grad_of). Unit stride: dX is the transposed convolution, written at the read's
// own index h+r (several points meet one element: a sum).
// CHECK-LABEL: func.func @unit_stride
// CHECK:         te.op "D1[n,c,h+r,w+s] += G[n,f,h,w] * W[f,c,r,s]" (%dy, %w) : (tensor<1x3x3x3xf32>, tensor<3x2x3x3xf32>) -> tensor<1x2x5x5xf32>
// CHECK-NEXT:    te.op "D2[f,c,r,s] += G[n,f,h,w] * X[n,c,h+r,w+s]" (%dy, %x) : (tensor<1x3x3x3xf32>, tensor<1x2x5x5xf32>) -> tensor<3x2x3x3xf32>
func.func @unit_stride(%x: tensor<1x2x5x5xf32>, %w: tensor<3x2x3x3xf32>, %dy: tensor<1x3x3x3xf32> {irc.grad_of = 0 : i64}) -> tensor<1x3x3x3xf32> {
  %y = te.op "Y[n,f,h,w] += X[n,c,h+r,w+s] * W[f,c,r,s]" (%x, %w) : (tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x3x3xf32>
  func.return %y : tensor<1x3x3x3xf32>
}

// Stride 2: the index 2*h+r cannot be written; dX is the column GEMM dY·Wᵀ (reading the
// same dY as dW, as IGO's im2col view has it), dilated by the stride along h and w,
// then summed into place (col2im).
// CHECK-LABEL: func.func @stride_two
// CHECK:         %[[COL:.*]] = te.op "U1[n,c,h,r,w,s] += G[n,f,h,w] * W[f,c,r,s]" (%dy, %w) : (tensor<1x3x2x2xf32>, tensor<3x2x3x3xf32>) -> tensor<1x2x2x3x2x3xf32>
// CHECK-NEXT:    %[[V:.*]] = te.op "V[n,c,h,0,r,w,s] = U[n,c,h,r,w,s]" (%[[COL]])
// CHECK-NEXT:    %[[D:.*]] = te.op "D[n,c,t2+2*h,r,w,s] = V[n,c,h,t2,r,w,s]" (%[[V]]) : (tensor<1x2x2x2x3x2x3xf32>) -> tensor<1x2x4x3x2x3xf32>
// CHECK-NEXT:    te.op "V[n,c,h,r,w,0,s] = U[n,c,h,r,w,s]"
// CHECK-NEXT:    %[[DW:.*]] = te.op "D[n,c,h,r,t3+2*w,s] = V[n,c,h,r,w,t3,s]"
// CHECK-NEXT:    %[[DX:.*]] = te.op "D4[n,c,h+r,w+s] += U[n,c,h,r,w,s] where h in 3, w in 3, z5 in 1" (%[[DW]]) : (tensor<1x2x4x3x4x3xf32>) -> tensor<1x2x5x5xf32>
// CHECK-NEXT:    %[[DWT:.*]] = te.op "D6[f,c,r,s] += G[n,f,h,w] * X[n,c,2*h+r,2*w+s]" (%dy, %x)
// CHECK-NEXT:    func.return %{{.*}}, %[[DX]], %[[DWT]]
func.func @stride_two(%x: tensor<1x2x5x5xf32>, %w: tensor<3x2x3x3xf32>, %dy: tensor<1x3x2x2xf32> {irc.grad_of = 0 : i64}) -> tensor<1x3x2x2xf32> {
  %y = te.op "Y[n,f,h,w] += X[n,c,2*h+r,2*w+s] * W[f,c,r,s]" (%x, %w) : (tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x2x2xf32>
  func.return %y : tensor<1x3x2x2xf32>
}

// Max pooling routes dY to the window elements equal to the maximum.
// CHECK-LABEL: func.func @max_pool
// CHECK:         te.op "D1[n,c,h+r] += select(X[n,c,h+r] == Y1[n,c,h], G[n,c,h], 0) where r in 2, z2 in 1" (%x, %y, %dy)
func.func @max_pool(%x: tensor<1x2x5xf32>, %dy: tensor<1x2x4xf32> {irc.grad_of = 0 : i64}) -> tensor<1x2x4xf32> {
  %y = te.op "Y[n,c,h] max= X[n,c,h+r] where r in 2" (%x) : (tensor<1x2x5xf32>) -> tensor<1x2x4xf32>
  func.return %y : tensor<1x2x4xf32>
}

// A gather's gradient scatters dY back into the table, summing repeated rows.
// CHECK-LABEL: func.func @gather
// CHECK:         %[[J:.*]] = te.op "J[i,j] = I[i]" (%ids) : (tensor<3xi64>) -> tensor<3x4xi64>
// CHECK-NEXT:    %[[Z:.*]] = te.op "Z[i0,i1] = 0" () : () -> tensor<6x4xf32>
// CHECK-NEXT:    te.opaque "ScatterElements"(%[[Z]], %[[J]], %dy) {axis = 0 : i64, reduction = "add"} : (tensor<6x4xf32>, tensor<3x4xi64>, tensor<3x4xf32>) -> tensor<6x4xf32>
func.func @gather(%e: tensor<6x4xf32>, %ids: tensor<3xi64>, %dy: tensor<3x4xf32> {irc.grad_of = 0 : i64}) -> tensor<3x4xf32> {
  %y = te.op "Y[i,j] = E[I[i],j]" (%e, %ids) : (tensor<6x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  func.return %y : tensor<3x4xf32>
}
