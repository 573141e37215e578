// The web page's files (http/page/: index.html, page.css, page.js), built
// into the binary by http/embed_page.cmake: the page needs nothing from
// outside the server, so it works on an air-gapped cluster.
#ifndef OOMGUARD_HTTP_PAGE_ASSETS_H_
#define OOMGUARD_HTTP_PAGE_ASSETS_H_

#include "absl/strings/string_view.h"

namespace oomguard::http {

struct PageAsset {
  absl::string_view path;  // "/" for index.html, else "/<file name>".
  absl::string_view content_type;
  absl::string_view body;
};

// The file served at `path`, or null.
const PageAsset* FindPageAsset(absl::string_view path);

}  // namespace oomguard::http

#endif  // OOMGUARD_HTTP_PAGE_ASSETS_H_
