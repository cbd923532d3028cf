//! Depthwise convolution, channels-last: the kernel and the shape that fills its push constants
//! and grid.

vkprism::compute_shader! {
    /// Depthwise 2D convolution, channels-last (as `F.conv2d(x, w, groups=c)`): NHWC input and
    /// output with the same `c`, weights `[kh][kw][c]`, bias per channel, stride and zero
    /// padding, `out = act(conv(in, w) + bias)`. `c` must be a multiple of 4. Specialization
    /// constants ([`Conv2dDwShape::spec`](crate::Conv2dDwShape::spec) fills them): `bias_term`
    /// (add `bias[c]`), `activation` (the GEMM's: 0 none, 1 relu, 2 leaky relu with `slope`, 3
    /// sigmoid, 4 GELU (erf form), 5 SiLU), `cell_w` × `cell_h`, the output pixels an
    /// invocation computes ([`Conv2dDwShape::cell`](crate::Conv2dDwShape::cell)). Push
    /// constants and grid from [`Conv2dDwShape`](crate::Conv2dDwShape): an invocation computes
    /// one channel quad of a cell; the workgroup is 16 channel quads × 8 cells unless
    /// `pipeline` is given another ([`Conv2dDwShape::local_size`](crate::Conv2dDwShape::local_size)
    /// fits it to `c`). No shared memory, so no local-memory axis.
    pub mod conv2d_dw_nhwc,
    path: "conv2d_dw_nhwc.comp",
}

/// The shape of a [`conv2d_dw_nhwc`]: NHWC input `batch × h × w × c`, weights `kh × kw × c`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Conv2dDwShape {
    /// Images.
    pub batch: usize,
    /// Input height.
    pub h: usize,
    /// Input width.
    pub w: usize,
    /// Channels in and out, a multiple of 4.
    pub c: usize,
    /// Kernel height.
    pub kh: usize,
    /// Kernel width.
    pub kw: usize,
    /// Stride along both axes.
    pub stride: usize,
    /// Zero padding on every side.
    pub pad: usize,
}

impl Conv2dDwShape {
    /// The output pixels an invocation computes, `[columns, rows]`: 3×3 kernels, which read
    /// the input columns and rows their neighbouring outputs share once, take cells of 4 × 2 at
    /// stride 1 and 2 × 2 at stride 2 (the sizes measured fastest in fp16 arithmetic: wider
    /// cells at stride 2 hold more registers than the shared columns save); other kernels and
    /// strides 1 × 1.
    pub fn cell(&self) -> [usize; 2] {
        match (self.kh, self.kw, self.stride) {
            (3, 3, 1) => [4, 2],
            (3, 3, 2) => [2, 2],
            _ => [1, 1],
        }
    }

    /// The specialization constants for this shape: its [`Conv2dDwShape::cell`] (which sizes
    /// the kernel's accumulators), with a bias added where `bias` is true and `activation` (the
    /// kernel's numbering) applied last.
    pub fn spec(&self, bias: bool, activation: i32) -> conv2d_dw_nhwc::SpecConstants {
        let [w, h] = self.cell();
        conv2d_dw_nhwc::SpecConstants {
            bias_term: bias as i32,
            activation,
            cell_w: w as i32,
            cell_h: h as i32,
        }
    }

    /// Output height.
    pub fn outh(&self) -> usize {
        (self.h + 2 * self.pad - self.kh) / self.stride + 1
    }

    /// Output width.
    pub fn outw(&self) -> usize {
        (self.w + 2 * self.pad - self.kw) / self.stride + 1
    }

    /// Output pixels over the batch.
    pub fn pixels(&self) -> usize {
        self.batch * self.outh() * self.outw()
    }

    /// The invocations' [`Conv2dDwShape::cell`]s over the batch (the grid's y).
    pub fn cells(&self) -> usize {
        self.batch * self.outh().div_ceil(self.cell()[1]) * self.outw().div_ceil(self.cell()[0])
    }

    /// Multiply-adds times two: `2 · batch · outh · outw · c · kh · kw` (padding taps included,
    /// as frameworks count them).
    pub fn flops(&self) -> f64 {
        2.0 * (self.pixels() * self.c * self.kh * self.kw) as f64
    }

    /// The push constants for this shape, with leaky relu's `slope`.
    pub fn push(&self, slope: f32) -> conv2d_dw_nhwc::PushConstants {
        let i = |v: usize| v as i32;
        conv2d_dw_nhwc::PushConstants {
            cells: i(self.cells()),
            h: i(self.h),
            w: i(self.w),
            c: i(self.c),
            outh: i(self.outh()),
            outw: i(self.outw()),
            kh: i(self.kh),
            kw: i(self.kw),
            stride: i(self.stride),
            pad: i(self.pad),
            slope,
        }
    }

    /// The invocation grid: one invocation per channel quad (x) and cell (y). Vulkan
    /// guarantees 65535 workgroups along y, so up to 524280 cells with the default workgroup
    /// (8 cells per workgroup), more with [`Conv2dDwShape::local_size`]'s.
    pub fn grid(&self) -> [u32; 3] {
        [(self.c / 4) as u32, self.cells() as u32, 1]
    }

    /// A 128-invocation workgroup that wastes few invocations on narrow layers: the channel
    /// quads rounded up to a power of two (at most 16) along x, the rest along pixels.
    pub fn local_size(&self) -> [u32; 3] {
        let x = (self.c / 4).clamp(1, 16).next_power_of_two() as u32;
        [x, 128 / x, 1]
    }
}
