// Namespaces, a filesystem view and a seccomp filter for a child before exec; see
// confinement.h. The calls are the kernel's own: unshare(2), mount(2), pivot_root(2),
// user_namespaces(7) for the uid map, and seccomp(2) through libseccomp.
#include "confinement.h"

#include <fcntl.h>
#include <linux/sockios.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <initializer_list>
#include <cstdlib>
#include <cstring>
#include <string>

#include <fmt/format.h>

namespace wb {
namespace {

// ioprio_set(2)'s "which": one process, or a process group (linux/ioprio.h, which glibc does
// not wrap).
constexpr int kIoprioWhoProcess = 1;
constexpr int kIoprioWhoPgrp = 2;

// The step that failed last in this process, for ProbeConfinement's message.
const char* g_failedStep = "";

bool Fail(const char* step) {
  g_failedStep = step;
  return false;
}

bool WriteText(const char* path, const std::string& text) {
  const int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool written = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return written;
}

// mkdir -p of an absolute path, each new folder 0755.
bool MakeFolders(const std::string& path) {
  for (size_t slash = path.find('/', 1); ; slash = path.find('/', slash + 1)) {
    const std::string prefix = path.substr(0, slash);
    if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) return false;
    if (slash == std::string::npos) return true;
  }
}

std::string Parent(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

// A bind mount made read-only. The remount must repeat the flags the kernel locked on the
// original mount (nosuid, nodev, noexec in a user namespace: mount_namespaces(7)).
bool RemountReadOnly(const std::string& target) {
  struct statvfs info {};
  if (statvfs(target.c_str(), &info) != 0) return false;
  unsigned long flags = MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID;
  if (info.f_flag & ST_NODEV) flags |= MS_NODEV;
  if (info.f_flag & ST_NOEXEC) flags |= MS_NOEXEC;
  if (info.f_flag & ST_NOATIME) flags |= MS_NOATIME;
  if (info.f_flag & ST_NODIRATIME) flags |= MS_NODIRATIME;
  if (info.f_flag & ST_RELATIME) flags |= MS_RELATIME;
  return mount(nullptr, target.c_str(), nullptr, flags, nullptr) == 0;
}

// Makes host `path` visible at the same path under `root`: a link is copied as a link (/lib
// is one on a merged-/usr system), a folder or a file is bind-mounted. A path the host does
// not have is left out (not every system has /lib32).
bool Place(const std::string& path, const std::string& root, bool readOnly) {
  struct stat info {};
  if (lstat(path.c_str(), &info) != 0) return errno == ENOENT;
  const std::string target = root + path;
  if (!MakeFolders(Parent(target))) return Fail("a folder of the view");
  if (S_ISLNK(info.st_mode)) {
    char link[4096];
    const ssize_t n = readlink(path.c_str(), link, sizeof(link) - 1);
    if (n < 0) return Fail("readlink");
    link[n] = '\0';
    return symlink(link, target.c_str()) == 0 || errno == EEXIST || Fail("symlink");
  }
  struct stat existing {};
  if (lstat(target.c_str(), &existing) != 0) {
    if (S_ISDIR(info.st_mode)) {
      if (mkdir(target.c_str(), 0755) != 0) return Fail("mkdir");
    } else {
      const int fd = open(target.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
      if (fd < 0) return Fail("a mount point");
      close(fd);
    }
  }
  const unsigned long bind = S_ISDIR(info.st_mode) ? MS_BIND | MS_REC : MS_BIND;
  if (mount(path.c_str(), target.c_str(), nullptr, bind, nullptr) != 0) return Fail("bind mount");
  return !readOnly || RemountReadOnly(target) || Fail("read-only remount");
}

// Whether the last EnterNamespaces in this process gave the view a /proc of its own.
bool g_privateProc = false;

// /proc for the view: where the runner may mount one (root), a procfs instance of its own
// with hidepid=invisible, in which processes of other uids (the runner) do not exist
// (proc(5), "hidepid"; one instance per mount since Linux 5.8). Elsewhere (a user namespace
// does not own the host's pid namespace, so it may not mount procfs) the host's /proc,
// bound read-only.
bool PlaceProc(const std::string& root) {
  const std::string target = root + "/proc";
  if (mkdir(target.c_str(), 0555) != 0 && errno != EEXIST) return Fail("mkdir of /proc");
  g_privateProc = mount("proc", target.c_str(), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY,
                        "hidepid=invisible") == 0;
  return g_privateProc || Place("/proc", root, true);
}

}  // namespace

const char* LastConfinementStep() { return g_failedStep; }

FilesystemView SystemView() {
  FilesystemView view;
  view.readOnly = {"/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"};
  return view;
}

bool EnterNamespaces(const FilesystemView& view, const std::string& scratch, bool asRoot) {
  const uid_t uid = geteuid();
  const gid_t gid = getegid();
  int flags = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS;
  if (!asRoot) flags |= CLONE_NEWUSER;
  if (unshare(flags) != 0) return Fail("unshare");
  if (!asRoot) {
    // The runner's own uid and gid, mapped to themselves; setgroups must be denied before
    // an unprivileged process may write its gid map (user_namespaces(7)). A process that is
    // not dumpable (the runner is not, while a child runs) cannot write its own /proc files,
    // so the child is dumpable again from here to exec, which resets it anyway.
    if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0) return Fail("PR_SET_DUMPABLE");
    if (!WriteText("/proc/self/setgroups", "deny") || !WriteText("/proc/self/uid_map", fmt::format("{0} {0} 1", uid)) ||
        !WriteText("/proc/self/gid_map", fmt::format("{0} {0} 1", gid))) {
      return Fail("the user namespace's uid map");
    }
  }
  // Nothing mounted from here on reaches the runner's namespace.
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return Fail("a private mount tree");
  if (mount("tmpfs", scratch.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755") != 0) {
    return Fail("the view's root");
  }
  // A private /tmp first, so that paths of the view under /tmp land inside it.
  const std::string tmp = scratch + "/tmp";
  if (mkdir(tmp.c_str(), 01777) != 0 ||
      mount("tmpfs", tmp.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=1777") != 0) {
    return Fail("a private /tmp");
  }
  for (const std::string& path : view.readOnly) {
    if (!Place(path, scratch, true)) return false;
  }
  if (!PlaceProc(scratch)) return false;
  for (const std::string& path : view.writable) {
    if (!Place(path, scratch, false)) return false;
  }
  for (const char* device : {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}) {
    if (!Place(device, scratch, false)) return false;
  }
  // The view becomes "/"; the old root is detached, so no path leads back to it.
  const std::string oldRoot = scratch + "/.old-root";
  if (mkdir(oldRoot.c_str(), 0700) != 0) return Fail("mkdir of the old root");
  if (syscall(SYS_pivot_root, scratch.c_str(), oldRoot.c_str()) != 0) return Fail("pivot_root");
  if (chdir("/") != 0 || umount2("/.old-root", MNT_DETACH) != 0 || rmdir("/.old-root") != 0) {
    return Fail("detaching the old root");
  }
  if (mount(nullptr, "/", nullptr, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, nullptr) != 0) {
    return Fail("a read-only root");
  }
  return true;
}

namespace {

// Runs `step` in a throwaway child; empty when it worked, else the child's reason.
// `step` returns 0 when it failed, else 1 + a small number for the caller, which `detail`
// (optional) receives.
template <typename Step>
std::string TryInChild(Step step, int* detail = nullptr) {
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) return fmt::format("pipe: {}", std::strerror(errno));
  const pid_t pid = fork();
  if (pid == 0) {
    close(report[0]);
    const int code = step();
    if (code == 0) {
      const std::string why = fmt::format("{}: {}", g_failedStep, std::strerror(errno));
      (void)!write(report[1], why.data(), why.size());
    }
    _exit(code == 0 ? 1 : code - 1);
  }
  close(report[1]);
  if (pid < 0) {
    close(report[0]);
    return fmt::format("fork: {}", std::strerror(errno));
  }
  char why[256] = {};
  (void)!read(report[0], why, sizeof(why) - 1);
  close(report[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status) && why[0] == '\0') {
    if (detail != nullptr) *detail = WEXITSTATUS(status);
    return "";
  }
  return why[0] != '\0' ? std::string(why) : "the trial child died";
}

}  // namespace

const ConfinementProbe& ProbeConfinement() {
  static const ConfinementProbe probe = [] {
    ConfinementProbe p;
    char scratch[] = "/tmp/wb-probe-XXXXXX";
    if (mkdtemp(scratch) == nullptr) {
      p.whyNot = fmt::format("cannot make a folder to try them in: {}", std::strerror(errno));
    } else {
      const bool asRoot = geteuid() == 0;
      int procAnswer = 0;  // 1: the view had a /proc of its own
      p.whyNot = TryInChild([&] { return EnterNamespaces(SystemView(), scratch, asRoot) ? 1 + g_privateProc : 0; },
                            &procAnswer);
      p.namespaces = p.whyNot.empty();
      p.privateProc = p.namespaces && procAnswer == 1;
      rmdir(scratch);
    }
    p.whyNoSeccomp = TryInChild([] {
      return (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 || Fail("PR_SET_NO_NEW_PRIVS")) &&
             ApplySeccomp(SignalPolicy::kSignalOwnGroupOnly);
    });
    p.seccomp = p.whyNoSeccomp.empty();
    return p;
  }();
  return probe;
}

namespace {

// A condition on system-call argument `index`, read by the kernel as a 32-bit int (a pid, a
// command number): only the low 32 bits are compared.
scmp_arg_cmp IntArgIs(unsigned index, long value) {
  return scmp_arg_cmp{index, SCMP_CMP_MASKED_EQ, scmp_datum_t{0xffffffffu},
                      static_cast<scmp_datum_t>(value) & 0xffffffffu};
}

// The flags of clone(2) that would give the child new namespaces, or the runner a sibling of
// the harness (CLONE_PARENT): neither a stage function nor a compiler makes either.
constexpr scmp_datum_t kForbiddenCloneFlags = CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC |
                                              CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_PARENT;

// The fcntl(2) commands that act on the process's own descriptors only. Not among them:
// F_SETOWN, F_SETOWN_EX and F_SETSIG, which aim the signal of a descriptor's I/O at any process
// of the uid (the runner, through the pipe it reads the child's output from); F_SETLEASE and
// F_NOTIFY, which signal the descriptor's owner too. F_SETFL is allowed without O_ASYNC below.
constexpr int kOwnDescriptorCommands[] = {F_DUPFD, F_DUPFD_CLOEXEC, F_GETFD, F_SETFD, F_GETFL, F_GETLK, F_SETLK,
                                          F_SETLKW, F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW, F_GETOWN, F_GETSIG,
                                          F_GETOWN_EX, F_GETLEASE, F_SETPIPE_SZ, F_GETPIPE_SZ, F_ADD_SEALS,
                                          F_GET_SEALS};

// The ioctl(2) commands refused by the second filter: those that, like F_SETOWN, send a
// descriptor's signals elsewhere (FIOASYNC, FIOSETOWN, SIOCSPGRP), and the terminal's, which
// reach whoever reads it (TIOCSTI types into it) or take it over (tty_ioctl(4)).
constexpr unsigned long kRefusedIoctls[] = {FIOASYNC, FIOSETOWN, SIOCSPGRP, TIOCSTI, TIOCSPGRP, TIOCSCTTY,
                                            TIOCCONS, TIOCLINUX, TIOCSETD};

// The second filter, stacked on the first (the kernel runs both, and the stricter answer
// holds: seccomp(2), "If multiple filters exist"): ioctl is allowed except for the commands
// above, a deny-list that an allow-list's rules, which may only say when a call is allowed,
// cannot state.
bool LoadIoctlFilter() {
  scmp_filter_ctx filter = seccomp_init(SCMP_ACT_ALLOW);
  if (filter == nullptr) return Fail("seccomp_init");
  int failed = 0;
  for (const unsigned long command : kRefusedIoctls) {
    failed |= seccomp_rule_add(filter, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
                               IntArgIs(1, static_cast<long>(command)));
  }
  const bool loaded = failed == 0 && seccomp_load(filter) == 0;
  seccomp_release(filter);
  return loaded || Fail("loading the seccomp filter for ioctl");
}

}  // namespace

bool ApplySeccomp(SignalPolicy signals) {
  // An allow-list: every system call number up to kHighestCall is allowed but the refused
  // ones, and the calls below that are allowed for some arguments only. A call the filter
  // does not name (a newer one, or any of the x32 and i386 entry points, which would go
  // around rules made for x86-64 numbers) is refused.
  constexpr int kHighestCall = 512;
  static const char* const kRefused[] = {
      // Other processes' memory and state.
      "ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "kcmp", "pidfd_open", "pidfd_getfd",
      "pidfd_send_signal",
      // Process groups and sessions: the runner put the child in a group of its own, which
      // its time limit ends and to which its signals are confined; a child that could join
      // another group (the runner's) could signal it with kill(0) and leave the limit's reach.
      "setpgid", "setsid",
      // The system's configuration: mounts, namespaces, modules, keys, clocks, power.
      "mount", "umount", "umount2", "pivot_root", "chroot", "unshare", "setns", "fsopen", "fsmount", "fspick",
      "move_mount", "open_tree", "mount_setattr", "init_module", "finit_module", "delete_module", "kexec_load",
      "kexec_file_load", "reboot", "swapon", "swapoff", "acct", "quotactl", "settimeofday", "clock_settime",
      "clock_adjtime", "adjtimex", "sethostname", "setdomainname", "iopl", "ioperm", "syslog", "add_key", "keyctl",
      "request_key", "lookup_dcookie", "uselib", "vhangup",
      // Kernel interfaces a stage function has no use for, and that widen what an attack reaches.
      "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
      "open_by_handle_at", "name_to_handle_at", "fanotify_init", "move_pages", "migrate_pages",
      // Allowed below for some arguments only.
      "socket", "kill", "tgkill", "tkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "fcntl", "clone", "clone3",
      "prlimit64", "setpriority", "sched_setaffinity", "sched_setscheduler", "sched_setparam", "sched_setattr",
      "ioprio_set"};
  scmp_filter_ctx filter = seccomp_init(SCMP_ACT_ERRNO(EPERM));
  if (filter == nullptr) return Fail("seccomp_init");
  seccomp_attr_set(filter, SCMP_FLTATR_CTL_OPTIMIZE, 2);  // a binary tree, not a list of 500 tests
  bool refused[kHighestCall + 1] = {};
  for (const char* name : kRefused) {
    const int number = seccomp_syscall_resolve_name(name);
    if (number >= 0 && number <= kHighestCall) refused[number] = true;
  }
  int failed = 0;
  for (int number = 0; number <= kHighestCall; ++number) {
    if (!refused[number]) failed |= seccomp_rule_add(filter, SCMP_ACT_ALLOW, number, 0);
  }
  const pid_t self = getpid();  // exec keeps it: the harness's pid, and its threads' tgid
  // Sockets: AF_UNIX only (no network, even where there is no network namespace).
  failed |= seccomp_rule_add(filter, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1, IntArgIs(0, AF_UNIX));
  const int tgkillFamily[] = {SCMP_SYS(tgkill), SCMP_SYS(tkill), SCMP_SYS(rt_sigqueueinfo), SCMP_SYS(rt_tgsigqueueinfo)};
  if (signals == SignalPolicy::kAny) {
    failed |= seccomp_rule_add(filter, SCMP_ACT_ALLOW, SCMP_SYS(kill), 0);
    for (const int call : tgkillFamily) failed |= seccomp_rule_add(filter, SCMP_ACT_ALLOW, call, 0);
  } else {
    // kill(pid): the child itself or its own process group (0, or -pgid: it leads its
    // group), nothing else. raise() and signals between the child's threads go through
    // tgkill and its relatives with the child's own tgid.
    for (const long pid : {long{self}, 0L, -long{self}}) {
      failed |= seccomp_rule_add(filter, SCMP_ACT_ALLOW, SCMP_SYS(kill), 1, IntArgIs(0, pid));
    }
    for (const int call : tgkillFamily) failed |= seccomp_rule_add(filter, SCMP_ACT_ALLOW, call, 1, IntArgIs(0, self));
  }
  // Descriptors: the commands on the process's own, and F_SETFL without O_ASYNC.
  for (const int command : kOwnDescriptorCommands) {
    failed |= seccomp_rule_add(filter, SCMP_ACT_ALLOW, SCMP_SYS(fcntl), 1, IntArgIs(1, command));
  }
  failed |= seccomp_rule_add(filter, SCMP_ACT_ALLOW, SCMP_SYS(fcntl), 2, IntArgIs(1, F_SETFL),
                             scmp_arg_cmp{2, SCMP_CMP_MASKED_EQ, scmp_datum_t{O_ASYNC}, 0});
  // New processes and threads, in the namespaces the child has. clone3 passes its flags in
  // memory, which a filter cannot read, so it answers ENOSYS, as on a kernel without it, and
  // glibc falls back to clone (pthread_create and posix_spawn do).
  failed |= seccomp_rule_add(filter, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
                             scmp_arg_cmp{0, SCMP_CMP_MASKED_EQ, kForbiddenCloneFlags, 0});
  failed |= seccomp_rule_add(filter, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
  // Limits, priorities and CPUs: of the child itself (0 or its pid), never of another
  // process of its uid, such as the runner (a file-size limit of 0 would kill it at its next
  // write; SCHED_IDLE or one CPU would starve it). A thread's own calls pass 0.
  for (const long pid : {0L, long{self}}) {
    failed |= seccomp_rule_add(filter, SCMP_ACT_ALLOW, SCMP_SYS(prlimit64), 1, IntArgIs(0, pid));
    for (const int call : {SCMP_SYS(sched_setaffinity), SCMP_SYS(sched_setscheduler), SCMP_SYS(sched_setparam),
                           SCMP_SYS(sched_setattr)}) {
      failed |= seccomp_rule_add(filter, SCMP_ACT_ALLOW, call, 1, IntArgIs(0, pid));
    }
    failed |= seccomp_rule_add(filter, SCMP_ACT_ALLOW, SCMP_SYS(setpriority), 2, IntArgIs(0, PRIO_PROCESS),
                               IntArgIs(1, pid));
    failed |= seccomp_rule_add(filter, SCMP_ACT_ALLOW, SCMP_SYS(ioprio_set), 2, IntArgIs(0, kIoprioWhoProcess),
                               IntArgIs(1, pid));
  }
  // Its own process group (0), which it cannot leave.
  failed |= seccomp_rule_add(filter, SCMP_ACT_ALLOW, SCMP_SYS(setpriority), 2, IntArgIs(0, PRIO_PGRP), IntArgIs(1, 0));
  failed |= seccomp_rule_add(filter, SCMP_ACT_ALLOW, SCMP_SYS(ioprio_set), 2, IntArgIs(0, kIoprioWhoPgrp),
                             IntArgIs(1, 0));
  const bool loaded = failed == 0 && seccomp_load(filter) == 0;
  seccomp_release(filter);
  return (loaded || Fail("loading the seccomp filter")) && LoadIoctlFilter();
}

}  // namespace wb
