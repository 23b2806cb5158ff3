// The kernel configuration of each instruction set: the register tiles and blockings the kernels
// are written for, in one table (as XNNPACK's gemm-config). The kernels read the entry of the
// instruction set they are compiled for (kCompiledConfig, from the -march flags); the compiler's
// kernel selection (strategy/) reads the entry of the target it builds for, so both agree on
// the layouts the compiler writes and the kernels read.
#pragma once

#include <cstdint>

namespace kiln::kernels {

struct KernelConfig {
  const char* isa;              // "baseline", "avx2", "avx512"
  int vector_floats;            // floats in one vector register
  int conv_block;               // channel block of blocked convolutions (8 or 16)
  int conv_tile_8, conv_tile_16;  // output positions a convolution micro-kernel of one output
                                  // channel block (of 8 / 16) keeps in registers
  int conv_tile_blocks_8, conv_tile_blocks_16;  // output channel blocks (of 8 / 16) a convolution
                                                // micro-kernel computes at once, at most
  int conv_multi_tile_8, conv_multi_tile_16;    // accumulators of a micro-kernel of several blocks
                                                // (of 8 / 16): its positions are this / blocks
  int64_t conv_chunk_bytes;     // weights of the input channels a convolution tile reads at once
  int conv_min_part_positions;  // positions of a row's part, at least, where a convolution's rows
                                // are split to make more work items (conv2d_nchwc.cc)
  int gemm_panel;               // columns of a packed matrix panel ("NK16n" dense weights)
  int gemm_tile_rows;           // rows of C a matrix micro-kernel keeps in registers
  int gemm_tile_panels;         // panels of C it keeps for each row (columns: gemm_panel each)
  int64_t parallel_elements;    // elementwise and data-movement loops over fewer values run on
                                // the calling thread
  int attention_query_vectors;  // vectors of queries (lanes: queries) a block of fused attention
                                // computes scores for at once (gemm/attention.cc)
  int attention_key_rows;       // keys per scores tile: tile = key rows x query vectors
  int attention_value_rows;     // queries per output tile: tile = query rows x value vectors
  int attention_value_vectors;
};

// As many accumulators as the register file holds beside the weight vectors and a broadcast: 16
// registers of 8 floats with AVX2, 32 of 16 with AVX-512, 16 of 4 (SSE) otherwise. AVX-512's matrix
// tile is 8 rows x 3 panels (24 accumulators, 3 panel vectors, 1 broadcast: measured against 14 x
// 1, 12 x 2, 9 x 3, 6 x 4 and 7 x 4 on BERT's dense layers, gemm.cc). AVX-512's convolution tiles
// of several blocks keep up to 26 accumulators, one broadcast feeding two FMAs. Two 16-channel
// blocks of 12 positions, on an AMD Zen 4 core, ran 1x1 layers of 256-2048 input channels 9-11%
// faster than one block of 14 positions, with the input channels of 64 KB of weights read at once
// (16 KB: 5% less; 32 KB and 128 KB on a Zen 5 core within 2% either way). Up to 13 positions (29
// registers; 14 left two accumulators on the stack) run rows of 13 and 26 and 7x7 and 14x14 planes
// (49 and 196 positions, taken as one row) in fewer, wider tiles: one Zen 5 core, ResNet-50 3.4%
// faster, ResNeXt-50 2.2%, RegNetY-400MF 3%, DenseNet-121 1.9%, the others 0.5-1.4%. (Three blocks
// of 8 positions, on a Zen 5 core: ResNet-50 at one thread 3% faster, ResNeXt-50 6% slower.)
// 8-channel blocks are computed two to a 16-lane vector (conv/nchwc_tiles.h), so AVX-512's 8-lane
// tiles are of one block only (groups of 8 channels). One block keeps 14 (24 would be faster on
// wide rows but leaves the tiles of 7x7 planes to the checked kernel). A 7x7 plane (49 positions,
// taken as one row) is split into two parts of rows where AVX-512 has few sets of output blocks to
// share (parts of 24; see kMinItems in conv2d_nchwc.cc); with AVX2's sets of one block there are
// twice as many sets, and parts of 24 made MobileNetV2's 960 -> 160 projection 5% slower on two
// threads (parts of 28 leave the plane whole). Fused attention, on BERT-base's and ViT-B/16's heads
// (one Zen 5 core): AVX-512 blocks of 3 vectors of queries, score tiles of 8 keys (24 accumulators;
// keys packed by 8 x 8 transposes) and output tiles of 6 queries x 4 vectors: ViT's attention
// 7.8-8.0 ms, against 8.2 with 2 vectors of queries and 8.3-8.5 with output tiles of 7 queries.
// AVX2 (12 accumulators): 3 vectors x 4 keys and 4 queries x 3 vectors, BERT's attention 6.3-6.4
// ms, against 6.7 with 2 x 6 and 6 x 2, 7.0 with 1 x 8, 8.0-8.6 with 4 x 3 or 3 queries x 4
// vectors. SSE has AVX2's register count.
inline constexpr KernelConfig kBaselineConfig{"baseline", 4, 8, 8, 4, 1, 1, 8, 4, 16 * 1024, 28, 16, 4, 1, 1 << 15,
                                              3, 4, 4, 3};
inline constexpr KernelConfig kAvx2Config{"avx2", 8, 16, 12, 6, 3, 1, 12, 6, 16 * 1024, 28, 16, 6, 1, 1 << 15,
                                          3, 4, 4, 3};
inline constexpr KernelConfig kAvx512Config{"avx512", 16, 16, 14, 14, 1, 2, 14, 26, 64 * 1024, 24, 16, 8, 3, 1 << 15,
                                            3, 8, 6, 4};

#if defined(__AVX512F__)
inline constexpr const KernelConfig& kCompiledConfig = kAvx512Config;
#elif defined(__AVX2__) && defined(__FMA__)
inline constexpr const KernelConfig& kCompiledConfig = kAvx2Config;
#else
inline constexpr const KernelConfig& kCompiledConfig = kBaselineConfig;
#endif

}  // namespace kiln::kernels
