// headroom who PATH...: which processes hold files at or under each path
// (the question of `lsof +D` and `fuser`), including segments mapped after
// their fd was closed and files deleted while open. Exit: 0 holders found,
// 1 none, 2 usage error or /proc unreadable (like fuser).

#include "core/inuse/who.h"

#include <iostream>
#include <memory>

#include "cli/command.h"
#include "core/inuse/render.h"
#include "core/text_out.h"

namespace headroom::cli {

namespace {

struct WhoCommand {
  std::vector<std::string> paths;
};

}  // namespace

std::function<int()> setup_who(CLI::App& app, const Globals& globals) {
  auto command = std::make_shared<WhoCommand>();
  app.add_option("paths", command->paths, "files or directories (everything below is included)")
      ->required();
  app.footer(
      "Finds open fds, memory maps (also after the fd was closed), cwd, root and exe, and files "
      "deleted while in use.\nExit: 0 something holds a path, 1 nothing does, 2 error.");
  return [command, &globals]() {
    const Context context = make_context(globals);
    // The command line is read for the JSON only: the text table shows the command name.
    auto answer = who(context, command->paths, globals.json);
    if (!answer) return usage_error(answer.error().message);
    if (globals.json) {
      std::cout << json_text(who_to_json(*answer), 2) << "\n";
    } else {
      std::cout << render_who_text(*answer, stdout_style(globals),
                                   context.syscalls->effective_uid() == 0);
    }
    const bool any = answer->any();
    return any ? static_cast<int>(kExitOk) : static_cast<int>(kExitFindings);
  };
}

}  // namespace headroom::cli
