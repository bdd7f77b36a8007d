// The child process: map, fence, watch, call. See harness.h and shared_layout.h.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <initializer_list>
#include <typeinfo>

#include "harness.h"
#include "stop_self.h"

#if defined(__SANITIZE_ADDRESS__)
#define WB_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WB_UNDER_ASAN 1
#endif
#endif

namespace wb::harness {
namespace {

shm::Header* g_header = nullptr;
unsigned char* g_base = nullptr;
size_t g_bytes = 0;

unsigned long long NowNanoseconds() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<unsigned long long>(ts.tv_sec) * 1000000000ull + static_cast<unsigned long long>(ts.tv_nsec);
}

// The child's virtual size, read with async-signal-safe calls only.
uint64_t AddressSpaceBytes() {
  int fd = open("/proc/self/statm", O_RDONLY);
  if (fd < 0) return 0;
  char text[64] = {};
  const ssize_t n = read(fd, text, sizeof(text) - 1);
  close(fd);
  if (n <= 0) return 0;
  uint64_t pages = 0;
  for (ssize_t i = 0; i < n && text[i] >= '0' && text[i] <= '9'; ++i) pages = pages * 10 + (text[i] - '0');
  return pages * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

void OnFatalSignal(int sig, siginfo_t* info, void* context) {
  shm::ChildReport& r = g_header->child;
  r.signal = sig;
  r.signalCode = info->si_code;
  const auto address = reinterpret_cast<uintptr_t>(info->si_addr);
  r.faultAddress = address;
  r.faultInRegion = 0;
  if ((sig == SIGSEGV || sig == SIGBUS) && address >= reinterpret_cast<uintptr_t>(g_base) &&
      address < reinterpret_cast<uintptr_t>(g_base) + g_bytes) {
    r.faultInRegion = 1;
    r.faultOffset = address - reinterpret_cast<uintptr_t>(g_base);
  }
  r.faultIsWrite = -1;
  r.faultNearStack = 0;
  uintptr_t stackPointer = 0;
#if defined(__x86_64__)
  if (sig == SIGSEGV && context != nullptr) {
    // Bit 1 of the page-fault error code is set for a write access.
    const auto* uc = static_cast<const ucontext_t*>(context);
    r.faultIsWrite = (uc->uc_mcontext.gregs[REG_ERR] & 2) ? 1 : 0;
    stackPointer = static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RSP]);
  }
#elif defined(__aarch64__)
  if (context != nullptr) stackPointer = static_cast<const ucontext_t*>(context)->uc_mcontext.sp;
#else
  (void)context;
#endif
  // A fault this close to the interrupted stack pointer, outside the region, is the stack
  // running into its guard page: a stack overflow (deep recursion, a huge local array).
  constexpr uintptr_t kStackReach = 64 * 1024;
  if ((sig == SIGSEGV || sig == SIGBUS) && stackPointer != 0 && !r.faultInRegion &&
      address + kStackReach >= stackPointer && address <= stackPointer + kStackReach) {
    r.faultNearStack = 1;
  }
  r.addressSpaceBytes = AddressSpaceBytes();
  // Die of the same signal, so the runner sees how the child ended.
  signal(sig, SIG_DFL);
  raise(sig);
}

void OnTerminate() {
  char* note = g_header->child.note;
  const size_t room = sizeof(g_header->child.note) - 1;
  if (auto e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::bad_alloc&) {
      std::snprintf(note, room, "uncaught exception std::bad_alloc: an allocation failed");
    } catch (const std::exception& ex) {
      std::snprintf(note, room, "uncaught exception: %s", ex.what());
    } catch (...) {
      std::snprintf(note, room, "uncaught exception of a type not derived from std::exception");
    }
  } else {
    std::snprintf(note, room, "std::terminate was called");
  }
  std::abort();
}

