// Check ids from the kernel's random source (see check_id.h).
#include "service/check_id.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/string_view.h"

namespace oomguard::service {

std::string NewCheckId() {
  uint8_t bits[16];
  size_t filled = 0;
  while (filled < sizeof(bits)) {
    // Blocks only before the kernel's pool is first seeded (early boot).
    const ssize_t got = getrandom(bits + filled, sizeof(bits) - filled, 0);
    if (got > 0) {
      filled += static_cast<size_t>(got);
    } else if (errno != EINTR) {
      // getrandom(2) fails otherwise only for bad arguments or a kernel
      // before 3.17: ids that could be guessed are worse than no server.
      std::abort();
    }
  }
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(bits), sizeof(bits)));
}

}  // namespace oomguard::service
