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
// The child writes only ChildReport (and the output buffers); the runner reads it after
// the child ends, whatever the way it ended. Both sides compile this header; it holds
// plain data only, so it means the same bytes on both sides.
#pragma once

#include <cstdint>

namespace wb::shm {

constexpr uint64_t kMagic = 0x3147455242574257ull;  // "WBWBREG1" read little-endian
constexpr uint32_t kVersion = 1;
constexpr int kMaxBuffers = 512;
constexpr int kNameBytes = 40;
constexpr int kMaxParams = 32;

// A signalling NaN with a recognisable payload. Copying it keeps its bits; any arithmetic
// on it returns a quiet NaN (0x7FC0DEAD), which tells "computed from an element that was
// never written" apart from "never written".
constexpr uint32_t kPoisonWord = 0x7F80DEADu;
constexpr uint32_t kPoisonQuietedWord = 0x7FC0DEADu;
constexpr unsigned char kCanaryByte = 0xA5;

enum Access : uint32_t { kReadOnly = 1, kWritable = 2 };

struct BufferSlot {
  char name[kNameBytes];     // NUL-terminated, e.g. "q" or "step2.q"
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
  char note[512];                       // e.g. the what() of an uncaught exception
};

struct Header {
  uint64_t magic;
  uint32_t version;
  uint32_t pageSize;
  uint64_t totalBytes;
  int32_t stage;
  uint32_t bufferCount;
  int64_t params[kMaxParams];  // stage-specific: params[0] is T for stage 1
  uint64_t memoryLimitBytes;   // the child applies it to itself (0: none)
  BufferSlot buffers[kMaxBuffers];
  ChildReport child;
};

}  // namespace wb::shm
