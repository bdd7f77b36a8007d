// The shared-memory region between the runner and the child that runs a student's code.
//
// Contract. The runner creates one memfd, lays out a Header and then every buffer the
// stage function reads or writes, and hands the fd to the child. Each buffer sits in its
// own run of pages, fenced by a guard page on each side; its data is pushed against the
// guard page after it, so the first byte written past its end faults, and the slack in
// front of it is filled with kCanaryByte, so a write before its start is seen even when
// it lands short of the guard page before. Output buffers are filled with kPoisonWord
// before the call: an element still holding it was never written.
//
// Which buffer is which, and what the parameters are, is a stage's typed call layout
// (call_layout.h): slot i is the layout's buffer i, and the parameters are the layout's
// Params struct, stored in the header's params bytes. The child checks the layout's id and
// buffer count before it calls anything, so both sides agree or the call does not happen.
//
// The child writes only ChildReport (and the output buffers); the runner reads it after
// the child ends, whatever the way it ended. Both sides compile this header; it holds
// plain data only, so it means the same bytes on both sides.
#pragma once

#include <cstdint>

namespace wb::shm {

constexpr uint64_t kMagic = 0x3147455242574257ull;  // "WBWBREG1" read little-endian
constexpr uint32_t kVersion = 4;
constexpr int kMaxBuffers = 512;
constexpr int kNameBytes = 40;
constexpr int kParamBytes = 256;

// A signalling NaN with a recognisable payload. Copying it keeps its bits; any arithmetic
// on it returns a quiet NaN (0x7FC0DEAD), which tells "computed from an element that was
// never written" apart from "never written".
constexpr uint32_t kPoisonWord = 0x7F80DEADu;
constexpr uint32_t kPoisonQuietedWord = 0x7FC0DEADu;
constexpr unsigned char kCanaryByte = 0xA5;

// Exit statuses of a child that never got to call student code: the harness refused the
// region (with phase kHarnessFailed and a note), or the harness could not be executed.
constexpr int kHarnessFailedExit = 97;
constexpr int kExecFailedExit = 98;

enum Access : uint32_t { kReadOnly = 1, kWritable = 2 };

struct BufferSlot {
  char name[kNameBytes];     // NUL-terminated: the layout's name for it, e.g. "q"
  uint64_t guardBefore;      // offset of the guard page in front
  uint64_t regionBegin;      // first page of the buffer's own pages
  uint64_t dataOffset;       // first byte of the data; dataOffset + dataBytes == guardAfter
  uint64_t dataBytes;
  uint64_t guardAfter;       // offset of the guard page behind
  uint32_t access;           // Access
  uint32_t reserved;
};

// Where the child was and how it ended, written by the child as it goes.
enum Phase : uint32_t {
  kSpawned = 0,   // not yet mapped the region
  kReady = 1,     // region mapped and protected, handlers installed
  kCalling = 2,   // inside the stage function
  kReturned = 3,  // every call returned
  kHarnessFailed = 4,  // the harness itself refused to go on (a bug in the workbook)
};

struct ChildReport {
  volatile uint32_t phase;
  volatile uint32_t callIndex;        // which call of a multi-call stage was running
  volatile int32_t signal;            // 0, or the fatal signal the child caught
  volatile int32_t signalCode;        // siginfo si_code
  volatile uint32_t faultInRegion;    // 1 when faultOffset is an offset into the region
  volatile int32_t faultIsWrite;      // 1 write, 0 read, -1 unknown
  volatile uint64_t faultOffset;
  volatile uint64_t faultAddress;
  volatile uint64_t addressSpaceBytes;  // the child's virtual size when it faulted
  volatile uint64_t callNanoseconds;    // total time inside the stage function
  volatile uint32_t faultNearStack;     // 1 when the fault is within reach of the stack pointer
  uint32_t reserved;
  char note[512];                       // e.g. the what() of an uncaught exception
};

struct Header {
  uint64_t magic;
  uint32_t version;
  uint32_t pageSize;
  uint64_t totalBytes;
  uint32_t layoutId;   // the call layout the buffers and params follow (call_layout.h)
  uint32_t bufferCount;
  alignas(8) unsigned char params[kParamBytes];  // the layout's Params struct
  uint64_t memoryLimitBytes;   // the child applies it to itself (0: none)
  // A bench child's seed for its timed calls' inputs: 0 until the child has stopped before
  // them (ChildLimits::resumeStops); the runner writes it then, so nothing the child ran
  // before could know it (runner/stages/timed_inputs.h).
  volatile uint64_t timedSeed;
  BufferSlot buffers[kMaxBuffers];
  ChildReport child;
};

}  // namespace wb::shm
