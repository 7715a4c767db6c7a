#pragma once
// The signature catalog: what a log line means. Signatures are data (TOML files
// under catalog/, embedded into the binary at build time, plus the user's
// --catalog directories); the schema is documented in docs/catalog.md.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.h"

namespace headroom {

/// The causes explain reports. Host causes first; the rest are not the host's fault.
inline constexpr std::string_view kHostCauses[] = {
    "shm_too_small", "shm_stale",   "disk_full",      "tmp_full", "host_oom",
    "fd_limit",      "pid_limit",   "fs_readonly",    "io_error", "inotify_limit",
    "memlock_limit", "port_in_use", "file_size_limit"};
/// True for the causes that a host resource explains (kHostCauses).
[[nodiscard]] bool is_host_cause(std::string_view cause);

/// How much one matching line says about its cause.
enum class Strength {
  kDecisive,    ///< names the cause by itself ("Bus error ... out of shared memory")
  kStrong,      ///< usually the cause ("killed by signal: Killed")
  kSuggestive,  ///< a consequence that several causes share ("exited unexpectedly")
};

/// "decisive", "strong", "suggestive".
[[nodiscard]] std::string_view to_string(Strength strength);

/// One known message: patterns that recognise it and what it means.
struct Signature {
  std::string id;     ///< unique, e.g. "torch.dataloader.bus_error"
  std::string cause;  ///< e.g. "shm_too_small"
  Strength strength = Strength::kStrong;
  /// RE2 patterns; any one matching a line is a match. Named groups extract
  /// fields: pid, pids, path, size, signal, errno, errno_name, exit_code.
  std::vector<std::string> patterns;
  /// A literal every pattern's match contains, for the prefilter; derived from
  /// the patterns when the TOML gives none. Empty: the patterns run on every line.
  std::vector<std::string> literals;
  /// When set, the match counts only if one of the previous `context_lines`
  /// lines (or the line itself) matches this RE2 pattern.
  /// Looked for only in the head of each source, where every line is read (a paste: ls
  /// and du output, tables), so it needs no literal and costs nothing on a long log.
  bool paste_only = false;
  std::string requires_context;
  /// When set, the match does not count if a previous line matches this.
  std::string excludes_context;
  std::size_t context_lines = 12;
  /// The cause depends on *where* the error happened: the path the line names, or
  /// failing that the location hints (Catalog::locations) on the same line, in the
  /// lines before it (the traceback) or just after it. `by_location` maps a location
  /// ("shm", "shm_ipc", "tmp", "disk") to the cause; what it does not list follows
  /// kDefaultLocationCauses, and "disk" (no special location) is `cause`. TOML
  /// `locate = true` (older catalogs: `cause_by_path = true`).
  bool locate = false;
  std::map<std::string, std::string, std::less<>> by_location;
  /// `cause = "by_signal"`: the signal the line reports (the `signal` or `exit_code`
  /// group) decides the cause, through the [[signal]] entry for it; a line whose status
  /// is no signal (exit code 1), or a signal with no entry, is no match.
  bool by_signal = false;
  /// Non-empty for a location hint ([[location]] in TOML): a line matching it tells
  /// where nearby errors happened ("shm", "shm_ipc", "tmp", "disk"); it names no cause.
  std::string where;
  /// Non-empty for a signal's meaning ([[signal]] in TOML, no patterns): the cause a
  /// death by one of these signals points to, the most a report of it counts for
  /// (`strength`), and the explanation and remedies that go with it.
  std::vector<int> signals;
  /// Non-empty for a marker ([[marker]] in TOML): a line matching it is noted under this
  /// name ("exception": a line that names the exception a traceback ended in).
  std::string marker;
  /// When set, a match counts only if no line of this marker follows within 16 lines:
  /// a hint that stands only while what would say more is missing (a cut traceback).
  std::string unless_followed_by;
  /// The match counts only once it is seen on this many lines (a listing of one segment
  /// is the job's own; of several, leftovers).
  std::uint64_t min_matches = 1;
  /// A cause this line makes doubtful (a /dev/shm shown nearly empty against
  /// shm_too_small): that cause loses half its score and cannot be high.
  std::string contradicts;
  std::string explanation;           ///< why this line means that cause, for people
  std::vector<std::string> confirm;  ///< host checks that confirm it: "shm", "kmsg", "memory", ...
  std::vector<std::string> remedies;
  std::string origin;  ///< "builtin:<file>.toml" or the user's file path
};

/// Every signature and location hint, in load order (built-in first).
struct Catalog {
  std::vector<Signature> signatures;
};

/// The cause of a located error at each location, unless a signature says otherwise.
inline constexpr std::pair<std::string_view, std::string_view> kDefaultLocationCauses[] = {
    {"shm", "shm_too_small"}, {"shm_ipc", "shm_too_small"}, {"tmp", "tmp_full"}};
/// The locations a hint may name.
inline constexpr std::string_view kLocations[] = {"shm", "shm_ipc", "tmp", "disk"};

/// What parse_catalog proves of a file besides its structure (keys, types, known values).
enum class CatalogChecks {
  kPatterns,   ///< and that every pattern compiles with known fields (a user's file)
  kStructure,  ///< only the structure (the built-in files, whose patterns the tests check)
};

/// Parses one catalog file's TOML text; `origin` names it in errors and in Signature::origin.
[[nodiscard]] Result<Catalog> parse_catalog(std::string_view toml_text, std::string_view origin,
                                            CatalogChecks checks = CatalogChecks::kPatterns);

/// The built-in catalog (embedded at build time) plus every *.toml in `extra_dirs`.
/// A user signature with the id of a built-in one replaces it. Errors name the file and key.
[[nodiscard]] Result<Catalog> load_catalog(std::span<const std::filesystem::path> extra_dirs);

/// The embedded catalog files: (file name, TOML text), generated from catalog/*.toml.
[[nodiscard]] std::span<const std::pair<std::string_view, std::string_view>>
builtin_catalog_files();

}  // namespace headroom
