#include "base/thread_name.h"

#include <pthread.h>

#include <algorithm>
#include <array>
#include <cstddef>

namespace stele {

void NameThisThread(std::string_view name) {
  // pthread_setname_np refuses (ERANGE) a name past 15 bytes rather than
  // cutting it.
  std::array<char, 16> buffer{};
  const size_t length = std::min(name.size(), buffer.size() - 1);
  std::copy_n(name.data(), length, buffer.data());
  pthread_setname_np(pthread_self(), buffer.data());
}

}  // namespace stele
