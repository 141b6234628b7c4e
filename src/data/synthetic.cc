#include "data/synthetic.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <numbers>
#include <optional>
#include <random>

#include "base/memory_limit.h"
#include "data/calibration_set_impl.h"
#include "ptqkit/error.h"

namespace ptqkit {
namespace data {
namespace {

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t Fnv1a64(const std::string& text) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

enum class Family { kNormal, kInteger, kBool, kNone };

Family FamilyOf(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat:
    case DataType::kDouble:
    case DataType::kFloat16:
    case DataType::kBFloat16:
      return Family::kNormal;
    case DataType::kUint8:
    case DataType::kInt8:
    case DataType::kUint16:
    case DataType::kInt16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kUint32:
    case DataType::kUint64:
      return Family::kInteger;
    case DataType::kBool:
      return Family::kBool;
    default:
      return Family::kNone;
  }
}

// Box–Muller written out so the values do not depend on std::normal_distribution's algorithm.
class NormalStream {
 public:
  explicit NormalStream(std::mt19937_64& engine) : engine_(engine) {}
  double Next() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double u1 = static_cast<double>((engine_() >> 11) + 1) * 0x1.0p-53;
    const double u2 = static_cast<double>(engine_() >> 11) * 0x1.0p-53;
    const double radius = std::sqrt(-2.0 * std::log(u1));
    const double angle = 2.0 * std::numbers::pi * u2;
    spare_ = radius * std::sin(angle);
    has_spare_ = true;
    return radius * std::cos(angle);
  }

 private:
  std::mt19937_64& engine_;
  double spare_ = 0;
  bool has_spare_ = false;
};

template <typename T>
void Store(std::byte* out, int64_t index, T value) {
  std::memcpy(out + index * static_cast<int64_t>(sizeof(T)), &value, sizeof(T));
}

void StoreNormal(DataType dtype, std::byte* out, int64_t index, double z) {
  switch (dtype) {
    case DataType::kFloat:
      Store(out, index, static_cast<float>(z));
      break;
    case DataType::kDouble:
      Store(out, index, z);
      break;
    case DataType::kFloat16:
      Store(out, index, FloatToHalfBits(static_cast<float>(z)));
      break;
    case DataType::kBFloat16:
      Store(out, index, FloatToBFloat16Bits(static_cast<float>(z)));
      break;
    default:
      break;
  }
}

void StoreInteger(DataType dtype, std::byte* out, int64_t index, uint64_t value) {
  switch (dtype) {
    case DataType::kUint8:
      Store(out, index, static_cast<uint8_t>(value));
      break;
    case DataType::kInt8:
      Store(out, index, static_cast<int8_t>(value));
      break;
    case DataType::kUint16:
      Store(out, index, static_cast<uint16_t>(value));
      break;
    case DataType::kInt16:
      Store(out, index, static_cast<int16_t>(value));
      break;
    case DataType::kInt32:
      Store(out, index, static_cast<int32_t>(value));
      break;
    case DataType::kInt64:
      Store(out, index, static_cast<int64_t>(value));
      break;
    case DataType::kUint32:
      Store(out, index, static_cast<uint32_t>(value));
      break;
    case DataType::kUint64:
      Store(out, index, value);
      break;
    default:
      break;
  }
}

}  // namespace

uint16_t FloatToHalfBits(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t abs = x & 0x7fffffff;
  if (abs > 0x7f800000) return sign | 0x7e00;   // NaN
  if (abs >= 0x477ff000) return sign | 0x7c00;  // >= 65520 rounds to infinity
  const uint32_t exponent = abs >> 23;
  if (exponent < 113) {  // below 2^-14: a half subnormal (or zero)
    const uint32_t shift = 126 - exponent;
    if (shift > 24) return sign;
    const uint32_t mantissa = (abs & 0x7fffff) | 0x800000;
    uint32_t q = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (q & 1))) ++q;
    return static_cast<uint16_t>(sign | q);
  }
  uint32_t h = ((exponent - 112) << 10) | ((abs >> 13) & 0x3ff);
  const uint32_t rest = abs & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
    ++h;  // a carry into the exponent is still right
  return static_cast<uint16_t>(sign | h);
}

