//! The stem's two layouts ([`StemLayout`]): the 7×7 stride-2 convolution over the image's
//! pixels, or the same convolution over 2×2 blocks of pixels as a 4×4 stride-1 one. Each
//! layout says what the device's input is, writes the image into it, and folds the stem's
//! weights for it.

use super::fold::FoldedConv;
use vkprism::{Context, TensorFormat};
use vkprism_shaders::{Conv2dShape, Ops};

/// Channels of one pixel on the device: RGB and a zero, so a pixel is one quad.
const PIXEL_CHANNELS: usize = 4;
/// Pixels a block holds along each axis.
const BLOCK: usize = 2;
/// Channels of one block: its 2 × 2 pixels' quads, row by row.
const BLOCK_CHANNELS: usize = BLOCK * BLOCK * PIXEL_CHANNELS;
/// The stem's kernel, stride and padding (torchvision's).
const KERNEL: usize = 7;
const STRIDE: usize = 2;
const PAD: usize = 3;
/// The block convolution's kernel: 4 blocks cover the 7 rows an output reads.
const BLOCK_KERNEL: usize = 4;
/// Blocks of zeros before the image: the first output reads rows -3 to 3, which start in
/// block -2 once block b holds rows 2b - 4 and 2b - 3.
const LEAD: usize = 2;

/// How the stem's convolution sees the image.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum StemLayout {
    /// `[batch, h, w, 4]`, RGB and a zero: the 7×7 stride-2 convolution as torchvision
    /// writes it. Its gather reads one pixel's quad at a time.
    Pixels,
    /// Space to depth: `[batch, outh + 3, outw + 3, 16]`, block `(i, j)` holding the 2 × 2
    /// pixels from row `2i - 4` and column `2j - 4` (zero outside the image), each pixel's
    /// quad in turn; the stem a 4×4 stride-1 convolution without padding whose weights put
    /// each 7×7 tap where its pixel lies in the blocks (zero for the taps past the kernel).
    /// The same sums with 16 channels a tap: the convolution reads octets of one tap, where
    /// the cooperative-matrix kernel's loads are widest (BENCHMARKS.md: ResNet-50).
    Blocks,
}

impl StemLayout {
    /// [`StemLayout::Blocks`] where the device's convolution in `format` runs on cooperative
    /// matrices (their octet loads pay for the zero taps), else [`StemLayout::Pixels`] (also
    /// where the device runs no convolution in `format`: the model's first pass says so).
    pub fn for_device(ctx: &Context, format: TensorFormat) -> StemLayout {
        match Ops::new(ctx).conv2d_variant(format) {
            Ok(v) if v.coopmat == Some(true) => StemLayout::Blocks,
            _ => StemLayout::Pixels,
        }
    }

    /// The device input's shape for images `[batch, h, w, 3]`.
    pub fn input_shape(self, [batch, h, w, _]: [usize; 4]) -> [usize; 4] {
        match self {
            StemLayout::Pixels => [batch, h, w, PIXEL_CHANNELS],
            StemLayout::Blocks => [batch, blocks(h), blocks(w), BLOCK_CHANNELS],
        }
    }

    /// The stem's convolution in this layout over images `[batch, h, w, 3]`, to `outc`
    /// channels.
    pub fn conv_shape(self, images: [usize; 4], outc: usize) -> Conv2dShape {
        let [batch, h, w, c] = self.input_shape(images);
        let (k, stride, pad) = match self {
            StemLayout::Pixels => (KERNEL, STRIDE, PAD),
            StemLayout::Blocks => (BLOCK_KERNEL, 1, 0),
        };
        Conv2dShape {
            batch,
            h,
            w,
            c,
            outc,
            kh: k,
            kw: k,
            stride,
            pad,
        }
    }

    /// Writes `images` (`[batch, h, w, 3]`, `shape`) into `out`, which holds this layout's
    /// input for `shape` already or only zeros: only the image's values are written.
    fn write_images(self, images: &[f32], shape: [usize; 4], out: &mut [f32]) {
        if self == StemLayout::Pixels {
            for (px, to) in images
                .chunks_exact(3)
                .zip(out.chunks_exact_mut(PIXEL_CHANNELS))
            {
                to[..3].copy_from_slice(px);
            }
            return;
        }
        // A row at a time: the block row and the pixel's row in it are the row's, and the
        // columns step through the blocks without dividing.
        let [_, h, w, _] = shape;
        let row_len = blocks(w) * BLOCK_CHANNELS;
        for (r, row) in images.chunks_exact(w * 3).enumerate() {
            let (image, y) = (r / h, r % h + BLOCK * LEAD);
            let block_row = (image * blocks(h) + y / BLOCK) * row_len;
            let start = block_row + (y % BLOCK) * BLOCK * PIXEL_CHANNELS;
            for (x, px) in row.chunks_exact(3).enumerate() {
                let x = x + BLOCK * LEAD;
                let at = start + (x / BLOCK) * BLOCK_CHANNELS + (x % BLOCK) * PIXEL_CHANNELS;
                out[at..at + 3].copy_from_slice(px);
            }
        }
    }

