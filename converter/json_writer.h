// A small streaming JSON writer for reports (--json): commas and escaping handled here.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace ovfix::cli {

class JsonWriter {
 public:
  JsonWriter& BeginObject() {
    Open('{');
    return *this;
  }
  JsonWriter& EndObject() {
    Close('}');
    return *this;
  }
  JsonWriter& BeginArray() {
    Open('[');
    return *this;
  }
  JsonWriter& EndArray() {
    Close(']');
    return *this;
  }
  JsonWriter& Key(std::string_view key) {
    last_key_ = key;
    Separate();
    Quote(key);
    out_ += ':';
    after_key_ = true;
    return *this;
  }
  JsonWriter& String(std::string_view s) {
    Separate();
    Quote(s);
    return *this;
  }
  JsonWriter& Int(int64_t v) {
    Separate();
    absl::StrAppend(&out_, v);
    return *this;
  }
  JsonWriter& Bool(bool v) {
    Separate();
    out_ += v ? "true" : "false";
    return *this;
  }
  // Non-finite numbers have no JSON spelling: written as null, and after a key KEY also
  // "KEY_non_finite": "inf", "-inf" or "nan", so that a reader of numbers meets only numbers
  // and nulls and can still tell an overflow from a missing value.
  JsonWriter& Number(double v) {
    if (!std::isfinite(v)) {
      const bool keyed = after_key_;
      const std::string key = last_key_;
      Separate();
      out_ += "null";
      if (keyed) Key(key + "_non_finite").String(std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf"));
      return *this;
    }
    Separate();
    absl::StrAppend(&out_, absl::StrFormat("%.9g", v));
    return *this;
  }
  const std::string& str() const { return out_; }

 private:
  void Separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (!first_.empty()) {
      if (!first_.back()) out_ += ',';
      first_.back() = false;
    }
  }
  void Open(char c) {
    Separate();
    out_ += c;
    first_.push_back(true);
  }
  void Close(char c) {
    first_.pop_back();
    out_ += c;
  }
  void Quote(std::string_view s) {
    out_ += '"';
    for (char c : s) {
      switch (c) {
        case '"':
          out_ += "\\\"";
          break;
        case '\\':
          out_ += "\\\\";
          break;
        case '\n':
          out_ += "\\n";
          break;
        case '\t':
          out_ += "\\t";
          break;
        case '\r':
          out_ += "\\r";
          break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            absl::StrAppend(&out_, absl::StrFormat("\\u%04x", c));
          } else {
            out_ += c;
          }
      }
    }
    out_ += '"';
  }

  std::string out_;
  std::string last_key_;
  std::vector<bool> first_;
  bool after_key_ = false;
};

}  // namespace ovfix::cli
