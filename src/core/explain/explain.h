#pragma once
// `headroom explain` as one call: read the logs, name the cause, confirm it on this host
// and give the fix. The CLI adds flags and rendering (render.h); run's post-mortem
// shares the steps after reading (conclude(), host.h).

#include <span>
#include <string>

#include "core/context.h"
#include "core/error.h"
#include "core/explain/host.h"
#include "core/signatures/catalog.h"
#include "core/signatures/diagnosis.h"

namespace headroom {

/// A diagnosis and what the host said of it.
struct Explanation {
  Diagnosis diagnosis;
  Conclusion conclusion;  ///< host confirmation (when asked and a cause was named), remedies
};

/// Reads `inputs` (paths; "-" is `stdin_fd`, the front end's standard input) in order as
/// one log. Evidence names
/// the file only when there are several. With `confirm_on_host`, a named cause is
/// confirmed on the host of `context` (explain --no-host: not).
[[nodiscard]] Result<Explanation> explain_logs(const Context& context, const Catalog& catalog,
                                               std::span<const std::string> inputs,
                                               bool confirm_on_host, int stdin_fd);

}  // namespace headroom
