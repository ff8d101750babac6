// The tools the tests run beside the app, one executable (tests/tools/test_tools.cpp) under eight names: each is
// started by its own name, a link to that executable, and gets argv as its own main would (argv[0] its name).
// Each returns its exit status and turns an exception into one line on stderr.
#pragma once

namespace tf::test_tools {

int parity_dump(int argc, char** argv);  // tools/parity_dump.cpp: what tools/compare_with_pytorch.py compares
int bad_files(int argc, char** argv);    // tools/bad_files.cpp: bad .npy files and damaged checkpoints
int logits_dump(int argc, char** argv);  // tools/logits_dump.cpp: a checkpoint's logits for given token ids
int encode_text(int argc, char** argv);  // tools/encode_text.cpp: the token ids of a text under a vocabulary
int runs_probe(int argc, char** argv);   // tools/runs_probe.cpp: one call of the runs API, the tester's C++ front end
int blas_core(int argc, char** argv);    // tools/blas_core.cpp: OpenBLAS's core type and who chose it
int int8_agreement(int argc, char** argv);  // tools/int8_agreement.cpp: int8 decoding against float32 on a checkpoint
int gemm_choice(int argc, char** argv);     // tools/gemm_choice.cpp: auto's library for product shapes, timed again

}  // namespace tf::test_tools
