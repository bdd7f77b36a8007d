// `workbook bench STAGE`: a stage's benchmark, run as its own executable so that the
// runner never links a solution. Stage 2's compares a decode step with a KV cache against
// recomputing the whole sequence without one (runner/bench/stage02_bench_main.cc).
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "build_config.h"
#include "command.h"

namespace wb::cli {
namespace {

// Runs the benchmark with this process's stdout and stderr, so its rows appear as they are
// measured; returns its exit status.
int RunBenchmark(const std::string& executable, const std::vector<std::string>& arguments) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(executable.c_str()));
  for (const auto& a : arguments) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return ReportError(fmt::format("cannot start {}: {}", executable, std::strerror(errno)));
  if (pid == 0) {
    execv(executable.c_str(), argv.data());
    std::fprintf(stderr, "workbook: cannot run %s: %s\n", executable.c_str(), std::strerror(errno));
    _exit(kExitBadUsage);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return ReportError(fmt::format("{} ended with signal {}", executable, WTERMSIG(status)));
}

}  // namespace

Command AddBenchCommand(CLI::App& app) {
  struct Options {
    int stage = 0;
    std::string contexts;
    double budget = 0;
  };
  auto o = std::make_shared<Options>();
  CLI::App* c = app.add_subcommand("bench", "Time a stage's solution against the stage before it");
  c->add_option("stage", o->stage, "Stage number (2)")->required();
  c->add_option("--contexts", o->contexts, "Context lengths, comma-separated (default 512,4096)");
  c->add_option("--budget", o->budget, "Seconds each measurement may repeat for (default 6)")
      ->check(CLI::PositiveNumber);
  return {c, [o]() {
            if (o->stage != 2) return ReportError(fmt::format("stage {} has no benchmark; `bench 2` is the one there is", o->stage));
            std::vector<std::string> arguments;
            if (!o->contexts.empty()) arguments.insert(arguments.end(), {"--contexts", o->contexts});
            if (o->budget > 0) arguments.insert(arguments.end(), {"--budget", fmt::format("{}", o->budget)});
            return RunBenchmark(WB_BENCH_STAGE02, arguments);
          }};
}

}  // namespace wb::cli
