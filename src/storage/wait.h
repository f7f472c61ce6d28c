// How long a storage wait may block: a deadline on the steady clock and an
// optional cancellation token (replaces the timeout futures of Obelisk's
// Rust contract).
// Every wait in the storage layer is bounded by one of these.
#pragma once

#include <chrono>
#include <optional>

#include "base/cancellation.h"

namespace stele::storage {

struct WaitOptions {
  std::chrono::steady_clock::time_point deadline;
  std::optional<CancellationToken> cancel;

  static WaitOptions For(std::chrono::steady_clock::duration timeout,
                         std::optional<CancellationToken> cancel = std::nullopt) {
    return {std::chrono::steady_clock::now() + timeout, std::move(cancel)};
  }
};

}  // namespace stele::storage
