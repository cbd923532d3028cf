//! Convolutions other than the depthwise one: [`Conv2dShape`], the shape of
//! [`conv2d_nhwc`](crate::conv2d_nhwc) (an implicit GEMM, in `gemm_family.rs`), and [`conv2d`], the direct CHW
//! convolution.

use crate::conv2d_nhwc;
#[cfg(doc)]
use crate::conv2d_nhwc_split;

/// The shape of a channels-last convolution for [`conv2d_nhwc`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Conv2dShape {
    /// Images.
    pub batch: usize,
    /// Input height.
    pub h: usize,
    /// Input width.
    pub w: usize,
    /// Input channels, a multiple of 4.
    pub c: usize,
    /// Output channels, a multiple of 4.
    pub outc: usize,
    /// Kernel height.
    pub kh: usize,
    /// Kernel width.
    pub kw: usize,
    /// Stride, both directions.
    pub stride: usize,
    /// Zero padding on every side.
    pub pad: usize,
}

impl Conv2dShape {
    /// Output height.
    pub fn outh(&self) -> usize {
        (self.h + 2 * self.pad - self.kh) / self.stride + 1
    }
    /// Output width.
    pub fn outw(&self) -> usize {
        (self.w + 2 * self.pad - self.kw) / self.stride + 1
    }
    /// The GEMM's (M, N, K).
    pub fn gemm_mnk(&self) -> (usize, usize, usize) {
        (
            self.batch * self.outh() * self.outw(),
            self.outc,
            self.kh * self.kw * self.c,
        )
    }
    /// The push constants for this shape (also [`conv2d_nhwc_split`]'s: the same type).
    pub fn push(&self, alpha: f32, slope: f32) -> conv2d_nhwc::PushConstants {
        let (m, n, k) = self.gemm_mnk();
        let i = |v: usize| v as i32;
        conv2d_nhwc::PushConstants {
            M: i(m),
            N: i(n),
            K: i(k),
            alpha,
            slope,
            h: i(self.h),
            w: i(self.w),
            c: i(self.c),
            outh: i(self.outh()),
            outw: i(self.outw()),
            kh: i(self.kh),
            kw: i(self.kw),
            stride: i(self.stride),
            pad: i(self.pad),
        }
    }
}

vkprism::compute_shader! {
    /// `out[o][y][x] = bias[o] + sum_{c,ky,kx} w[o][c][ky][kx] * in[c][y*stride+ky-pad][x*stride+kx-pad]`
    /// (zero outside the input), CHW scalars, fp32 accumulation; the kernel size is a
    /// specialization constant (default 3). One invocation per output element.
    pub mod conv2d,
    src: r#"
#version 450
layout (constant_id = 0) const int ksize = 3;
layout (local_size_x = 8, local_size_y = 8, local_size_z = 1) in;
layout (binding = 0) readonly buffer in_blob { sfp in_data[]; };
layout (binding = 1) readonly buffer w_blob { sfp w_data[]; };
layout (binding = 2) readonly buffer b_blob { sfp b_data[]; };
layout (binding = 3) writeonly buffer out_blob { sfp out_data[]; };
layout (push_constant) uniform parameter { int c; int h; int w; int outc; int outh; int outw; int stride; int pad; } p;
void main() {
    const int x = int(gl_GlobalInvocationID.x);
    const int y = int(gl_GlobalInvocationID.y);
    const int o = int(gl_GlobalInvocationID.z);
    if (x >= p.outw || y >= p.outh || o >= p.outc) return;
    float acc = float(buffer_ld1(b_data, o));
    for (int c = 0; c < p.c; c++) {
        for (int ky = 0; ky < ksize; ky++) {
            const int iy = y * p.stride + ky - p.pad;
            if (iy < 0 || iy >= p.h) continue;
            for (int kx = 0; kx < ksize; kx++) {
                const int ix = x * p.stride + kx - p.pad;
                if (ix < 0 || ix >= p.w) continue;
                acc += float(buffer_ld1(in_data, (c * p.h + iy) * p.w + ix))
                     * float(buffer_ld1(w_data, ((o * p.c + c) * ksize + ky) * ksize + kx));
            }
        }
    }
    buffer_st1(out_data, (o * p.outh + y) * p.outw + x, afp(acc));
}
"#,
}
