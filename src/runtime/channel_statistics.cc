#include "runtime/channel_statistics.h"

#include <cmath>

namespace ptqkit {

std::vector<double> ChannelStatistics::Mean() const {
  std::vector<double> mean(sum.size(), 0.0);
  if (values_per_channel == 0) return mean;
  for (size_t c = 0; c < sum.size(); ++c) mean[c] = sum[c] / static_cast<double>(values_per_channel);
  return mean;
}

bool FoldChannels(const OutputView& view, int axis, ChannelStatistics* stats) {
  const int rank = static_cast<int>(view.shape.size());
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return false;
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= view.shape[d];
  for (int d = axis + 1; d < rank; ++d) inner *= view.shape[d];
  const int64_t channels = view.shape[axis];
  if (stats->sum.empty()) {
    stats->sum.assign(static_cast<size_t>(channels), 0.0);
    stats->absmax.assign(static_cast<size_t>(channels), 0.0f);
  }
  if (static_cast<int64_t>(stats->sum.size()) != channels) return false;
  const auto* p = static_cast<const float*>(view.data);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t c = 0; c < channels; ++c) {
      double s = 0.0;
      float m = stats->absmax[c];
      for (int64_t i = 0; i < inner; ++i, ++p) {
        const float v = *p;
        if (!std::isfinite(v)) continue;  // calibration warns about NaN/Inf elsewhere
        s += v;
        m = std::fabs(v) > m ? std::fabs(v) : m;
      }
      stats->sum[c] += s;
      stats->absmax[c] = m;
    }
  }
  stats->values_per_channel += outer * inner;
  stats->shape = view.shape;
  return true;
}

}  // namespace ptqkit
