#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <set>
#include <utility>

#include "data/calibration_set_impl.h"
#include "data/npy.h"
#include "data/npz.h"
#include "base/log.h"
#include "base/memory_limit.h"
#include "onnx/float16.h"
#include "ptqkit/calibration.h"
#include "ptqkit/error.h"

namespace ptqkit {
namespace {

namespace fs = std::filesystem;
using SourceMap = std::map<std::string, std::shared_ptr<const data::ArraySource>>;

std::string Lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return text;
}

bool IsNpy(const fs::path& path) { return Lower(path.extension().string()) == ".npy"; }
bool IsNpz(const fs::path& path) { return Lower(path.extension().string()) == ".npz"; }

SourceMap OpenFile(const fs::path& path) {
  if (IsNpy(path)) return {{"", data::OpenNpy(path.string())}};
  return data::OpenNpz(path.string());
}

// How a key reads in messages: .npy arrays have none.
std::string KeyName(const std::string& key) { return key.empty() ? "(unnamed)" : "'" + key + "'"; }

std::string KeyList(const SourceMap& sources) {
  std::string out;
  for (const auto& [key, source] : sources)
    out += (out.empty() ? "" : ", ") + (key.empty() ? "an unnamed .npy array" : key);
  return out;
}

std::vector<int64_t> DimsAfterAxis0(const std::vector<int64_t>& shape) {
  return std::vector<int64_t>(shape.begin() + 1, shape.end());
}

std::string ModelInputList(const std::vector<InputSpec>& inputs) {
  std::string out;
  for (const InputSpec& input : inputs) out += (out.empty() ? "" : ", ") + input.name;
  return out.empty() ? "(none)" : out;
}

// The files of a calibration directory, in the order their samples are concatenated.
std::vector<fs::path> ListDataFiles(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code type_ec;
    const fs::path& path = it->path();
    if (it->is_regular_file(type_ec) && (IsNpy(path) || IsNpz(path))) files.push_back(path);
  }
  if (ec) {
    throw Error(fmt::format("{}: cannot list the directory: {}", dir.string(), ec.message()),
                Error::Kind::kIo);
  }
  // Byte order of the file names, so the concatenation does not depend on the locale.
  std::sort(files.begin(), files.end(), [](const fs::path& a, const fs::path& b) {
    return a.filename().string() < b.filename().string();
  });
  return files;
}

// Element-wise cast for the lossless or warned conversions Validate accepts.
HostTensor CastTensor(const HostTensor& in, DataType to) {
  HostTensor out(to, in.shape);
  const int64_t n = in.NumElements();
  if (to == DataType::kFloat) {
    float* dst = reinterpret_cast<float*>(out.bytes.data());
    if (in.dtype == DataType::kDouble) {
      const double* src = reinterpret_cast<const double*>(in.bytes.data());
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(src[i]);
      return out;
    }
    const uint16_t* src = reinterpret_cast<const uint16_t*>(in.bytes.data());
    for (int64_t i = 0; i < n; ++i) dst[i] = HalfToFloat(src[i]);
    return out;
  }
  int64_t* dst = reinterpret_cast<int64_t*>(out.bytes.data());
  const int32_t* src = reinterpret_cast<const int32_t*>(in.bytes.data());
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i];
  return out;
}

}  // namespace

void CalibrationSet::Impl::Input::Append(std::shared_ptr<const data::ArraySource> source) {
  if (segments.empty()) {
    dtype = source->dtype();
    shape = source->shape();
    origin = source->origin();
    if (source->scalar()) {  // a scalar: one value, fed whole with every batch
      shape.clear();
      segments.push_back({0, source});
      return;
    }
    shape[0] = 0;
  }
  if (shape.empty()) return;  // a scalar in every file of a directory: the first one is used
  segments.push_back({shape[0], source});
  shape[0] += source->rows();
}

