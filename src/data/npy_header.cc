#include "data/npy_header.h"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <limits>
#include <optional>

#include "ptqkit/error.h"

namespace ptqkit::data {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

struct DescrEntry {
  std::string_view code;  // descr without its byte-order character
  DataType dtype;
};

constexpr std::array<DescrEntry, 12> kDescrs = {{
    {"f4", DataType::kFloat},
    {"f2", DataType::kFloat16},
    {"f8", DataType::kDouble},
    {"i8", DataType::kInt64},
    {"i4", DataType::kInt32},
    {"i2", DataType::kInt16},
    {"i1", DataType::kInt8},
    {"u1", DataType::kUint8},
    {"u2", DataType::kUint16},
    {"u4", DataType::kUint32},
    {"u8", DataType::kUint64},
    {"b1", DataType::kBool},
}};

std::string SupportedList() {
  std::string out;
  for (const DescrEntry& e : kDescrs) {
    if (!out.empty()) out += ", ";
    out += DataTypeName(e.dtype);
  }
  return out;
}

[[noreturn]] void Corrupt(const std::string& source, std::string_view what) {
  throw Error(fmt::format("{}: not a valid .npy header: {}", source, what));
}

DataType DtypeFromDescr(const std::string& descr, const std::string& source) {
  std::string_view code = descr;
  char order = '\0';
  if (!code.empty() && (code[0] == '<' || code[0] == '>' || code[0] == '|' || code[0] == '=')) {
    order = code[0];
    code.remove_prefix(1);
  }
  if (code == "O") {
    throw Error(fmt::format("{}: unsupported dtype '{}': the array holds pickled Python objects, "
                            "and ptqkit never unpickles. np.savez(path, calib_dict) stores a dict this way as "
                            "'arr_0': save one array per input with np.savez(path, **calib_dict)",
                            source, descr),
                Error::Kind::kUnsupported);
  }
  for (const DescrEntry& e : kDescrs) {
    if (e.code != code) continue;
    if (order == '>' && ElementSize(e.dtype) > 1) {
      throw Error(fmt::format("{}: unsupported dtype '{}' (big-endian); save the array as '<{}'",
                              source, descr, code),
                  Error::Kind::kUnsupported);
    }
    return e.dtype;
  }
  throw Error(
      fmt::format("{}: unsupported dtype '{}' (supported: {})", source, descr, SupportedList()),
      Error::Kind::kUnsupported);
}

// A value in the header dict. numpy writes the dict with Python's repr, so the grammar is small:
// quoted strings, True/False, tuples of integers. Anything else (a structured dtype's list of
// fields) is kept as raw text so the error can quote it.
struct DictValue {
  enum class Kind { kString, kBool, kTuple, kOther } kind = Kind::kOther;
  std::string text;
  bool flag = false;
  std::vector<int64_t> ints;
};

class DictParser {
 public:
  DictParser(std::string_view text, const std::string& source) : text_(text), source_(source) {}

  // Calls on_entry(key, value) for each entry of the top-level dict.
  template <typename OnEntry>
  void Parse(OnEntry on_entry) {
    SkipSpace();
    Expect('{');
    SkipSpace();
    while (Peek() != '}') {
      std::string key = ParseString();
      SkipSpace();
      Expect(':');
      SkipSpace();
      DictValue value = ParseValue();
      on_entry(key, value);
      SkipSpace();
      if (Peek() == ',') {
        ++pos_;
        SkipSpace();
      } else if (Peek() != '}') {
        Fail("expected ',' or '}' in the header dict");
      }
    }
    ++pos_;
  }

