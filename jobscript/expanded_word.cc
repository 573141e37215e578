// Words after expansion (see expanded_word.h).
#include "jobscript/expanded_word.h"

#include <algorithm>
#include <utility>

namespace oomguard::job_script_internal {
namespace {

// Inert text is only shown in notes: kept short.
constexpr size_t kMaxInertText = 256;
// Pieces in one value; past this it becomes one inert piece.
constexpr size_t kMaxPieces = 256;
// Variables a word names as its sources.
constexpr size_t kMaxSources = 4;

}  // namespace

void AppendPiece(Pieces& pieces, Piece piece) {
  if (!pieces.empty() && pieces.back().inert == piece.inert) {
    Piece& last = pieces.back();
    if (!piece.inert) {
      last.text += piece.text;
    } else if (last.text.size() < kMaxInertText) {
      last.text += piece.text.substr(0, kMaxInertText - last.text.size());
    }
    return;
  }
  if (pieces.size() >= kMaxPieces) {
    // Too many alternations of known and unknown text to keep apart.
    std::string text;
    for (const Piece& p : pieces) {
      if (text.size() >= kMaxInertText) break;
      text += p.text.substr(0, kMaxInertText - text.size());
    }
    pieces = {Piece{text, true, "a value mixing too many unknown parts to read"}};
    return;
  }
  pieces.push_back(std::move(piece));
}

size_t PiecesBytes(const Pieces& pieces) {
  size_t n = 0;
  for (const Piece& p : pieces) n += p.text.size();
  return n;
}

bool HasInert(const Pieces& pieces) {
  return std::any_of(pieces.begin(), pieces.end(), [](const Piece& p) { return p.inert; });
}

std::string LiteralText(const Pieces& pieces) {
  std::string out;
  for (const Piece& p : pieces) {
    if (!p.inert) out += p.text;
  }
  return out;
}

std::string SourceText(const Pieces& pieces) {
  std::string out;
  for (const Piece& p : pieces) out += p.text;
  return out;
}

void AddSource(Field& field, const std::string& source) {
  std::vector<std::string>& sources = field.sources;
  if (std::find(sources.begin(), sources.end(), source) != sources.end()) return;
  if (sources.size() < kMaxSources) {
    sources.push_back(source);
  } else if (sources.size() == kMaxSources) {
    sources.push_back("...");
  }
}

std::string WhyInert(const Pieces& pieces) {
  for (const Piece& p : pieces) {
    if (p.inert) return p.why;
  }
  return "";
}

}  // namespace oomguard::job_script_internal
