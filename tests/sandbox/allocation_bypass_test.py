#!/usr/bin/env python3
"""Stage 5's "decode steps allocate nothing", against ordinary C++ that would go around it.

Usage: allocation_bypass_test.py WORKBOOK SOLUTION_DIR
  WORKBOOK      the built workbook
  SOLUTION_DIR  solutions/05-decoder (each attack is the solution plus a vector allocated in
                every call of decoder_forward, hidden from the count another way)

The control (the vector alone) must fail the allocations checkpoint: the count works. Each
attack must then be counted the same way or refused with a message naming what it used: an
operator new of the file's own (the harness defines every form, so a second is a link error),
glibc's __libc_malloc, mmap, a raw syscall. On a runner without these defences the attacks
pass every checkpoint, allocations included.
"""
import json, os, shutil, subprocess, sys, tempfile

SIGNATURE = "void decoder_forward(const Model& model, KvCache& cache, std::span<const int32_t> tokens, Logits logits,\n" \
            "                     const DecoderBuffers& buffers, int threads) {\n"


def main():
    workbook, solution_dir = sys.argv[1:3]
    failures = []

    def check(ok, what):
        print(("ok    " if ok else "FAIL  ") + what)
        if not ok:
            failures.append(what)

    with tempfile.TemporaryDirectory(prefix="wb-alloc-") as work:
        def run(name, top, body):
            tree = os.path.join(work, name, "stages")
            stage = os.path.join(tree, "05-decoder")
            shutil.copytree(solution_dir, stage)
            path = os.path.join(stage, "decoder.cc")
            text = open(path).read()
            if SIGNATURE not in text:
                check(False, f"{name}: decoder_forward's signature moved in the solution; update this test")
                return {}, ""
            text = top + text.replace(SIGNATURE, SIGNATURE + body)
            open(path, "w").write(text)
            p = subprocess.run([workbook, "check", "5", "--stages-dir", tree, "--format", "json"],
                               capture_output=True, text=True, timeout=900)
            try:
                return json.loads(p.stdout), p.stdout
            except ValueError:
                check(False, f"{name}: the runner wrote no report (exit {p.returncode}: {p.stderr.strip()[:300]})")
                return {}, ""

        def allocations_fail(report):
            return report.get("status") == "fail" and any(
                cp.get("name") == "allocations" and cp.get("status") == "fail"
                for c in report.get("cases", []) for cp in c.get("checkpoints", []))

        # The control: a vector in every call is counted.
        waste = "  { std::vector<float> waste(64); waste[0] = 1.0f; asm volatile(\"\" : : \"r\"(waste.data()) : \"memory\"); }\n"
        report, _ = run("control", "#include <vector>\n", waste)
        check(allocations_fail(report), f"control: a std::vector in each decode step fails allocations "
                                        f"({report.get('status')})")

        attacks = [
            ("operator-new-from-libc",
             "#include <cstddef>\n#include <new>\n#include <vector>\nextern \"C\" void* __libc_malloc(std::size_t);\n"
             "extern \"C\" void __libc_free(void*);\n"
             "void* operator new(std::size_t n) { return __libc_malloc(n ? n : 1); }\n"
             "void operator delete(void* p) noexcept { __libc_free(p); }\n"
             "void operator delete(void* p, std::size_t) noexcept { __libc_free(p); }\n", waste,
             ["Your code calls __libc_", "multiple definition of `operator new"]),
            ("operator-new-from-a-pool",
             "#include <cstddef>\n#include <new>\n#include <vector>\nalignas(64) static char pool[1 << 26];\n"
             "static std::size_t used;\nvoid* operator new(std::size_t n) { void* p = pool + used; "
             "used = (used + n + 63) & ~std::size_t{63}; return p; }\n"
             "void operator delete(void*) noexcept {}\nvoid operator delete(void*, std::size_t) noexcept {}\n", waste,
             ["multiple definition of `operator new"]),
            ("libc-malloc", "#include <cstddef>\nextern \"C\" void* __libc_malloc(std::size_t);\n"
             "extern \"C\" void __libc_free(void*);\n",
             "  { void* p = __libc_malloc(256); asm volatile(\"\" : : \"r\"(p) : \"memory\"); __libc_free(p); }\n",
             ["Your code calls __libc_"]),
            ("mmap", "#include <sys/mman.h>\n",
             "  { void* p = mmap(nullptr, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0); "
             "munmap(p, 1 << 20); }\n", ["Your code calls mmap"]),
            ("raw-syscall", "#include <sys/syscall.h>\n#include <unistd.h>\n",
             "  { long p = syscall(SYS_mmap, 0, 1 << 20, 3, 0x22, -1, 0); syscall(SYS_munmap, p, 1 << 20); }\n",
             ["Your code calls syscall"]),
        ]
        for name, top, body, said in attacks:
            report, text = run(name, top, body)
            refused = report.get("status") == "compile_error" and any(s in text for s in said)
            check(refused or allocations_fail(report),
                  f"{name}: counted or refused, naming what it used (status {report.get('status')}; "
                  f"{(report.get('compiler_output') or '')[:200]!r})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
