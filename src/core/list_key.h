// The order executions are listed by (docs/storage_contract.md, "Listing
// order"), as a key whose bytewise order is that order.
//
// Threading: pure functions; thread-safe.
#pragma once

#include <string>

#include "core/ids.h"

namespace stele::core {

// The key of `id`: its bytewise order is the order of ids with numbers
// compared as numbers. A top-level id's key is the id itself (ULIDs sort by
// creation time); a child's key starts with its parent's, so children list
// right after their parent, then segment by segment: join set kind (`g`,
// `n`, `o`), name (digit runs by value: `o:2-pay` before `o:10-pay`), index
// (`_2` before `_10`). A workflow numbers its one-off and generated join
// sets and the children of each join set as it creates them, so those list
// in creation order. Distinct ids have distinct keys. Stored and indexed by
// the storage backends (t_state.list_key): never change the encoding
// without a migration that rewrites the stored keys.
std::string ListKey(const ExecutionId& id);

}  // namespace stele::core
