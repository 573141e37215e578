// The one rule by which bytes from outside (a command line, a job script, a
// request body, a Pod's JSON) become text a protobuf `string` field may hold.
//
// proto3 `string` fields must be valid UTF-8: C++ protobuf refuses to parse
// a message whose strings are not, and its JSON mapping refuses such a body.
// A Linux path, though, is bytes (`--data-path /data/$'\xff'`). So words are
// carried as `string`, and where bytes enter, each byte that does not belong
// to a well-formed UTF-8 sequence (Unicode table 3-7: no overlong forms, no
// surrogates, nothing above U+10FFFF) becomes U+FFFD, the replacement
// character, byte by byte, as Go's encoding/json (and so the Kubernetes API
// server) writes it. The job is still judged: a path's bytes do not change
// memory, and a value that does matter (a number, a word, a GPU name) no
// longer reads as one and is refused naming its flag or field.
#ifndef OOMGUARD_COMMON_VALID_UTF8_H_
#define OOMGUARD_COMMON_VALID_UTF8_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

namespace oomguard {

// U+FFFD, the replacement character, in UTF-8.
inline constexpr char kReplacementCharacter[] = "\xEF\xBF\xBD";

// The length of the well-formed UTF-8 sequence that starts at text[at]; 0
// when none does.
inline size_t Utf8SequenceLength(absl::string_view text, size_t at) {
  const auto byte = [&](size_t i) {
    return at + i < text.size() ? static_cast<unsigned char>(text[at + i]) : 0u;
  };
  const auto continuation = [&](size_t i, unsigned lo = 0x80, unsigned hi = 0xBF) {
    return byte(i) >= lo && byte(i) <= hi;
  };
  const unsigned lead = byte(0);
  if (at >= text.size()) return 0;
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return continuation(1) ? 2 : 0;
  if (lead >= 0xE0 && lead <= 0xEF) {
    // E0: no overlong forms; ED: no surrogates (U+D800..U+DFFF).
    const bool second = lead == 0xE0   ? continuation(1, 0xA0)
                        : lead == 0xED ? continuation(1, 0x80, 0x9F)
                                       : continuation(1);
    return second && continuation(2) ? 3 : 0;
  }
  if (lead >= 0xF0 && lead <= 0xF4) {
    // F0: no overlong forms; F4: nothing above U+10FFFF.
    const bool second = lead == 0xF0   ? continuation(1, 0x90)
                        : lead == 0xF4 ? continuation(1, 0x80, 0x8F)
                                       : continuation(1);
    return second && continuation(2) && continuation(3) ? 4 : 0;
  }
  return 0;
}

inline bool IsValidUtf8(absl::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const size_t n = Utf8SequenceLength(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

// `text` with each byte outside a well-formed UTF-8 sequence replaced by
// U+FFFD; valid text is returned as it is.
inline std::string ValidUtf8(absl::string_view text) {
  std::string valid;
  valid.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const size_t n = Utf8SequenceLength(text, i);
    if (n == 0) {
      valid += kReplacementCharacter;
      ++i;
    } else {
      valid.append(text.data() + i, n);
      i += n;
    }
  }
  return valid;
}

// Applies ValidUtf8 to every `string` field of `message` (repeated and in
// nested messages included); `bytes` fields are left alone. Map fields are
// not walked: reflection reaches them only through protobuf's repeated view
// of a map, whose code in libprotobuf reads MapFieldBase with the layout it
// was built with, and Debian's is built without ThreadSanitizer, which adds
// members to MapFieldBase (map_field.h): the TSan build crashes there. Whoever
// fills a map makes its keys and values valid (BuildCheckRequest). The
// message can then be serialized and parsed again.
inline void MakeStringsValidUtf8(google::protobuf::Message& message) {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Reflection& reflection = *message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection.ListFields(message, &fields);
  for (const FieldDescriptor* field : fields) {
    if (field->is_map()) continue;
    if (field->type() == FieldDescriptor::TYPE_STRING) {
      if (!field->is_repeated()) {
        if (const std::string text = reflection.GetString(message, field); !IsValidUtf8(text)) {
          reflection.SetString(&message, field, ValidUtf8(text));
        }
        continue;
      }
      for (int i = 0; i < reflection.FieldSize(message, field); ++i) {
        if (const std::string text = reflection.GetRepeatedString(message, field, i);
            !IsValidUtf8(text)) {
          reflection.SetRepeatedString(&message, field, i, ValidUtf8(text));
        }
      }
    } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (!field->is_repeated()) {
        MakeStringsValidUtf8(*reflection.MutableMessage(&message, field));
        continue;
      }
      for (int i = 0; i < reflection.FieldSize(message, field); ++i) {
        MakeStringsValidUtf8(*reflection.MutableRepeatedMessage(&message, field, i));
      }
    }
  }
}

}  // namespace oomguard

#endif  // OOMGUARD_COMMON_VALID_UTF8_H_
