// `workbook grade STAGE SUBMISSIONS_DIR --cases HIDDEN.json [--jobs N] [--output DIR]`:
// grades every submission in a folder, a folder per student, into a gradebook.
//
// Contract: each entry of SUBMISSIONS_DIR that is a folder (not a link, not hidden) is one
// student, named by it. The stage's files are found in it as the autograder finds them (a
// stages/ tree, their NN-name/ folder, bare, or else the shallowest folder that holds the
// stage file), copied with the runner's own checks (regular files of their own only) into a
// private tree, and graded by a runner of their own (`workbook check`, a process per student,
// at most N at once), so nothing one submission does (crash, hang, fork, kill what it can)
// reaches another's grade or this command. A runner past --submission-time-limit is killed
// with everything it started. DIR (default ./grades) gets NAME.json (the runner's JSON report)
// and NAME.log (what it printed) per student, and gradebook.csv: student, score, max, status,
// first_failure, and each case's points, written whole at the end. Exit 0 when every
// submission was graded (pass or fail), 1 when some could not be (refused, stopped), 2 or 3
// as any command.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "command.h"
#include "runner/build/student_build.h"
#include "runner/cases/case_file.h"
#include "runner/engine/check.h"
#include "runner/isolation/child_handle.h"
#include "runner/isolation/child_process.h"
#include "runner/isolation/run_folder.h"
#include "runner/stages/stage_table.h"

