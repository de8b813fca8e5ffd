// cuda_fp16.h for the CUDA emulation layer (tests/cudaemu): generated CUDA code
// includes <cuda_fp16.h>; with -I tests/cudaemu/include it gets this file, and
// the __half subset that cudaemu.h defines (see docs/cuda-backend.md).
// Anything else of CUDA's header is deliberately absent.
#include "../cudaemu.h"
