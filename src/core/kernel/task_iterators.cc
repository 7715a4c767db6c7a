#include "core/kernel/task_iterators.h"

#include <linux/bpf.h>
#include <linux/mount.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "core/kernel/btf.h"
#include "core/threads.h"
#include "core/unique_fd.h"

namespace headroom {

namespace {

// ---- bpf(2) -----------------------------------------------------------------

long bpf(int command, bpf_attr& attr) { return ::syscall(__NR_bpf, command, &attr, sizeof attr); }

Result<UniqueFd> create_map(bpf_map_type type, std::uint32_t key, std::uint32_t value,
                            std::uint32_t entries, std::uint32_t flags) {
  bpf_attr attr{};
  attr.map_type = type;
  attr.key_size = key;
  attr.value_size = value;
  attr.max_entries = entries;
  attr.map_flags = flags;
  const long fd = bpf(BPF_MAP_CREATE, attr);
  if (fd < 0) return fail(Error::from_errno(errno, "bpf(BPF_MAP_CREATE)"));
  return UniqueFd(static_cast<int>(fd));
}

// ---- a small assembler ------------------------------------------------------

constexpr std::uint8_t kR0 = 0, kR1 = 1, kR2 = 2, kR3 = 3, kR4 = 4, kR6 = 6, kR7 = 7, kR8 = 8,
                       kR9 = 9, kFp = 10;

class Assembler {
 public:
  using Label = std::size_t;

  Label label() {
    targets_.push_back(-1);
    return targets_.size() - 1;
  }
  void bind(Label label) { targets_[label] = static_cast<long>(code_.size()); }

