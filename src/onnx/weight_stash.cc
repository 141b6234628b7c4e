#include "onnx/weight_stash.h"

#include <fmt/format.h>

#include "ptqkit/error.h"

namespace ptqkit::onnxio {

bool IsStashed(const onnx::TensorProto& tensor) {
  if (tensor.data_location() != onnx::TensorProto::EXTERNAL) return false;
  for (const auto& e : tensor.external_data()) {
    if (e.key() == "location") return e.value() == kStashedLocation;
  }
  return false;
}

void MarkExternal(onnx::TensorProto* tensor, const std::string& location, uint64_t offset, uint64_t length) {
  tensor->set_data_location(onnx::TensorProto::EXTERNAL);
  const auto add = [&](const char* key, const std::string& value) {
    auto* entry = tensor->add_external_data();
    entry->set_key(key);
    entry->set_value(value);
  };
  add("location", location);
  add("offset", std::to_string(offset));
  add("length", std::to_string(length));
}

WeightStash::WeightStash(onnx::ModelProto* model, size_t min_bytes) : model_(model) {
  for (auto& t : *model->mutable_graph()->mutable_initializer()) {
    if (!t.has_raw_data() || t.raw_data().size() <= min_bytes) continue;
    std::string& slot = bytes_[t.name()];
    const size_t length = t.raw_data().size();
    slot.swap(*t.mutable_raw_data());  // a swap: the bytes are never copied
    t.clear_raw_data();
    MarkExternal(&t, kStashedLocation, 0, length);
  }
}

WeightStash::~WeightStash() {
  if (!restored_) {
    try {
      RestoreInto(model_);
    } catch (...) {  // a destructor must not throw; the model is being unwound anyway
    }
  }
}

void WeightStash::RestoreInto(onnx::ModelProto* model) {
  size_t restored = 0;
  for (auto& t : *model->mutable_graph()->mutable_initializer()) {
    if (!IsStashed(t)) continue;
    auto it = bytes_.find(t.name());
    if (it == bytes_.end()) continue;
    t.clear_external_data();
    t.clear_data_location();
    t.mutable_raw_data()->swap(it->second);
    ++restored;
  }
  if (restored != bytes_.size()) {
    throw Error(fmt::format("internal: {} of {} stashed weight(s) found no initializer to return to",
                            bytes_.size() - restored, bytes_.size()));
  }
  bytes_.clear();
  restored_ = true;
}

}  // namespace ptqkit::onnxio
