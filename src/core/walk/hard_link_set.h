#pragma once
// Files with more than one link, seen so far in a walk, so each counts once.
// Only nlink > 1 files enter it, so its size follows the number of hard-linked
// files, not the tree. Sharded so that workers rarely contend on one lock.

#include <array>
#include <mutex>

#include "core/walk/file_stat.h"
#include "core/walk/walker.h"

namespace headroom::walk {

/// A thread-safe set of FileIds.
class HardLinkSet {
 public:
  /// True when `id` was not in the set yet (the caller counts the file).
  [[nodiscard]] bool insert(const FileId& id) {
    Shard& shard = shards_[(FileIdHash{}(id) >> 7) % kShards];
    const std::lock_guard lock(shard.mutex);
    return shard.ids.insert(id).second;
  }

 private:
  static constexpr std::size_t kShards = 32;
  struct Shard {
    std::mutex mutex;
    FileIdSet ids;
  };
  std::array<Shard, kShards> shards_;
};

}  // namespace headroom::walk
