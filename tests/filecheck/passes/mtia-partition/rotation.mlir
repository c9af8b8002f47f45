// RUN: irc-opt %s -p 'mtia-partition' | filecheck %s --check-prefix=PLAN
// RUN: irc-opt %s -p 'mtia-partition,te-to-mtia' | filecheck %s --check-prefix=LOWER
// RUN: irc-opt %s -p 'mtia-partition,te-to-mtia' --print-op-generic | irc-opt | filecheck %s --check-prefix=LOWER
// RUN: irc-opt %s -p 'mtia-partition,te-to-mtia' -o %t.mlir
// RUN: irc-run %t.mlir --report | filecheck %s --check-prefix=EXEC
// RUN: irc-opt %s -p 'mtia-partition{rotation=false}' | filecheck %s --check-prefix=MAPPING

// A 200 x 1500 x 100 FP16 FC, where irc-plan --device mtia-v1 --cost mtia finds a T10
// plan over the NoC cheaper than MTIA's own mapping (which pads m and n to 64): F_op =
// 4 (m) x 4 (n) x 4 (k) PEs, the output's partitions rotating around rings of 2 PEs
// along m. mtia-partition compiles the plan irc-plan chose.

// PLAN:      te.op "C[m,n] += A[m,k] * B[k,n]" (%A, %B) {mtia.rotation = #mtia.rotation<{op_factors = array<i64: 4, 4, 4>,
// PLAN-SAME:   temporal = {C = array<i64: 2, 1, 1>, A = array<i64: 1, 1, 1>, B = array<i64: 1, 1, 1>},
// PLAN-SAME:   homes = ["sram", "sram", "sram"], planned_cycles = 3062.125 : f64}>}

// Each PE holds a 50x375 block of A and a 375x25 block of B, and a 25x25 block of C's
// FP32 partial sums (plus the one it receives); two steps with one NoC shift of C
// between them, then the 4-way k split is reduced over the reduction network (rings of
// 2 PEs hold the halves of 2 partitions: groups of 2 copies) and the ring leaders write C.
// LOWER-LABEL: func.func @main
// LOWER-NEXT:    %[[C:.*]] = mtia.alloc {name = "C", pes = 64 : i64, offset = 0 : i64, fill = 0.000000e+00 : f64} : !mtia.tile<25x25xf32>
// LOWER-NEXT:    %[[RECV:.*]] = mtia.alloc {name = "C.recv", pes = 64 : i64, offset = 2500 : i64} : !mtia.tile<25x25xf32>
// LOWER-NEXT:    %[[A:.*]] = mtia.alloc {name = "A", pes = 64 : i64, offset = 5000 : i64} : !mtia.tile<50x375xf16>
// LOWER-NEXT:    %[[B:.*]] = mtia.alloc {name = "B", pes = 64 : i64, offset = 42500 : i64} : !mtia.tile<375x25xf16>
// LOWER-NEXT:    mtia.load %A into %[[A]] {origins = affine_map<(d0) -> (((d0 floordiv 16) * 50), ((d0 mod 4) * 375))>, level = "sram"} : tensor<200x1500xf16>, !mtia.tile<50x375xf16>
// LOWER-NEXT:    mtia.load %B into %[[B]] {origins = affine_map<(d0) -> (((d0 mod 4) * 375), (((d0 floordiv 4) mod 4) * 25))>, level = "sram"}
// LOWER-NEXT:    mtia.step "C[m,n] += A[m,k] * B[k,n]" %[[C]], (%[[A]], %[[B]]) {tiles = array<i64: 25, 25, 375>, pes = 64 : i64, windows = [affine_map<(d0) -> (0, 0)>, affine_map<(d0) -> (((d0 mod 2) * 25), 0)>, affine_map<(d0) -> (0, 0)>], kind = "matmul", {{.*}} step = 0 : i64, dtype_bytes = 2 : i64}
// LOWER-NEXT:    mtia.shift %[[C]] through %[[RECV]] {source = affine_map<(d0) -> ({{.*}})>} : !mtia.tile<25x25xf32>, !mtia.tile<25x25xf32>
// LOWER-NEXT:    mtia.step "C[m,n] += A[m,k] * B[k,n]" %[[C]], (%[[A]], %[[B]]) {{.*}} step = 1 : i64
// LOWER-NEXT:    mtia.combine %[[C]] {group = affine_map<(d0) -> ({{.*}})>, replicas = 2 : i64, combiner = "+=", {{.*}} out_resident_elems = 625 : i64, pes = 64 : i64} : !mtia.tile<25x25xf32>
// LOWER-NEXT:    %[[OUT:.*]] = mtia.put %[[C]] {origins = affine_map<(d0) -> ({{.*}})>, group = affine_map<(d0) -> ({{.*}})>, level = "sram"} : !mtia.tile<25x25xf32> -> tensor<200x100xf16>
// LOWER-NEXT:    mtia.free %[[C]] : !mtia.tile<25x25xf32>
// LOWER-NEXT:    mtia.free %[[RECV]] : !mtia.tile<25x25xf32>
// LOWER-NEXT:    mtia.free %[[A]] : !mtia.tile<50x375xf16>
// LOWER-NEXT:    mtia.free %[[B]] : !mtia.tile<375x25xf16>
// LOWER-NEXT:    func.return %[[OUT]] : tensor<200x100xf16>

// The SRAM serves A, B (multicast: each distinct block once) and C once: 600,000 +
// 300,000 + 40,000 bytes; the run takes the planned time. The shift by hand: each PE
// sends its 2,500-byte block of C to its ring neighbour, at most two hops away on the
// mesh (2 x 2 cycles), at its link's 64 B/cycle (39.06): 43 cycles, then a 100-cycle
// barrier.
// EXEC:      chip time on mtia-v1 (MTIA): 3,062 cycles
// EXEC:      shift{{ +}}43 cycles
// EXEC:      sync{{ +}}100 cycles
// EXEC:      traffic: {{.*}} SRAM 940,000 B, LPDDR 0 B
// EXEC:      kernel c: 3,062 cycles on 64 PEs (rotation); 2 compute step(s), 1 NoC shift(s) and 3 DMA commands per PE
// EXEC:      model-wide plan: 3,062 cycles predicted, 3,062 interpreted (ratio 1.0000)

// MAPPING:   te.op "C[m,n] += A[m,k] * B[k,n]" (%A, %B) {mtia.mapping = #mtia.mapping<{
func.func @main(%A: tensor<200x1500xf16>, %B: tensor<1500x100xf16>) -> tensor<200x100xf16> {
  %c = te.op "C[m,n] += A[m,k] * B[k,n]" (%A, %B) : (tensor<200x1500xf16>, tensor<1500x100xf16>) -> tensor<200x100xf16>
  func.return %c : tensor<200x100xf16>
}