namespace wb::cli {
namespace {

namespace fsys = std::filesystem;
using nlohmann::json;

struct GradeOptions {
  int stage = 0;
  std::string submissions;
  std::string cases;
  int jobs = 1;
  std::string output = "grades";
  double submissionSeconds = 1800;
  double caseSeconds = 0;  // check's --time-limit; 0: check's default
};

// One student's grading: found, copied, run, read back.
struct Submission {
  std::string name;
  std::string folder;            // SUBMISSIONS_DIR/NAME
  std::string status;            // pass, fail, compile_error, refused, not_graded
  std::string note;              // why it was refused or not graded
  json report;                   // the runner's JSON report, when it wrote one
  std::unique_ptr<ChildHandle> runner;
  std::chrono::steady_clock::time_point started;
};

// The folder of a submission that holds the stage file, searched as run_autograder does;
// links are never followed.
std::optional<std::string> FindStageFolder(const std::string& submission, const StageInfo& stage) {
  for (const std::string& candidate :
       {submission + "/stages/" + stage.dir, submission + "/" + stage.dir, submission}) {
    std::error_code ec;
    if (fsys::exists(fsys::symlink_status(candidate + "/" + stage.file, ec))) return candidate;
  }
  std::optional<std::pair<int, std::string>> best;
  std::error_code ec;
  for (auto it = fsys::recursive_directory_iterator(submission, fsys::directory_options::skip_permission_denied, ec);
       it != fsys::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (it->path().filename() != stage.file) continue;
    const std::pair<int, std::string> found{it.depth(), it->path().parent_path().string()};
    if (!best || found < *best) best = found;
  }
  if (!best) return std::nullopt;
  return best->second;
}

// A CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break, quotes
// doubled; one that a spreadsheet would run as a formula (=, +, -, @) starts with a quote
// mark, as OWASP's advice on CSV injection has it. Folder names are the students' own.
std::string CsvField(const std::string& text) {
  std::string field = text;
  if (!field.empty() && std::string("=+-@").find(field.front()) != std::string::npos) field.insert(0, "'");
  if (field.find_first_of(",\"\r\n") == std::string::npos) return field;
  std::string quoted = "\"";
  for (const char c : field) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string Number(double value) { return fmt::format("{:g}", value); }

// Starts `self check ...` for a submission whose files are in `tree`, its output into the
// student's log, in a process group of its own.
Expected<pid_t> StartRunner(const std::string& self, const GradeOptions& o, const std::string& tree,
                            const std::string& report, const std::string& log) {
  const int logFd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (logFd < 0) return SystemError(fmt::format("{}: cannot write it: {}", log, std::strerror(errno)));
  std::vector<std::string> args = {self, "check", std::to_string(o.stage), "--stages-dir", tree, "--cases", o.cases,
                                   "--format", "json", "--output", report};
  if (o.caseSeconds > 0) args.insert(args.end(), {"--time-limit", fmt::format("{}", o.caseSeconds)});
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    const int null = open("/dev/null", O_RDONLY);
    if (null >= 0) dup2(null, STDIN_FILENO);
    dup2(logFd, STDOUT_FILENO);
    dup2(logFd, STDERR_FILENO);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(self.c_str(), argv.data());
    _exit(127);
  }
  close(logFd);
  if (pid < 0) return SystemError(fmt::format("fork: {}", std::strerror(errno)));
  setpgid(pid, pid);
  return pid;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The last line of a runner's log that says what went wrong ("workbook: ..."), for the CSV.
std::string LastMessage(const std::string& log) {
  std::istringstream lines(ReadText(log));
  std::string message;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("workbook: ", 0) == 0) message = line.substr(10);
  }
  return message;
}

int RunGrade(const GradeOptions& o) {
  const WorkbookPaths paths = DefaultPaths();
  auto table = LoadStageTable(paths.Source("data/stages.json"));
  if (!table.ok()) return ReportError(table.error());
  const StageInfo* stage = table->Find(o.stage);
  if (stage == nullptr || !stage->available) {
    return ReportUsageError(fmt::format("there is no stage {} to grade; the stages are {}", o.stage, table->Numbers()));
  }
  std::error_code ec;
  if (!fsys::is_directory(o.submissions, ec)) {
    return ReportUsageError(fmt::format("{}: not a folder of submissions (a folder per student)", o.submissions));
  }
  if (!fsys::is_regular_file(o.cases, ec)) return ReportUsageError(fmt::format("{}: no such case file", o.cases));
  // The case file is checked once, here, so a bad one stops everything before any grading.
  if (auto cases = LoadCaseFile(o.cases, *table); !cases.ok()) {
    return ReportError(cases.error());
  } else if (cases->stage != o.stage) {
    return ReportError(BadData(fmt::format("{}: field 'stage' is {}, but this is a grade of stage {}", o.cases,
                                           cases->stage, o.stage)));
  }
  fsys::create_directories(o.output, ec);
  if (ec) return ReportUsageError(fmt::format("--output {}: cannot make it: {}", o.output, ec.message()));
  const std::string cases = fsys::absolute(o.cases).string();
  GradeOptions absolute = o;
  absolute.cases = cases;
  const std::string self = fsys::read_symlink("/proc/self/exe", ec).string();
  if (ec) return ReportError(SystemError(fmt::format("cannot find this program: {}", ec.message())));

  std::vector<Submission> students;
  for (const auto& entry : fsys::directory_iterator(o.submissions, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name[0] == '.' || !entry.is_directory(ec) || entry.is_symlink(ec)) continue;
    Submission student;
    student.name = name;
    student.folder = entry.path().string();
    students.push_back(std::move(student));
  }
  std::sort(students.begin(), students.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  if (students.empty()) return ReportUsageError(fmt::format("{}: holds no submission folders", o.submissions));

  // The private trees the runners grade, in a folder of this process's (0700 when root: the
  // runner copies what the compiler reads, so no sandboxed process reads them here).
  auto work = MakeRunFolder(fsys::temp_directory_path().string(), "wb-grade-");
  if (!work.ok()) return ReportError(work.error());
  struct RemoveWork {
    std::string path;
    ~RemoveWork() {
      std::error_code ignored;
      fsys::remove_all(path, ignored);
    }
  } removeWork{*work};
  prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);  // what a killed runner's children leave comes back here

  const int jobs = std::max(1, o.jobs);
  std::deque<size_t> waiting;
  for (size_t i = 0; i < students.size(); ++i) waiting.push_back(i);
  std::vector<size_t> running;
  std::fprintf(stderr, "grade: %zu submissions of stage %d, %d at a time\n", students.size(), o.stage, jobs);
  auto finish = [&](Submission& s, int status) {
    const std::string reportPath = fmt::format("{}/{}.json", o.output, s.name);
    const std::string text = ReadText(reportPath);
    if ((status == 0 || status == 1) && !text.empty()) {
      s.report = json::parse(text, nullptr, false);
      s.status = s.report.is_object() ? s.report.value("status", "fail") : "not_graded";
    } else {
      s.status = "not_graded";
      if (s.note.empty()) s.note = LastMessage(fmt::format("{}/{}.log", o.output, s.name));
      if (s.note.empty()) s.note = fmt::format("the runner ended with exit status {}", status);
    }
    std::fprintf(stderr, "grade: %s: %s\n", s.name.c_str(), s.status.c_str());
  };
  while (!waiting.empty() || !running.empty()) {
    while (!waiting.empty() && static_cast<int>(running.size()) < jobs) {
      Submission& s = students[waiting.front()];
      const size_t index = waiting.front();
      waiting.pop_front();
      const auto folder = FindStageFolder(s.folder, *stage);
      const std::string tree = fmt::format("{}/{}", *work, index);
      Status copied = Status::Ok();
      if (!folder) {
        copied = BadUsage(fmt::format("no {} in the submission", stage->file));
      } else if (mkdir(tree.c_str(), 0755) != 0) {
        copied = SystemError(fmt::format("{}: {}", tree, std::strerror(errno)));
      } else {
        copied = CopyStageFiles(*folder, stage->files, fmt::format("{}/{}", tree, stage->dir));
      }
      if (!copied.ok()) {
        s.status = "refused";
        s.note = copied.error().message;
        std::fprintf(stderr, "grade: %s: refused: %s\n", s.name.c_str(), s.note.c_str());
        continue;
      }
      auto pid = StartRunner(self, absolute, tree, fmt::format("{}/{}.json", o.output, s.name),
                             fmt::format("{}/{}.log", o.output, s.name));
      if (!pid.ok()) return ReportError(pid.error());
      s.runner = std::make_unique<ChildHandle>(*pid);
      s.started = std::chrono::steady_clock::now();
      running.push_back(index);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    for (size_t r = 0; r < running.size();) {
      Submission& s = students[running[r]];
      int status = 0;
      bool ended = s.runner->TryReap(&status);
      if (!ended && std::chrono::steady_clock::now() - s.started >= std::chrono::duration<double>(o.submissionSeconds)) {
        s.runner->KillAndReap(&status);
        s.note = fmt::format("its runner was still going after {:g} s (--submission-time-limit) and was stopped",
                             o.submissionSeconds);
        status = -1;
        ended = true;
        std::vector<pid_t> spare;
        for (const size_t other : running) {
          if (other != running[r]) spare.push_back(students[other].runner->pid());
        }
        KillLeftoverProcesses(spare);
      }
      if (!ended) {
        ++r;
        continue;
      }
      finish(s, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
      s.runner.reset();
      running.erase(running.begin() + static_cast<long>(r));
    }
  }

  // The gradebook: a column per case, in the order of the first report that has them.
  std::vector<std::string> caseNames;
  double most = 0;
  for (const Submission& s : students) {
    if (!s.report.is_object() || !s.report.contains("cases") || !caseNames.empty()) continue;
    for (const auto& c : s.report["cases"]) {
      caseNames.push_back(c.value("name", ""));
      for (const auto& cp : c["checkpoints"]) most += cp.value("max_points", 0.0);
    }
  }
  std::string csv = "student,score,max,status,first_failure";
  for (const std::string& name : caseNames) csv += "," + CsvField(name);
  csv += "\n";
  size_t ungraded = 0;
  for (const Submission& s : students) {
    std::map<std::string, double> points;
    double score = 0;
    std::string firstFailure = s.note;
    if (s.report.is_object() && s.report.contains("cases")) {
      for (const auto& c : s.report["cases"]) {
        double casePoints = 0;
        for (const auto& cp : c["checkpoints"]) casePoints += cp.value("points", 0.0);
        points[c.value("name", "")] = casePoints;
        score += casePoints;
        if (firstFailure.empty() && c.value("status", "") != "pass") {
          const json& at = c["first_failure"];
          firstFailure = fmt::format("{}: {}", c.value("name", ""),
                                     at.is_string() ? at.get<std::string>() : c.value("status", ""));
        }
      }
    } else if (s.report.is_object() && s.report.value("status", "") == "compile_error") {
      firstFailure = "does not compile";
    }
    if (s.status == "refused" || s.status == "not_graded") ++ungraded;
    csv += fmt::format("{},{},{},{},{}", CsvField(s.name), Number(score), Number(most), s.status, CsvField(firstFailure));
    for (const std::string& name : caseNames) csv += "," + (points.count(name) ? Number(points[name]) : "0");
    csv += "\n";
  }
  const std::string gradebook = o.output + "/gradebook.csv";
  if (!Emit(csv, gradebook)) return ReportUsageError(fmt::format("{}: cannot write the gradebook", gradebook));
  std::fprintf(stderr, "grade: %zu graded, %zu not; the gradebook is %s\n", students.size() - ungraded, ungraded,
               gradebook.c_str());
  return ungraded == 0 ? kExitPass : kExitFail;
}

}  // namespace

Command AddGradeCommand(CLI::App& app) {
  auto o = std::make_shared<GradeOptions>();
  CLI::App* c = app.add_subcommand("grade", "Grade a folder of submissions (a folder per student) into a gradebook");
  c->add_option("stage", o->stage, "Stage number")->required();
  c->add_option("submissions", o->submissions, "The folder of submissions, one folder per student")->required();
  c->add_option("--cases", o->cases, "The hidden suite to grade with")->required();
  c->add_option("--jobs", o->jobs, "Submissions graded at once (default 1)")->check(CLI::Range(1, 64));
  c->add_option("--output", o->output, "Where the gradebook and the reports go (default ./grades)");
  c->add_option("--submission-time-limit", o->submissionSeconds,
                "Seconds one submission's grading may take before it is stopped (default 1800)")
      ->check(CLI::PositiveNumber);
  c->add_option("--time-limit", o->caseSeconds,
                "Seconds per case, or per call, passed to each submission's check (default: check's)")
      ->check(CLI::PositiveNumber);
  return {c, [o]() { return RunGrade(*o); }};
}

}  // namespace wb::cli
