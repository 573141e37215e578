// Words of a job script after variable expansion: runs of literal text and
// pieces never evaluated (a command substitution, a variable only known
// when the job runs), kept as their source text and the reason for the
// notes. Shell variables hold values of this shape too. Internal to the job
// script reader.
#ifndef OOMGUARD_JOBSCRIPT_EXPANDED_WORD_H_
#define OOMGUARD_JOBSCRIPT_EXPANDED_WORD_H_

#include <cstddef>
#include <string>
#include <vector>

namespace oomguard::job_script_internal {

// A literal run of text, or something never evaluated (its source text and
// why it is not known).
struct Piece {
  std::string text;
  bool inert = false;
  std::string why;  // For inert pieces.
};

using Pieces = std::vector<Piece>;

// Appends `piece` to `pieces`, merging it into the last piece of the same
// kind. Inert text is kept short (it is only shown in notes), and a value
// alternating known and unknown text too often becomes one inert piece.
void AppendPiece(Pieces& pieces, Piece piece);

// Bytes of text, inert pieces' source included.
size_t PiecesBytes(const Pieces& pieces);

bool HasInert(const Pieces& pieces);

// The literal text, inert pieces left out.
std::string LiteralText(const Pieces& pieces);

// The text as written, inert pieces as their source.
std::string SourceText(const Pieces& pieces);

// The first reason a value is not known; empty when it is.
std::string WhyInert(const Pieces& pieces);

struct Field;
// Adds `source` to `field`'s sources (once; a few at most, then "...").
void AddSource(Field& field, const std::string& source);

// One word after expansion.
struct Field {
  Pieces pieces;
  // The variables whose values it holds, as written ("$MBS", "$(MBS)" for a
  // Kubernetes env reference): an error about the word names them and never
  // shows the value (MegatronJob.argv_sources).
  std::vector<std::string> sources = {};
  bool inert() const { return HasInert(pieces); }
  std::string text() const { return LiteralText(pieces); }
};

}  // namespace oomguard::job_script_internal

#endif  // OOMGUARD_JOBSCRIPT_EXPANDED_WORD_H_
