// Serves the web UI (docs/ui.md) at /ui/ from the embedded files of
// ui_assets.h; `/` redirects there. Files are looked up by exact name in a
// fixed table, so no request can reach the filesystem (no traversal), and
// unknown names are 404. The pages themselves carry no data: they call the
// JSON API, which enforces the token, so the UI paths need none.
//
// With [api] ui_listen the UI is served by the second listener only (which
// serves the API routes too, so the pages' relative /v1 calls reach the
// same handlers, token check included); the API's own listener then treats
// /ui/ and / like any unknown path (401 without the token, else 404).
#include <string>

#include "server/api_util.h"
#include "server/server_impl.h"
#include "server/ui_assets.h"

namespace stele::server {

bool ServesUi(const ServerImpl& d, const ServerImpl::Listener& listener) {
  if (!d.config.api.ui) return false;
  if (d.config.api.ui_listen) return &listener == d.ui_http.get();
  return &listener == &d.http;
}

bool IsUiPath(const ServerImpl& d, const ServerImpl::Listener& listener, const std::string& path) {
  if (!ServesUi(d, listener)) return false;
  return path == "/" || path == "/ui" || path.starts_with("/ui/");
}

void InstallUiRoutes(ServerImpl& d, ServerImpl::Listener& listener) {
  if (!ServesUi(d, listener)) return;
  http::Router& router = listener.router;
  auto redirect = [](const http::Request&, http::Response& res) { res.set_redirect("/ui/", 302); };
  router.Get("/", redirect);
  router.Get("/ui", redirect);
  router.Get("/ui/(.*)", [](const http::Request& req, http::Response& res) {
    std::string name = req.matches[1];
    if (name.empty()) name = "index.html";
    for (size_t i = 0; i < ui::kAssetCount; ++i) {
      const ui::Asset& a = ui::kAssets[i];
      if (name == a.path) {
        res.status = 200;
        res.set_header("Cache-Control", "no-cache");
        res.set_header("X-Content-Type-Options", "nosniff");
        res.set_header("Content-Security-Policy",
                       "default-src 'self'; img-src 'self' data:; object-src 'none'; "
                       "base-uri 'none'; frame-ancestors 'none'");
        res.set_content(std::string(a.data, a.size), a.content_type);
        return;
      }
    }
    api::ReplyError(res, {404, "not_found", "no such UI file: " + req.path});
  });
}

}  // namespace stele::server
