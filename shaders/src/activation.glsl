// The activations of the library's GEMM-shaped kernels (the specialization constant
// `activation`: 0 none, 1 relu, 2 leaky relu with the push constant `p.slope`, 3 sigmoid,
// 4 GELU (erf form), 5 SiLU), in fp32 (exp overflows fp16 for |x| > 11).
#include "unary_math.glsl"

vec4 activate(vec4 v)
{
    if (activation == 1) return max(v, vec4(0.0));
    if (activation == 2) return mix(v * p.slope, v, greaterThan(v, vec4(0.0)));
    if (activation == 3) return 1.0 / (1.0 + exp(-v));
    if (activation == 4) return um_gelu(v);
    if (activation == 5) return um_silu(v);
    return v;
}
