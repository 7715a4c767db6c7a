#pragma once
// Container log envelopes: the records a runtime writes around each line of a
// job's output, undone so patterns see the job's own text.
// - docker json-file (/var/lib/docker/containers/<id>/<id>-json.log): one JSON
//   object per line, {"log":"text\n","stream":"stderr","time":"..."}; the text is
//   JSON-escaped and a line longer than 16 KiB is split into records whose "log"
//   does not end in "\n" (docker's daemon/logger/jsonfilelog).
// - CRI (containerd, CRI-O: /var/log/pods/<ns>_<pod>_<uid>/<container>/0.log):
//   "<RFC3339Nano time> <stdout|stderr> <P|F> text"; P marks a partial record that
//   the next record of the same stream continues (kubelet's pkg/kubelet/kuberuntime/logs
//   joins them).
//   https://github.com/kubernetes/design-proposals-archive/blob/main/node/kubelet-cri-logging.md

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace headroom {

/// One docker json-file record: the decoded text (with its trailing '\n', if any) and the stream.
struct DockerRecord {
  std::string log;
  std::string stream;
};

/// Parses `line` (without its '\n') as a docker json-file record; nullopt when it is not
/// valid JSON or not an object with a string "log".
[[nodiscard]] std::optional<DockerRecord> parse_docker_json(std::string_view line);

/// Whether `line` starts like a docker json-file record.
[[nodiscard]] bool looks_like_docker_json(std::string_view line);

/// Where the text of a CRI record starts and whether it is partial; nullopt when
/// `line` is not "<time> <stdout|stderr> <P|F> ".
struct CriRecord {
  std::size_t text_at = 0;
  bool partial = false;
  bool stderr_stream = false;
};
[[nodiscard]] std::optional<CriRecord> parse_cri_prefix(std::string_view line);

/// Streams a log through, undoing a docker json-file or CRI envelope. The format is
/// decided once per source from its first non-empty line; any other log passes through
/// untouched (no copy). Decoded output keeps the line count of the input: a record that
/// a later one continues becomes an empty line and the joined line stands where the
/// last piece was, so line numbers still point into the file the user has.
class EnvelopeDecoder {
 public:
  /// Receives decoded bytes; a view is valid only during the call.
  using Sink = std::function<void(std::string_view)>;
  /// Passes the decoded form of the next bytes (any chunking) to `sink`: `bytes` itself
  /// for a log without an envelope.
  void decode(std::string_view bytes, const Sink& sink);
  /// Passes the decoded rest at the end of a source (an unterminated last line, pending
  /// partials) to `sink`; the decoder is then ready for the next source.
  void finish(const Sink& sink);
  /// Whether the current source was found to have no envelope: decode() passes its bytes on
  /// as they are.
  [[nodiscard]] bool passes_through() const { return format_ == Format::kPlain; }

 private:
  enum class Format { kUndecided, kPlain, kDocker, kCri };

  /// Decodes the whole lines of `bytes` into out_ (handing it on as it grows) and keeps the
  /// unterminated rest.
  void decode_lines(std::string_view bytes, const Sink& sink);
  void flush(const Sink& sink);
  void decode_line(std::string_view line);
  void decide(std::string_view line);
  /// Decides from the start of a source once it holds a whole non-empty line (or enough bytes).
  void decide_from(std::string_view head);
  void continue_stream(std::size_t stream, std::string_view text, std::string_view head);
  void complete_stream(std::size_t stream, std::string_view text, std::string_view head);

  /// A partial line waiting for the record that completes it.
  struct Pending {
    std::string head;  ///< the first record's envelope prefix (CRI) to keep before the text
    std::string text;
    bool open = false;
  };

  Format format_ = Format::kUndecided;
  std::string carry_;  ///< an unterminated line, or the undecided (short) head of a source
  std::string out_;
  std::array<Pending, 2> pending_;  ///< by stream: 0 stdout, 1 stderr
};

}  // namespace headroom
