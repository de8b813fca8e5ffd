// The kernels of test_capi.cu compiled against the emulation layer (C++).
#include "test_capi.cu"
