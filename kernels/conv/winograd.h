// Winograd's F(4x4, 3x3) (Lavin and Gray, 2015), what the kernel (conv2d_winograd.cc) and the
// compiler (which transforms constant weights when it builds a library) share: the tile and the
// weight transform G w G^T. Header-only, so the compiler computes it with the kernels' own code.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace kiln::kernels {

constexpr int kWinogradTile = 4;                                    // output positions per side of a tile
constexpr int kWinogradWindow = kWinogradTile + 2;                   // input positions per side of its window
constexpr int kWinogradPoints = kWinogradWindow * kWinogradWindow;  // products per tile and channel pair

// The tiles of an output of out_height x out_width positions.
constexpr int64_t WinogradTiles(int64_t out_height, int64_t out_width) {
  return ((out_height + kWinogradTile - 1) / kWinogradTile) * ((out_width + kWinogradTile - 1) / kWinogradTile);
}

// The 36 sums over input channels that Conv2DWinograd computes: one grouped 1x1 convolution
// (group e multiplies transformed plane e by transformed weight e, the tiles as positions). The
// compiler names the Conv2DNCHWc variant for these parameters in the call (Conv2DNCHWcVariantOf).
constexpr Conv2DNCHWcParams Conv2DWinogradProduct(const Conv2DWinogradParams& p) {
  int64_t tiles = WinogradTiles(p.out_height, p.out_width);
  return {p.batch,   kWinogradPoints * p.in_channels, 1, tiles, p.in_block, kWinogradPoints * p.out_channels,
          p.out_block, 1, 1, 1, tiles, 1, 1, 1, 1, 0, 0, kWinogradPoints, false, false, false, false};
}

// The weight of Conv2DWinograd (kernels.h) from an OIHW 3x3 one: G w G^T for each pair of
// channels, as [36, O / ob, C / ib, ib, ob] (element e = 6 i + j of the 6x6 transform), computed in
// double. Points 0, 1, -1, 2, -2 and infinity.
inline void WinogradWeight(int64_t out_channels, int64_t in_channels, int64_t in_block, int64_t out_block,
                           const float* weight, float* out) {
  static const double g[kWinogradWindow][3] = {{1.0 / 4, 0, 0},
                                               {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                               {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                               {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                               {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                               {0, 0, 1}};  // G
  const int64_t in_blocks = in_channels / in_block, out_blocks = out_channels / out_block;
  for (int64_t o = 0; o < out_channels; ++o) {
    for (int64_t c = 0; c < in_channels; ++c) {
      const float* w = weight + (o * in_channels + c) * 9;
      double gw[kWinogradWindow][3];  // G w
      for (int i = 0; i < kWinogradWindow; ++i) {
        for (int k = 0; k < 3; ++k) gw[i][k] = g[i][0] * w[k] + g[i][1] * w[3 + k] + g[i][2] * w[6 + k];
      }
      for (int i = 0; i < kWinogradWindow; ++i) {
        for (int j = 0; j < kWinogradWindow; ++j) {
          double u = gw[i][0] * g[j][0] + gw[i][1] * g[j][1] + gw[i][2] * g[j][2];  // (G w G^T)[i][j]
          int64_t e = i * kWinogradWindow + j;
          int64_t at = (((e * out_blocks + o / out_block) * in_blocks + c / in_block) * in_block + c % in_block) *
                           out_block + o % out_block;
          out[at] = static_cast<float>(u);
        }
      }
    }
  }
}

}  // namespace kiln::kernels
