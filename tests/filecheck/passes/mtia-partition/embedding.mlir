// RUN: irc-opt %s -p 'mtia-partition' | filecheck %s --check-prefix=PLAN
// RUN: irc-opt %s -p 'mtia-partition,te-to-mtia' | filecheck %s --check-prefix=LOWER
// RUN: irc-opt %s -p 'mtia-partition,te-to-mtia' --print-op-generic | irc-opt | filecheck %s --check-prefix=LOWER
// RUN: irc-opt %s -p 'mtia-partition,te-to-mtia' -o %t.mlir
// RUN: python -c "import numpy as np; np.savez('%t.npz', arg0=np.arange(1600, dtype=np.float32).reshape(50, 32) / 64, arg1=(np.arange(40) * 7 %% 50).astype(np.int64), arg2=(np.arange(10) * 4).astype(np.int64))"
// RUN: irc-run %t.mlir --inputs %t.npz --report | filecheck %s --check-prefix=EXEC

// seeds/001 section 6: an EmbeddingBag (10 bags of 4 rows of a 50 x 32 f32 table) on
// MTIA's PEs. The batch spreads one sample per PE over 10 PEs (a 2x8 grid, the last six
// idle); each gathers its bag's rows from SRAM into a circular buffer deep enough to
// cover a read's latency and pools them on its SIMD engine.

// PLAN:      te.opaque "EmbeddingBag"(%table, %idx, %off) {mode = "mean", mtia.embedding = #mtia.embedding<{
// PLAN-SAME:   home = "sram", grid = array<i64: 2, 8>, samples = 1 : i64, window = 16 : i64, planned_cycles =

// LOWER-LABEL: func.func @main
// LOWER-NEXT:    %[[ROWS:.*]] = mtia.cb_init {name = "table", id = 0 : i64, depth = 2048 : i64, grid = array<i64: 2, 8>} : !mtia.cb<16x32xf32>
// LOWER-NEXT:    mtia.gather %table, %idx, %off into %[[ROWS]] {first = affine_map<(d0, d1) -> (((d0 * 8) + d1))>, samples = 1 : i64, tables = array<i64: 50>, batch = 10 : i64, level = "sram"} : tensor<50x32xf32>, tensor<40xi64>, tensor<10xi64>, !mtia.cb<16x32xf32>
// LOWER-NEXT:    %[[POOLED:.*]] = mtia.pool %[[ROWS]] {mode = "mean"} : !mtia.cb<16x32xf32> -> !mtia.acc<1x32xf32>
// LOWER-NEXT:    %[[BAGS:.*]] = mtia.store %[[POOLED]] {origin = affine_map<(d0, d1) -> (((d0 * 8) + d1), 0)>, level = "sram"} : !mtia.acc<1x32xf32> -> tensor<10x32xf32>
// LOWER-NEXT:    func.return %[[BAGS]] : tensor<10x32xf32>

// SRAM serves 40 rows of 128 B, each PE's 4 indices and 2 offsets (48 B), and the 10
// pooled rows of 128 B: 5120 + 480 + 1280 bytes. The rows arrive one DMA command (16
// cycles) apart; nothing runs on the host.
// EXEC:      chip time on mtia-v1 (MTIA)
// EXEC:      traffic: {{.*}} SRAM 6,880 B, LPDDR 0 B
// EXEC:      kernel bags: {{.*}} on 16 PEs (embedding); 6 DMA commands per PE, SIMD
// EXEC-NOT:  host:
// EXEC:      model-wide plan: {{.*}} cycles predicted, {{.*}} interpreted (ratio 1.0000)
// EXEC:      result0: tensor<10x32, float32>
// EXEC-NEXT: {{\[\[}} 5.25    5.2656
func.func @main(%table: tensor<50x32xf32>, %idx: tensor<40xi64>, %off: tensor<10xi64>) -> tensor<10x32xf32> {
  %bags = te.opaque "EmbeddingBag"(%table, %idx, %off) {mode = "mean"} : (tensor<50x32xf32>, tensor<40xi64>, tensor<10xi64>) -> tensor<10x32xf32>
  func.return %bags : tensor<10x32xf32>
}
