#pragma once
// /proc/meminfo: system-wide memory and swap.
// Format: Documentation/filesystems/proc.rst, "meminfo"; one "Key:   value kB" per line.
// Quirks: "kB" means KiB; HugePages_* have no unit (they are page counts, kept as is);
// MemAvailable exists since Linux 3.14 (older kernels: estimated, see Meminfo).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/context.h"
#include "core/error.h"

namespace headroom {

/// The fields of /proc/meminfo that the checks use, in bytes, plus every field as read.
struct Meminfo {
  std::uint64_t total_bytes = 0;      ///< MemTotal
  std::uint64_t free_bytes = 0;       ///< MemFree
  std::uint64_t available_bytes = 0;  ///< MemAvailable (or the estimate below)
  /// True when the kernel has no MemAvailable (< 3.14) and available_bytes is
  /// MemFree + Buffers + Cached, which overstates it.
  bool available_estimated = false;
  std::uint64_t swap_total_bytes = 0;  ///< SwapTotal
  std::uint64_t swap_free_bytes = 0;   ///< SwapFree
  std::uint64_t shmem_bytes = 0;       ///< Shmem: tmpfs (/dev/shm) and shared anonymous pages
  /// Every line in file order: "kB" values converted to bytes, unit-less ones
  /// (HugePages_*) as is. A flat list, not a map: watch parses meminfo every second,
  /// and a node per line was most of the parse.
  std::vector<std::pair<std::string, std::uint64_t>> fields;

  /// A field by its name as in the file ("Cached"), when present (the last line of
  /// that name).
  [[nodiscard]] std::optional<std::uint64_t> field(std::string_view name) const;
};

/// Which lines a parse reads.
enum class MeminfoFields {
  kAll,    ///< every line, into Meminfo::fields, each one checked
  kNamed,  ///< only the lines of Meminfo's named members (`fields` stays empty): the others
           ///< are skipped unparsed and the parse stops once all eight are seen (a watch
           ///< parses meminfo every second; its 50-odd lines were a tenth of a sample)
};

/// Parses meminfo text; MemTotal missing or a malformed line (of those read) is an Error
/// naming the line.
[[nodiscard]] Result<Meminfo> parse_meminfo(std::string_view text,
                                            MeminfoFields which = MeminfoFields::kAll);
/// Reads <root>/proc/meminfo.
[[nodiscard]] Result<Meminfo> read_meminfo(const Context& context,
                                           MeminfoFields which = MeminfoFields::kAll);

}  // namespace headroom