    /// The folded stem (`[7][7][4][outc]`, stride 2, padding 3) as this layout convolves it.
    pub(crate) fn fold(self, stem: FoldedConv) -> FoldedConv {
        match self {
            StemLayout::Pixels => stem,
            StemLayout::Blocks => blocks_stem(stem),
        }
    }
}

/// The device input of a [`StemLayout`], kept between forward passes (a batch's input is
/// megabytes, whose pages a fresh buffer faults in on every pass) with the image shape it was
/// laid out for: its zeros (padding, the fourth channel) stay where they are while the shape
/// does, and the buffer starts from zeros when it changes (two image sizes can share a layout's
/// shape, the larger's last pixels lying where the smaller's padding is).
pub(crate) struct StemInput {
    layout: StemLayout,
    /// The images' shape `values` holds, if any.
    shape: Option<[usize; 4]>,
    values: Vec<f32>,
}

impl StemInput {
    pub(crate) fn new(layout: StemLayout) -> StemInput {
        StemInput {
            layout,
            shape: None,
            values: Vec::new(),
        }
    }

    pub(crate) fn layout(&self) -> StemLayout {
        self.layout
    }

    /// `images` (`[batch, h, w, 3]`, `shape`) in the layout, as the device takes them.
    pub(crate) fn write(&mut self, images: &[f32], shape: [usize; 4]) -> &[f32] {
        if self.shape != Some(shape) {
            self.values.clear();
            self.values
                .resize(self.layout.input_shape(shape).iter().product(), 0.0);
            self.shape = Some(shape);
        }
        self.layout.write_images(images, shape, &mut self.values);
        &self.values
    }
}

/// Blocks along an axis of `n` pixels: the stem's outputs along it, plus the 3 more its 4×4
/// kernel spans.
fn blocks(n: usize) -> usize {
    (n + 2 * PAD - KERNEL) / STRIDE + 1 + BLOCK_KERNEL - 1
}

/// The stem's weights for [`StemLayout::Blocks`]: tap (ty, tx) of the 4×4 kernel, pixel (dy,
/// dx) of its block, holds the 7×7 kernel's tap (2·ty + dy - 1, 2·tx + dx - 1) (block ty + i
/// of output i holds rows 2i - 4 + 2·ty + dy, and output i reads row 2i - 3 + ky), zero where
/// that is outside the 7×7 kernel.
fn blocks_stem(stem: FoldedConv) -> FoldedConv {
    assert_eq!(
        (stem.k, stem.c, stem.stride, stem.pad),
        (KERNEL, PIXEL_CHANNELS, STRIDE, PAD),
        "the stem is torchvision's"
    );
    let outc = stem.outc;
    let mut weight = vec![0.0; BLOCK_KERNEL * BLOCK_KERNEL * BLOCK_CHANNELS * outc];
    for (ty, tx, dy, dx) in taps() {
        let (ky, kx) = (2 * ty + dy, 2 * tx + dx);
        if ky == 0 || kx == 0 || ky > KERNEL || kx > KERNEL {
            continue;
        }
        let from = ((ky - 1) * KERNEL + kx - 1) * PIXEL_CHANNELS * outc;
        let tap = (ty * BLOCK_KERNEL + tx) * BLOCK_CHANNELS;
        let to = (tap + (dy * BLOCK + dx) * PIXEL_CHANNELS) * outc;
        let len = PIXEL_CHANNELS * outc;
        weight[to..to + len].copy_from_slice(&stem.weight[from..from + len]);
    }
    FoldedConv {
        k: BLOCK_KERNEL,
        c: BLOCK_CHANNELS,
        stride: 1,
        pad: 0,
        weight,
        ..stem
    }
}

/// Every (ty, tx, dy, dx): a tap of the 4×4 kernel and a pixel of its block.
fn taps() -> impl Iterator<Item = (usize, usize, usize, usize)> {
    let r = |n| 0..n;
    r(BLOCK_KERNEL).flat_map(move |ty| {
        r(BLOCK_KERNEL).flat_map(move |tx| {
            r(BLOCK).flat_map(move |dy| r(BLOCK).map(move |dx| (ty, tx, dy, dx)))
        })
    })
}
