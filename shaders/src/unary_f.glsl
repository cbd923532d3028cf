// The function of the unary kernels (unary.comp, unary_scalar.comp), in fp32 in every variant:
// the specialization constant `op` chooses it, the push constants `p.a` and `p.b` are its
// parameters. 0 relu, 1 leaky relu (slope a), 2 clip to [a, b], 3 sigmoid, 4 tanh, 5 GELU (erf
// form), 6 GELU (tanh form), 7 SiLU, 8 hardswish, 9 mish, 10 exp, 11 log, 12 sqrt, 13 rsqrt,
// 14 abs, 15 neg.
#include "unary_math.glsl"

vec4 unary_f(vec4 v)
{
    if (op == 0) return max(v, vec4(0.0));
    if (op == 1) return mix(v * p.a, v, greaterThan(v, vec4(0.0)));
    if (op == 2) return min(max(v, vec4(p.a)), vec4(p.b));
    if (op == 3) return 1.0 / (1.0 + exp(-v));
    if (op == 4) return um_tanh(v);
    if (op == 5) return um_gelu(v);
    if (op == 6) return um_gelu_tanh(v);
    if (op == 7) return um_silu(v);
    if (op == 8) return v * clamp(v + 3.0, vec4(0.0), vec4(6.0)) / 6.0;
    if (op == 9) return um_mish(v);
    if (op == 10) return exp(v);
    if (op == 11) return log(v);
    if (op == 12) return sqrt(v);
    if (op == 13) return inversesqrt(v);
    if (op == 14) return abs(v);
    return -v;
}
