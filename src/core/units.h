#pragma once
// Human units: parsing sizes and durations from the command line and config,
// and formatting bytes and seconds for people.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.h"

namespace headroom {

/// Parses "32MiB", "1.5G", "4096", "64k". Decimal (kB, MB, GB, TB) and binary
/// (KiB, MiB, GiB, TiB; K, M, G, T as docker does) suffixes; case-insensitive.
[[nodiscard]] Result<std::uint64_t> parse_size(std::string_view text);
/// Parses "5s", "10m", "1h30m", "250ms", "2d"; a bare number is seconds.
[[nodiscard]] Result<std::chrono::milliseconds> parse_duration(std::string_view text);
/// "64.0 MiB", "1.2 GiB", "512 B".
[[nodiscard]] std::string format_bytes(std::uint64_t bytes);
/// Bytes rounded up to a whole number of MiB or GiB, as docker and Kubernetes take them: "96m",
/// "2g".
[[nodiscard]] std::string format_docker_size(std::uint64_t bytes);
/// Kubernetes quantity, rounded up: "96Mi", "2Gi".
[[nodiscard]] std::string format_k8s_quantity(std::uint64_t bytes);
/// "45s", "12m", "3h 20m", "2d 4h".
[[nodiscard]] std::string format_duration(std::chrono::seconds duration);
/// A duration as a flag or config file would say it: "200ms", "30s", "10m",
/// "1h", else as format_duration ("1m 30s").
[[nodiscard]] std::string format_setting(std::chrono::milliseconds duration);
/// A percentage with one decimal: "85.3%".
[[nodiscard]] std::string format_percent(double percent);
/// A count and its noun, plural unless 1: "1 rank", "4 workers".
[[nodiscard]] std::string format_count(std::uint64_t count, std::string_view noun);
/// 1234567 -> "1,234,567".
[[nodiscard]] std::string format_count(std::uint64_t count);
/// "45s ago", "12m ago", "3h ago", "5d ago"; "in future" for clock skew; "-" for no time.
[[nodiscard]] std::string format_age(std::int64_t now_ns, std::int64_t then_ns);

constexpr std::uint64_t kKiB = 1024;
constexpr std::uint64_t kMiB = 1024 * kKiB;
constexpr std::uint64_t kGiB = 1024 * kMiB;

}  // namespace headroom
