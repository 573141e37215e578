#include "jobspec/layer_pattern.h"

#include <cstddef>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace oomguard {
namespace {

// Longest pattern, and largest number inside one; far above any real layer
// count, low enough that a hostile `[1]*10**9` costs nothing.
constexpr int64_t kMaxPatternLength = int64_t{1} << 16;
constexpr int kMaxPatternNesting = 32;

// Evaluates the small Python subset Megatron's --moe-layer-freq takes:
// list literals of integers, `+` (concatenation), `*` (repetition by an
// integer, either side) and parentheses, e.g. `([0]*3+[1]*58)`.
class LayerPatternParser {
 public:
  explicit LayerPatternParser(absl::string_view text) : text_(text) {}

  absl::StatusOr<std::vector<uint32_t>> Parse() {
    Value value;
    if (!ParseSum(0, &value)) return absl::InvalidArgumentError(error_);
    SkipSpaces();
    if (pos_ != text_.size()) {
      return absl::InvalidArgumentError(absl::StrCat("unexpected character at offset ", pos_));
    }
    if (!value.is_list) return absl::InvalidArgumentError("not a list");
    if (value.list.empty()) return absl::InvalidArgumentError("empty list");
    for (uint32_t entry : value.list) {
      if (entry > 1) {
        return absl::InvalidArgumentError("entries must be 0 (dense) or 1 (MoE)");
      }
    }
    return std::move(value.list);
  }

 private:
  struct Value {
    bool is_list = false;
    int64_t number = 0;
    std::vector<uint32_t> list;
  };

  bool Fail(std::string message) {
    if (error_.empty()) error_ = std::move(message);
    return false;
  }

  void SkipSpaces() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) {
      ++pos_;
    }
  }

  bool Consume(char c) {
    SkipSpaces();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  // sum := product ('+' product)*
  bool ParseSum(int depth, Value* out) {
    if (!ParseProduct(depth, out)) return false;
    while (Consume('+')) {
      Value rhs;
      if (!ParseProduct(depth, &rhs)) return false;
      if (out->is_list != rhs.is_list) return Fail("cannot add a list and a number");
      if (out->is_list) {
        out->list.insert(out->list.end(), rhs.list.begin(), rhs.list.end());
      } else {
        out->number += rhs.number;
      }
      if (!CheckSize(*out)) return false;
    }
    return true;
  }

  // product := atom ('*' atom)*
  bool ParseProduct(int depth, Value* out) {
    if (!ParseAtom(depth, out)) return false;
    while (Consume('*')) {
      Value rhs;
      if (!ParseAtom(depth, &rhs)) return false;
      if (out->is_list && rhs.is_list) return Fail("cannot multiply two lists");
      if (!out->is_list && !rhs.is_list) {
        out->number *= rhs.number;
      } else {
        if (!out->is_list) std::swap(*out, rhs);
        if (rhs.number * static_cast<int64_t>(out->list.size()) > kMaxPatternLength) {
          return Fail("list too long");
        }
        std::vector<uint32_t> repeated;
        repeated.reserve(out->list.size() * static_cast<size_t>(rhs.number));
        for (int64_t i = 0; i < rhs.number; ++i) {
          repeated.insert(repeated.end(), out->list.begin(), out->list.end());
        }
        out->list = std::move(repeated);
      }
      if (!CheckSize(*out)) return false;
    }
    return true;
  }

  // atom := number | '[' [number (',' number)* [',']] ']' | '(' sum ')'
  bool ParseAtom(int depth, Value* out) {
    if (depth > kMaxPatternNesting) return Fail("nested too deeply");
    if (Consume('(')) {
      if (!ParseSum(depth + 1, out)) return false;
      return Consume(')') || Fail("missing ')'");
    }
    if (Consume('[')) return ParseListLiteral(out);
    out->is_list = false;
    return ParseNumber(&out->number);
  }

  bool ParseListLiteral(Value* out) {
    out->is_list = true;
    out->list.clear();
    if (Consume(']')) return true;
    while (true) {
      int64_t number = 0;
      if (!ParseNumber(&number)) return false;
      out->list.push_back(static_cast<uint32_t>(number));
      if (!CheckSize(*out)) return false;
      if (Consume(']')) return true;
      if (!Consume(',')) return Fail("expected ',' or ']'");
      if (Consume(']')) return true;  // Trailing comma.
    }
  }

  bool ParseNumber(int64_t* out) {
    SkipSpaces();
    const size_t start = pos_;
    while (pos_ < text_.size() && absl::ascii_isdigit(static_cast<unsigned char>(text_[pos_]))) {
      ++pos_;
    }
    if (pos_ == start) return Fail("expected a number, a list or '('");
    if (!absl::SimpleAtoi(text_.substr(start, pos_ - start), out) || *out > kMaxPatternLength) {
      return Fail("number too large");
    }
    return true;
  }

  bool CheckSize(const Value& value) {
    const int64_t size = value.is_list ? static_cast<int64_t>(value.list.size()) : value.number;
    return size <= kMaxPatternLength || Fail("list too long");
  }

  absl::string_view text_;
  size_t pos_ = 0;
  std::string error_;
};

}  // namespace

absl::StatusOr<std::vector<uint32_t>> ParseLayerPattern(absl::string_view text) {
  return LayerPatternParser(text).Parse();
}

std::string FormatLayerPattern(const std::vector<uint32_t>& pattern) {
  std::vector<std::string> runs;
  for (size_t start = 0, end = 0; start < pattern.size(); start = end) {
    while (end < pattern.size() && pattern[end] == pattern[start]) ++end;
    runs.push_back(absl::StrCat("[", pattern[start], "]*", end - start));
  }
  return absl::StrCat("(", absl::StrJoin(runs, "+"), ")");
}

}  // namespace oomguard