void CalibrationSet::Impl::Input::ReadRows(int64_t begin, int64_t end, std::byte* out) const {
  // The last segment starting at or before `begin`.
  auto it = std::upper_bound(segments.begin(), segments.end(), begin,
                             [](int64_t row, const Segment& s) { return row < s.first_row; });
  if (it != segments.begin()) --it;
  for (int64_t row = begin; row < end; ++it) {
    const int64_t local_end = std::min(end - it->first_row, it->source->rows());
    const int64_t local_begin = row - it->first_row;
    if (local_end <= local_begin) continue;  // empty segment (a file with 0 samples)
    it->source->ReadRows(local_begin, local_end, out + (row - begin) * it->source->row_bytes());
    row = it->first_row + local_end;
  }
}

CalibrationSet::CalibrationSet(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CalibrationSet::CalibrationSet(CalibrationSet&&) noexcept = default;
CalibrationSet& CalibrationSet::operator=(CalibrationSet&&) noexcept = default;
CalibrationSet::~CalibrationSet() = default;

CalibrationSet CalibrationSet::FromPath(const std::string& path) {
  auto impl = std::make_unique<Impl>();
  impl->origin = path;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (!fs::exists(status)) {
    throw Error(fmt::format("calibration data '{}': no such file or directory", path),
                Error::Kind::kIo);
  }
  if (fs::is_directory(status)) {
    const std::vector<fs::path> files = ListDataFiles(path);
    if (files.empty()) throw Error(fmt::format("no .npy or .npz files in {}", path));
    SourceMap first;
    std::string first_name;
    for (const fs::path& file : files) {
      SourceMap sources = OpenFile(file);
      const std::string name = file.filename().string();
      if (first_name.empty()) {
        first = sources;
        first_name = name;
      } else {
        const bool same_keys =
            std::equal(sources.begin(), sources.end(), first.begin(), first.end(),
                       [](const auto& a, const auto& b) { return a.first == b.first; });
        if (!same_keys) {
          throw Error(fmt::format(
              "{}: {} holds arrays ({}) but {} holds ({}); every file must hold the same inputs",
              path, name, KeyList(sources), first_name, KeyList(first)));
        }
      }
      for (auto& [key, source] : sources) {
        const data::ArraySource& reference = *first.at(key);
        if (source->dtype() != reference.dtype()) {
          throw Error(fmt::format("{}: input {}: {} holds {} but {} holds {}", path, KeyName(key),
                                  name, DataTypeName(source->dtype()), first_name,
                                  DataTypeName(reference.dtype())));
        }
        if (DimsAfterAxis0(source->shape()) != DimsAfterAxis0(reference.shape())) {
          throw Error(fmt::format(
              "{}: input {}: {} has shape {} but {} has {}; dims after axis 0 must match", path,
              KeyName(key), name, ShapeToString(source->shape()), first_name,
              ShapeToString(reference.shape())));
        }
        impl->inputs[key].Append(std::move(source));
      }
    }
    for (auto& [key, input] : impl->inputs) {
      if (files.size() > 1) input.origin = fmt::format("{} ({} files)", path, files.size());
    }
  } else if (IsNpy(path) || IsNpz(path)) {
    for (auto& [key, source] : OpenFile(path)) impl->inputs[key].Append(std::move(source));
  } else {
    throw Error(fmt::format(
        "calibration data '{}': expected an .npy file, an .npz file or a directory of them", path));
  }
  return CalibrationSet(std::move(impl));
}

CalibrationSet CalibrationSet::FromTensors(std::map<std::string, HostTensor> tensors) {
  if (tensors.empty()) throw Error("no calibration tensors given");
  if (tensors.size() > 1 && tensors.count("")) {
    throw Error(
        "calibration tensors: an unnamed tensor can only be given alone (for a single-input "
        "model)");
  }
  auto impl = std::make_unique<Impl>();
  impl->origin = "in-memory tensors";
  for (auto& [name, tensor] : tensors) {
    const std::string origin = fmt::format("calibration tensor {}", KeyName(name));
    if (ElementSize(tensor.dtype) == 0) {
      throw Error(fmt::format("{} has unsupported type {}", origin, DataTypeName(tensor.dtype)),
                  Error::Kind::kUnsupported);
    }
    for (int64_t d : tensor.shape) {
      if (d < 0)
        throw Error(fmt::format("{} has a negative dim: {}", origin, ShapeToString(tensor.shape)));
    }
    if (tensor.bytes.size() !=
        static_cast<size_t>(tensor.NumElements()) * ElementSize(tensor.dtype)) {
      throw Error(fmt::format("{}: {} bytes do not match {} {}", origin, tensor.bytes.size(),
                              DataTypeName(tensor.dtype), ShapeToString(tensor.shape)));
    }
    impl->inputs[name].Append(std::make_shared<data::MemoryArraySource>(std::move(tensor), origin));
  }
  return CalibrationSet(std::move(impl));
}

namespace {

using DataInput = CalibrationSet::Impl::Input;

// Model-facing name -> data key: an unnamed array (.npy) binds to the model's only input, named
// arrays to the inputs of their names; every model input needs one.
std::map<std::string, std::string> BindInputs(const CalibrationSet::Impl& impl, const std::vector<InputSpec>& inputs) {
  std::map<std::string, std::string> bound;
  if (impl.inputs.count("")) {
    if (inputs.size() != 1) {
      throw Error(fmt::format(
          "{} holds one unnamed array (.npy) but the model has {} inputs ({}); use an .npz "
          "with one array per input name",
          impl.origin, inputs.size(), ModelInputList(inputs)));
    }
    bound[inputs[0].name] = "";
  } else {
    for (const auto& [key, input] : impl.inputs) {
      const std::string& name = key;  // clang 14 (the fuzz build) cannot capture a structured binding
      const bool known = std::any_of(inputs.begin(), inputs.end(),
                                     [&](const InputSpec& s) { return s.name == name; });
      if (!known) {
        throw Error(fmt::format(
            "calibration data has input '{}' that the model does not have; model inputs: {}", key,
            ModelInputList(inputs)));
      }
      bound[key] = key;
    }
  }
  for (const InputSpec& spec : inputs) {
    if (!bound.count(spec.name))
      throw Error(fmt::format("model input '{}' has no calibration data", spec.name));
  }
  return bound;
}

// --calibration_shapes and --calibration_batch_axis name model inputs only.
template <typename Value>
void CheckNamesInputs(const std::map<std::string, Value>& option, const char* flag,
                      const std::map<std::string, std::string>& bound, const std::vector<InputSpec>& inputs) {
  for (const auto& [name, value] : option) {
    if (!bound.count(name)) {
      throw Error(fmt::format("{} names '{}', which is not a model input; model inputs: {}", flag, name,
                              ModelInputList(inputs)));
    }
  }
}

// The type the data is cast to for the model (kUndefined: none): float64/float16 -> float32 and
// int32 -> int64 (lossless; numpy on Windows and many exporters' helpers give int32); any other
// difference is an error.
DataType CastFor(const InputSpec& spec, const DataInput& data) {
  if (spec.dtype == DataType::kUndefined || spec.dtype == data.dtype) return DataType::kUndefined;
  const bool float_cast =
      spec.dtype == DataType::kFloat && (data.dtype == DataType::kDouble || data.dtype == DataType::kFloat16);
  const bool int_cast = spec.dtype == DataType::kInt64 && data.dtype == DataType::kInt32;
  if (!float_cast && !int_cast) {
    throw Error(fmt::format("input '{}': model expects {}, data is {} ({})", spec.name, DataTypeName(spec.dtype),
                            DataTypeName(data.dtype), data.origin));
  }
  return spec.dtype;
}

// The axis the input's samples lie along: --calibration_batch_axis, else -1 (fed whole) for a
// scalar or data of exactly the model's fixed shape, else the only dynamic dim when it is not axis
// 0 (recurrent state [layers, B, hidden]), else 0.
int64_t SampleAxis(const InputSpec& spec, const DataInput& data, const std::map<std::string, int64_t>& batch_axes) {
  const size_t rank = spec.shape.size();
  std::vector<size_t> dynamic;
  for (size_t i = 0; i < rank; ++i)
    if (spec.shape[i] < 0) dynamic.push_back(i);
  const auto explicit_axis = batch_axes.find(spec.name);
  if (explicit_axis != batch_axes.end()) {
    const int64_t axis = explicit_axis->second;
    if (axis < 0 || axis >= static_cast<int64_t>(rank)) {
      throw Error(fmt::format("--calibration_batch_axis: input '{}' has rank {} ({}); axis {} is "
                              "out of range",
                              spec.name, rank, ShapeToString(spec.shape), axis));
    }
    return axis;
  }
  if (rank == 0) return -1;                                         // a scalar (e.g. a sample rate)
  if (dynamic.empty() && data.shape == spec.shape) return -1;       // exactly the model's fixed shape
  if (dynamic.size() == 1 && dynamic[0] != 0 && spec.shape[0] != 1) {
    // A static axis 0 of 1 is left alone: [1, seq] is a fixed batch of 1 with a dynamic length.
    for (size_t i = 0; i < rank; ++i)
      if (spec.shape[i] >= 0 && spec.shape[i] != data.shape[i]) return 0;
    const auto axis = static_cast<int64_t>(dynamic[0]);
    log::Info("calibration input '{}' {}: samples are taken along axis {}, its only dynamic "
              "dim (override with --calibration_batch_axis {}:N)",
              spec.name, ShapeToString(spec.shape), axis, spec.name);
    return axis;
  }
  return 0;
}

// The data's dims other than the sample axis match the model's fixed dims and --calibration_shapes.
void CheckShape(const InputSpec& spec, const DataInput& data, int64_t axis,
                const std::map<std::string, std::vector<int64_t>>& shapes) {
  const size_t rank = spec.shape.size();
  if (axis > 0 && data.segments.size() > 1) {
    throw Error(fmt::format("input '{}': samples along axis {} cannot be concatenated from {} "
                            "files (files are joined along axis 0); put this input in one file",
                            spec.name, axis, data.segments.size()));
  }
  for (size_t i = 0; i < rank; ++i) {
    if (static_cast<int64_t>(i) == axis) continue;
    if (spec.shape[i] >= 0 && spec.shape[i] != data.shape[i]) {
      throw Error(fmt::format("input '{}' dim {}: model expects {}, data has {} ({})", spec.name, i, spec.shape[i],
                              data.shape[i], data.origin));
    }
  }
  const auto given = shapes.find(spec.name);
  if (given == shapes.end()) return;
  const std::vector<int64_t>& shape = given->second;
  if (shape.size() != data.shape.size()) {
    throw Error(fmt::format("--calibration_shapes: input '{}' has rank {} ({}), data has rank {} ({})", spec.name,
                            shape.size(), ShapeToString(shape), data.shape.size(), ShapeToString(data.shape)));
  }
  for (size_t i = 0; i < shape.size(); ++i) {
    if (static_cast<int64_t>(i) == axis) continue;
    if (shape[i] != data.shape[i]) {
      throw Error(fmt::format("--calibration_shapes: input '{}' dim {} is {}, data has {}", spec.name, i, shape[i],
                              data.shape[i]));
    }
  }
}

// The number of samples every input with a sample axis holds (they must agree); 1 when every input
// is fixed.
int64_t CommonSampleCount(const CalibrationSet::Impl& impl, const std::map<std::string, std::string>& bound,
                          const std::map<std::string, int64_t>& axes) {
  int64_t samples = -1;
  bool equal = true;
  std::string counts;
  for (const auto& [name, key] : bound) {
    const int64_t axis = axes.at(name);
    if (axis < 0) continue;
    const int64_t rows = impl.inputs.at(key).shape[axis];
    if (samples >= 0 && rows != samples) equal = false;
    samples = rows;
    counts += fmt::format("{}{} has {}", counts.empty() ? "" : ", ", name, rows);
  }
  if (!equal)
    throw Error(fmt::format("calibration inputs have different sample counts: {}", counts));
  if (samples < 0) samples = 1;  // every input fixed: one batch of them
  if (samples == 0) throw Error(fmt::format("calibration data {} has no samples", impl.origin));
  return samples;
}

}  // namespace

// Every check runs on a view (names bound, axes and casts decided) before anything is changed, so
// a failed Validate leaves the set as it was.
void CalibrationSet::Validate(const std::vector<InputSpec>& inputs,
                              const std::map<std::string, std::vector<int64_t>>& shapes,
                              const std::map<std::string, int64_t>& batch_axes) {
  impl_->validated = false;
  const std::map<std::string, std::string> bound = BindInputs(*impl_, inputs);
  CheckNamesInputs(shapes, "--calibration_shapes", bound, inputs);
  CheckNamesInputs(batch_axes, "--calibration_batch_axis", bound, inputs);
  std::map<std::string, int64_t> axes;  // model input -> sample axis, -1 = fixed
  std::map<std::string, DataType> casts;
  for (const InputSpec& spec : inputs) {
    const Impl::Input& data = impl_->inputs.at(bound.at(spec.name));
    casts[spec.name] = CastFor(spec, data);
    if (spec.shape.size() != data.shape.size()) {
      throw Error(fmt::format("input '{}': model expects rank {} ({}), data has rank {} ({}) in {}", spec.name,
                              spec.shape.size(), ShapeToString(spec.shape), data.shape.size(),
                              ShapeToString(data.shape), data.origin));
    }
    axes[spec.name] = SampleAxis(spec, data, batch_axes);
    CheckShape(spec, data, axes[spec.name], shapes);
  }
  const int64_t samples = CommonSampleCount(*impl_, bound, axes);
  for (const auto& [name, key] : bound) {
    Impl::Input& data = impl_->inputs.at(key);
    data.axis = axes.at(name);
    data.cast_to = casts.at(name);
    if (data.cast_to != DataType::kUndefined) {
      log::Warn("calibration input '{}': model expects {}, data is {} ({}); casting it",
                name, DataTypeName(data.cast_to), DataTypeName(data.dtype), data.origin);
    }
  }
  if (impl_->inputs.count("")) {
    auto node = impl_->inputs.extract("");
    node.key() = inputs[0].name;
    impl_->inputs.insert(std::move(node));
  }
  impl_->num_samples = samples;
  impl_->view = {{0, samples}};
  impl_->view_samples = samples;
  impl_->validated = true;
}

int64_t CalibrationSet::total_samples() const {
  if (!impl_->validated)
    throw Error("internal: CalibrationSet::total_samples() called before Validate()");
  return impl_->num_samples;
}

int64_t CalibrationSet::num_samples() const {
  if (!impl_->validated)
    throw Error("internal: CalibrationSet::num_samples() called before Validate()");
  return impl_->view_samples;
}

void CalibrationSet::SetWindow(int64_t begin, int64_t end) {
  if (!impl_->validated || begin < 0 || begin > end || end > impl_->num_samples) {
    throw Error(fmt::format("internal: sample window [{}, {}) of {} samples", begin, end, impl_->num_samples));
  }
  impl_->view = {{begin, end}};
  impl_->view_samples = end - begin;
}

void CalibrationSet::SetSamples(const std::vector<int64_t>& samples) {
  if (!impl_->validated) throw Error("internal: CalibrationSet::SetSamples() called before Validate()");
  std::vector<std::pair<int64_t, int64_t>> view;
  for (int64_t s : samples) {
    if (s < 0 || s >= impl_->num_samples) {
      throw Error(fmt::format("internal: sample {} of a set of {} samples", s, impl_->num_samples));
    }
    if (!view.empty() && view.back().second == s) ++view.back().second;
    else view.emplace_back(s, s + 1);
  }
  impl_->view = std::move(view);
  impl_->view_samples = static_cast<int64_t>(samples.size());
}

std::vector<std::pair<int64_t, int64_t>> CalibrationSet::Impl::Pieces(int64_t first, int64_t last) const {
  std::vector<std::pair<int64_t, int64_t>> pieces;
  int64_t position = 0;  // view position of the current run's first sample
  for (const auto& [begin, end] : view) {
    const int64_t lo = std::max(first, position), hi = std::min(last, position + (end - begin));
    if (lo < hi) pieces.emplace_back(begin + (lo - position), begin + (hi - position));
    position += end - begin;
    if (position >= last) break;
  }
  return pieces;
}

int64_t CalibrationSet::NumBatches(int64_t batch_size) const {
  if (batch_size < 1) throw Error(fmt::format("batch size must be at least 1, got {}", batch_size));
  const int64_t n = num_samples();
  return n / batch_size + (n % batch_size != 0 ? 1 : 0);  // no n + batch_size - 1: it can overflow
}

Batch CalibrationSet::ReadBatch(int64_t index, int64_t batch_size) const {
  const int64_t batches = NumBatches(batch_size);
  if (index < 0 || index >= batches) {
    throw Error(fmt::format("internal: batch {} out of range ({} batches of {})", index, batches,
                            batch_size));
  }
  const int64_t first = index * batch_size;
  const int64_t rows = std::min(impl_->view_samples, first + batch_size) - first;
  const std::vector<std::pair<int64_t, int64_t>> pieces = impl_->Pieces(first, first + rows);
  Batch batch;
  for (const auto& [name, input] : impl_->inputs) {
    // Declared dims (a model's, --calibration_shapes) can be anything: size the batch first.
    std::vector<int64_t> batch_shape = input.shape;
    if (input.axis >= 0 && input.axis < static_cast<int64_t>(batch_shape.size())) batch_shape[input.axis] = rows;
    RequireMemory(CheckedBytes(batch_shape, static_cast<int64_t>(ElementSize(input.dtype))),
                  fmt::format("a calibration batch of input '{}' ({} {})", name, DataTypeName(input.dtype),
                              ShapeToString(batch_shape)));
    if (input.axis > 0) {
      RequireMemory(CheckedBytes(input.shape, static_cast<int64_t>(ElementSize(input.dtype))),
                    fmt::format("calibration input '{}' ({} {})", name, DataTypeName(input.dtype),
                                ShapeToString(input.shape)));
    }
    HostTensor tensor;
    if (input.axis <= 0) {
      std::vector<int64_t> shape = input.shape;
      if (input.axis == 0) shape[0] = rows;
      tensor = HostTensor(input.dtype, std::move(shape));
      if (input.shape.empty()) {
        input.segments.at(0).source->ReadRows(0, 1, tensor.bytes.data());
      } else if (input.axis == 0) {
        // One read per run of consecutive samples of the view.
        const size_t row_bytes = rows > 0 ? tensor.bytes.size() / static_cast<size_t>(rows) : 0;
        size_t offset = 0;
        for (const auto& [begin, end] : pieces) {
          input.ReadRows(begin, end, tensor.bytes.data() + offset);
          offset += static_cast<size_t>(end - begin) * row_bytes;
        }
      } else {
        input.ReadRows(0, input.shape[0], tensor.bytes.data());
      }
    } else {
      // Samples along axis k: read the whole array, keep the view's samples of axis k.
      HostTensor whole(input.dtype, input.shape);
      input.ReadRows(0, input.shape[0], whole.bytes.data());
      std::vector<int64_t> shape = input.shape;
      shape[input.axis] = rows;
      tensor = HostTensor(input.dtype, shape);
      int64_t outer = 1, inner = ElementSize(input.dtype);
      for (int64_t i = 0; i < input.axis; ++i) outer *= input.shape[i];
      for (size_t i = input.axis + 1; i < input.shape.size(); ++i) inner *= input.shape[i];
      const int64_t len = input.shape[input.axis];
      for (int64_t o = 0; o < outer; ++o) {
        int64_t at = 0;  // samples of this batch written so far
        for (const auto& [begin, end] : pieces) {
          std::memcpy(tensor.bytes.data() + (o * rows + at) * inner, whole.bytes.data() + (o * len + begin) * inner,
                      (end - begin) * inner);
          at += end - begin;
        }
      }
    }
    if (input.cast_to != DataType::kUndefined) tensor = CastTensor(tensor, input.cast_to);
    batch.emplace(name, std::move(tensor));
  }
  return batch;
}

int64_t CalibrationSet::sample_axis(const std::string& name) const {
  const auto it = impl_->inputs.find(name);
  if (!impl_->validated || it == impl_->inputs.end())
    throw Error(fmt::format("internal: sample_axis('{}') before Validate() or of no input", name));
  return it->second.axis;
}

std::vector<std::string> CalibrationSet::names() const {
  std::vector<std::string> out;
  for (const auto& [name, input] : impl_->inputs) out.push_back(name);
  return out;
}

}  // namespace ptqkit