 private:
  char Peek() const {
    if (pos_ >= text_.size()) Fail("header dict ends early");
    return text_[pos_];
  }
  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\r' || text_[pos_] == '\n')) {
      ++pos_;
    }
  }
  void Expect(char c) {
    if (Peek() != c) Fail(fmt::format("expected '{}' at offset {} of the header dict", c, pos_));
    ++pos_;
  }
  [[noreturn]] void Fail(std::string_view what) const { Corrupt(source_, what); }

  std::string ParseString() {
    const char quote = Peek();
    if (quote != '\'' && quote != '"') Fail("expected a quoted key or value in the header dict");
    ++pos_;
    std::string out;
    while (Peek() != quote) {
      if (text_[pos_] == '\\')
        ++pos_;  // descr strings have no escapes worth decoding; keep the char
      out += Peek();
      ++pos_;
    }
    ++pos_;
    return out;
  }

  DictValue ParseValue() {
    DictValue v;
    const char c = Peek();
    if (c == '\'' || c == '"') {
      v.kind = DictValue::Kind::kString;
      v.text = ParseString();
    } else if (text_.substr(pos_, 4) == "True") {
      v.kind = DictValue::Kind::kBool;
      v.flag = true;
      pos_ += 4;
    } else if (text_.substr(pos_, 5) == "False") {
      v.kind = DictValue::Kind::kBool;
      pos_ += 5;
    } else if (c == '(') {
      v.kind = DictValue::Kind::kTuple;
      v.ints = ParseTuple();
    } else {
      v.kind = DictValue::Kind::kOther;
      v.text = SkipBalanced();
    }
    return v;
  }

  std::vector<int64_t> ParseTuple() {
    Expect('(');
    std::vector<int64_t> out;
    SkipSpace();
    while (Peek() != ')') {
      const size_t begin = pos_;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
      int64_t value = 0;
      const auto [end, ec] = std::from_chars(text_.data() + begin, text_.data() + pos_, value);
      if (begin == pos_ || ec != std::errc())
        Fail("shape must be a tuple of non-negative integers");
      (void)end;
      out.push_back(value);
      if (pos_ < text_.size() && text_[pos_] == 'L') ++pos_;  // Python 2 longs: (3L, 4L)
      SkipSpace();
      if (Peek() == ',') {
        ++pos_;
        SkipSpace();
      } else if (Peek() != ')') {
        Fail("shape must be a tuple of non-negative integers");
      }
    }
    ++pos_;
    return out;
  }

  std::string SkipBalanced() {
    const size_t begin = pos_;
    int depth = 0;
    while (true) {
      const char c = Peek();
      if (c == '\'' || c == '"') {
        ParseString();
        continue;
      }
      if (depth == 0 && (c == ',' || c == '}')) break;
      if (c == '[' || c == '(' || c == '{') ++depth;
      if (c == ']' || c == ')' || c == '}') --depth;
      ++pos_;
    }
    return std::string(text_.substr(begin, pos_ - begin));
  }

  std::string_view text_;
  const std::string& source_;
  size_t pos_ = 0;
};

}  // namespace

int64_t NpyHeader::NumElements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t NpyHeader::DataBytes() const {
  return NumElements() * static_cast<int64_t>(ElementSize(dtype));
}

int64_t NpyHeaderSize(std::string_view preamble, const std::string& source) {
  if (preamble.size() < 10 || preamble.substr(0, kMagic.size()) != kMagic) {
    Corrupt(source, "missing the \\x93NUMPY magic string");
  }
  const auto major = static_cast<unsigned char>(preamble[6]);
  const auto byte = [&](size_t i) {
    return static_cast<int64_t>(static_cast<unsigned char>(preamble[i]));
  };
  if (major == 1) return 10 + (byte(8) | byte(9) << 8);
  if (major == 2 || major == 3) {
    if (preamble.size() < 12) Corrupt(source, "file ends inside the header");
    return 12 + (byte(8) | byte(9) << 8 | byte(10) << 16 | byte(11) << 24);
  }
  throw Error(fmt::format("{}: unsupported .npy format version {}.{}", source, major,
                          static_cast<unsigned char>(preamble[7])),
              Error::Kind::kUnsupported);
}

