// RUN: irc-opt %s -p 'preload-schedule,device-alloc' | filecheck %s
// RUN: irc-opt %s -p 'preload-schedule,device-alloc' | irc-run - --report | filecheck %s --check-prefix=EXEC

// What the plan says is what runs (ELK s4.2, s4.4): the device program of
// schedule.mlir's four 256 KB weights (after shift-to-device), with each kernel's
// `irc.preload` edited to a preload order other than the execution order: the third
// matmul (w2, slot 2) is preloaded before the second (w1, slot 4). Frontiers: the
// loads up to slot 2 run before the first matmul ends (w0, x, then w2), w1's once the
// first relu is done (its frontier is 4), w3's once the second relu is done. The
// program still computes (the preloads are waited for before their first use; the
// weights are not marked irc.weight here, so irc-run makes up their values).

builtin.module attributes {irc.target = #irc.target<"tiny16-hbm", "t10", {name = "tiny16-hbm", description = "test chip: 16 cores, 64 KiB SRAM each, all-to-all, 32 GB/s HBM", cores = 16 : i64, cores_per_chip = 16 : i64, sram_bytes = 65536 : i64, clock_hz = 1.325000e+09 : f64, systolic = array<i64: 16, 16>, macs_per_cycle = 64 : i64, topology = "all-to-all", link_bytes_per_s = 5.500000e+09 : f64, shift_cycles_per_byte = 2.800000e-01 : f64, sync_cycles = 118 : i64, syncs_per_shift = 2 : i64, inter_chip_overhead = 1.250000e+00 : f64, link_latency_cycles = 0.000000e+00 : f64, offchip.capacity_bytes = 1073741824 : i64, offchip.bytes_per_s = 3.200000e+10 : f64, offchip.controllers_per_chip = 2 : i64, offchip.inter_chip_bytes_per_s = 1.600000e+10 : f64}>} {
  func.func @main(%x: tensor<16x256xf32> {irc.name = "x"}, %w0: tensor<256x256xf32> {irc.name = "w0"}, %w1: tensor<256x256xf32> {irc.name = "w1"}, %w2: tensor<256x256xf32> {irc.name = "w2"}, %w3: tensor<256x256xf32> {irc.name = "w3"}) -> (tensor<16x256xf32> {irc.name = "y"}) attributes {irc.preloaded = {design = "full", split = "paper", hbm_cycles = 44096.000000000007 : f64, exposed_cycles = 1.153280e+04 : f64}, irc.planned_cycles = 66840.319999999992 : f64} {
    %W_idle = device.alloc {name = "w1.W.idle", cores = 16 : i64, bytes = 16384 : i64, offset = -1 : i64} : !device.buffer<64x64xf32>
    device.load %w0 into %W_idle {origins = affine_map<(d0) -> (((d0 mod 4) * 64), ((d0 floordiv 4) * 64))>} : tensor<256x256xf32>, !device.buffer<64x64xf32>
    %W = device.alloc {name = "k1.W", cores = 16 : i64, bytes = 16384 : i64, offset = -1 : i64} : !device.buffer<64x64xf32>
    device.relayout %W_idle into %W {shape = array<i64: 256, 256>, origins = affine_map<(d0) -> (((d0 mod 4) * 64), ((d0 floordiv 4) * 64))>, bytes = 0 : i64, barriers = 0 : i64, pieces = affine_map<(d0, d1) -> ((((d0 floordiv 4) * 4) + (d0 mod 4)), 0, 0, 0, 0)>, piece_count = 1 : i64, piece_shape = array<i64: 64, 64>, setup} : !device.buffer<64x64xf32>, !device.buffer<64x64xf32>
    %H = device.alloc {name = "k1.H", cores = 16 : i64, bytes = 4096 : i64, offset = -1 : i64} : !device.buffer<16x64xf32>
    %X = device.alloc {name = "k1.X", cores = 16 : i64, bytes = 4096 : i64, offset = -1 : i64} : !device.buffer<16x64xf32>
    device.load %x into %X {origins = affine_map<(d0) -> (0, ((d0 mod 4) * 64))>} : tensor<16x256xf32>, !device.buffer<16x64xf32>
    device.fill %H {value = 0.000000e+00 : f64} : !device.buffer<16x64xf32>
    device.mma "H[m,n] += X[m,k] * W[k,n]" %H, (%X, %W) {tiles = array<i64: 16, 64, 64>, cores = 16 : i64, windows = [affine_map<(d0) -> (0, 0)>, affine_map<(d0) -> (0, 0)>, affine_map<(d0) -> (0, 0)>], kind = "matmul", roles = {batch = 1 : i64, m = 16 : i64, n = 64 : i64, k = 64 : i64}, step = 0 : i64} : !device.buffer<16x64xf32>, (!device.buffer<16x64xf32>, !device.buffer<64x64xf32>)
    device.reduce %H {irc.preload = {slot = 0 : i64, frontier = 3 : i64}, group = affine_map<(d0) -> ((d0 floordiv 4))>, replicas = 4 : i64, combiner = "+=", kind = "matmul", roles = {batch = 1 : i64, m = 16 : i64, n = 64 : i64, k = 64 : i64}, out_step_elems = 1024 : i64, out_resident_elems = 1024 : i64, cores = 16 : i64} : !device.buffer<16x64xf32>
    device.free %X : !device.buffer<16x64xf32>
    device.free %W : !device.buffer<64x64xf32>
    device.free %W_idle : !device.buffer<64x64xf32>
    %R = device.alloc {name = "k2.R", cores = 16 : i64, bytes = 1024 : i64, offset = -1 : i64} : !device.buffer<16x16xf32>
    %H_1 = device.alloc {name = "k2.H", cores = 16 : i64, bytes = 1024 : i64, offset = -1 : i64} : !device.buffer<16x16xf32>
    device.relayout %H into %H_1 {shape = array<i64: 16, 256>, origins = affine_map<(d0) -> (0, (d0 * 16))>, bytes = 0 : i64, barriers = 0 : i64, pieces = affine_map<(d0, d1) -> (((d0 floordiv 4) * 4), 0, ((d0 mod 4) * 16), 0, 0)>, piece_count = 1 : i64, piece_shape = array<i64: 16, 16>} : !device.buffer<16x64xf32>, !device.buffer<16x16xf32>
    device.fill %R {value = 0.000000e+00 : f64} : !device.buffer<16x16xf32>
    device.vector "R[m,n] = relu(H[m,n])" %R, (%H_1) {tiles = array<i64: 16, 16>, cores = 16 : i64, windows = [affine_map<(d0) -> (0, 0)>, affine_map<(d0) -> (0, 0)>], kind = "unary", roles = {}, step = 0 : i64} : !device.buffer<16x16xf32>, (!device.buffer<16x16xf32>)
    device.reduce %R {irc.preload = {slot = 1 : i64, frontier = 4 : i64}, group = affine_map<(d0) -> (d0)>, replicas = 1 : i64, combiner = "=", kind = "unary", roles = {}, out_step_elems = 256 : i64, out_resident_elems = 256 : i64, cores = 16 : i64} : !device.buffer<16x16xf32>
    device.free %H_1 : !device.buffer<16x16xf32>
    device.free %H : !device.buffer<16x64xf32>
    %W_idle_1 = device.alloc {name = "w3.W.idle", cores = 16 : i64, bytes = 16384 : i64, offset = -1 : i64} : !device.buffer<64x64xf32>
    device.load %w1 into %W_idle_1 {origins = affine_map<(d0) -> (((d0 mod 4) * 64), ((d0 floordiv 4) * 64))>} : tensor<256x256xf32>, !device.buffer<64x64xf32>
    %W_1 = device.alloc {name = "k3.W", cores = 16 : i64, bytes = 16384 : i64, offset = -1 : i64} : !device.buffer<64x64xf32>
    device.relayout %W_idle_1 into %W_1 {shape = array<i64: 256, 256>, origins = affine_map<(d0) -> (((d0 mod 4) * 64), ((d0 floordiv 4) * 64))>, bytes = 0 : i64, barriers = 0 : i64, pieces = affine_map<(d0, d1) -> ((((d0 floordiv 4) * 4) + (d0 mod 4)), 0, 0, 0, 0)>, piece_count = 1 : i64, piece_shape = array<i64: 64, 64>, setup} : !device.buffer<64x64xf32>, !device.buffer<64x64xf32>
    %H_2 = device.alloc {name = "k3.H", cores = 16 : i64, bytes = 4096 : i64, offset = -1 : i64} : !device.buffer<16x64xf32>
    %X_1 = device.alloc {name = "k3.X", cores = 16 : i64, bytes = 4096 : i64, offset = -1 : i64} : !device.buffer<16x64xf32>
    device.relayout %R into %X_1 {shape = array<i64: 16, 256>, origins = affine_map<(d0) -> (0, ((d0 mod 4) * 64))>, bytes = 3072 : i64, barriers = 2 : i64, pieces = affine_map<(d0, d1) -> ((((d0 mod 4) * 4) + d1), 0, 0, 0, (d1 * 16))>, piece_count = 4 : i64, piece_shape = array<i64: 16, 16>} : !device.buffer<16x16xf32>, !device.buffer<16x64xf32>
    device.fill %H_2 {value = 0.000000e+00 : f64} : !device.buffer<16x64xf32>
    device.mma "H[m,n] += X[m,k] * W[k,n]" %H_2, (%X_1, %W_1) {tiles = array<i64: 16, 64, 64>, cores = 16 : i64, windows = [affine_map<(d0) -> (0, 0)>, affine_map<(d0) -> (0, 0)>, affine_map<(d0) -> (0, 0)>], kind = "matmul", roles = {batch = 1 : i64, m = 16 : i64, n = 64 : i64, k = 64 : i64}, step = 0 : i64} : !device.buffer<16x64xf32>, (!device.buffer<16x64xf32>, !device.buffer<64x64xf32>)
    device.reduce %H_2 {irc.preload = {slot = 4 : i64, frontier = 5 : i64}, group = affine_map<(d0) -> ((d0 floordiv 4))>, replicas = 4 : i64, combiner = "+=", kind = "matmul", roles = {batch = 1 : i64, m = 16 : i64, n = 64 : i64, k = 64 : i64}, out_step_elems = 1024 : i64, out_resident_elems = 1024 : i64, cores = 16 : i64} : !device.buffer<16x64xf32>
    device.free %X_1 : !device.buffer<16x64xf32>
    device.free %W_1 : !device.buffer<64x64xf32>
    device.free %W_idle_1 : !device.buffer<64x64xf32>
    device.free %R : !device.buffer<16x16xf32>
    %R_1 = device.alloc {name = "k4.R", cores = 16 : i64, bytes = 1024 : i64, offset = -1 : i64} : !device.buffer<16x16xf32>
    %H_3 = device.alloc {name = "k4.H", cores = 16 : i64, bytes = 1024 : i64, offset = -1 : i64} : !device.buffer<16x16xf32>
    device.relayout %H_2 into %H_3 {shape = array<i64: 16, 256>, origins = affine_map<(d0) -> (0, (d0 * 16))>, bytes = 0 : i64, barriers = 0 : i64, pieces = affine_map<(d0, d1) -> (((d0 floordiv 4) * 4), 0, ((d0 mod 4) * 16), 0, 0)>, piece_count = 1 : i64, piece_shape = array<i64: 16, 16>} : !device.buffer<16x64xf32>, !device.buffer<16x16xf32>
    device.fill %R_1 {value = 0.000000e+00 : f64} : !device.buffer<16x16xf32>
    device.vector "R[m,n] = relu(H[m,n])" %R_1, (%H_3) {tiles = array<i64: 16, 16>, cores = 16 : i64, windows = [affine_map<(d0) -> (0, 0)>, affine_map<(d0) -> (0, 0)>], kind = "unary", roles = {}, step = 0 : i64} : !device.buffer<16x16xf32>, (!device.buffer<16x16xf32>)
    device.reduce %R_1 {irc.preload = {slot = 3 : i64, frontier = 6 : i64}, group = affine_map<(d0) -> (d0)>, replicas = 1 : i64, combiner = "=", kind = "unary", roles = {}, out_step_elems = 256 : i64, out_resident_elems = 256 : i64, cores = 16 : i64} : !device.buffer<16x16xf32>
    device.free %H_3 : !device.buffer<16x16xf32>
    device.free %H_2 : !device.buffer<16x64xf32>
    %W_idle_2 = device.alloc {name = "w5.W.idle", cores = 16 : i64, bytes = 16384 : i64, offset = -1 : i64} : !device.buffer<64x64xf32>
    device.load %w2 into %W_idle_2 {origins = affine_map<(d0) -> (((d0 mod 4) * 64), ((d0 floordiv 4) * 64))>} : tensor<256x256xf32>, !device.buffer<64x64xf32>
    %W_2 = device.alloc {name = "k5.W", cores = 16 : i64, bytes = 16384 : i64, offset = -1 : i64} : !device.buffer<64x64xf32>
    device.relayout %W_idle_2 into %W_2 {shape = array<i64: 256, 256>, origins = affine_map<(d0) -> (((d0 mod 4) * 64), ((d0 floordiv 4) * 64))>, bytes = 0 : i64, barriers = 0 : i64, pieces = affine_map<(d0, d1) -> ((((d0 floordiv 4) * 4) + (d0 mod 4)), 0, 0, 0, 0)>, piece_count = 1 : i64, piece_shape = array<i64: 64, 64>, setup} : !device.buffer<64x64xf32>, !device.buffer<64x64xf32>
    %H_4 = device.alloc {name = "k5.H", cores = 16 : i64, bytes = 4096 : i64, offset = -1 : i64} : !device.buffer<16x64xf32>
    %X_2 = device.alloc {name = "k5.X", cores = 16 : i64, bytes = 4096 : i64, offset = -1 : i64} : !device.buffer<16x64xf32>
    device.relayout %R_1 into %X_2 {shape = array<i64: 16, 256>, origins = affine_map<(d0) -> (0, ((d0 mod 4) * 64))>, bytes = 3072 : i64, barriers = 2 : i64, pieces = affine_map<(d0, d1) -> ((((d0 mod 4) * 4) + d1), 0, 0, 0, (d1 * 16))>, piece_count = 4 : i64, piece_shape = array<i64: 16, 16>} : !device.buffer<16x16xf32>, !device.buffer<16x64xf32>
    device.fill %H_4 {value = 0.000000e+00 : f64} : !device.buffer<16x64xf32>
    device.mma "H[m,n] += X[m,k] * W[k,n]" %H_4, (%X_2, %W_2) {tiles = array<i64: 16, 64, 64>, cores = 16 : i64, windows = [affine_map<(d0) -> (0, 0)>, affine_map<(d0) -> (0, 0)>, affine_map<(d0) -> (0, 0)>], kind = "matmul", roles = {batch = 1 : i64, m = 16 : i64, n = 64 : i64, k = 64 : i64}, step = 0 : i64} : !device.buffer<16x64xf32>, (!device.buffer<16x64xf32>, !device.buffer<64x64xf32>)
    device.reduce %H_4 {irc.preload = {slot = 2 : i64, frontier = 7 : i64}, group = affine_map<(d0) -> ((d0 floordiv 4))>, replicas = 4 : i64, combiner = "+=", kind = "matmul", roles = {batch = 1 : i64, m = 16 : i64, n = 64 : i64, k = 64 : i64}, out_step_elems = 1024 : i64, out_resident_elems = 1024 : i64, cores = 16 : i64} : !device.buffer<16x64xf32>
    device.free %X_2 : !device.buffer<16x64xf32>
    device.free %W_2 : !device.buffer<64x64xf32>
    device.free %W_idle_2 : !device.buffer<64x64xf32>
    device.free %R_1 : !device.buffer<16x16xf32>
    %R_2 = device.alloc {name = "k6.R", cores = 16 : i64, bytes = 1024 : i64, offset = -1 : i64} : !device.buffer<16x16xf32>
    %H_5 = device.alloc {name = "k6.H", cores = 16 : i64, bytes = 1024 : i64, offset = -1 : i64} : !device.buffer<16x16xf32>
    device.relayout %H_4 into %H_5 {shape = array<i64: 16, 256>, origins = affine_map<(d0) -> (0, (d0 * 16))>, bytes = 0 : i64, barriers = 0 : i64, pieces = affine_map<(d0, d1) -> (((d0 floordiv 4) * 4), 0, ((d0 mod 4) * 16), 0, 0)>, piece_count = 1 : i64, piece_shape = array<i64: 16, 16>} : !device.buffer<16x64xf32>, !device.buffer<16x16xf32>
    device.fill %R_2 {value = 0.000000e+00 : f64} : !device.buffer<16x16xf32>
    device.vector "R[m,n] = relu(H[m,n])" %R_2, (%H_5) {tiles = array<i64: 16, 16>, cores = 16 : i64, windows = [affine_map<(d0) -> (0, 0)>, affine_map<(d0) -> (0, 0)>], kind = "unary", roles = {}, step = 0 : i64} : !device.buffer<16x16xf32>, (!device.buffer<16x16xf32>)
    device.reduce %R_2 {irc.preload = {slot = 5 : i64, frontier = 7 : i64}, group = affine_map<(d0) -> (d0)>, replicas = 1 : i64, combiner = "=", kind = "unary", roles = {}, out_step_elems = 256 : i64, out_resident_elems = 256 : i64, cores = 16 : i64} : !device.buffer<16x16xf32>
    device.free %H_5 : !device.buffer<16x16xf32>
    device.free %H_4 : !device.buffer<16x64xf32>
    %W_idle_3 = device.alloc {name = "w7.W.idle", cores = 16 : i64, bytes = 16384 : i64, offset = -1 : i64} : !device.buffer<64x64xf32>
    device.load %w3 into %W_idle_3 {origins = affine_map<(d0) -> (((d0 mod 4) * 64), ((d0 floordiv 4) * 64))>} : tensor<256x256xf32>, !device.buffer<64x64xf32>
    %W_3 = device.alloc {name = "k7.W", cores = 16 : i64, bytes = 16384 : i64, offset = -1 : i64} : !device.buffer<64x64xf32>
    device.relayout %W_idle_3 into %W_3 {shape = array<i64: 256, 256>, origins = affine_map<(d0) -> (((d0 mod 4) * 64), ((d0 floordiv 4) * 64))>, bytes = 0 : i64, barriers = 0 : i64, pieces = affine_map<(d0, d1) -> ((((d0 floordiv 4) * 4) + (d0 mod 4)), 0, 0, 0, 0)>, piece_count = 1 : i64, piece_shape = array<i64: 64, 64>, setup} : !device.buffer<64x64xf32>, !device.buffer<64x64xf32>
    %H_6 = device.alloc {name = "k7.H", cores = 16 : i64, bytes = 4096 : i64, offset = -1 : i64} : !device.buffer<16x64xf32>
    %X_3 = device.alloc {name = "k7.X", cores = 16 : i64, bytes = 4096 : i64, offset = -1 : i64} : !device.buffer<16x64xf32>
    device.relayout %R_2 into %X_3 {shape = array<i64: 16, 256>, origins = affine_map<(d0) -> (0, ((d0 mod 4) * 64))>, bytes = 3072 : i64, barriers = 2 : i64, pieces = affine_map<(d0, d1) -> ((((d0 mod 4) * 4) + d1), 0, 0, 0, (d1 * 16))>, piece_count = 4 : i64, piece_shape = array<i64: 16, 16>} : !device.buffer<16x16xf32>, !device.buffer<16x64xf32>
    device.fill %H_6 {value = 0.000000e+00 : f64} : !device.buffer<16x64xf32>
    device.mma "H[m,n] += X[m,k] * W[k,n]" %H_6, (%X_3, %W_3) {tiles = array<i64: 16, 64, 64>, cores = 16 : i64, windows = [affine_map<(d0) -> (0, 0)>, affine_map<(d0) -> (0, 0)>, affine_map<(d0) -> (0, 0)>], kind = "matmul", roles = {batch = 1 : i64, m = 16 : i64, n = 64 : i64, k = 64 : i64}, step = 0 : i64} : !device.buffer<16x64xf32>, (!device.buffer<16x64xf32>, !device.buffer<64x64xf32>)
    device.reduce %H_6 {irc.preload = {slot = 6 : i64, frontier = 8 : i64}, group = affine_map<(d0) -> ((d0 floordiv 4))>, replicas = 4 : i64, combiner = "+=", kind = "matmul", roles = {batch = 1 : i64, m = 16 : i64, n = 64 : i64, k = 64 : i64}, out_step_elems = 1024 : i64, out_resident_elems = 1024 : i64, cores = 16 : i64} : !device.buffer<16x64xf32>
    device.free %X_3 : !device.buffer<16x64xf32>
    device.free %W_3 : !device.buffer<64x64xf32>
    device.free %W_idle_3 : !device.buffer<64x64xf32>
    device.free %R_2 : !device.buffer<16x16xf32>
    %R_3 = device.alloc {name = "k8.R", cores = 16 : i64, bytes = 1024 : i64, offset = -1 : i64} : !device.buffer<16x16xf32>
    %H_7 = device.alloc {name = "k8.H", cores = 16 : i64, bytes = 1024 : i64, offset = -1 : i64} : !device.buffer<16x16xf32>
    device.relayout %H_6 into %H_7 {shape = array<i64: 16, 256>, origins = affine_map<(d0) -> (0, (d0 * 16))>, bytes = 0 : i64, barriers = 0 : i64, pieces = affine_map<(d0, d1) -> (((d0 floordiv 4) * 4), 0, ((d0 mod 4) * 16), 0, 0)>, piece_count = 1 : i64, piece_shape = array<i64: 16, 16>} : !device.buffer<16x64xf32>, !device.buffer<16x16xf32>
    device.fill %R_3 {value = 0.000000e+00 : f64} : !device.buffer<16x16xf32>
    device.vector "R[m,n] = relu(H[m,n])" %R_3, (%H_7) {tiles = array<i64: 16, 16>, cores = 16 : i64, windows = [affine_map<(d0) -> (0, 0)>, affine_map<(d0) -> (0, 0)>], kind = "unary", roles = {}, step = 0 : i64} : !device.buffer<16x16xf32>, (!device.buffer<16x16xf32>)
    device.reduce %R_3 {irc.preload = {slot = 7 : i64, frontier = 8 : i64}, group = affine_map<(d0) -> (d0)>, replicas = 1 : i64, combiner = "=", kind = "unary", roles = {}, out_step_elems = 256 : i64, out_resident_elems = 256 : i64, cores = 16 : i64} : !device.buffer<16x16xf32>
    %r3 = device.store %R_3 {origins = affine_map<(d0) -> (0, (d0 * 16))>, group = affine_map<(d0) -> (d0)>, fill = 0.000000e+00 : f64} : !device.buffer<16x16xf32> -> tensor<16x256xf32>
    device.free %R_3 : !device.buffer<16x16xf32>
    device.free %H_7 : !device.buffer<16x16xf32>
    device.free %H_6 : !device.buffer<16x64xf32>
    func.return %r3 : tensor<16x256xf32>
  }
}


// CHECK:      device.preload_async %w0 into
// CHECK:      device.preload_async %x into
// CHECK:      device.preload_async %w2 into %[[W2:[a-zA-Z0-9_]+]]
// CHECK-NOT:  device.preload_async
// CHECK:      device.reduce %H {irc.preload = {slot = 0 : i64, frontier = 3 : i64}
// CHECK-NOT:  device.preload_async
// CHECK:      device.reduce %R {irc.preload = {slot = 1 : i64, frontier = 4 : i64}
// CHECK:      device.preload_async %w1 into %[[W1:[a-zA-Z0-9_]+]]
// CHECK:      device.wait %[[W1]] :
// CHECK:      device.reduce %H_2 {irc.preload = {slot = 4 : i64
// CHECK:      device.reduce %R_1 {irc.preload = {slot = 3 : i64
// CHECK:      device.preload_async %w3 into
// CHECK:      device.wait %[[W2]] :
// CHECK:      device.reduce %H_4 {irc.preload = {slot = 2 : i64
// CHECK-NOT:  device.preload_async
// CHECK:      func.return

// EXEC: off-chip memory: 5 preloads
