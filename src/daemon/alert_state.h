#pragma once
// The firing alerts kept on disk between runs of the daemon (--state FILE). Without
// it a restart forgets them: a condition still true is sent FIRING again with a new
// start time, and one that ended while the daemon was down is never RESOLVED, so the
// receiver shows it firing forever. Restored alerts are judged at the first samples
// like any other: still true, they go on (no new FIRING, the same start and id);
// ended, they are RESOLVED after clear_samples samples.

#include <filesystem>
#include <map>
#include <string>

#include "core/alerts/rules.h"
#include "core/error.h"

namespace headroom::daemon {

/// Writes the firing alerts to `path` atomically (a temporary file renamed over it,
/// mode 0600, never through a symlink).
[[nodiscard]] Result<void> save_alert_state(const std::filesystem::path& path,
                                            const std::map<std::string, ActiveAlert>& active);

/// Reads what save_alert_state wrote. A missing file is no alert; a file that does not
/// parse is an Error naming it (the daemon logs it and starts without).
[[nodiscard]] Result<std::map<std::string, ActiveAlert>> load_alert_state(
    const std::filesystem::path& path);

}  // namespace headroom::daemon
