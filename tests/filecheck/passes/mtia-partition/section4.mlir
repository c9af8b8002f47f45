// RUN: irc-opt %s -p 'mtia-partition{grid=4x4 splits=1x4x2x2}' | filecheck %s --check-prefix=PLAN
// RUN: irc-opt %s -p 'mtia-partition{grid=4x4 splits=1x4x2x2},te-to-mtia' | filecheck %s --check-prefix=LOWER
// RUN: irc-opt %s -p 'mtia-partition{grid=4x4 splits=1x4x2x2},te-to-mtia' --print-op-generic | irc-opt | filecheck %s --check-prefix=LOWER
// RUN: irc-opt %s -p 'mtia-partition{grid=4x4 splits=1x4x2x2},te-to-mtia' -o %t.mlir
// RUN: irc-run %t.mlir --report | filecheck %s --check-prefix=EXEC

// seeds/001 section 4, Figure 7: an FC of 512(m) x 1024(k) x 256(n), INT8, on a 4x4 PE
// sub-grid. k is split over two PEs of each row, m over the four rows (so n over the two
// column pairs). "PEs in columns 0 and 2, and PEs in columns 1 and 3 participate in row
// multicast-read of matrix A. Similarly, all PEs in each column participate in column
// multicast-read of matrix Bᵀ."

// PLAN:      builtin.module attributes {irc.target = #irc.target<"mtia-v1", "mtia", {
// PLAN:        te.op "C[m,n] += A[m,k] * B[k,n]" (%A, %B) {mtia.mapping = #mtia.mapping<{
// PLAN-SAME:     grid = array<i64: 4, 4>, splits = array<i64: 1, 4, 2, 2>, per_pe = array<i64: 1, 128, 128, 512>,
// PLAN-SAME:     rows_axis = "m", k_along = "cols", passes = array<i64: 1, 1>, depths = array<i64: 38912, 65536>, homes = ["sram", "sram", "sram"],
// PLAN-SAME:     multicast_row_A = [array<i64: 0, 2>, array<i64: 1, 3>],
// PLAN-SAME:     multicast_column_B = [array<i64: 0, 1, 2, 3>],
// PLAN-SAME:     planned_cycles =

// Each PE (d0, d1) computes m part d0, n part d1 floordiv 2, k part d1 mod 2: A's slice
// starts at (128 d0, 512 (d1 mod 2)), the same for columns 0 and 2 (1 and 3) of a row;
// B's at (512 (d1 mod 2), 128 (d1 floordiv 2)), the same down a column. The two k halves
// of a row are reduced west to east; the chain ends (columns 1 and 3) write C.
// LOWER-LABEL: func.func @main
// LOWER-NEXT:    %[[CA:.*]] = mtia.cb_init {name = "A", id = 0 : i64, depth = 38912 : i64, grid = array<i64: 4, 4>} : !mtia.cb<128x512xi8>
// LOWER-NEXT:    %[[CB:.*]] = mtia.cb_init {name = "B", id = 1 : i64, depth = 65536 : i64, grid = array<i64: 4, 4>} : !mtia.cb<512x128xi8>
// LOWER-NEXT:    mtia.dma %A into %[[CA]] {origin = affine_map<(d0, d1) -> ((d0 * 128), ((d1 mod 2) * 512))>, block = array<i64: 64, 32>, multicast = "row", level = "sram"}
// LOWER-NEXT:    mtia.dma %B into %[[CB]] {origin = affine_map<(d0, d1) -> (((d1 mod 2) * 512), ((d1 floordiv 2) * 128))>, block = array<i64: 32, 64>, multicast = "column", level = "sram"}
// LOWER-NEXT:    %[[ACC:.*]] = mtia.mml %[[CA]], %[[CB]] {b_transposed = false} : !mtia.cb<128x512xi8>, !mtia.cb<512x128xi8> -> !mtia.acc<128x128xi32>
// LOWER-NEXT:    %[[SUM:.*]] = mtia.reduce %[[ACC]] {direction = "west-east", chain = 2 : i64} : !mtia.acc<128x128xi32>
// LOWER-NEXT:    %[[C:.*]] = mtia.store %[[SUM]] {origin = affine_map<(d0, d1) -> ((d0 * 128), ((d1 floordiv 2) * 128))>, level = "sram"} : !mtia.acc<128x128xi32> -> tensor<512x256xi8>
// LOWER-NEXT:    func.return %[[C]] : tensor<512x256xi8>

// 4 x 2 reads of A's 64 KB slices and 4 reads of B's (multicast), 8 chain ends writing
// 16 KB of C: 917,504 bytes from SRAM; per PE 2 x 2 tiles x 16 k steps x 4 MMLs.
// The fill, by hand: A's first 64x32 block (2048 B) is issued at cycle 0 and arrives
// after the command (16), SRAM's latency (200), 6 hops from the edge (4 columns + 4/2
// rows, 2 cycles each) and 2048 B at the PE link's 64 B/cycle (32; SRAM's 1000 B/cycle
// shared by the 7 bytes it serves per byte queued - 917,504 / 131,072 - is 14.3):
// 260. B's block is issued at 16 and streams behind it in the PE's one DMA queue:
// max(16 + 16 + 200 + 12 + 32, 260 + 32) = 292, when the first MML starts.
// EXEC:      chip time on mtia-v1 (MTIA)
// EXEC:      fill{{ +}}292 cycles
// EXEC:      compute{{ +}}8,192 cycles
// EXEC:      traffic: {{.*}} SRAM 917,504 B, LPDDR 0 B
// EXEC:      kernel c: {{.*}} on 16 PEs (matmul); 256 MML and 68 DMA commands per PE
// EXEC:      model-wide plan: {{.*}} cycles predicted, {{.*}} interpreted (ratio 1.0
func.func @main(%A: tensor<512x1024xi8>, %B: tensor<1024x256xi8>) -> tensor<512x256xi8> {
  %c = te.op "C[m,n] += A[m,k] * B[k,n]" (%A, %B) : (tensor<512x1024xi8>, tensor<1024x256xi8>) -> tensor<512x256xi8>
  func.return %c : tensor<512x256xi8>
}
