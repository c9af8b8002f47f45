// The te-level reference of the matmul kernels in these tests (not a test itself).
func.func @main(%a: tensor<8x12xf32>, %b: tensor<12x16xf32>) -> tensor<8x16xf32> {
  %c = te.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) : (tensor<8x12xf32>, tensor<12x16xf32>) -> tensor<8x16xf32>
  func.return %c : tensor<8x16xf32>
}