uint16_t FloatToBFloat16Bits(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  if ((x & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((x >> 16) | 0x40);
  return static_cast<uint16_t>((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

SyntheticArraySource::SyntheticArraySource(DataType dtype, std::vector<int64_t> shape,
                                           std::string name, uint64_t seed)
    : ArraySource(dtype, std::move(shape), fmt::format("synthetic data for '{}'", name)),
      name_(std::move(name)),
      name_seed_(SplitMix64(seed ^ Fnv1a64(name_))) {
  if (FamilyOf(dtype) == Family::kNone) {
    throw Error(fmt::format("input '{}': cannot synthesise {} data; give calibration data", name_,
                            DataTypeName(dtype)),
                Error::Kind::kUnsupported);
  }
}

void SyntheticArraySource::ReadRows(int64_t begin, int64_t end, std::byte* out) const {
  const int64_t elements = row_bytes() / static_cast<int64_t>(ElementSize(dtype()));
  const Family family = FamilyOf(dtype());
  for (int64_t row = begin; row < end; ++row) {
    std::mt19937_64 engine(SplitMix64(name_seed_ + static_cast<uint64_t>(row)));
    std::byte* row_out = out + (row - begin) * row_bytes();
    NormalStream normal(engine);
    for (int64_t i = 0; i < elements; ++i) {
      switch (family) {
        case Family::kNormal:
          StoreNormal(dtype(), row_out, i, normal.Next());
          break;
        case Family::kInteger:
          StoreInteger(dtype(), row_out, i, engine() % 10);
          break;
        case Family::kBool:
          Store(row_out, i, static_cast<uint8_t>(engine() >> 63));
          break;
        case Family::kNone:
          break;
      }
    }
  }
}

}  // namespace data

namespace {
constexpr int64_t kMaxSyntheticBytes = int64_t{64} << 30;  // 64 GiB of samples per input
}  // namespace

CalibrationSet CalibrationSet::Synthetic(
    const std::vector<InputSpec>& inputs, int64_t num_samples, uint64_t seed,
    const std::map<std::string, std::vector<int64_t>>& shapes) {
  if (num_samples < 1) {
    throw Error(
        fmt::format("synthetic calibration data needs at least 1 sample, got {}", num_samples));
  }
  std::string names;
  for (const InputSpec& spec : inputs) names += (names.empty() ? "" : ", ") + spec.name;
  for (const auto& entry : shapes) {
    const std::string& name = entry.first;  // (a structured binding: clang 14 cannot capture it)
    const bool known = std::any_of(inputs.begin(), inputs.end(),
                                   [&](const InputSpec& s) { return s.name == name; });
    if (!known) {
      throw Error(fmt::format(
          "--calibration_shapes names '{}', which is not a model input; model inputs: {}", name,
          names.empty() ? "(none)" : names));
    }
  }
  auto impl = std::make_unique<Impl>();
  impl->origin = "synthetic data";
  for (const InputSpec& spec : inputs) {
    if (spec.shape.empty()) {
      throw Error(
          fmt::format("input '{}' is a scalar, and synthetic data cannot guess its value (a "
                      "sample rate, a flag): pass calibration data that holds it, e.g. "
                      "np.savez(path, ..., {}=np.array(value))",
                      spec.name, spec.name));
    }
    const auto given = shapes.find(spec.name);
    if (given != shapes.end() && given->second.size() != spec.shape.size()) {
      throw Error(fmt::format(
          "--calibration_shapes: input '{}' has rank {} ({}), model expects rank {} ({})",
          spec.name, given->second.size(), ShapeToString(given->second), spec.shape.size(),
          ShapeToString(spec.shape)));
    }
    std::vector<int64_t> shape = spec.shape;
    shape[0] = num_samples;
    for (size_t i = 1; i < shape.size(); ++i) {
      if (given != shapes.end()) {
        if (spec.shape[i] >= 0 && given->second[i] != spec.shape[i]) {
          throw Error(fmt::format("--calibration_shapes: input '{}' dim {} is {}, model expects {}",
                                  spec.name, i, given->second[i], spec.shape[i]));
        }
        shape[i] = given->second[i];
      } else if (spec.shape[i] < 0) {
        throw Error(fmt::format(
            "input '{}' dim {} is dynamic ({}); give its shape with --calibration_shapes "
            "{}:<dim0>x<dim1>x...",
            spec.name, i, ShapeToString(spec.shape), spec.name));
      }
    }
    // The samples are generated batch by batch, but every one is run through the model: bound
    // the total, so a typo such as 4000000000000 samples is an error, not a run of years.
    const std::optional<int64_t> total = CheckedBytes(shape, static_cast<int64_t>(ElementSize(spec.dtype)));
    if (!total || *total > kMaxSyntheticBytes) {
      throw Error(fmt::format("synthetic data for input '{}': {} samples of {} {} are {}, more than the {} ptqkit "
                              "generates; lower --num_synthetic_samples or give calibration data",
                              spec.name, num_samples, DataTypeName(spec.dtype),
                              ShapeToString(std::vector<int64_t>(shape.begin() + 1, shape.end())),
                              total ? HumanBytes(static_cast<double>(*total)) : std::string("beyond 8 EiB"),
                              HumanBytes(static_cast<double>(kMaxSyntheticBytes))));
    }
    impl->inputs[spec.name].Append(std::make_shared<data::SyntheticArraySource>(
        spec.dtype, std::move(shape), spec.name, seed));
  }
  impl->num_samples = num_samples;
  impl->view = {{0, num_samples}};
  impl->view_samples = num_samples;
  impl->validated = !inputs.empty();
  return CalibrationSet(std::move(impl));
}

}  // namespace ptqkit
