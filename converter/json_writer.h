// A small streaming JSON writer for reports (--json): commas and escaping handled here. A
// report names its fields and where they come from (Object, Fields, Array); the writer spells
// them.
#pragma once

#include <cmath>
#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace ovfix::cli {

// One field of a JSON object: its key and a value whose C++ type says how it is written
// (strings quoted, integers as integers, floating-point values as numbers, a list of strings
// as an array). Views what it is given: it lives for one Fields/Object call.
class JsonField {
 public:
  using Strings = const std::vector<std::string>*;
  JsonField(std::string_view key, std::string_view text) : key_(key), value_(text) {}
  JsonField(std::string_view key, const std::string& text)
      : key_(key), value_(std::string_view(text)) {}
  JsonField(std::string_view key, const char* text) : key_(key), value_(std::string_view(text)) {}
  template <typename B>
  requires std::same_as<B, bool> JsonField(std::string_view key, B flag)
      : key_(key), value_(std::in_place_type<bool>, flag) {}
  template <std::integral I>
  requires(!std::same_as<I, bool>) JsonField(std::string_view key, I n)
      : key_(key), value_(std::in_place_type<int64_t>, n) {}
  template <std::floating_point F>
  JsonField(std::string_view key, F x) : key_(key), value_(std::in_place_type<double>, x) {}
  JsonField(std::string_view key, const std::vector<std::string>& strings)
      : key_(key), value_(&strings) {}

 private:
  friend class JsonWriter;
  template <typename T>
  friend JsonField OptionalField(bool present, std::string_view key, const T& value);
  std::string_view key_;
  std::variant<std::string_view, bool, int64_t, double, Strings> value_;
  bool present_ = true;
};

// Field("name", v.name): a report's fields are a list of these (JsonWriter::Fields).
template <typename T>
JsonField Field(std::string_view key, const T& value) {
  return JsonField(key, value);
}

// The field, written only where `present` holds: a report's optional members.
template <typename T>
JsonField OptionalField(bool present, std::string_view key, const T& value) {
  JsonField field(key, value);
  field.present_ = present;
  return field;
}

class JsonWriter {
 public:
  // The fields, in order, into the object being written.
  JsonWriter& Fields(std::initializer_list<JsonField> fields) {
    for (const JsonField& f : fields) {
      if (f.present_) Field(f);
    }
    return *this;
  }
  // An object of just these fields.
  JsonWriter& Object(std::initializer_list<JsonField> fields) {
    return BeginObject().Fields(fields).EndObject();
  }
  // KEY: [one element per item, written by write(*this, item)].
  template <typename Items, typename WriteItem>
  JsonWriter& Array(std::string_view key, const Items& items, WriteItem&& write) {
    Key(key).BeginArray();
    for (const auto& item : items) write(*this, item);
    return EndArray();
  }
  // The same, left out when there are no items.
  template <typename Items, typename WriteItem>
  JsonWriter& ArrayUnlessEmpty(std::string_view key, const Items& items, WriteItem&& write) {
    if (items.empty()) return *this;
    return Array(key, items, write);
  }

  JsonWriter& BeginObject() { return Open('{'); }
  JsonWriter& EndObject() { return Close('}'); }
  JsonWriter& BeginArray() { return Open('['); }
  JsonWriter& EndArray() { return Close(']'); }
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
  void Field(const JsonField& f) {
    Key(f.key_);
    std::visit([this](auto value) { Value(value); }, f.value_);
  }
  void Value(std::string_view text) { String(text); }
  void Value(bool flag) { Bool(flag); }
  void Value(int64_t n) { Int(n); }
  void Value(double x) { Number(x); }
  void Value(JsonField::Strings strings) {
    BeginArray();
    for (const std::string& s : *strings) String(s);
    EndArray();
  }
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
  JsonWriter& Open(char c) {
    Separate();
    out_ += c;
    first_.push_back(true);
    return *this;
  }
  JsonWriter& Close(char c) {
    first_.pop_back();
    out_ += c;
    return *this;
  }
  void Quote(std::string_view s) {
    out_ += '"';
    for (char c : s) {
      if (c == '"' || c == '\\') {
        out_ += '\\';
        out_ += c;
      } else if (c == '\n' || c == '\t' || c == '\r') {
        out_ += c == '\n' ? "\\n" : c == '\t' ? "\\t" : "\\r";
      } else if (static_cast<unsigned char>(c) < 0x20) {
        absl::StrAppend(&out_, absl::StrFormat("\\u%04x", c));
      } else {
        out_ += c;
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
