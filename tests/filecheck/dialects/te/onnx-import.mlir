// ONNX -> te: irc-translate on a model with attention-mask logic (Inputs/masked_embedding.onnx,
// made by Inputs/make_onnx_inputs.py). The Shape/Gather/Concat chain that computes the
// Reshape target folds away; the embedding table goes to the side weights file.
// RUN: irc-translate --import-onnx %S/Inputs/masked_embedding.onnx --shape batch=2 --shape seq=6 -o %t.mlir
// RUN: filecheck %s < %t.mlir
// RUN: irc-opt %t.mlir | irc-opt | filecheck %s
// RUN: irc-run %t.mlir | filecheck %s --check-prefix=EXEC
// RUN: not irc-translate --import-onnx %S/Inputs/masked_embedding.onnx 2>&1 | filecheck %s --check-prefix=DYNAMIC
// RUN: not irc-translate --import-onnx %s 2>&1 | filecheck %s --check-prefix=NOT-ONNX

// CHECK: builtin.module attributes {irc.weights = "{{.*}}.weights.npz"}
// CHECK: func.func @main(%{{.*}}: tensor<2x6xi64> {irc.name = "input_ids"}, %{{.*}}: tensor<2x6xi64> {irc.name = "attention_mask"}, %{{.*}}: tensor<50x8xf32> {irc.name = "embeddings.weight", irc.weight}) -> (tensor<2x2x4x6xf32> {irc.name = "probs"})
// Negative indices wrap, then the table is read at the index: an indirect index.
// CHECK: te.op "Y[d0,d1] = select(A[d0,d1] < 0, A[d0,d1] + 50, A[d0,d1])"
// CHECK: te.op "Y[q0,q1,d1] = A[B[q0,q1],d1]"
// The folded Reshape (B,S,8) -> (B,S,2,4) splits a dim: an affine read.
// CHECK-NOT: Shape
// CHECK: te.op "Y[o0,o1,o2,o3] = A[o0,o1,4*o2+o3]"
// CHECK: te.op "Y[d0,d1] = cast(A[d0,d1])" (%{{.*}}) : (tensor<2x6xi64>) -> tensor<2x6xf32>
// CHECK: te.op "Y[o0,0,0,o3] = A[o0,o3]"
// Softmax: max-reduce, exp(x - max), sum-reduce, divide.
// CHECK: te.op "M[d0,d1,d2] max= A[d0,d1,d2,d3]"
// CHECK: te.op "E[d0,d1,d2,d3] = exp(A[d0,d1,d2,d3] - B[d0,d1,d2])"
// CHECK: te.op "Y[d0,d1,d2] += A[d0,d1,d2,d3]"
// CHECK: te.op "Y[d0,d1,d2,d3] = A[d0,d1,d2,d3] / B[d0,d1,d2]"
// CHECK: func.return

// EXEC: probs: tensor<2x2x4x6, float32>

// DYNAMIC: error: input 'input_ids' has a dynamic dimension 'batch'; fix it with --shape input_ids=NxN

// NOT-ONNX: error: {{.*}}onnx-import.mlir is not an ONNX model
