#include "core/kernel/btf.h"

#include <fcntl.h>
#include <linux/btf.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "core/unique_fd.h"

namespace headroom {

namespace {

constexpr const char* kVmlinux = "/sys/kernel/btf/vmlinux";
constexpr int kMaximumDepth = 8;  // anonymous members inside anonymous members

template <typename T>
T load(const char* at) {
  T value;
  std::memcpy(&value, at, sizeof value);
  return value;
}

unsigned kind_of(const btf_type& type) { return BTF_INFO_KIND(type.info); }
unsigned vlen_of(const btf_type& type) { return BTF_INFO_VLEN(type.info); }

// The bytes after a btf_type that belong to it.
std::size_t trailer(const btf_type& type) {
  const std::size_t vlen = vlen_of(type);
  switch (kind_of(type)) {
    case BTF_KIND_INT:
    case BTF_KIND_VAR:
    case BTF_KIND_DECL_TAG:
      return 4;
    case BTF_KIND_ARRAY:
      return sizeof(btf_array);
    case BTF_KIND_STRUCT:
    case BTF_KIND_UNION:
      return vlen * sizeof(btf_member);
    case BTF_KIND_ENUM:
      return vlen * sizeof(btf_enum);
    case BTF_KIND_FUNC_PROTO:
      return vlen * sizeof(btf_param);
    case BTF_KIND_DATASEC:
      return vlen * sizeof(btf_var_secinfo);
    case 19:  // BTF_KIND_ENUM64 (Linux 6.0): struct btf_enum64, 12 bytes
      return vlen * 12;
    default:  // PTR, FWD, TYPEDEF, VOLATILE, CONST, RESTRICT, FUNC, FLOAT, TYPE_TAG
      return 0;
  }
}

}  // namespace

Btf::Btf(Btf&& other) noexcept { *this = std::move(other); }

Btf& Btf::operator=(Btf&& other) noexcept {
  std::swap(data_, other.data_);
  std::swap(size_, other.size_);
  std::swap(mapping_, other.mapping_);
  std::swap(bytes_, other.bytes_);
  std::swap(types_, other.types_);
  std::swap(strings_, other.strings_);
  std::swap(strings_size_, other.strings_size_);
  std::swap(offsets_, other.offsets_);
  return *this;
}

Btf::~Btf() {
  if (mapping_ != nullptr) ::munmap(mapping_, size_);
}

Result<Btf> Btf::vmlinux() {
  const UniqueFd file(::open(kVmlinux, O_RDONLY | O_CLOEXEC));
  if (!file.ok()) return fail(Error::from_errno(errno, kVmlinux));
  struct stat info {};
  if (::fstat(file.get(), &info) != 0) return fail(Error::from_errno(errno, kVmlinux));
  // Linux 6.16+ maps the kernel's own copy; before, sysfs hands it out a page per read.
  if (info.st_size > 0) {
    void* mapped = ::mmap(nullptr, static_cast<std::size_t>(info.st_size), PROT_READ, MAP_PRIVATE,
                          file.get(), 0);
    if (mapped != MAP_FAILED) {
      Btf btf;
      btf.mapping_ = mapped;
      btf.data_ = static_cast<const char*>(mapped);
      btf.size_ = static_cast<std::size_t>(info.st_size);
      if (auto indexed = btf.index(); !indexed) return fail(indexed.error());
      return btf;
    }
  }
  std::vector<char> bytes(info.st_size > 0 ? static_cast<std::size_t>(info.st_size) : 1 << 20);
  std::size_t used = 0;
  for (;;) {
    if (used == bytes.size()) bytes.resize(bytes.size() * 2);
    const ssize_t got = ::read(file.get(), bytes.data() + used, bytes.size() - used);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return fail(Error::from_errno(errno, kVmlinux));
    if (got == 0) break;
    used += static_cast<std::size_t>(got);
  }
  bytes.resize(used);
  return parse(std::move(bytes));
}

Result<Btf> Btf::parse(std::vector<char> bytes) {
  Btf btf;
  btf.bytes_ = std::move(bytes);
  btf.data_ = btf.bytes_.data();
  btf.size_ = btf.bytes_.size();
  if (auto indexed = btf.index(); !indexed) return fail(indexed.error());
  return btf;
}

Result<void> Btf::index() {
  if (size_ < sizeof(btf_header)) return fail(Error::parse("BTF: shorter than its header"));
  const auto header = load<btf_header>(data_);
  if (header.magic != BTF_MAGIC) return fail(Error::parse("BTF: bad magic (other endianness?)"));
  const std::uint64_t types_end = std::uint64_t{header.hdr_len} + header.type_off + header.type_len;
  const std::uint64_t strings_end = std::uint64_t{header.hdr_len} + header.str_off + header.str_len;
  if (header.hdr_len < sizeof(btf_header) || types_end > size_ || strings_end > size_) {
    return fail(Error::parse("BTF: sections beyond the data"));
  }
  types_ = data_ + header.hdr_len + header.type_off;
  strings_ = data_ + header.hdr_len + header.str_off;
  strings_size_ = header.str_len;
  offsets_.clear();
  offsets_.reserve(header.type_len / 24);
  offsets_.push_back(0);  // id 0 is void
  std::size_t at = 0;
  while (at + sizeof(btf_type) <= header.type_len) {
    const auto type = load<btf_type>(types_ + at);
    offsets_.push_back(static_cast<std::uint32_t>(at));
    at += sizeof(btf_type) + trailer(type);
  }
  if (at != header.type_len) return fail(Error::parse("BTF: a type runs past the type section"));
  return {};
}

std::string_view Btf::name_of(std::uint32_t name_offset) const {
  if (name_offset >= strings_size_) return {};
  return {strings_ + name_offset, ::strnlen(strings_ + name_offset, strings_size_ - name_offset)};
}

void Btf::prepare(std::span<const std::string_view> structs,
                  std::span<const std::string_view> functions) {
  struct Wanted {
    std::string_view name;
    unsigned kind;
    std::uint32_t id;
  };
  std::vector<Wanted> wanted;
  for (auto name : structs) wanted.push_back({name, BTF_KIND_STRUCT, 0});
  for (auto name : functions) wanted.push_back({name, BTF_KIND_FUNC, 0});
  for (std::uint32_t id = 1; id < offsets_.size(); ++id) {
    const auto type = load<btf_type>(types_ + offsets_[id]);
    const unsigned kind = kind_of(type);
    if (kind != BTF_KIND_FUNC && (kind != BTF_KIND_STRUCT || vlen_of(type) == 0)) continue;
    if (type.name_off >= strings_size_) continue;
    const char* name = strings_ + type.name_off;
    const std::size_t room = strings_size_ - type.name_off;
    for (Wanted& want : wanted) {
      // The first byte, then the rest and the terminator: no strlen of every name.
      if (want.id != 0 || want.kind != kind || want.name.empty() || name[0] != want.name[0]) {
        continue;
      }
      if (want.name.size() < room && name[want.name.size()] == '\0' &&
          std::memcmp(name, want.name.data(), want.name.size()) == 0) {
        want.id = id;
      }
    }
  }
  for (const Wanted& want : wanted) prepared_[std::pair{want.name, want.kind}] = want.id;
}

std::optional<std::uint32_t> Btf::find(std::string_view name, unsigned kind) const {
  if (auto found = prepared_.find(std::pair{name, kind}); found != prepared_.end()) {
    if (found->second == 0) return std::nullopt;
    return found->second;
  }
  for (std::uint32_t id = 1; id < offsets_.size(); ++id) {
    const auto type = load<btf_type>(types_ + offsets_[id]);
    if (kind_of(type) != kind || name_of(type.name_off) != name) continue;
    // A struct's forward-declared copy has no members; the definition does.
    if ((kind == BTF_KIND_STRUCT || kind == BTF_KIND_UNION) && vlen_of(type) == 0) continue;
    return id;
  }
  return std::nullopt;
}

std::uint32_t Btf::resolve(std::uint32_t type) const {
  for (int hops = 0; hops < kMaximumDepth * 4 && type != 0 && type < offsets_.size(); ++hops) {
    const auto entry = load<btf_type>(types_ + offsets_[type]);
    switch (kind_of(entry)) {
      case BTF_KIND_TYPEDEF:
      case BTF_KIND_VOLATILE:
      case BTF_KIND_CONST:
      case BTF_KIND_RESTRICT:
      case 18:  // BTF_KIND_TYPE_TAG
        type = entry.type;
        continue;
      default:
        return type;
    }
  }
  return type;
}

std::optional<Btf::Member> Btf::member_in(std::uint32_t type, std::string_view member,
                                          int depth) const {
  if (depth > kMaximumDepth || type == 0 || type >= offsets_.size()) return std::nullopt;
  const char* at = types_ + offsets_[type];
  const auto entry = load<btf_type>(at);
  if (kind_of(entry) != BTF_KIND_STRUCT && kind_of(entry) != BTF_KIND_UNION) return std::nullopt;
  const bool bitfields = BTF_INFO_KFLAG(entry.info) != 0;
  for (unsigned i = 0; i < vlen_of(entry); ++i) {
    const auto field = load<btf_member>(at + sizeof(btf_type) + i * sizeof(btf_member));
    const std::uint32_t bits = bitfields ? BTF_MEMBER_BIT_OFFSET(field.offset) : field.offset;
    if (bitfields && BTF_MEMBER_BITFIELD_SIZE(field.offset) != 0) continue;
    if (bits % 8 != 0) continue;
    const std::string_view name = name_of(field.name_off);
    if (name == member) return Member{bits / 8, field.type};
    if (name.empty()) {  // an anonymous struct or union: its members are ours
      if (auto inner = member_in(resolve(field.type), member, depth + 1)) {
        inner->offset += bits / 8;
        return inner;
      }
    }
  }
  return std::nullopt;
}

std::optional<std::uint32_t> Btf::function(std::string_view name) const {
  return find(name, BTF_KIND_FUNC);
}

std::optional<std::uint32_t> Btf::offset(std::string_view name, std::string_view member) const {
  auto type = find(name, BTF_KIND_STRUCT);
  if (!type) return std::nullopt;
  std::uint32_t total = 0;
  std::uint32_t current = *type;
  for (;;) {
    const std::size_t dot = member.find('.');
    const std::string_view head = member.substr(0, dot);
    const auto found = member_in(current, head, 0);
    if (!found) return std::nullopt;
    total += found->offset;
    if (dot == std::string_view::npos) return total;
    member.remove_prefix(dot + 1);
    current = resolve(found->type);  // a nested struct: its member next
  }
}

std::optional<std::uint32_t> Btf::size(std::string_view name) const {
  auto type = find(name, BTF_KIND_STRUCT);
  if (!type) return std::nullopt;
  return load<btf_type>(types_ + offsets_[*type]).size;
}

}  // namespace headroom
