// Callback watches of executions (DbConnection::WatchFinished /
// WatchPublish, docs/storage_contract.md "Watches"), shared by every
// backend: a backend registers a watch, checks the database, and feeds the
// registry from its existing commit notifications (FireFinished /
// FirePublished run after the commit that made them true).
//
// A watch fires at most once and is then gone. Callbacks run on the firing
// thread (a backend's writer or listener thread, or the registering thread
// when the condition already holds), outside the registry's mutex but
// possibly while the backend holds its own lock: they must be cheap and
// must not call into storage; they hand off and the receiver re-reads.
//
// Threading: all methods are thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/result.h"
#include "storage/db_errors.h"

namespace stele::storage {

using WatchCallback = std::function<void()>;
// Identifies a registered watch; 0 is never a live watch.
using WatchToken = uint64_t;

enum class WatchKind {
  kFinished,  // fires when the execution finishes
  kPublish,   // fires on a committed Publish or when the execution finishes
};

class WatchRegistry {
 public:
  // Registers `callback` for `execution_id`. `since` is only handed back
  // to FireWhere (a kPublish watch's version). After Close the callback
  // runs at once on this thread and 0 is returned.
  WatchToken Add(const std::string& execution_id, WatchKind kind, WatchCallback callback,
                 uint64_t since = 0);
  // Removes the watch; false when it already fired (its callback may be
  // running right now) or the token is unknown.
  bool Remove(WatchToken token);
  // Fires one watch now if it has not fired yet (a backend that finds the
  // condition already true after registering).
  void Fire(WatchToken token);
  // Fires every watch of `execution_id` (both kinds).
  void FireFinished(const std::string& execution_id);
  // Fires the kPublish watches of `execution_id`.
  void FirePublished(const std::string& execution_id);
  // Fires the watches for which `ready(execution_id, kind, since)` holds;
  // `ready` runs under the registry's mutex (the memory backend's exact
  // re-check).
  void FireWhere(const std::function<bool(const std::string&, WatchKind, uint64_t)>& ready);
  // Fires every watch (a hint: their owners re-read), e.g. after a lost
  // notification connection came back.
  void FireAll();
  // Fires every watch, and every watch added later at once.
  void Close();
  // Live watches (for tests and gauges).
  size_t size() const;

 private:
  struct Entry {
    std::string execution_id;
    WatchKind kind;
    uint64_t since;
    WatchCallback callback;
  };
  // REQUIRES: mu_ held. Moves the callback of `token` to `out` and forgets it.
  void TakeLocked(WatchToken token, std::vector<WatchCallback>& out);
  static void Run(std::vector<WatchCallback>& callbacks);

  mutable std::mutex mu_;
  bool closed_ = false;                                                           // guarded by mu_
  WatchToken next_ = 1;                                                           // guarded by mu_
  std::unordered_map<WatchToken, Entry> entries_;                                 // guarded by mu_
  std::unordered_map<std::string, std::unordered_set<WatchToken>> by_execution_;  // guarded by mu_
};

// Registers a watch on `watches`, then checks `ready()` (a read of the
// condition: Result<bool, DbErrorRead>). Register-then-check, as for the
// blocking waits: a commit lands before the check (seen: the watch fires
// here and 0 is returned) or after the registration (fired by the
// backend's commit notice). A failed check removes the watch.
template <class Ready>
Result<WatchToken, DbErrorRead> AddWatchThenCheck(WatchRegistry& watches,
                                                  const std::string& execution_id, WatchKind kind,
                                                  WatchCallback on_change, const Ready& ready) {
  const WatchToken token = watches.Add(execution_id, kind, std::move(on_change));
  Result<bool, DbErrorRead> now = ready();
  if (!now) {
    watches.Remove(token);
    return Unexpected(std::move(now).error());
  }
  if (*now) {
    watches.Fire(token);
    return WatchToken{0};
  }
  return token;
}

}  // namespace stele::storage
