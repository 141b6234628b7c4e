#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>
#include <utility>

#include "data/calibration_set_impl.h"
#include "data/npy.h"
#include "data/npz.h"
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

}  // namespace

void CalibrationSet::Impl::Input::Append(std::shared_ptr<const data::ArraySource> source) {
  if (segments.empty()) {
    dtype = source->dtype();
    shape = source->shape();
    shape[0] = 0;
    origin = source->origin();
  }
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
    if (tensor.shape.empty()) {
      throw Error(
          fmt::format("{} is a scalar; calibration data needs samples along axis 0", origin));
    }
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

void CalibrationSet::Validate(const std::vector<InputSpec>& inputs,
                              const std::map<std::string, std::vector<int64_t>>& shapes) {
  impl_->validated = false;
  // Model-facing name -> data key; checks run on this view so a failed Validate leaves the set as
  // it was.
  std::map<std::string, std::string> bound;
  if (impl_->inputs.count("")) {
    if (inputs.size() != 1) {
      throw Error(fmt::format(
          "{} holds one unnamed array (.npy) but the model has {} inputs ({}); use an .npz "
          "with one array per input name",
          impl_->origin, inputs.size(), ModelInputList(inputs)));
    }
    bound[inputs[0].name] = "";
  } else {
    for (const auto& [key, input] : impl_->inputs) {
      const bool known = std::any_of(inputs.begin(), inputs.end(),
                                     [&](const InputSpec& s) { return s.name == key; });
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
  for (const auto& [name, shape] : shapes) {
    if (!bound.count(name)) {
      throw Error(fmt::format(
          "--calibration_shapes names '{}', which is not a model input; model inputs: {}", name,
          ModelInputList(inputs)));
    }
  }

  for (const InputSpec& spec : inputs) {
    const Impl::Input& data = impl_->inputs.at(bound.at(spec.name));
    if (spec.dtype != DataType::kUndefined && spec.dtype != data.dtype) {
      throw Error(fmt::format("input '{}': model expects {}, data is {} ({})", spec.name,
                              DataTypeName(spec.dtype), DataTypeName(data.dtype), data.origin));
    }
    if (spec.shape.size() != data.shape.size()) {
      throw Error(fmt::format("input '{}': model expects rank {} ({}), data has rank {} ({}) in {}",
                              spec.name, spec.shape.size(), ShapeToString(spec.shape),
                              data.shape.size(), ShapeToString(data.shape), data.origin));
    }
    // Axis 0 is the sample axis: the model's batch size (static or not) says nothing about how
    // many samples there are.
    for (size_t i = 1; i < spec.shape.size(); ++i) {
      if (spec.shape[i] >= 0 && spec.shape[i] != data.shape[i]) {
        throw Error(fmt::format("input '{}' dim {}: model expects {}, data has {} ({})", spec.name,
                                i, spec.shape[i], data.shape[i], data.origin));
      }
    }
    const auto given = shapes.find(spec.name);
    if (given != shapes.end()) {
      const std::vector<int64_t>& shape = given->second;
      if (shape.size() != data.shape.size()) {
        throw Error(fmt::format(
            "--calibration_shapes: input '{}' has rank {} ({}), data has rank {} ({})", spec.name,
            shape.size(), ShapeToString(shape), data.shape.size(), ShapeToString(data.shape)));
      }
      for (size_t i = 1; i < shape.size(); ++i) {
        if (shape[i] != data.shape[i]) {
          throw Error(fmt::format("--calibration_shapes: input '{}' dim {} is {}, data has {}",
                                  spec.name, i, shape[i], data.shape[i]));
        }
      }
    }
  }

  int64_t samples = -1;
  bool equal = true;
  std::string counts;
  for (const auto& [name, key] : bound) {
    const int64_t rows = impl_->inputs.at(key).shape[0];
    if (samples >= 0 && rows != samples) equal = false;
    samples = rows;
    counts += fmt::format("{}{} has {}", counts.empty() ? "" : ", ", name, rows);
  }
  if (!equal)
    throw Error(fmt::format("calibration inputs have different sample counts: {}", counts));
  if (samples <= 0) throw Error(fmt::format("calibration data {} has no samples", impl_->origin));

  if (impl_->inputs.count("")) {
    auto node = impl_->inputs.extract("");
    node.key() = inputs[0].name;
    impl_->inputs.insert(std::move(node));
  }
  impl_->num_samples = samples;
  impl_->validated = true;
}

int64_t CalibrationSet::num_samples() const {
  if (!impl_->validated)
    throw Error("internal: CalibrationSet::num_samples() called before Validate()");
  return impl_->num_samples;
}

int64_t CalibrationSet::NumBatches(int64_t batch_size) const {
  if (batch_size < 1) throw Error(fmt::format("batch size must be at least 1, got {}", batch_size));
  return (num_samples() + batch_size - 1) / batch_size;
}

Batch CalibrationSet::ReadBatch(int64_t index, int64_t batch_size) const {
  const int64_t batches = NumBatches(batch_size);
  if (index < 0 || index >= batches) {
    throw Error(fmt::format("internal: batch {} out of range ({} batches of {})", index, batches,
                            batch_size));
  }
  const int64_t begin = index * batch_size;
  const int64_t end = std::min(impl_->num_samples, begin + batch_size);
  Batch batch;
  for (const auto& [name, input] : impl_->inputs) {
    std::vector<int64_t> shape = input.shape;
    shape[0] = end - begin;
    HostTensor tensor(input.dtype, std::move(shape));
    input.ReadRows(begin, end, tensor.bytes.data());
    batch.emplace(name, std::move(tensor));
  }
  return batch;
}

std::vector<std::string> CalibrationSet::names() const {
  std::vector<std::string> out;
  for (const auto& [name, input] : impl_->inputs) out.push_back(name);
  return out;
}

}  // namespace ptqkit