void InstallHandlers() {
  static char alternateStack[64 * 1024];
  stack_t ss{};
  ss.ss_sp = alternateStack;
  ss.ss_size = sizeof(alternateStack);
  sigaltstack(&ss, nullptr);
  struct sigaction sa{};
  sa.sa_sigaction = OnFatalSignal;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGXCPU, SIGSYS}) {
    sigaction(sig, &sa, nullptr);
  }
  std::set_terminate(OnTerminate);
}

void Protect(const shm::Header& h) {
  const size_t page = h.pageSize;
  for (uint32_t i = 0; i < h.bufferCount; ++i) {
    const shm::BufferSlot& s = h.buffers[i];
    mprotect(g_base + s.guardBefore, page, PROT_NONE);
    mprotect(g_base + s.guardAfter, page, PROT_NONE);
    if (s.access == shm::kReadOnly) {
      mprotect(g_base + s.regionBegin, s.guardAfter - s.regionBegin, PROT_READ);
    }
  }
}

}  // namespace

void Fail(const char* what) {
  if (g_header != nullptr) {
    g_header->child.phase = shm::kHarnessFailed;
    std::snprintf(g_header->child.note, sizeof(g_header->child.note), "%s", what);
  }
  std::fprintf(stderr, "workbook harness: %s\n", what);
  _exit(shm::kHarnessFailedExit);
}

void FailYourFile(const char* what) {
  if (g_header != nullptr) {
    g_header->child.phase = shm::kCalling;
    std::snprintf(g_header->child.note, sizeof(g_header->child.note), "%s", what);
  }
  std::abort();
}

void Region::BeginCall(unsigned index) {
  header_->child.callIndex = index;
  header_->child.phase = shm::kCalling;
  callStart_ = NowNanoseconds();
}

void Region::EndCall() {
  header_->child.callNanoseconds = header_->child.callNanoseconds + (NowNanoseconds() - callStart_);
}

// The stop is asked of the kernel directly (StopThisProcess, stop_self.h): a raise() of the
// student's own could keep the child from stopping here or stop it later. Any other stop the
// code makes is resumed by the runner without moving the start (ChildLimits::resumeStops).
uint64_t Region::StartTimedCalls() {
  StopThisProcess();
  // Written by the runner while this child was stopped; read only now (the asm's "memory"
  // clobber and the volatile field keep the read here).
  return header_->timedSeed;
}

}  // namespace wb::harness

int main(int argc, char** argv) {
  using namespace wb;
  if (argc != 2) harness::Fail("usage: harness FD (started by the runner, not by hand)");
  const int fd = std::atoi(argv[1]);
  struct stat st{};
  if (fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(sizeof(shm::Header))) {
    harness::Fail("no shared region on the given descriptor");
  }
  // MAP_POPULATE maps every page of the region at once (the runner has written them all), not
  // one fault at a time as the stage reads its weights and writes its buffers.
  void* mapped =
      mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (mapped == MAP_FAILED) harness::Fail("cannot map the shared region");
  close(fd);
  harness::g_base = static_cast<unsigned char*>(mapped);
  harness::g_bytes = static_cast<size_t>(st.st_size);
  harness::g_header = static_cast<shm::Header*>(mapped);
  shm::Header& header = *harness::g_header;
  if (header.magic != shm::kMagic || header.version != shm::kVersion) {
    harness::g_header = nullptr;  // another layout: not even its report is ours to write
    harness::Fail("the shared region has another layout version: rebuild the workbook");
  }
#ifndef WB_UNDER_ASAN
  // AddressSanitizer reserves terabytes of shadow memory, so a limit on the address
  // space would stop it from starting; sanitized runs go without one.
  if (header.memoryLimitBytes > 0) {
    rlimit limit{header.memoryLimitBytes, header.memoryLimitBytes};
    setrlimit(RLIMIT_AS, &limit);
  }
#endif
  harness::Protect(header);
  harness::InstallHandlers();
  // Line-buffered, so what the student printed before a crash reaches the runner.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  header.child.phase = shm::kReady;

  harness::Region region(&header, harness::g_base);
  harness::CallStage(region);

  header.child.phase = shm::kReturned;
  std::fflush(nullptr);
  _exit(0);
}
