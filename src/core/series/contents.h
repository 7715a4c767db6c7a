#pragma once
// What is inside a checkpoint, for judging whether it is complete: the files of
// a checkpoint directory, and whether a file's own format says it was cut short.
// A save that died of ENOSPC or SIGKILL leaves a file that stopped growing but
// lacks its end: torch.save (a zip since PyTorch 1.6) writes the zip's central
// directory last, and a safetensors header names the bytes of every tensor.

#include <cstdint>
#include <string>
#include <vector>

namespace headroom {

/// One regular file inside a checkpoint directory.
struct ContentFile {
  std::string path;         ///< relative to the checkpoint directory, "/"-separated
  std::uint64_t bytes = 0;  ///< apparent size
  friend bool operator==(const ContentFile&, const ContentFile&) = default;
};

/// The regular files below the directory `name` of `dir_fd`, sorted by path: at
/// most `limit`, at most 8 levels deep, never following a symlink or entering
/// another device. Unreadable parts are skipped.
[[nodiscard]] std::vector<ContentFile> list_contents(int dir_fd, const std::string& name,
                                                     std::size_t limit = 4096);

/// Why the regular file `path` (relative to `dir_fd`) is cut short by its own
/// format, or "" when it is intact or of a format not checked: a zip (torch.save)
/// without its end-of-central-directory record, a safetensors file shorter than
/// its header says, a safetensors header that does not parse.
[[nodiscard]] std::string format_damage(int dir_fd, const std::string& path);

/// The same judgement on bytes already read: the first `head` bytes of a file of
/// `size` bytes and its last `tail` bytes (tail may overlap head). Pure, for tests.
[[nodiscard]] std::string format_damage_of(const std::string& name, std::uint64_t size,
                                           const std::string& head, const std::string& tail);

}  // namespace headroom
