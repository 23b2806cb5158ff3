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
  int conv_tile_8, conv_tile_16;  // output positions a convolution micro-kernel keeps in registers,
                                  // per output channel block of 8 / 16
  int conv_tile_blocks_8;       // blocks of 8 output channels a convolution micro-kernel computes at
                                // once (1 or 3), its positions conv_tile_8 / blocks
  int gemm_panel;               // columns of a packed matrix panel ("NK16n" dense weights)
  int gemm_tile_rows;           // rows of C a matrix micro-kernel keeps in registers
  int gemm_tile_panels;         // panels of C it keeps for each row (columns: gemm_panel each)
  int64_t parallel_elements;    // elementwise and data-movement loops over fewer values run on
                                // the calling thread
};

// As many accumulators as the register file holds beside the weight vectors and a broadcast: 16
// registers of 8 floats with AVX2, 32 of 16 with AVX-512, 16 of 4 (SSE) otherwise. AVX-512's matrix
// tile is 8 rows x 3 panels (24 accumulators, 3 panel vectors, 1 broadcast: measured against 14 x 1,
// 12 x 2, 9 x 3, 6 x 4 and 7 x 4 on BERT's dense layers, gemm.cc).
inline constexpr KernelConfig kBaselineConfig{"baseline", 4, 8, 8, 4, 1, 16, 4, 1, 1 << 15};
inline constexpr KernelConfig kAvx2Config{"avx2", 8, 16, 12, 6, 3, 16, 6, 1, 1 << 15};
inline constexpr KernelConfig kAvx512Config{"avx512", 16, 16, 14, 14, 3, 16, 8, 3, 1 << 15};

#if defined(__AVX512F__)
inline constexpr const KernelConfig& kCompiledConfig = kAvx512Config;
#elif defined(__AVX2__) && defined(__FMA__)
inline constexpr const KernelConfig& kCompiledConfig = kAvx2Config;
#else
inline constexpr const KernelConfig& kCompiledConfig = kBaselineConfig;
#endif

}  // namespace kiln::kernels
