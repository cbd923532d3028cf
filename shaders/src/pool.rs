//! Pooling, channels-last: [`pool2d`] and [`pool2d4`] (max or average over windows,
//! [`Pool2dShape`]) and
//! [`global_avg_pool`] / [`global_avg_pool4`] (the mean over every pixel, [`GlobalPoolShape`]).

vkprism::compute_shader! {
    /// The window pools, sharing [`pool2d`](crate::pool2d)'s constants.
    pub mod pool2d_kernels,
    shaders: {
    /// Max (`op` 0) or average (`op` 1) pooling of x `[batch, h, w, c]` into y `[batch, outh,
    /// outw, c]` over windows of kh × kw, stride (sh, sw), zero padding (ph, pw); average
    /// divides by kh · kw (padding counted, PyTorch's default `count_include_pad`), max ignores
    /// the padding. One output per invocation, any grid covers them ([`Pool2dShape::grid`](crate::Pool2dShape::grid)).
    /// Variants `fp32`, `fp16s`, `fp16sa`, `bf16s`.
        pool2d: {
            path: "pool2d.comp",
            define: [("POOL_VEC4", "0")],
            variants: [fp32, fp16s, fp16sa, bf16s],
        },
    /// As [`pool2d`](crate::pool2d), four channels per invocation (c a multiple of 4; the push
    /// constant `c` counts quads: [`Pool2dShape::push_in`](crate::Pool2dShape::push_in)). Same
    /// variants.
        pool2d4: {
            path: "pool2d.comp",
            define: [("POOL_VEC4", "1")],
            variants: [fp32, fp16s, fp16sa, bf16s],
            share: [pool2d::SpecConstants, pool2d::PushConstants],
        },
    },
}

pub use pool2d_kernels::{pool2d, pool2d4};

vkprism::compute_shader! {
    /// The global average pools, sharing [`global_avg_pool`](crate::global_avg_pool)'s push constants.
    pub mod global_pool_kernels,
    shaders: {
    /// The mean over the pixels of x `[batch, hw, c]` per channel into y `[batch, c]`, one
    /// channel per invocation along x, the pixels split over the workgroup's y. Push constants
    /// `batch`, `hw`, `c`; grid and workgroup from [`GlobalPoolShape`](crate::GlobalPoolShape). Variants `fp32`,
    /// `fp16s`, `fp16sa`, `bf16s`.
        global_avg_pool: {
            path: "global_avg_pool.comp",
            define: [("POOL_VEC4", "0")],
            variants: [fp32, fp16s, fp16sa, bf16s],
        },
    /// As [`global_avg_pool`](crate::global_avg_pool), four channels per invocation (c a multiple of 4; the push
    /// constant `c` counts vec4s). Variants `fp32`, `fp16s`, `fp16sa`, `bf16s`.
        global_avg_pool4: {
            path: "global_avg_pool.comp",
            define: [("POOL_VEC4", "1")],
            variants: [fp32, fp16s, fp16sa, bf16s],
            share: [global_avg_pool::PushConstants],
        },
    },
}

pub use global_pool_kernels::{global_avg_pool, global_avg_pool4};

/// Invocations per workgroup of [`pool2d`].
const LOCAL: usize = 256;

/// The window of a [`pool2d`] over a channels-last image batch.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Pool2dShape {
    /// Images.
    pub batch: usize,
    /// Input height.
    pub h: usize,
    /// Input width.
    pub w: usize,
    /// Channels.
    pub c: usize,
    /// Window (kh, kw).
    pub kernel: (usize, usize),
    /// Stride (sh, sw).
    pub stride: (usize, usize),
    /// Zero padding (ph, pw) on each side.
    pub padding: (usize, usize),
}

