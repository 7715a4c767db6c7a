#pragma once
// The running kernel's type information (BTF, /sys/kernel/btf/vmlinux), read
// only as far as a hand-assembled BPF program needs it: the id of a function
// (an iterator's attach point) and where a member sits in a structure, so the
// program reads this kernel's fields at this kernel's offsets (what libbpf's
// CO-RE relocations do, without its full parse: mapped, not read, where the
// kernel allows it, and one pass over the type section).
//
// Source: Documentation/bpf/btf.rst (the type encoding). A member found inside
// an anonymous struct or union member counts at its full offset.

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace headroom {

class Btf {
 public:
  /// The kernel's own BTF; Error when the kernel has none (CONFIG_DEBUG_INFO_BTF off)
  /// or it cannot be read.
  [[nodiscard]] static Result<Btf> vmlinux();
  /// Parses BTF bytes (what vmlinux() read where it could not map them); Error when not BTF.
  [[nodiscard]] static Result<Btf> parse(std::vector<char> bytes);

  Btf(Btf&&) noexcept;
  Btf& operator=(Btf&&) noexcept;
  Btf(const Btf&) = delete;
  Btf& operator=(const Btf&) = delete;
  ~Btf();

  /// Looks up these structs and functions in one pass over the types, so the
  /// calls below that name them need no pass of their own (each is ~2 ms on a
  /// 5 MB vmlinux BTF).
  void prepare(std::span<const std::string_view> structs,
               std::span<const std::string_view> functions);

  /// The id of the function (BTF_KIND_FUNC) named `name`.
  [[nodiscard]] std::optional<std::uint32_t> function(std::string_view name) const;
  /// The byte offset of `member` in `struct name`; nested names with dots
  /// ("f_path.mnt"). nullopt when the struct or a member is missing or a bitfield.
  [[nodiscard]] std::optional<std::uint32_t> offset(std::string_view name,
                                                    std::string_view member) const;
  /// sizeof(struct name).
  [[nodiscard]] std::optional<std::uint32_t> size(std::string_view name) const;

 private:
  Btf() = default;
  [[nodiscard]] Result<void> index();
  [[nodiscard]] std::string_view name_of(std::uint32_t name_offset) const;
  [[nodiscard]] std::optional<std::uint32_t> find(std::string_view name, unsigned kind) const;
  struct Member {
    std::uint32_t offset = 0;  // bytes
    std::uint32_t type = 0;
  };
  [[nodiscard]] std::optional<Member> member_in(std::uint32_t type, std::string_view member,
                                                int depth) const;
  [[nodiscard]] std::uint32_t resolve(std::uint32_t type) const;

  const char* data_ = nullptr;  // the whole BTF blob
  std::size_t size_ = 0;
  void* mapping_ = nullptr;  // munmap'ed on destruction when mapped
  std::vector<char> bytes_;  // owns data_ when read rather than mapped
  const char* types_ = nullptr;
  const char* strings_ = nullptr;
  std::uint32_t strings_size_ = 0;
  std::vector<std::uint32_t> offsets_;  // type id -> offset of its btf_type in types_
  std::map<std::pair<std::string_view, unsigned>, std::uint32_t> prepared_;  // 0: absent
};

}  // namespace headroom
