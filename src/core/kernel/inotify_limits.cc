// fs.inotify.max_user_watches and max_user_instances; see inotify_limits.h.
#include "core/kernel/inotify_limits.h"

#include "core/kernel/kernel_tasks.h"

namespace headroom {

Result<InotifyLimits> read_inotify_limits(const Context& context) {
  auto watches = read_sysctl_number(context, "sys/fs/inotify/max_user_watches");
  if (!watches) return fail(watches.error());
  auto instances = read_sysctl_number(context, "sys/fs/inotify/max_user_instances");
  if (!instances) return fail(instances.error());
  return InotifyLimits{*watches, *instances};
}

}  // namespace headroom
