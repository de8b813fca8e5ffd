// cuda_bf16.h for the CUDA emulation layer (tests/cudaemu): generated CUDA code
// includes <cuda_bf16.h>; with -I tests/cudaemu/include it gets this file, and
// the __nv_bfloat16 subset that cudaemu.h defines (see docs/cuda-backend.md).
// Anything else of CUDA's header is deliberately absent.
#include "../cudaemu.h"