NpyHeader ParseNpyHeader(std::string_view header, const std::string& source) {
  const int64_t size = NpyHeaderSize(header.substr(0, kNpyPreambleBytes), source);
  if (static_cast<int64_t>(header.size()) != size) Corrupt(source, "file ends inside the header");
  const size_t dict_begin = static_cast<unsigned char>(header[6]) == 1 ? 10 : 12;

  std::optional<std::string> descr;
  std::optional<bool> fortran_order;
  std::optional<std::vector<int64_t>> shape;
  DictParser(header.substr(dict_begin), source)
      .Parse([&](const std::string& key, const DictValue& v) {
        if (key == "descr") {
          if (v.kind != DictValue::Kind::kString) {
            throw Error(
                fmt::format("{}: unsupported dtype {} (structured arrays are not calibration data)",
                            source, v.text),
                Error::Kind::kUnsupported);
          }
          descr = v.text;
        } else if (key == "fortran_order") {
          if (v.kind != DictValue::Kind::kBool)
            Corrupt(source, "'fortran_order' is not True or False");
          fortran_order = v.flag;
        } else if (key == "shape") {
          if (v.kind != DictValue::Kind::kTuple) Corrupt(source, "'shape' is not a tuple");
          shape = v.ints;
        }
      });
  if (!descr || !fortran_order || !shape)
    Corrupt(source, "the dict needs 'descr', 'fortran_order' and 'shape'");

  NpyHeader out;
  out.dtype = DtypeFromDescr(*descr, source);
  if (*fortran_order) {
    throw Error(fmt::format("{}: array is stored in Fortran order; save it C-contiguous "
                            "(np.ascontiguousarray) instead",
                            source),
                Error::Kind::kUnsupported);
  }
  out.shape = std::move(*shape);
  out.header_bytes = size;
  // Guard the byte count against overflow so later offset arithmetic can trust it.
  int64_t bytes = static_cast<int64_t>(ElementSize(out.dtype));
  for (int64_t d : out.shape) {
    if (d != 0 && bytes > std::numeric_limits<int64_t>::max() / d) {
      Corrupt(source, fmt::format("shape {} is too large", ShapeToString(out.shape)));
    }
    bytes *= d;
  }
  return out;
}

std::string NpyDescr(DataType dtype) {
  for (const DescrEntry& e : kDescrs) {
    if (e.dtype == dtype) return fmt::format("{}{}", ElementSize(dtype) == 1 ? '|' : '<', e.code);
  }
  throw Error(fmt::format("cannot write {} to .npy: numpy has no such dtype", DataTypeName(dtype)),
              Error::Kind::kUnsupported);
}

std::string EncodeNpyHeader(DataType dtype, const std::vector<int64_t>& shape, int version) {
  std::string dims;
  for (int64_t d : shape) dims += fmt::format("{}, ", d);
  // Python's repr of a 1-tuple keeps the comma, of longer tuples it does not.
  if (shape.size() > 1) dims.resize(dims.size() - 2);
  if (shape.size() == 1) dims.resize(dims.size() - 1);
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}",
                                 NpyDescr(dtype), dims);
  constexpr size_t kAlign = 64;
  const auto padded = [&](size_t preamble) {
    const size_t unpadded = preamble + dict.size() + 1;  // + the terminating newline
    return (unpadded + kAlign - 1) / kAlign * kAlign - preamble;
  };
  if (version == 0) version = padded(10) <= 0xffff ? 1 : 2;
  if (version != 1 && version != 2)
    throw Error(fmt::format("internal: cannot write .npy version {}", version));
  const size_t preamble = version == 1 ? 10 : 12;
  const size_t dict_bytes = padded(preamble);
  if (version == 1 && dict_bytes > 0xffff) {
    throw Error(
        fmt::format("internal: .npy header of {} bytes does not fit version 1", dict_bytes));
  }
  std::string out(kMagic);
  out += static_cast<char>(version);
  out += '\0';
  for (size_t i = 0; i < preamble - 8; ++i)
    out += static_cast<char>((dict_bytes >> (8 * i)) & 0xff);
  out += dict;
  out.append(dict_bytes - dict.size() - 1, ' ');
  out += '\n';
  return out;
}

}  // namespace ptqkit::data