impl Pool2dShape {
    /// Output height: `(h + 2 ph - kh) / sh + 1`, rounded down.
    pub fn outh(&self) -> usize {
        (self.h + 2 * self.padding.0 - self.kernel.0) / self.stride.0 + 1
    }
    /// Output width: `(w + 2 pw - kw) / sw + 1`, rounded down.
    pub fn outw(&self) -> usize {
        (self.w + 2 * self.padding.1 - self.kernel.1) / self.stride.1 + 1
    }
    /// y's shape, `[batch, outh, outw, c]`.
    pub fn out_shape(&self) -> [usize; 4] {
        [self.batch, self.outh(), self.outw(), self.c]
    }
    /// The workgroup.
    pub fn local_size(&self) -> [u32; 3] {
        [LOCAL as u32, 1, 1]
    }
    /// Whether [`pool2d4`] takes it (c a multiple of 4).
    pub fn vec4(&self) -> bool {
        self.c.is_multiple_of(4)
    }
    /// The invocation grid of [`pool2d`]: one per output, at most 65,535 workgroups (each
    /// invocation then takes several outputs).
    pub fn grid(&self) -> [u32; 3] {
        self.grid_in(false)
    }
    /// The invocation grid of [`pool2d4`] (`quads`) or [`pool2d`]: one per quad of outputs or
    /// per output, at most 65,535 workgroups.
    pub fn grid_in(&self, quads: bool) -> [u32; 3] {
        let outs: usize = self.out_shape().iter().product();
        let units = if quads { outs / 4 } else { outs };
        [(units.div_ceil(LOCAL).clamp(1, 65535) * LOCAL) as u32, 1, 1]
    }
    /// The push constants of [`pool2d`].
    pub fn push(&self) -> pool2d::PushConstants {
        self.push_in(false)
    }
    /// The push constants of [`pool2d4`] (`quads`: `c` in quads) or [`pool2d`].
    pub fn push_in(&self, quads: bool) -> pool2d::PushConstants {
        let i = |v: usize| v as i32;
        pool2d::PushConstants {
            batch: i(self.batch),
            h: i(self.h),
            w: i(self.w),
            c: i(if quads { self.c / 4 } else { self.c }),
            outh: i(self.outh()),
            outw: i(self.outw()),
            kh: i(self.kernel.0),
            kw: i(self.kernel.1),
            sh: i(self.stride.0),
            sw: i(self.stride.1),
            ph: i(self.padding.0),
            pw: i(self.padding.1),
        }
    }
}

/// A global average pool's shape: `[batch, hw, c]` into `[batch, c]`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct GlobalPoolShape {
    /// Images (at most 65,535: one per workgroup along z).
    pub batch: usize,
    /// Pixels per image.
    pub hw: usize,
    /// Channels.
    pub c: usize,
}

impl GlobalPoolShape {
    /// Whether [`global_avg_pool4`] takes it (c a multiple of 4).
    pub fn vec4(&self) -> bool {
        self.c.is_multiple_of(4)
    }
    /// Channel units one invocation each: vec4s or channels.
    fn units(&self, vec4: bool) -> usize {
        if vec4 {
            self.c / 4
        } else {
            self.c
        }
    }
    /// The workgroup: up to 16 slices of the pixels along y (fewer for small images), the
    /// rest of 256 invocations along the channels.
    pub fn local_size(&self) -> [u32; 3] {
        let ly = self.hw.next_power_of_two().clamp(1, 16);
        [(256 / ly) as u32, ly as u32, 1]
    }
    /// The invocation grid for workgroup `local`: the channel units along x, one workgroup
    /// along y, the images along z.
    pub fn grid(&self, local: [u32; 3], vec4: bool) -> [u32; 3] {
        [self.units(vec4) as u32, local[1], self.batch as u32]
    }
    /// The push constants (`c` in vec4s where `vec4`).
    pub fn push(&self, vec4: bool) -> global_avg_pool::PushConstants {
        global_avg_pool::PushConstants {
            batch: self.batch as i32,
            hw: self.hw as i32,
            c: self.units(vec4) as i32,
        }
    }
}
