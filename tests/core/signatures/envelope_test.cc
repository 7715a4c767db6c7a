#include "core/signatures/envelope.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "core/signatures/analyze.h"

namespace headroom {
namespace {

/// Everything the decoder makes of `log` fed in chunks of `chunk` bytes.
std::string decode_all(std::string_view log, std::size_t chunk) {
  EnvelopeDecoder decoder;
  std::string out;
  const EnvelopeDecoder::Sink sink = [&](std::string_view bytes) { out += bytes; };
  for (std::size_t at = 0; at < log.size(); at += chunk)
    decoder.decode(log.substr(at, chunk), sink);
  decoder.finish(sink);
  return out;
}

/// The same for every chunk size from 1 byte to the whole log (a chunk may split a line anywhere).
std::string decode_any_chunking(std::string_view log) {
  const std::string whole = decode_all(log, log.size() + 1);
  for (std::size_t chunk : {std::size_t{1}, std::size_t{2}, std::size_t{7}, std::size_t{64}}) {
    EXPECT_EQ(decode_all(log, chunk), whole) << "chunk " << chunk;
  }
  return whole;
}

std::size_t lines(std::string_view text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

/// What one call passed to its sink: the text, and where the first piece lay.
struct Passed {
  std::string text;
  const char* first = nullptr;
};

Passed decode_once(EnvelopeDecoder& decoder, std::string_view bytes) {
  Passed passed;
  decoder.decode(bytes, [&](std::string_view piece) {
    if (passed.first == nullptr) passed.first = piece.data();
    passed.text += piece;
  });
  return passed;
}

std::string finish_once(EnvelopeDecoder& decoder) {
  std::string text;
  decoder.finish([&](std::string_view piece) { text += piece; });
  return text;
}

TEST(EnvelopeDecoder, PassesAPlainLogThroughWithoutCopying) {
  const std::string log(10000, 'x');
  const std::string plain = "2024-05-01 10:00:00 step 1 loss 0.5\n" + log + "\n";
  EnvelopeDecoder decoder;
  EXPECT_EQ(decode_once(decoder, plain).first, plain.data());  // decided from the first line
  EXPECT_EQ(decode_once(decoder, plain).first, plain.data());
  EXPECT_EQ(finish_once(decoder), "");
  // A head that arrives in pieces (explain reads 2 bytes first, for the gzip magic) is
  // held until its first line is whole; the chunk that completes it is not copied.
  EXPECT_EQ(decode_once(decoder, "20").text, "");
  const Passed rest = decode_once(decoder, plain.substr(2));
  EXPECT_EQ(rest.text, plain);
  EXPECT_EQ(decode_once(decoder, plain).first, plain.data());
  EXPECT_EQ(finish_once(decoder), "");
}

TEST(EnvelopeDecoder, DecodesDockerJsonFileRecords) {
  const std::string log =
      R"({"log":"\u001b[31mTraceback (most recent call last):\u001b[0m\n","stream":"stderr","time":"2024-06-20T04:12:40.003114291Z"})"
      "\n"
      R"({"log":"  File \"/app/train.py\", line 12, in \u003cmodule\u003e\n","stream":"stderr","time":"2024-06-20T04:12:40.0031Z"})"
      "\n"
      R"({"log":"OSError: [Errno 28] No space left on device: 'C:\\ckpt\\a.pt'\tx\n","stream":"stderr","time":"2024-06-20T04:12:40.0032Z"})"
      "\n";
  EXPECT_EQ(decode_any_chunking(log),
            "\x1b[31mTraceback (most recent call last):\x1b[0m\n"
            "  File \"/app/train.py\", line 12, in <module>\n"
            "OSError: [Errno 28] No space left on device: 'C:\\ckpt\\a.pt'\tx\n");
}

TEST(EnvelopeDecoder, JoinsDockerPartialRecordsAndKeepsTheLineCount) {
  // dockerd splits a line at 16 KiB: the pieces' "log" has no trailing "\n".
  const std::string log =
      R"({"log":"RuntimeError: DataLoader worker (pid 4) is kil","stream":"stderr","time":"t1"})"
      "\n"
      R"({"log":"step 7\n","stream":"stdout","time":"t2"})"
      "\n"
      R"({"log":"led by signal: Killed. \n","stream":"stderr","time":"t3"})"
      "\n"
      "not json at all\n"
      R"({"log":"cut short)"
      "\n";
  const std::string out = decode_any_chunking(log);
  EXPECT_EQ(out,
            "\nstep 7\nRuntimeError: DataLoader worker (pid 4) is killed by signal: Killed. \n"
            "not json at all\n{\"log\":\"cut short\n");
  EXPECT_EQ(lines(out), lines(log));
}

TEST(EnvelopeDecoder, JoinsCriPartialRecordsOfTheSameStream) {
  const std::string log =
      "2024-05-01T12:00:00.000000001Z stdout F epoch 1\n"
      "2024-05-01T12:00:01.000000001Z stderr P AAAA\n"
      "2024-05-01T12:00:01.000000002Z stdout F step 2\n"
      "2024-05-01T12:00:01.000000003Z stderr P BBBB\n"
      "2024-05-01T12:00:01.000000004Z stderr F CCCC\n"
      "2024-05-01T12:00:02.000000001Z stderr F \n";
  const std::string out = decode_any_chunking(log);
  EXPECT_EQ(out,
            "2024-05-01T12:00:00.000000001Z stdout F epoch 1\n"
            "\n"
            "2024-05-01T12:00:01.000000002Z stdout F step 2\n"
            "\n"
            "2024-05-01T12:00:01.000000001Z stderr F AAAABBBBCCCC\n"
            "2024-05-01T12:00:02.000000001Z stderr F \n");
  EXPECT_EQ(lines(out), lines(log));
}

TEST(EnvelopeDecoder, KeepsWhatArrivedOfALineTheLogEndsIn) {
  EXPECT_EQ(decode_any_chunking(
                "2024-05-01T12:00:01Z stderr P MemoryE\n2024-05-01T12:00:01Z stderr P rror"),
            "\n\n2024-05-01T12:00:01Z stderr F MemoryError\n");
  EXPECT_EQ(decode_any_chunking("plain, no newline"), "plain, no newline");
  EXPECT_EQ(decode_any_chunking(""), "");
}

TEST(EnvelopeDecoder, DecidesPerSource) {
  EnvelopeDecoder decoder;
  EXPECT_EQ(decode_once(decoder, "{\"log\":\"a\\\"b\\n\",\"stream\":\"stdout\"}\n").text, "a\"b\n");
  EXPECT_EQ(finish_once(decoder), "");
  const std::string plain =
      "{\"log\":\"x\\n\"}\n";  // a plain log that happens to hold such a line later
  EXPECT_EQ(decode_once(decoder, "plain first\n" + plain).text, "plain first\n" + plain);
}

TEST(ParseCriPrefix, AcceptsOnlyTheCriLayout) {
  const auto full = parse_cri_prefix("2024-05-01T12:00:00.123456789Z stderr F MemoryError");
  ASSERT_TRUE(full);
  EXPECT_EQ(full->text_at, 40U);
  EXPECT_FALSE(full->partial);
  EXPECT_TRUE(full->stderr_stream);
  const auto tagged = parse_cri_prefix("2024-05-01T12:00:00+02:00 stdout P:x abc");
  ASSERT_TRUE(tagged);
  EXPECT_TRUE(tagged->partial);
  EXPECT_EQ(std::string_view("2024-05-01T12:00:00+02:00 stdout P:x abc").substr(tagged->text_at),
            "abc");
  EXPECT_FALSE(parse_cri_prefix("2024-05-01T12:00:00Z stderr Foo"));
  EXPECT_FALSE(parse_cri_prefix("2024-05-01 12:00:00 stderr F x"));
  EXPECT_FALSE(parse_cri_prefix("2024-05-01T12:00:00Z INFO F x"));
}

TEST(ParseDockerJson, NeedsAnObjectWithAStringLog) {
  EXPECT_FALSE(parse_docker_json(R"({"log":"unterminated)"));
  EXPECT_FALSE(parse_docker_json(R"({"log":12})"));
  EXPECT_FALSE(parse_docker_json(R"(["log"])"));
  const auto record = parse_docker_json("{\"log\":\"x\\n\",\"stream\":\"stderr\"}\r");
  ASSERT_TRUE(record);
  EXPECT_EQ(record->log, "x\n");
  EXPECT_EQ(record->stream, "stderr");
}

std::string read_log(const std::string& name) {
  std::ifstream in(std::string(HEADROOM_TEST_DATA) + "/logs/" + name, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The 1-based number of the first line of `log` that contains `needle`.
std::uint64_t line_of(std::string_view log, std::string_view needle) {
  const std::size_t at = log.find(needle);
  EXPECT_NE(at, std::string_view::npos) << needle;
  return at == std::string_view::npos ? 0 : 1 + lines(log.substr(0, at));
}

/// The evidence of `signature` in `diagnosis` (the first line), or an empty one.
EvidenceLine evidence_of(const Diagnosis& diagnosis, std::string_view signature) {
  for (const EvidenceLine& line : diagnosis.evidence) {
    if (line.signature == signature) return line;
  }
  ADD_FAILURE() << "no evidence of " << signature;
  return {};
}

TEST(EnvelopeGoldenLogs, DockerJsonFileTracebackReadsLikeThePlainLog) {
  const std::string log =
      read_log("host_oom/docker_json_file_dataloader_oom_chained_traceback.log");
  const std::string plain = decode_any_chunking(log);
  EXPECT_EQ(lines(plain), lines(log));
  EXPECT_NE(plain.find("Traceback (most recent call last):\n"
                       "  File \"/workspace/run_clm.py\", line 641, in <module>\n"
                       "    main()\n"),
            std::string::npos);
  EXPECT_NE(plain.find("    raise RuntimeError(f'DataLoader worker (pid(s) {pids_str}) exited "
                       "unexpectedly') from e\n"
                       "RuntimeError: DataLoader worker (pid(s) 214) exited unexpectedly\n"),
            std::string::npos);
  const Diagnosis diagnosis = testing::analyze_text(log, 4096);
  const EvidenceLine killed = evidence_of(diagnosis, "torch.dataloader.killed_sigkill");
  EXPECT_EQ(killed.line, line_of(log, "is killed by signal: Killed"));
  EXPECT_EQ(killed.text, "RuntimeError: DataLoader worker (pid 214) is killed by signal: Killed. ");
  EXPECT_EQ(testing::verdict_cause(diagnosis), "host_oom");
}

TEST(EnvelopeGoldenLogs, DockerJsonFileBusErrorIsReadThroughTheEscapes) {
  // "Bus error" ends its line only once "\n" is decoded, and "<Signals.SIGBUS: 7>" is
  // written as "\u003cSignals.SIGBUS: 7\u003e": without decoding neither matches.
  const std::string log = read_log("shm_too_small/docker_json_file_share_memory_bus_error.log");
  const Diagnosis diagnosis = testing::analyze_text(log);
  EXPECT_EQ(evidence_of(diagnosis, "report.shell").line,
            line_of(log, "Fatal Python error: Bus error"));
  const EvidenceLine launcher = evidence_of(diagnosis, "report.signal_named");
  EXPECT_EQ(launcher.line, line_of(log, "died with"));
  EXPECT_NE(launcher.text.find("died with <Signals.SIGBUS: 7>."), std::string::npos)
      << launcher.text;
  EXPECT_EQ(testing::verdict_cause(diagnosis), "shm_too_small");
}

TEST(EnvelopeGoldenLogs, CriPartialRecordsAreJoinedWhereTheMessageStraddlesTheSplit) {
  const std::string log = read_log("host_oom/k8s_cri_partial_records_json_logger.log");
  ASSERT_EQ(log.find("DataLoader worker (pid 311) is killed"),
            std::string::npos);  // split across records
  for (std::size_t chunk : {std::size_t{0}, std::size_t{1000}}) {
    const Diagnosis diagnosis = testing::analyze_text(log, chunk);
    const EvidenceLine killed = evidence_of(diagnosis, "torch.dataloader.killed_sigkill");
    EXPECT_EQ(killed.line, 6U);  // the F record that completes the line
    EXPECT_EQ(diagnosis.lines, 7U);
    EXPECT_EQ(testing::verdict_cause(diagnosis), "host_oom");
  }
}

TEST(EnvelopeGoldenLogs, KubectlTimestampsAndJournaldPrefixesAreDropped) {
  const std::string kubectl = read_log("disk_full/kubectl_timestamps_checkpoint_save.log");
  const EvidenceLine writer =
      evidence_of(testing::analyze_text(kubectl), "torch.save.stream_writer");
  EXPECT_EQ(writer.line, 8U);
  EXPECT_EQ(writer.text.rfind("RuntimeError: [enforce fail at inline_container.cc:471]", 0), 0U)
      << writer.text;
  const std::string journal = read_log("host_oom/journalctl_short_iso_worker_oom.log");
  const Diagnosis diagnosis = testing::analyze_text(journal);
  EXPECT_EQ(evidence_of(diagnosis, "torch.dataloader.killed_sigkill").text,
            "RuntimeError: DataLoader worker (pid 1250) is killed by signal: Killed.");
  EXPECT_EQ(evidence_of(diagnosis, "kernel.oom.killed_process")
                .text.rfind("Out of memory: Killed process 1250", 0),
            0U);
}

}  // namespace
}  // namespace headroom