  void mov(std::uint8_t dst, std::uint8_t src) { put(BPF_ALU64 | BPF_MOV | BPF_X, dst, src, 0, 0); }
  void mov_imm(std::uint8_t dst, std::int32_t imm) {
    put(BPF_ALU64 | BPF_MOV | BPF_K, dst, 0, 0, imm);
  }
  void add_imm(std::uint8_t dst, std::int32_t imm) {
    put(BPF_ALU64 | BPF_ADD | BPF_K, dst, 0, 0, imm);
  }
  // dst = *(size *)(src + off)
  void load(int size, std::uint8_t dst, std::uint8_t src, std::int64_t off) {
    put(static_cast<std::uint8_t>(BPF_LDX | BPF_MEM | size), dst, src, narrow(off), 0);
  }
  // *(size *)(dst + off) = src
  void store(int size, std::uint8_t dst, std::int64_t off, std::uint8_t src) {
    put(static_cast<std::uint8_t>(BPF_STX | BPF_MEM | size), dst, src, narrow(off), 0);
  }
  void store_imm(int size, std::uint8_t dst, std::int64_t off, std::int32_t imm) {
    put(static_cast<std::uint8_t>(BPF_ST | BPF_MEM | size), dst, 0, narrow(off), imm);
  }
  void jump_imm(int op, std::uint8_t dst, std::int32_t imm, Label to) {
    fixups_.emplace_back(code_.size(), to);
    put(static_cast<std::uint8_t>(BPF_JMP | op | BPF_K), dst, 0, 0, imm);
  }
  void jump_reg(int op, std::uint8_t dst, std::uint8_t src, Label to) {
    fixups_.emplace_back(code_.size(), to);
    put(static_cast<std::uint8_t>(BPF_JMP | op | BPF_X), dst, src, 0, 0);
  }
  void jump(Label to) { jump_imm(BPF_JA, 0, 0, to); }
  void call(bpf_func_id helper) { put(BPF_JMP | BPF_CALL, 0, 0, 0, helper); }
  void load_map(std::uint8_t dst, int map_fd) {
    put(BPF_LD | BPF_DW | BPF_IMM, dst, BPF_PSEUDO_MAP_FD, 0, map_fd);
    put(0, 0, 0, 0, 0);
  }
  void exit_zero() {
    mov_imm(kR0, 0);
    put(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
  }

  // Error when an offset did not fit an instruction.
  [[nodiscard]] std::optional<std::vector<bpf_insn>> finish() {
    if (overflow_) return std::nullopt;
    for (auto [at, label] : fixups_) {
      const long distance = targets_[label] - static_cast<long>(at) - 1;
      if (targets_[label] < 0 || distance < INT16_MIN || distance > INT16_MAX) return std::nullopt;
      code_[at].off = static_cast<std::int16_t>(distance);
    }
    return std::move(code_);
  }

 private:
  std::int16_t narrow(std::int64_t off) {
    if (off < INT16_MIN || off > INT16_MAX) overflow_ = true;
    return static_cast<std::int16_t>(off);
  }
  void put(std::uint8_t code, std::uint8_t dst, std::uint8_t src, std::int16_t off,
           std::int32_t imm) {
    bpf_insn insn{};
    insn.code = code;
    insn.dst_reg = dst & 0xf;
    insn.src_reg = src & 0xf;
    insn.off = off;
    insn.imm = imm;
    code_.push_back(insn);
  }
  std::vector<bpf_insn> code_;
  std::vector<long> targets_;
  std::vector<std::pair<std::size_t, Label>> fixups_;
  bool overflow_ = false;
};

// ---- the records the programs write -----------------------------------------

// A wanted file or mapping: 64 bytes on the program's stack at fp-64, then its name
// (d_path, NUL included, `name_length` bytes).
struct FileRecord {
  std::uint32_t pid;
  std::int32_t fd;
  std::uint64_t mount;  // the key: (vfsmount, dentry, inode number) -> one name
  std::uint64_t dentry;
  std::uint64_t inode;
  std::uint32_t device;  // the kernel's dev_t: major << 20 | minor
  std::uint32_t name_length;
  std::uint64_t start;
  std::uint64_t end;
  std::uint64_t size;  // i_size
};
static_assert(sizeof(FileRecord) == 64);
constexpr int kFileRecord = -64;  // its place on the stack
constexpr int kKey = kFileRecord + 8;
constexpr int kNameLength = kFileRecord + 36;
constexpr int kZeroKey = -68;
constexpr int kOne = -72;
constexpr int kOurs = -80;        // the reader's mount namespace
constexpr int kTheirs = -88;      // that of the file's mount
constexpr int kSuperFlags = -96;  // the file's superblock's s_flags
constexpr std::uint32_t kKeySize = 24;
constexpr std::uint32_t kNameBuffer = 4096;

// A process: 160 bytes at fp-160.
struct TaskRecord {
  std::uint32_t pid;    // in the initial pid namespace
  std::uint32_t level;  // the depth of its pid namespace
  std::uint32_t euid;
  std::uint32_t unused;
  std::uint64_t mount_namespace;  // nsproxy->mnt_ns
  std::uint64_t pointer;          // scratch: real_cred, nsproxy, thread_pid in turn
  char command[16];
  char numbers[104];  // thread_pid->numbers[]: struct upid {int nr; ...} per level
};
static_assert(sizeof(TaskRecord) == 152);
constexpr int kTaskRecord = -152;
// Where a field of the record is on the program's stack.
#define TASK_FIELD(name) (kTaskRecord + static_cast<int>(offsetof(TaskRecord, name)))

// This kernel's offsets of everything the programs read.
struct Offsets {
  std::uint32_t meta_seq, task_ctx_task, file_ctx_task, file_ctx_fd, file_ctx_file, vma_ctx_task,
      vma_ctx_vma;
  std::uint32_t task_pid, task_tgid, task_thread_pid, task_comm, task_real_cred, task_nsproxy,
      nsproxy_mount;
  std::uint32_t pid_numbers, pid_level, upid_size, upid_nr, cred_euid;
  std::uint32_t file_path, file_inode, path_mount, path_dentry, inode_number, inode_size, inode_sb,
      sb_dev, sb_flags;
  std::uint32_t vma_start, vma_end, vma_file;
  std::uint32_t mount_vfsmount, mount_namespace;
};

constexpr std::array<std::string_view, 15> kStructs = {"bpf_iter_meta",
                                                       "bpf_iter__task",
                                                       "bpf_iter__task_file",
                                                       "bpf_iter__task_vma",
                                                       "task_struct",
                                                       "pid",
                                                       "upid",
                                                       "cred",
                                                       "file",
                                                       "path",
                                                       "inode",
                                                       "super_block",
                                                       "vm_area_struct",
                                                       "nsproxy",
                                                       "mount"};
constexpr std::array<std::string_view, 3> kIterators = {"bpf_iter_task", "bpf_iter_task_file",
                                                        "bpf_iter_task_vma"};

Result<Offsets> read_offsets(const Btf& btf) {
  Offsets o{};
  std::string missing;
  const auto get = [&](std::uint32_t& into, std::string_view type, std::string_view member) {
    if (auto at = btf.offset(type, member)) {
      into = *at;
    } else {
      missing += missing.empty() ? "" : ", ";
      missing.append(type).append(".").append(member);
    }
  };
  get(o.meta_seq, "bpf_iter_meta", "seq");
  get(o.task_ctx_task, "bpf_iter__task", "task");
  get(o.file_ctx_task, "bpf_iter__task_file", "task");
  get(o.file_ctx_fd, "bpf_iter__task_file", "fd");
  get(o.file_ctx_file, "bpf_iter__task_file", "file");
  get(o.vma_ctx_task, "bpf_iter__task_vma", "task");
  get(o.vma_ctx_vma, "bpf_iter__task_vma", "vma");
  get(o.task_pid, "task_struct", "pid");
  get(o.task_tgid, "task_struct", "tgid");
  get(o.task_thread_pid, "task_struct", "thread_pid");
  get(o.task_comm, "task_struct", "comm");
  get(o.task_real_cred, "task_struct", "real_cred");
  get(o.task_nsproxy, "task_struct", "nsproxy");
  get(o.nsproxy_mount, "nsproxy", "mnt_ns");
  get(o.pid_numbers, "pid", "numbers");
  get(o.pid_level, "pid", "level");
  get(o.upid_nr, "upid", "nr");
  get(o.cred_euid, "cred", "euid");
  get(o.file_path, "file", "f_path");
  get(o.file_inode, "file", "f_inode");
  get(o.path_mount, "path", "mnt");
  get(o.path_dentry, "path", "dentry");
  get(o.inode_number, "inode", "i_ino");
  get(o.inode_size, "inode", "i_size");
  get(o.inode_sb, "inode", "i_sb");
  get(o.sb_dev, "super_block", "s_dev");
  get(o.sb_flags, "super_block", "s_flags");
  get(o.vma_start, "vm_area_struct", "vm_start");
  get(o.vma_end, "vm_area_struct", "vm_end");
  get(o.vma_file, "vm_area_struct", "vm_file");
  get(o.mount_vfsmount, "mount", "mnt");
  get(o.mount_namespace, "mount", "mnt_ns");
  if (auto size = btf.size("upid")) o.upid_size = *size;
  if (o.upid_size == 0) missing += missing.empty() ? "sizeof(upid)" : ", sizeof(upid)";
  if (!missing.empty()) {
    return fail(Error{Error::Code::kUnsupported, "kernel BTF lacks " + missing});
  }
  return o;
}

// ---- the programs -------------------------------------------------------------

// r7 = task: leave unless it leads its thread group; else its pid as the initial pid
// namespace numbers it at fp+`at`. Clobbers r1, r2. (The task record says what that
// pid is in the reader's namespace: a pid read here through the reader's own task
// would make the verifier search the kernel's BTF at every load below it.)
void leader_pid(Assembler& a, const Offsets& o, int at, Assembler::Label out) {
  a.load(BPF_W, kR1, kR7, o.task_pid);
  a.load(BPF_W, kR2, kR7, o.task_tgid);
  a.jump_reg(BPF_JNE, kR1, kR2, out);
  a.store(BPF_W, kFp, at, kR2);
}

// r6 = ctx, r9 = its seq_file, r7 = the task at `task_member` of ctx (to `out` when
// there is none: the last call of a run).
void enter(Assembler& a, const Offsets& o, std::uint32_t task_member, Assembler::Label out) {
  a.mov(kR6, kR1);
  a.load(BPF_DW, kR9, kR6, 0);  // ctx->meta: the first member of every iterator context
  a.load(BPF_DW, kR9, kR9, o.meta_seq);
  a.load(BPF_DW, kR7, kR6, task_member);
  a.jump_imm(BPF_JEQ, kR7, 0, out);
}

void write_record(Assembler& a) {
  a.mov(kR1, kR9);
  a.mov(kR2, kFp);
  a.add_imm(kR2, kFileRecord);
  a.mov_imm(kR3, sizeof(FileRecord));
  a.call(BPF_FUNC_seq_write);
}

// r6 = the name (d_path, NUL included), r7 = its length with the NUL: r0 = 1 when
// it is at or under one of `prefixes` (path_at_or_under, " (deleted)" ignored), else 0.
// Unrolled: one compare per byte of each prefix, run once per file a run meets.
void match_prefixes(Assembler& a, const std::vector<std::string>& prefixes) {
  if (prefixes.empty()) {  // every name (the verifier refuses code it cannot reach)
    a.mov_imm(kR0, 1);
    return;
  }
  const auto matched = a.label();
  const auto done = a.label();
  for (std::string prefix : prefixes) {
    while (prefix.size() > 1 && prefix.back() == '/') prefix.pop_back();
    const auto next = a.label();
    const auto size = static_cast<std::int32_t>(prefix.size());
    a.jump_imm(BPF_JLT, kR7, size + 1, next);  // shorter than the prefix
    for (std::int32_t i = 0; i < size; ++i) {
      a.load(BPF_B, kR1, kR6, i);
      a.jump_imm(BPF_JNE, kR1, static_cast<unsigned char>(prefix[static_cast<std::size_t>(i)]),
                 next);
    }
    if (prefix != "/") {
      a.load(BPF_B, kR1, kR6, size);  // the prefix ends the name, or a component does
      a.jump_imm(BPF_JEQ, kR1, 0, matched);
      a.jump_imm(BPF_JEQ, kR1, '/', matched);
      constexpr std::string_view kDeleted = " (deleted)";  // and the name is the prefix, deleted
      a.jump_imm(BPF_JNE, kR7, size + static_cast<std::int32_t>(kDeleted.size()) + 1, next);
      for (std::size_t i = 0; i < kDeleted.size(); ++i) {
        a.load(BPF_B, kR1, kR6, size + static_cast<std::int64_t>(i));
        a.jump_imm(BPF_JNE, kR1, kDeleted[i], next);
      }
    }
    a.jump(matched);
    a.bind(next);
  }
  a.mov_imm(kR0, 0);
  a.jump(done);
  a.bind(matched);
  a.mov_imm(kR0, 1);
  a.bind(done);
}

// seen[key] = the verdict at fp + kOne.
void remember(Assembler& a, int seen_fd) {
  a.load_map(kR1, seen_fd);
  a.mov(kR2, kFp);
  a.add_imm(kR2, kKey);
  a.mov(kR3, kFp);
  a.add_imm(kR3, kOne);
  a.mov_imm(kR4, BPF_ANY);
  a.call(BPF_FUNC_map_update_elem);
}

// *(u64 *)(fp + to) = *(u64 *)r3 by bpf_probe_read_kernel (0 when it cannot be read).
void read_pointer(Assembler& a, int to, std::uint8_t from) {
  a.store_imm(BPF_DW, kFp, to, 0);
  a.mov(kR1, kFp);
  a.add_imm(kR1, to);
  a.mov_imm(kR2, 8);
  if (from != kR3) a.mov(kR3, from);
  a.call(BPF_FUNC_probe_read_kernel);
}

// r8 = struct file *, r9 = seq, the record's pid, fd, start and end written: fills in
// the file's key and device and, when its name is wanted, writes the record and the
// name; when the file has no name here (on a mount outside the reader's namespace, or
// longer than a page), the record with an empty name. `seen` keeps for every file met
// whether its name is wanted (1), not (0), or it has none here (2): a file not wanted
// (a library every process maps) is named once in a run, not per record.
void write_file(Assembler& a, const Offsets& o, const std::vector<std::string>& prefixes,
                bool mappings, int seen_fd, int names_fd, Assembler::Label out) {
  a.load(BPF_DW, kR1, kR8, o.file_path + o.path_mount);
  a.store(BPF_DW, kFp, kKey, kR1);
  a.load(BPF_DW, kR1, kR8, o.file_path + o.path_dentry);
  a.store(BPF_DW, kFp, kKey + 8, kR1);
  a.load(BPF_DW, kR2, kR8, o.file_inode);
  a.load(BPF_DW, kR1, kR2, o.inode_number);
  a.store(BPF_DW, kFp, kKey + 16, kR1);
  a.load(BPF_DW, kR1, kR2, o.inode_size);
  a.store(BPF_DW, kFp, kFileRecord + 56, kR1);
  a.load(BPF_DW, kR2, kR2, o.inode_sb);
  a.load(BPF_W, kR1, kR2, o.sb_dev);
  a.store(BPF_W, kFp, kFileRecord + 32, kR1);
  if (mappings) {
    a.load(BPF_DW, kR1, kR2, o.sb_flags);
    a.store(BPF_DW, kFp, kSuperFlags, kR1);
  }
  a.store_imm(BPF_W, kFp, kNameLength, 0);
  const auto not_seen = a.label();
  // Met already in this run: left out when not wanted, else named again (a record
  // the seq_file had no room for is run again: what it wrote must not depend on
  // what the run before it did).
  a.load_map(kR1, seen_fd);
  a.mov(kR2, kFp);
  a.add_imm(kR2, kKey);
  a.call(BPF_FUNC_map_lookup_elem);
  a.jump_imm(BPF_JEQ, kR0, 0, not_seen);
  a.load(BPF_W, kR1, kR0, 0);
  a.jump_imm(BPF_JEQ, kR1, 0, out);
  a.bind(not_seen);
  a.store_imm(BPF_W, kFp, kZeroKey, 0);
  a.load_map(kR1, names_fd);
  a.mov(kR2, kFp);
  a.add_imm(kR2, kZeroKey);
  a.call(BPF_FUNC_map_lookup_elem);
  a.jump_imm(BPF_JEQ, kR0, 0, out);
  a.mov(kR6, kR0);  // the name buffer (ctx is no longer needed)
  // A mapping of a file on a mount outside the reader's mount namespace (an overlay's
  // layer: a mapping of an overlay file is its backing file, which the maps text names
  // by the overlay's path; a mount of another namespace; one detached): the caller reads
  // the process through /proc. (An fd's link is this same d_path: no such test.)
  const auto marker = a.label();
  if (mappings) {
    const auto same_namespace = a.label();
    a.call(BPF_FUNC_get_current_task);
    a.mov(kR3, kR0);
    a.add_imm(kR3, static_cast<std::int32_t>(o.task_nsproxy));
    read_pointer(a, kOurs, kR3);
    a.load(BPF_DW, kR3, kFp, kOurs);
    a.add_imm(kR3, static_cast<std::int32_t>(o.nsproxy_mount));
    read_pointer(a, kOurs, kR3);
    a.load(BPF_DW, kR3, kFp, kKey);  // the vfsmount, in its struct mount
    a.add_imm(kR3, static_cast<std::int32_t>(o.mount_namespace) -
                       static_cast<std::int32_t>(o.mount_vfsmount));
    read_pointer(a, kTheirs, kR3);
    a.load(BPF_DW, kR1, kFp, kOurs);
    a.load(BPF_DW, kR2, kFp, kTheirs);
    a.jump_reg(BPF_JEQ, kR1, kR2, same_namespace);
    // A filesystem the kernel mounted for itself (kern_mount: memfd, SysV and shared
    // anonymous memory, hugetlbfs files), which maps names alike. SB_KERNMOUNT is
    // MS_KERNMOUNT of <linux/mount.h>. (An overlay's layer is a private clone of a
    // mount users made, in no namespace of theirs either: its superblock is theirs.)
    a.load(BPF_DW, kR1, kFp, kSuperFlags);
    a.jump_imm(BPF_JSET, kR1, MS_KERNMOUNT, same_namespace);
    a.store_imm(BPF_W, kFp, kOne, 2);
    remember(a, seen_fd);
    a.jump(marker);
    a.bind(same_namespace);
  }
  a.mov(kR1, kR8);
  a.add_imm(kR1, static_cast<std::int32_t>(o.file_path));
  a.mov(kR2, kR6);
  a.mov_imm(kR3, kNameBuffer);
  a.call(BPF_FUNC_d_path);
  // No name: longer than the buffer (a page, as readlink's). The maps text has room for
  // any name, so an empty one (the NUL alone) says so and the caller reads the process
  // through /proc.
  const auto named = a.label();
  a.jump_imm(BPF_JSGT, kR0, 0, named);
  a.bind(marker);
  a.store_imm(BPF_W, kFp, kNameLength, 1);
  write_record(a);
  a.store_imm(BPF_B, kR6, 0, 0);
  a.mov(kR1, kR9);
  a.mov(kR2, kR6);
  a.mov_imm(kR3, 1);
  a.call(BPF_FUNC_seq_write);
  a.jump(out);
  a.bind(named);
  a.jump_imm(BPF_JGT, kR0, kNameBuffer, out);  // the length with the NUL: at most the buffer
  a.store(BPF_W, kFp, kNameLength, kR0);
  a.mov(kR7, kR0);  // the length (task is no longer needed)
  match_prefixes(a, prefixes);
  a.store(BPF_W, kFp, kOne, kR0);
  a.mov(kR8, kR0);  // the verdict (the file is no longer needed)
  remember(a, seen_fd);
  a.jump_imm(BPF_JEQ, kR8, 0, out);
  write_record(a);
  a.mov(kR1, kR9);
  a.mov(kR2, kR6);
  a.mov(kR3, kR7);
  a.call(BPF_FUNC_seq_write);
}

std::optional<std::vector<bpf_insn>> files_program(const Offsets& o,
                                                   const std::vector<std::string>& prefixes,
                                                   int seen_fd, int names_fd) {
  Assembler a;
  const auto out = a.label();
  enter(a, o, o.file_ctx_task, out);
  a.load(BPF_DW, kR8, kR6, o.file_ctx_file);
  a.jump_imm(BPF_JEQ, kR8, 0, out);
  leader_pid(a, o, kFileRecord, out);
  a.load(BPF_W, kR1, kR6, o.file_ctx_fd);
  a.store(BPF_W, kFp, kFileRecord + 4, kR1);
  a.store_imm(BPF_DW, kFp, kFileRecord + 40, 0);
  a.store_imm(BPF_DW, kFp, kFileRecord + 48, 0);
  write_file(a, o, prefixes, false, seen_fd, names_fd, out);
  a.bind(out);
  a.exit_zero();
  return a.finish();
}

std::optional<std::vector<bpf_insn>> mappings_program(const Offsets& o,
                                                      const std::vector<std::string>& prefixes,
                                                      int seen_fd, int names_fd) {
  Assembler a;
  const auto out = a.label();
  enter(a, o, o.vma_ctx_task, out);
  a.load(BPF_DW, kR3, kR6, o.vma_ctx_vma);
  a.jump_imm(BPF_JEQ, kR3, 0, out);
  a.load(BPF_DW, kR8, kR3, o.vma_file);
  a.jump_imm(BPF_JEQ, kR8, 0, out);
  a.load(BPF_DW, kR1, kR3, o.vma_start);
  a.store(BPF_DW, kFp, kFileRecord + 40, kR1);
  a.load(BPF_DW, kR1, kR3, o.vma_end);
  a.store(BPF_DW, kFp, kFileRecord + 48, kR1);
  leader_pid(a, o, kFileRecord, out);
  a.store_imm(BPF_W, kFp, kFileRecord + 4, -1);
  write_file(a, o, prefixes, true, seen_fd, names_fd, out);
  a.bind(out);
  a.exit_zero();
  return a.finish();
}

// *(fp + to) = *(task + from), `size` bytes, by bpf_probe_read_kernel (r7 = task, or
// `base` = a pointer read before): a direct load of a task's pointer field makes the
// verifier search the kernel's BTF for a trusted type (~1.5 ms per field on Linux 6.18).
void read_kernel(Assembler& a, int to, std::uint32_t size, std::uint8_t base, std::uint32_t from) {
  a.mov(kR1, kFp);
  a.add_imm(kR1, to);
  a.mov_imm(kR2, static_cast<std::int32_t>(size));
  a.mov(kR3, base);
  a.add_imm(kR3, static_cast<std::int32_t>(from));
  a.call(BPF_FUNC_probe_read_kernel);
}

std::optional<std::vector<bpf_insn>> tasks_program(const Offsets& o) {
  Assembler a;
  const auto out = a.label();
  enter(a, o, o.task_ctx_task, out);
  leader_pid(a, o, kTaskRecord, out);
  constexpr int kPointer = TASK_FIELD(pointer);
  constexpr int kLevel = TASK_FIELD(level);
  constexpr int kNumbers = TASK_FIELD(numbers);
  // A pointer read into the record's scratch slot, then a field through it.
  const auto through = [&](std::uint32_t pointer, int to, std::uint32_t size, std::uint32_t field) {
    a.store_imm(size == 4 ? BPF_W : BPF_DW, kFp, to, 0);
    read_kernel(a, kPointer, 8, kR7, pointer);
    a.load(BPF_DW, kR8, kFp, kPointer);
    const auto null = a.label();
    a.jump_imm(BPF_JEQ, kR8, 0, null);
    read_kernel(a, to, size, kR8, field);
    a.bind(null);
  };
  a.store_imm(BPF_W, kFp, TASK_FIELD(unused), 0);
  through(o.task_real_cred, TASK_FIELD(euid), 4, o.cred_euid);
  through(o.task_nsproxy, TASK_FIELD(mount_namespace), 8, o.nsproxy_mount);
  read_kernel(a, TASK_FIELD(command), 16, kR7, o.task_comm);
  // The pid struct last: its pointer stays in the scratch slot.
  a.store_imm(BPF_W, kFp, kLevel, 0);
  for (int i = 0; i < static_cast<int>(sizeof(TaskRecord::numbers)); i += 8) {
    a.store_imm(BPF_DW, kFp, kNumbers + i, 0);
  }
  through(o.task_thread_pid, kLevel, 4, o.pid_level);
  a.jump_imm(BPF_JEQ, kR8, 0, out);
  read_kernel(a, kNumbers, sizeof(TaskRecord::numbers), kR8, o.pid_numbers);
  a.mov(kR1, kR9);
  a.mov(kR2, kFp);
  a.add_imm(kR2, kTaskRecord);
  a.mov_imm(kR3, sizeof(TaskRecord));
  a.call(BPF_FUNC_seq_write);
  a.bind(out);
  a.exit_zero();
  return a.finish();
}

// A program assembled for the iterator "bpf_iter_<target>", not yet loaded.
struct Program {
  const char* target = "";
  std::uint32_t attach = 0;  // the BTF id of bpf_iter_<target>
  std::vector<bpf_insn> code;
};

Result<Program> assemble(const Btf& btf, const char* target,
                         std::optional<std::vector<bpf_insn>> code) {
  if (!code) return fail(Error{Error::Code::kUnsupported, "BPF program does not assemble"});
  const auto attach = btf.function(std::string("bpf_iter_") + target);
  if (!attach) {
    return fail(Error{Error::Code::kUnsupported, std::string("no BPF iterator ") + target});
  }
  return Program{target, *attach, std::move(*code)};
}

// Loads (the verifier runs) and links a program; the link's fd.
Result<UniqueFd> load_iterator(const Program& program_code) {
  const char* target = program_code.target;
  static constexpr char kLicense[] = "GPL";
  bpf_attr attr{};
  attr.prog_type = BPF_PROG_TYPE_TRACING;
  attr.expected_attach_type = BPF_TRACE_ITER;
  attr.attach_btf_id = program_code.attach;
  attr.insns = reinterpret_cast<std::uintptr_t>(program_code.code.data());
  attr.insn_cnt = static_cast<std::uint32_t>(program_code.code.size());
  attr.license = reinterpret_cast<std::uintptr_t>(kLicense);
  long program = bpf(BPF_PROG_LOAD, attr);
  if (program < 0) {
    Error failure = Error::from_errno(errno, std::string("bpf(BPF_PROG_LOAD) of ") + target);
    // Again with the verifier's log: its last line says why.
    std::string log(1 << 16, '\0');
    attr.log_level = 1;
    attr.log_buf = reinterpret_cast<std::uintptr_t>(log.data());
    attr.log_size = static_cast<std::uint32_t>(log.size());
    program = bpf(BPF_PROG_LOAD, attr);
    if (program >= 0) ::close(static_cast<int>(program));
    log.resize(::strnlen(log.data(), log.size()));
    while (!log.empty() && log.back() == '\n') log.pop_back();
    if (!log.empty()) failure.message += ": " + log.substr(log.rfind('\n') + 1);
    return fail(failure);
  }
  const UniqueFd program_fd(static_cast<int>(program));
  bpf_attr link{};
  link.link_create.prog_fd = static_cast<std::uint32_t>(program_fd.get());
  link.link_create.attach_type = BPF_TRACE_ITER;
  const long link_fd = bpf(BPF_LINK_CREATE, link);
  if (link_fd < 0) return fail(Error::from_errno(errno, "bpf(BPF_LINK_CREATE)"));
  return UniqueFd(static_cast<int>(link_fd));
}

struct Stream {
  std::unique_ptr<char[]> data;
  std::size_t size = 0;
};

// Everything one run of an iterator writes.
Result<Stream> drain(int link_fd) {
  bpf_attr attr{};
  attr.iter_create.link_fd = static_cast<std::uint32_t>(link_fd);
  const long fd = bpf(BPF_ITER_CREATE, attr);
  if (fd < 0) return fail(Error::from_errno(errno, "bpf(BPF_ITER_CREATE)"));
  const UniqueFd iterator(static_cast<int>(fd));
  Stream stream;
  std::size_t capacity = std::size_t{1} << 18;
  stream.data = std::make_unique_for_overwrite<char[]>(capacity);
  for (;;) {
    if (capacity - stream.size < 65536) {
      auto bigger = std::make_unique_for_overwrite<char[]>(capacity * 2);
      std::memcpy(bigger.get(), stream.data.get(), stream.size);
      stream.data = std::move(bigger);
      capacity *= 2;
    }
    const ssize_t got =
        ::read(iterator.get(), stream.data.get() + stream.size, capacity - stream.size);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return fail(Error::from_errno(errno, "read of a BPF task iterator"));
    if (got == 0) break;
    stream.size += static_cast<std::size_t>(got);
  }
  return stream;
}

std::uint64_t user_device(std::uint32_t kernel) { return makedev(kernel >> 20, kernel & 0xfffff); }

// The records of a files or mappings stream; each name points into the stream.
Result<std::vector<KernelFile>> parse_files(const Stream& stream,
                                            const std::unordered_map<std::uint32_t, int>& local) {
  std::vector<KernelFile> out;
  const char* data = stream.data.get();
  std::size_t at = 0;
  while (at + sizeof(FileRecord) <= stream.size) {
    FileRecord record;
    std::memcpy(&record, data + at, sizeof record);
    at += sizeof record;
    if (record.name_length == 0 || record.name_length > stream.size - at) break;
    const auto pid = local.find(record.pid);
    if (pid == local.end()) {  // a process started after the task walk
      at += record.name_length;
      continue;
    }
    KernelFile& file = out.emplace_back();
    file.pid = pid->second;
    file.fd = record.fd;
    file.device = user_device(record.device);
    file.inode = record.inode;
    file.start = record.start;
    file.end = record.end;
    file.size = record.size;
    file.name = std::string_view(data + at, record.name_length - 1);  // without the NUL
    at += record.name_length;
  }
  if (at != stream.size) return fail(Error::parse("BPF task iterator: a record cut short"));
  return out;
}

// The tasks, with pids as the reader's namespace numbers them: that of the shallowest
// task (the iterator visits the reader's namespace and those below it). `local`: the
// initial namespace's pid of each -> the reader's.
Result<std::vector<KernelTask>> parse_tasks(const Stream& stream, const Offsets& o,
                                            std::unordered_map<std::uint32_t, int>& local) {
  std::vector<TaskRecord> records(stream.size / sizeof(TaskRecord));
  if (records.size() * sizeof(TaskRecord) != stream.size) {
    return fail(Error::parse("BPF task iterator: a record cut short"));
  }
  std::memcpy(records.data(), stream.data.get(), stream.size);
  const auto levels = static_cast<std::uint32_t>(
      o.upid_size == 0 ? 0 : (sizeof(TaskRecord::numbers) - o.upid_nr - 4) / o.upid_size + 1);
  std::uint32_t reader = UINT32_MAX;
  for (const TaskRecord& record : records) reader = std::min(reader, record.level);
  if (reader >= levels) {
    return fail(Error{Error::Code::kUnsupported, "pid namespace too deep for the task iterators"});
  }
  std::vector<KernelTask> out;
  out.reserve(records.size());
  const char* data = stream.data.get();
  for (std::size_t i = 0; i < records.size(); ++i) {
    const TaskRecord& record = records[i];
    std::int32_t pid = 0;
    std::memcpy(&pid, record.numbers + reader * o.upid_size + o.upid_nr, sizeof pid);
    KernelTask& task = out.emplace_back();
    task.pid = pid;
    task.euid = record.euid;
    task.mount_namespace = record.mount_namespace;
    const char* command = data + i * sizeof(TaskRecord) + offsetof(TaskRecord, command);
    task.command = std::string_view(command, ::strnlen(command, sizeof record.command));
    local.emplace(record.pid, task.pid);
  }
  return out;
}

}  // namespace

struct TaskIterators::State {
  Offsets offsets;
  Program tasks, files, mappings;
  UniqueFd file_seen, mapping_seen, file_names, mapping_names;
};

TaskIterators::TaskIterators(std::unique_ptr<State> state) : state_(std::move(state)) {}
TaskIterators::TaskIterators(TaskIterators&&) noexcept = default;
TaskIterators& TaskIterators::operator=(TaskIterators&&) noexcept = default;
TaskIterators::~TaskIterators() = default;

Result<TaskIterators> TaskIterators::load(const std::vector<std::string>& prefixes) {
  auto state = std::make_unique<State>();
  // The maps first: a caller without CAP_BPF (or a seccomp profile without bpf) is told
  // so before the BTF is read.
  // One verdict per (mount, dentry, inode) a run meets; past the limit a file is named
  // again (the map's buckets are allocated up front: 32k of them cost 0.5 MB, 0.3 ms).
  // Per program: a file's verdict may differ between them (a mapping's mount is tested).
  for (UniqueFd* seen : {&state->file_seen, &state->mapping_seen}) {
    auto map = create_map(BPF_MAP_TYPE_HASH, kKeySize, 4, 1 << 15, BPF_F_NO_PREALLOC);
    if (!map) return fail(map.error());
    *seen = std::move(*map);
  }
  // A name buffer per program and CPU: the two programs may run on one CPU by turns.
  for (UniqueFd* names : {&state->file_names, &state->mapping_names}) {
    auto map = create_map(BPF_MAP_TYPE_PERCPU_ARRAY, 4, kNameBuffer, 1, 0);
    if (!map) return fail(map.error());
    *names = std::move(*map);
  }
  auto btf = Btf::vmlinux();
  if (!btf) return fail(btf.error());
  btf->prepare(kStructs, kIterators);
  auto offsets = read_offsets(*btf);
  if (!offsets) return fail(offsets.error());
  state->offsets = *offsets;
  auto tasks = assemble(*btf, "task", tasks_program(*offsets));
  if (!tasks) return fail(tasks.error());
  auto files =
      assemble(*btf, "task_file",
               files_program(*offsets, prefixes, state->file_seen.get(), state->file_names.get()));
  if (!files) return fail(files.error());
  auto mappings = assemble(
      *btf, "task_vma",
      mappings_program(*offsets, prefixes, state->mapping_seen.get(), state->mapping_names.get()));
  if (!mappings) return fail(mappings.error());
  state->tasks = std::move(*tasks);
  state->files = std::move(*files);
  state->mappings = std::move(*mappings);
  return TaskIterators(std::move(state));
}

Result<KernelFiles> TaskIterators::run(bool files, bool mappings,
                                       const std::function<void()>& alongside) {
  const auto load_and_drain = [](const Program& program) -> Result<Stream> {
    auto link = load_iterator(program);
    if (!link) return fail(link.error());
    return drain(link->get());
  };
  // The mappings are the longest walk: their thread starts before anything is verified.
  std::optional<Result<Stream>> mapping_stream;
  auto helper = mappings ? try_start_thread([&] {
    mapping_stream = load_and_drain(state_->mappings);
    if (alongside) alongside();
  })
                         : std::nullopt;
  auto task_stream = load_and_drain(state_->tasks);
  std::optional<Result<Stream>> file_stream;
  if (files) file_stream = load_and_drain(state_->files);
  if (mappings && !helper) mapping_stream = load_and_drain(state_->mappings);
  if (alongside) alongside();
  if (helper) helper->join();

  if (!task_stream) return fail(task_stream.error());
  KernelFiles out;
  std::unordered_map<std::uint32_t, int> local;
  auto tasks = parse_tasks(*task_stream, state_->offsets, local);
  if (!tasks) return fail(tasks.error());
  out.tasks = std::move(*tasks);
  for (auto [stream, into] :
       {std::pair{&file_stream, &out.files}, std::pair{&mapping_stream, &out.mappings}}) {
    if (!stream->has_value()) continue;
    if (!**stream) return fail((*stream)->error());
    auto parsed = parse_files(***stream, local);
    if (!parsed) return fail(parsed.error());
    // In pid order, as the iterators visit the tasks (and as the header promises).
    const auto by_pid = [](const KernelFile& a, const KernelFile& b) { return a.pid < b.pid; };
    if (!std::is_sorted(parsed->begin(), parsed->end(), by_pid)) {
      std::stable_sort(parsed->begin(), parsed->end(), by_pid);
    }
    *into = std::move(*parsed);
  }
  out.buffers.push_back(std::move(task_stream->data));
  for (auto* stream : {&file_stream, &mapping_stream}) {
    if (stream->has_value()) out.buffers.push_back(std::move((**stream)->data));
  }
  return out;
}

}  // namespace headroom
