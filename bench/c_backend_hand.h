/* c_backend_hand.h - the hand-written baselines (c_backend_hand.c). */
#include <stdint.h>
void hand_triad(int64_t n, float a, const float *restrict x, const float *restrict y, float *restrict z);
float hand_sum(int64_t n, const float *restrict x);
float hand_sum8(int64_t n, const float *restrict x);
void hand_gelu(int64_t n, const float *restrict x, float *restrict y);
void hand_softmax(int64_t rows, int64_t cols, const float *restrict x, float *restrict y);
void hand_colsum(int64_t rows, int64_t cols, const float *restrict x, float *restrict r);
void hand_add_bias(int64_t rows, int64_t cols, const float *restrict x, const float *restrict b, float *restrict y);
