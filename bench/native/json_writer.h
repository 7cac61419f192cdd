// A small streaming JSON writer for the native benchmarks' reports: commas
// and string escaping are handled here, the caller nests objects and arrays
// in order. Non-finite numbers are written as null (JSON has no NaN).
//
//   JsonWriter j;
//   j.BeginObject();
//   j.Key("ok"); j.Bool(true);
//   j.Field("device", "none");
//   j.EndObject();
//   std::string text = j.Take();
//
// Thread-safety: one writer per thread.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace hotpath::bench {

class JsonWriter {
 public:
  void BeginObject() { Open('{'); }
  void EndObject() { Close('}'); }
  void BeginArray() { Open('['); }
  void EndArray() { Close(']'); }

  void Key(std::string_view key) {
    Separate();
    Quote(key);
    out_ += ':';
    after_key_ = true;
  }
  void String(std::string_view value) {
    Separate();
    Quote(value);
  }
  void Number(double value) {
    Separate();
    if (!std::isfinite(value)) {
      out_ += "null";
      return;
    }
    char buffer[32];
    std::snprintf(buffer, sizeof(buffer), "%.9g", value);
    out_ += buffer;
  }
  void Int(int64_t value) {
    Separate();
    out_ += std::to_string(value);
  }
  void Uint(uint64_t value) {
    Separate();
    out_ += std::to_string(value);
  }
  void Bool(bool value) {
    Separate();
    out_ += value ? "true" : "false";
  }
  void Null() {
    Separate();
    out_ += "null";
  }

  // Key plus value in one call.
  void Field(std::string_view key, std::string_view value) {
    Key(key);
    String(value);
  }
  void Field(std::string_view key, const char* value) {
    Key(key);
    String(value);
  }
  void Field(std::string_view key, const std::string& value) {
    Key(key);
    String(value);
  }
  void Field(std::string_view key, double value) {
    Key(key);
    Number(value);
  }
  void Field(std::string_view key, bool value) {
    Key(key);
    Bool(value);
  }
  void FieldInt(std::string_view key, int64_t value) {
    Key(key);
    Int(value);
  }
  void FieldUint(std::string_view key, uint64_t value) {
    Key(key);
    Uint(value);
  }

  std::string Take() { return std::move(out_); }

 private:
  void Open(char c) {
    Separate();
    out_ += c;
    first_.push_back(true);
  }
  void Close(char c) {
    out_ += c;
    if (!first_.empty()) first_.pop_back();
  }
  // A comma before every value or key but the first in its container; none
  // between a key and its value.
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
  void Quote(std::string_view s) {
    out_ += '"';
    for (char c : s) {
      switch (c) {
        case '"': out_ += "\\\""; break;
        case '\\': out_ += "\\\\"; break;
        case '\n': out_ += "\\n"; break;
        case '\r': out_ += "\\r"; break;
        case '\t': out_ += "\\t"; break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            char buffer[8];
            std::snprintf(buffer, sizeof(buffer), "\\u%04x", static_cast<unsigned>(c));
            out_ += buffer;
          } else {
            out_ += c;  // UTF-8 passes through
          }
      }
    }
    out_ += '"';
  }

  std::string out_;
  std::vector<bool> first_;
  bool after_key_ = false;
};

}  // namespace hotpath::bench
