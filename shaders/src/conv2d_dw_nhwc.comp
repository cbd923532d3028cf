#version 450
#extension GL_EXT_control_flow_attributes : require
// Depthwise 2D convolution, channels-last: every channel convolved with its own kernel,
//   out[b][y][x][c] = act(sum_{ky,kx} in[b][y*stride+ky-pad][x*stride+kx-pad][c] * w[ky][kx][c]
//                         + bias[c])
// with zero outside the input (as `F.conv2d(x, w, groups=c)`). One invocation computes one
// quad of channels (so c must be a multiple of 4) of a cell of neighbouring output pixels,
// cell_w columns × cell_h rows (`Conv2dDwShape::cell`); x of the grid walks the channel quads
// (neighbouring invocations read neighbouring bytes), y the cells (batch × ⌈outh / cell_h⌉ ×
// ⌈outw / cell_w⌉). Neighbouring outputs share input columns and rows: a 3×3 kernel of stride 1
// or 2 (MobileNet's) loads its 9 weights once and then, an input row at a time, the row's
// (cell_w - 1)·stride + 3 columns once for every output of the cell that reads them, each row's
// loads issued before its multiplies. Other kernels and strides take cells of one pixel, a tap
// at a time. There is no shared-memory tile: the caches serve what neighbouring cells share,
// and the kernel is bound by the bytes it moves, not by arithmetic. Sums run in the variant's
// arithmetic precision (fp16 in fp16pa / fp16sa), fp32 otherwise.
layout (constant_id = 0) const int bias_term = 0;
// 0 none, 1 relu, 2 leaky relu (slope in the push constants), 3 sigmoid, 4 GELU (erf form),
// 5 SiLU: the GEMM's numbering
layout (constant_id = 1) const int activation = 0;
// The cell's columns and rows: they size the accumulators and the unrolled loops, so they are
// the pipeline's constants, not push constants.
layout (constant_id = 2) const int cell_w = 4;
layout (constant_id = 3) const int cell_h = 2;

layout (local_size_x = 16, local_size_y = 8, local_size_z = 1) in;

layout (binding = 0) readonly buffer in_blob { sfpvec4 in_data[]; };
layout (binding = 1) readonly buffer w_blob { sfpvec4 w_data[]; };
layout (binding = 2) readonly buffer bias_blob { sfpvec4 bias_data[]; };
layout (binding = 3) writeonly buffer out_blob { sfpvec4 out_data[]; };

// The cells (the grid's y); the input size, the output size, the kernel size, the stride, the
// zero padding, leaky relu's slope.
layout (push_constant) uniform parameter {
    int cells; int h; int w; int c; int outh; int outw; int kh; int kw; int stride; int pad;
    float slope;
} p;

// Input columns a 3×3 row of cell_w outputs reads at stride 2.
const int COLS = 2 * (cell_w - 1) + 3;

#include "unary_math.glsl"

afpvec4 activate(afpvec4 v)
{
    if (activation == 1) return max(v, afpvec4(0));
    if (activation == 2) return mix(v * afp(p.slope), v, greaterThan(v, afpvec4(0)));
    // sigmoid in fp32: exp overflows fp16 for |x| > 11
    if (activation == 3) return afpvec4(1.0 / (1.0 + exp(-vec4(v))));
    // GELU and SiLU in fp32 too (unary_math.glsl, as the GEMM's epilogue)
    if (activation == 4) return afpvec4(um_gelu(vec4(v)));
    if (activation == 5) return afpvec4(um_silu(vec4(v)));
    return v;
}

// The input quad at (row start `row`, column ix) of channel quad cq, zero outside the image.
afpvec4 input_at(int row, int ix, int cq, int quads)
{
    return ix >= 0 && ix < p.w ? buffer_ld4(in_data, (row + ix) * quads + cq) : afpvec4(0);
}

// The cell's sums (a global: an array sized by specialization constants is no function
// parameter); constant indices once unrolled keep them in registers.
afpvec4 acc[cell_h * cell_w];

// A 3×3 kernel at stride S over the cell: its 9 weights loaded once, then an input row at a
// time the row's (cell_w - 1)·S + 3 columns, each output row's taps from registers.
void taps3(int b, int y0, int x0, int cq, int quads, const int S)
{
    afpvec4 k[9];
    [[unroll]] for (int t = 0; t < 9; t++) k[t] = buffer_ld4(w_data, t * quads + cq);
    [[unroll]] for (int r = 0; r < (cell_h - 1) * S + 3; r++)
    {
        const int iy = y0 + r;
        if (iy < 0 || iy >= p.h) continue;
        const int row = (b * p.h + iy) * p.w;
        afpvec4 col[COLS];
        [[unroll]] for (int c = 0; c < (cell_w - 1) * S + 3; c++)
            col[c] = input_at(row, x0 + c, cq, quads);
        [[unroll]] for (int oy = 0; oy < cell_h; oy++)
        {
            const int ky = r - oy * S;
            if (ky < 0 || ky >= 3) continue;
            [[unroll]] for (int px = 0; px < cell_w; px++)
                [[unroll]] for (int kx = 0; kx < 3; kx++)
                    acc[oy * cell_w + px] += col[px * S + kx] * k[ky * 3 + kx];
        }
    }
}

// Any kernel and stride, one output pixel, a tap at a time.
afpvec4 taps(afpvec4 sum, int b, int y0, int x0, int cq, int quads)
{
    for (int ky = 0; ky < p.kh; ky++)
    {
        const int iy = y0 + ky;
        if (iy < 0 || iy >= p.h) continue;
        const int row = (b * p.h + iy) * p.w;
        for (int kx = 0; kx < p.kw; kx++)
        {
            const afpvec4 k = buffer_ld4(w_data, (ky * p.kw + kx) * quads + cq);
            sum += input_at(row, x0 + kx, cq, quads) * k;
        }
    }
    return sum;
}

void main()
{
    const int cq = int(gl_GlobalInvocationID.x);
    const int cell = int(gl_GlobalInvocationID.y);
    const int quads = p.c / 4;
    if (cq >= quads || cell >= p.cells) return;
    const int per_row = (p.outw + cell_w - 1) / cell_w, row_cells = (p.outh + cell_h - 1) / cell_h;
    const int x = cell % per_row * cell_w, y = (cell / per_row) % row_cells * cell_h;
    const int b = cell / (per_row * row_cells);
    const int y0 = y * p.stride - p.pad, x0 = x * p.stride - p.pad;
    const afpvec4 start = bias_term == 1 ? buffer_ld4(bias_data, cq) : afpvec4(0);
    [[unroll]] for (int i = 0; i < cell_h * cell_w; i++) acc[i] = start;
    // Cells of more than one pixel are for 3×3 kernels of stride 1 or 2 only
    // (`Conv2dDwShape::cell`): deciding on the constants leaves one path in each pipeline.
    if (cell_w * cell_h == 1)
        acc[0] = taps(start, b, y0, x0, cq, quads);
    else if (p.stride == 1)
        taps3(b, y0, x0, cq, quads, 1);
    else
        taps3(b, y0, x0, cq, quads, 2);
    [[unroll]] for (int oy = 0; oy < cell_h; oy++)
        [[unroll]] for (int px = 0; px < cell_w; px++)
            if (y + oy < p.outh && x + px < p.outw)
            {
                const int at = ((b * p.outh + y + oy) * p.outw + x + px) * quads + cq;
                buffer_st4(out_data, at, activate(acc[oy * cell_w + px]));
            }
}
