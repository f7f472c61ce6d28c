// The web UI's files (src/server/ui), embedded in the binary at build time by
// embed_ui.cmake. Immutable static data; safe from any thread.
#pragma once

#include <cstddef>

namespace stele::server::ui {

struct Asset {
  const char* path;          // relative to /ui/, e.g. "app.js"
  const char* content_type;  // from the file extension
  const char* data;
  size_t size;
};

extern const Asset kAssets[];
extern const size_t kAssetCount;

}  // namespace stele::server::ui
