// The activations of the library's GEMM-shaped kernels (the specialization constant
// `activation`: 0 none, 1 relu, 2 leaky relu with the push constant `p.slope`, 3 sigmoid),
// in fp32 (exp overflows fp16 for |x| > 11).
vec4 activate(vec4 v)
{
    if (activation == 1) return max(v, vec4(0.0));
    if (activation == 2) return mix(v * p.slope, v, greaterThan(v, vec4(0.0)));
    if (activation == 3) return 1.0 / (1.0 + exp(-v));
    return v;
}
