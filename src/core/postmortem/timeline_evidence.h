#pragma once
// The measured side of a post-mortem: for the verdict's cause, the resource
// and its numbers at the time of death, taken from the supervisor's timeline
// (the last samples before the job ended), not from the host as it is now.

#include <cstdint>
#include <vector>

#include "core/postmortem/postmortem.h"

namespace headroom {

/// Sets result.resource and appends result.evidence for result.cause.
void add_timeline_evidence(const PostmortemInput& input, const std::vector<OomEvent>& ooms,
                           std::uint64_t cgroup_kills, Postmortem& result);

}  // namespace headroom
