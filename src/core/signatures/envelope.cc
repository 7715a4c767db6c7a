#include "core/signatures/envelope.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

namespace headroom {

namespace {

/// Bytes of a source looked at to recognise its format.
constexpr std::size_t kDecideBytes = 4096;
/// Bytes of one record, or of partials joined into one line, that are kept (the
/// analyzer looks at 64 KiB around a hit; runtimes split at 16 KiB).
constexpr std::size_t kMaxRecord = 1024 * 1024;
/// Decoded bytes handed on at a time, so the copy stays small whatever the chunk size.
constexpr std::size_t kFlushBytes = 4 * 1024 * 1024;

constexpr std::string_view kDockerStart = R"({"log":")";

bool is_digit(char c) { return c >= '0' && c <= '9'; }

void append_bounded(std::string& to, std::string_view bytes) {
  const std::size_t room = kMaxRecord - std::min(kMaxRecord, to.size());
  to.append(bytes.substr(0, room));
}

/// `text` without a trailing '\n', other newlines turned into spaces so one record stays one line.
std::string_view one_line(std::string& text) {
  if (!text.empty() && text.back() == '\n') text.pop_back();
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

}  // namespace

bool looks_like_docker_json(std::string_view line) {
  return line.substr(0, kDockerStart.size()) == kDockerStart;
}

std::optional<DockerRecord> parse_docker_json(std::string_view line) {
  if (line.empty() || line.front() != '{') return std::nullopt;  // cheap exit for ordinary lines
  const nlohmann::json doc =
      nlohmann::json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return std::nullopt;  // also a discarded (invalid) document
  const auto log = doc.find("log");
  if (log == doc.end() || !log->is_string()) return std::nullopt;
  DockerRecord record;
  record.log = log->get<std::string>();
  const auto stream = doc.find("stream");
  if (stream != doc.end() && stream->is_string()) record.stream = stream->get<std::string>();
  return record;
}

std::optional<CriRecord> parse_cri_prefix(std::string_view line) {
  // "2024-05-01T12:00:00.123456789Z stderr F text": the time is RFC3339Nano.
  if (line.size() < 20 || !is_digit(line[0]) || !is_digit(line[3]) || line[4] != '-' ||
      line[7] != '-' || line[10] != 'T') {
    return std::nullopt;
  }
  const std::size_t space = line.find(' ', 11);
  if (space == std::string_view::npos || space > 40) return std::nullopt;
  std::string_view rest = line.substr(space + 1);
  CriRecord record;
  if (rest.substr(0, 7) == "stderr ") {
    record.stderr_stream = true;
  } else if (rest.substr(0, 7) != "stdout ") {
    return std::nullopt;
  }
  rest.remove_prefix(7);
  // The tags: "P" or "F", possibly followed by more ':'-separated tags in later runtimes.
  if (rest.empty() || (rest[0] != 'P' && rest[0] != 'F')) return std::nullopt;
  record.partial = rest[0] == 'P';
  const std::size_t tags_end = std::min(rest.find(' '), rest.size());
  if (tags_end > 1 && rest[1] != ':') return std::nullopt;
  record.text_at = line.size() - rest.size() + std::min(tags_end + 1, rest.size());
  return record;
}

void EnvelopeDecoder::decode(std::string_view bytes, const Sink& sink) {
  if (format_ == Format::kPlain) {
    sink(bytes);
    return;
  }
  if (format_ == Format::kUndecided) {
    // Only a short head is ever copied: the chunk itself is passed on or decoded in place.
    if (carry_.empty()) {
      decide_from(bytes);
    } else {
      std::string head = carry_;
      head.append(bytes.substr(0, kDecideBytes));
      decide_from(head);
    }
    if (format_ == Format::kUndecided) {
      carry_.append(bytes);  // shorter than kDecideBytes, or it would have decided
      return;
    }
    std::string held;
    held.swap(carry_);
    if (format_ == Format::kPlain) {
      if (!held.empty()) sink(held);
      sink(bytes);
      return;
    }
    decode_lines(held, sink);
  }
  decode_lines(bytes, sink);
  flush(sink);
}

void EnvelopeDecoder::flush(const Sink& sink) {
  if (out_.empty()) return;
  sink(out_);
  out_.clear();
}

void EnvelopeDecoder::decide_from(std::string_view head) {
  // The first line with something on it decides; a head of blank lines only is plain.
  std::size_t start = 0;
  while (start < head.size()) {
    const std::size_t end = head.find('\n', start);
    const std::string_view line =
        head.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (line.find_first_not_of(" \t\r") != std::string_view::npos) {
      if (end != std::string_view::npos || head.size() >= kDecideBytes) decide(line);
      return;  // else wait for the whole line
    }
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  if (head.size() >= kDecideBytes) format_ = Format::kPlain;
}

void EnvelopeDecoder::finish(const Sink& sink) {
  out_.clear();
  if (format_ ==
      Format::kUndecided) {  // a short source: its first non-empty line, even unterminated
    const std::size_t first = carry_.find_first_not_of(" \t\r\n");
    const std::size_t line = first == std::string::npos
                                 ? carry_.size()
                                 : carry_.rfind('\n', first) + 1;  // npos + 1 == 0
    decide(std::string_view(carry_).substr(line));
  }
  if (format_ == Format::kPlain) {
    out_.swap(carry_);
  } else if (!carry_.empty()) {
    decode_line(carry_);
  }
  for (Pending& pending : pending_) {
    // The log ended inside a split line: what arrived of it is still worth reading.
    if (!pending.open) continue;
    out_ += pending.head;
    out_ += pending.text;
    out_.push_back('\n');
  }
  format_ = Format::kUndecided;
  carry_.clear();
  pending_ = {};
  flush(sink);
}

void EnvelopeDecoder::decide(std::string_view line) {
  if (looks_like_docker_json(line)) {
    format_ = Format::kDocker;
  } else if (parse_cri_prefix(line)) {
    format_ = Format::kCri;
  } else {
    format_ = Format::kPlain;
  }
}

void EnvelopeDecoder::decode_lines(std::string_view bytes, const Sink& sink) {
  std::size_t start = 0;
  if (!carry_.empty()) {
    const void* nl = std::memchr(bytes.data(), '\n', bytes.size());
    if (nl == nullptr) {
      append_bounded(carry_, bytes);
      return;
    }
    const auto length = static_cast<std::size_t>(static_cast<const char*>(nl) - bytes.data());
    append_bounded(carry_, bytes.substr(0, length));
    decode_line(carry_);
    carry_.clear();
    start = length + 1;
  }
  while (start < bytes.size()) {
    const void* nl = std::memchr(bytes.data() + start, '\n', bytes.size() - start);
    if (nl == nullptr) break;
    const auto end = static_cast<std::size_t>(static_cast<const char*>(nl) - bytes.data());
    decode_line(bytes.substr(start, std::min(end - start, kMaxRecord)));
    if (out_.size() >= kFlushBytes) flush(sink);
    start = end + 1;
  }
  if (start < bytes.size()) append_bounded(carry_, bytes.substr(start));
}

void EnvelopeDecoder::decode_line(std::string_view line) {
  if (format_ == Format::kDocker) {
    std::optional<DockerRecord> record = parse_docker_json(line);
    if (!record) {
      out_.append(line);  // not a record (or cut short): left as it is
      out_.push_back('\n');
      return;
    }
    const std::size_t stream = record->stream == "stdout" ? 0 : 1;
    const bool partial = record->log.empty() || record->log.back() != '\n';
    const std::string_view text = one_line(record->log);
    if (partial) {
      continue_stream(stream, text, {});
    } else {
      complete_stream(stream, text, {});
    }
    return;
  }
  const std::optional<CriRecord> record = parse_cri_prefix(line);
  if (!record) {
    out_.append(line);
    out_.push_back('\n');
    return;
  }
  const std::size_t stream = record->stderr_stream ? 1 : 0;
  const std::string_view head = line.substr(0, record->text_at);
  const std::string_view text = line.substr(record->text_at);
  if (record->partial) {
    continue_stream(stream, text, head);
  } else {
    complete_stream(stream, text, head);
  }
}

void EnvelopeDecoder::continue_stream(std::size_t stream, std::string_view text,
                                      std::string_view head) {
  Pending& pending = pending_[stream];
  if (!pending.open) {
    pending.open = true;
    pending.head.assign(head);
    const std::size_t tag = pending.head.rfind(" P");
    if (tag != std::string::npos) pending.head[tag + 1] = 'F';  // the joined line is a full one
    pending.text.clear();
  }
  append_bounded(pending.text, text);
  out_.push_back('\n');  // the record's line stays, empty: later line numbers still match the file
}

void EnvelopeDecoder::complete_stream(std::size_t stream, std::string_view text,
                                      std::string_view head) {
  Pending& pending = pending_[stream];
  if (pending.open) {
    out_ += pending.head;
    out_ += pending.text;
    pending.open = false;
  } else {
    out_ += head;
  }
  out_ += text;
  out_.push_back('\n');
}

}  // namespace headroom
