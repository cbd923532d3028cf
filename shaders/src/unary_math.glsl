// fp32 helpers of the element-wise kernels and the GEMM epilogue (activation.glsl): computed in
// fp32 in every variant (exp overflows fp16 for |x| > 11, and fp16 loses erf's accuracy).
#ifndef VKP_UNARY_MATH_GLSL
#define VKP_UNARY_MATH_GLSL

// erfc(z) for z >= 0 (Abramowitz & Stegun 7.1.26: absolute error below 1.5e-7).
vec4 um_erfc_pos(vec4 z)
{
    const vec4 t = 1.0 / (1.0 + 0.3275911 * z);
    const vec4 poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741
        + t * (-1.453152027 + t * 1.061405429))));
    return poly * exp(-z * z);
}

// GELU, erf form: x · Φ(x), Φ(x) = 1 - erfc(x/√2)/2 for x >= 0 and erfc(-x/√2)/2 below 0, so
// that neither side cancels.
vec4 um_gelu(vec4 x)
{
    const vec4 half_c = 0.5 * um_erfc_pos(abs(x) * 0.70710678118654752);
    return x * mix(1.0 - half_c, half_c, lessThan(x, vec4(0.0)));
}

// GELU, tanh form: x/2 · (1 + tanh(u)) = x / (1 + e^(-2u)), u = √(2/π) (x + 0.044715 x³).
vec4 um_gelu_tanh(vec4 x)
{
    const vec4 u = 0.79788456080286536 * (x + 0.044715 * x * x * x);
    return x / (1.0 + exp(-2.0 * u));
}

// SiLU: x · sigmoid(x).
vec4 um_silu(vec4 x)
{
    return x / (1.0 + exp(-x));
}

// tanh, its argument clamped where it is ±1 in fp32 (some drivers' tanh is NaN for large |x|).
vec4 um_tanh(vec4 x)
{
    return tanh(clamp(x, vec4(-10.0), vec4(10.0)));
}

// Mish: x · tanh(softplus(x)) = x · n / (n + 2) with n = e^x (e^x + 2); x above 20 (where it is x).
vec4 um_mish(vec4 x)
{
    const vec4 e = exp(min(x, vec4(20.0)));
    const vec4 n = e * (e + 2.0);
    return mix(x * n / (n + 2.0), x, greaterThan(x, vec4(20.0)));
}

#endif
