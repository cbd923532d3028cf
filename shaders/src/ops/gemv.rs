//! The matrix-vector products of decoding: [`Ops::gemv`] on float weights and
//! [`Ops::gemv_int8`] on int8 weights with a scale per output channel, and their `_with` forms
//! that fuse what surrounds a decoder's projections ([`Gemv`]), and [`Ops::gemv_rope_qkv`] /
//! [`Ops::gemv_int8_rope_qkv`], a decoder's query/key/value projection rotated into its KV
//! cache. Each checks its operands and records one dispatch of the wide kernel ([`gemv`],
//! [`gemv_int8`]: 16-byte loads) where K is a multiple of the chunk, of the scalar one
//! otherwise.

use super::check::{
    float_format, kv_cache_shape, not_aliased, placed_apart, position_buffer, same_format, shape_is,
};
use super::{pipeline, recorded, Activation, OpError, Ops, Rope, RopeStyle};
use crate::{gemv, gemv_int8, gemv_int8_scalar, gemv_scalar, GemvShape, GEMV_MAX_BATCH};
use std::sync::Arc;
use vkprism::{Bindings, CommandList, Int8Mode, Kernel, LoadedKernel, Tensor, TensorFormat};

/// What a GEMV fuses around `W · x`, in the order applied: x RMS-normalized first
/// (`rms_input`), the activation, the gated pairs, the result added to y (`accumulate`). Built
/// with [`Gemv::new`] and the `with_*` setters; the default fuses nothing.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Gemv {
    /// x replaced by `x / sqrt(mean(x²) + eps)` (RMS norm without its weight: fold the weight
    /// into W's columns, `W[n][k] · g[k]`), where `Some(eps)`.
    pub rms_input: Option<f32>,
    /// Applied to each output (to the gate, where `gated`).
    pub activation: Activation,
    /// W's rows come in pairs, 2i the gate and 2i + 1 the up projection of output i:
    /// `y[i] = act(gate) · up`, y of N/2 columns (a SwiGLU MLP in one pass over its weights;
    /// interleave the two weights' rows on the host).
    pub gated: bool,
    /// The result added to y's values (`y += …`, a residual connection).
    pub accumulate: bool,
}

impl Gemv {
    /// Nothing fused: `y = W · x (+ bias)`.
    pub fn new() -> Gemv {
        Gemv::default()
    }
    /// This product of x RMS-normalized with `eps`.
    pub fn with_rms_input(mut self, eps: f32) -> Gemv {
        self.rms_input = Some(eps);
        self
    }
    /// This product with `activation` applied.
    pub fn with_activation(mut self, activation: Activation) -> Gemv {
        self.activation = activation;
        self
    }
    /// This product over gate/up row pairs (`on`).
    pub fn with_gated(mut self, on: bool) -> Gemv {
        self.gated = on;
        self
    }
    /// This product added to y (`on`).
    pub fn with_accumulate(mut self, on: bool) -> Gemv {
        self.accumulate = on;
        self
    }

    /// The kernels' constants for shape `s`, with a bias or not.
    fn spec(&self, s: &GemvShape, bias: bool) -> gemv::SpecConstants {
        gemv::SpecConstants {
            activation: self.activation.code().0,
            gated: self.gated as i32,
            accumulate: self.accumulate as i32,
            rms_input: self.rms_input.is_some() as i32,
            ..s.spec(bias)
        }
    }

    /// The kernels' push constants for shape `s`.
    fn push(&self, s: &GemvShape) -> gemv::PushConstants {
        gemv::PushConstants {
            eps: self.rms_input.unwrap_or(0.0),
            slope: self.activation.code().1,
            ..s.push()
        }
    }

    /// A norm's epsilon the kernel can take: finite, not negative.
    fn check_eps(&self, op: &'static str) -> Result<(), OpError> {
        match self.rms_input {
            Some(eps) if !(eps.is_finite() && eps >= 0.0) => Err(OpError::Unsupported {
                op,
                why: format!("the input norm's epsilon {eps} is not a finite number ≥ 0"),
            }),
            _ => Ok(()),
        }
    }

    /// y's shape for x's rows `y_shape` (N last): N/2 where gated, or the located refusal of
    /// an odd N or a bad epsilon.
    fn output_shape(
        &self,
        op: &'static str,
        mut y_shape: Vec<usize>,
    ) -> Result<Vec<usize>, OpError> {
        self.check_eps(op)?;
        if !self.gated {
            return Ok(y_shape);
        }
        let n = y_shape.last_mut().expect("y has N last");
        if !n.is_multiple_of(2) {
            return Err(OpError::Unsupported {
                op,
                why: format!("a gated product needs gate/up row pairs: `w` has {n} rows, odd"),
            });
        }
        *n /= 2;
        Ok(y_shape)
    }
}

/// What bindings 4 to 6 of the GEMV kernels hold: the KV cache the `rope_qkv` epilogue writes
/// and the position it reads.
struct Placement<'a> {
    k: &'a Tensor,
    v: &'a Tensor,
    position: &'a Tensor,
}

/// `gemv_rope_qkv`'s operands checked against W's rows: `[hq, hkv, d, rows]`.
fn check_rope_qkv(
    op_name: &'static str,
    s: &GemvShape,
    q: &Tensor,
    [k_cache, v_cache]: [&Tensor; 2],
    op: &Gemv,
    rope: &Rope,
) -> Result<[usize; 4], OpError> {
    let unsupported = |why: String| Err(OpError::Unsupported { op: op_name, why });
    if s.batch != 1 {
        return unsupported(format!(
            "{} rows of x: the rotation places one token",
            s.batch
        ));
    }
    if op.gated || op.accumulate || op.activation != Activation::None {
        return unsupported("only the input's RMS norm fuses with the rotation".into());
    }
    op.check_eps(op_name)?;
    if rope.style != RopeStyle::Interleaved {
        return unsupported(
            "W's rotation pairs must sit side by side (RopeStyle::Interleaved)".into(),
        );
    }
    let [rows, hkv, d] = kv_cache_shape(op_name, k_cache, v_cache)?;
    if d == 0 || !d.is_multiple_of(2) || hkv == 0 {
        return unsupported(format!(
            "a head of {d} values over {hkv} key heads: the pairs need an even head"
        ));
    }
    let hq = q.len() / d;
    if hq * d != q.len() || s.n != (hq + 2 * hkv) * d {
        return Err(OpError::Shape {
            op: op_name,
            operand: "w",
            got: vec![s.n, s.k],
            want: format!(
                "[(hq + 2·{hkv}) · {d}, K] with q's {} values hq · {d}",
                q.len()
            ),
        });
    }
    if rope.position_offset > i32::MAX as usize / 2 {
        return unsupported(format!(
            "position {} is out of the kernels' range",
            rope.position_offset
        ));
    }
    if let Some(why) = rope.frequencies().problem() {
        return unsupported(why);
    }
    Ok([hq, hkv, d, rows])
}

/// The `rope_qkv` epilogue's `bias` and outputs (q and the caches) in `format`, the bias one
/// value a row of W, the outputs apart from every one of `inputs`.
fn check_placed(
    op: &'static str,
    s: &GemvShape,
    (format, bias): (TensorFormat, Option<&Tensor>),
    outputs: [&Tensor; 3],
    inputs: &[(&'static str, Option<&Tensor>)],
) -> Result<(), OpError> {
    same_format(op, "bias", bias, format)?;
    for (name, t) in ["q", "k_cache", "v_cache"].into_iter().zip(outputs) {
        same_format(op, name, Some(t), format)?;
    }
    bias_shape(op, s, bias)?;
    placed_apart(op, outputs, inputs)
}

/// A bias of one value a row of W (`s.n`), where given.
fn bias_shape(op: &'static str, s: &GemvShape, bias: Option<&Tensor>) -> Result<(), OpError> {
    match bias {
        Some(b) => shape_is(op, "bias", b, &[s.n], "[N]: one value a row of w"),
        None => Ok(()),
    }
}

/// The GEMV kernels' constants for the `rope_qkv` epilogue over W's heads `[hq, hkv, d, rows]`,
/// the position pushed, plus the one in `position` where given.
fn rope_constants(
    op: &Gemv,
    s: &GemvShape,
    rope: &Rope,
    [hq, hkv, d, rows]: [usize; 4],
    bias: bool,
    position: Option<&Tensor>,
) -> (gemv::SpecConstants, gemv::PushConstants) {
    let spec = gemv::SpecConstants {
        rope_qkv: if position.is_some() { 2 } else { 1 },
        ..op.spec(s, bias)
    };
    let [log2_base, freq_factor, freq_low, freq_high] = rope.frequencies().pushed();
    let push = gemv::PushConstants {
        d: d as i32,
        hq: hq as i32,
        hkv: hkv as i32,
        rows: rows as i32,
        offset: rope.position_offset as i32,
        log2_base,
        freq_factor,
        freq_low,
        freq_high,
        ..op.push(s)
    };
    (spec, push)
}

/// An int8 weight `w` (I8, `[N, K]` as `s` holds) and its F32 `scales` `[N]`, or the located
/// refusal.
fn int8_weights(
    op: &'static str,
    s: &GemvShape,
    w: &Tensor,
    scales: &Tensor,
) -> Result<(), OpError> {
    shape_is(op, "scales", scales, &[s.n], "[N]")?;
    if w.format() != TensorFormat::I8 {
        return Err(OpError::Format {
            op,
            operand: "w",
            got: w.format(),
            want: "I8".into(),
        });
    }
    same_format(op, "scales", Some(scales), TensorFormat::F32)
}

/// The product's shape from W (`[N, K]`) and x (`[K]` or `[batch, K]`, batch 1 to 8), and y's
/// shape (x's rank, N for K).
fn gemv_shape(
    op: &'static str,
    w: &Tensor,
    x: &Tensor,
) -> Result<(GemvShape, Vec<usize>), OpError> {
    let [n, k] = *w.shape() else {
        return Err(OpError::Shape {
            op,
            operand: "w",
            got: w.shape().to_vec(),
            want: "[N, K] (a Linear layer's weight)".into(),
        });
    };
    let (batch, y_shape) = match *x.shape() {
        [xk] if xk == k => (1, vec![n]),
        [b, xk] if xk == k && (1..=GEMV_MAX_BATCH).contains(&b) => (b, vec![b, n]),
        _ => {
            return Err(OpError::Shape {
                op,
                operand: "x",
                got: x.shape().to_vec(),
                want: format!("[{k}] or [batch, {k}] with batch 1 to {GEMV_MAX_BATCH}"),
            })
        }
    };
    Ok((GemvShape { batch, n, k }, y_shape))
}

impl Ops {
    /// Records `y = W · x (+ bias)` into `list`: `w` `[N, K]` row-major (PyTorch's Linear
    /// weight), `x` `[K]` or `[batch, K]` (batch 1 to 8, each row a vector), `y` `[N]` or
    /// `[batch, N]` (x's rank), `bias` (optional) `[N]`; one float format (F32, F16 or Bf16),
    /// fp32 sums. `y` may not be another operand. Nothing is recorded when a check fails.
    pub fn gemv(
        &self,
        list: &mut CommandList,
        w: &Tensor,
        x: &Tensor,
        bias: Option<&Tensor>,
        y: &Tensor,
    ) -> Result<(), OpError> {
        self.gemv_with(list, w, x, bias, y, &Gemv::new())
    }

    /// [`Ops::gemv`] with `op` fused: y has N/2 columns where `op.gated`, and is read first
    /// where `op.accumulate`. Nothing is recorded when a check fails.
    pub fn gemv_with(
        &self,
        list: &mut CommandList,
        w: &Tensor,
        x: &Tensor,
        bias: Option<&Tensor>,
        y: &Tensor,
        op: &Gemv,
    ) -> Result<(), OpError> {
        const OP: &str = "gemv";
        let (s, y_shape) = gemv_shape(OP, w, x)?;
        let y_shape = op.output_shape(OP, y_shape)?;
        shape_is(OP, "y", y, &y_shape, "x's rows × N (N/2 gated)")?;
        bias_shape(OP, &s, bias)?;
        let format = float_format(OP, "w", w)?;
        for (name, t) in [("x", Some(x)), ("bias", bias), ("y", Some(y))] {
            same_format(OP, name, t, format)?;
        }
        not_aliased(
            OP,
            y,
            "y",
            &[("w", Some(w)), ("x", Some(x)), ("bias", bias)],
        )?;
        // Bindings 4 to 6 are the rotation's, unused here: y and a one-value I32 tensor bind.
        let place = Placement {
            k: y,
            v: y,
            position: self.unread_i32(OP)?,
        };
        let spec = op.spec(&s, bias.is_some());
        self.record_float_gemv(list, [w, x, y], bias, &s, (&spec, &op.push(&s)), &place)
    }

    /// Records a decoder step's fused query/key/value projection of one token, rotated and
    /// placed, into `list` (the `rope_qkv` epilogue of [`gemv`]): `w` `[(hq + 2·hkv) · d, K]`
    /// whose heads hold their rotation pairs side by side (rows 2j and 2j + 1 of a head are
    /// pair j: Llama's `rotate_half` weights with each head's rows i and i + d/2 interleaved,
    /// the same permutation applied to the columns of the output projection), `x` `[1, K]`;
    /// the query heads rotated into `q` `[1, hq, d]` (or `[hq, d]`), the key heads rotated and
    /// the value heads as they are into the row of the caches `k_cache`, `v_cache`
    /// `[rows, hkv, d]` at position `rope.position_offset` (plus the I32 value in `position`,
    /// `[1]`, where given: a recorded decode step replays at any position; one at or past
    /// `rows` then writes no key or value). `bias` (`[(hq + 2·hkv) · d]`, its rows permuted as
    /// w's) is added before the rotation where given (Qwen2's projections have one).
    /// `op.rms_input` normalizes x first; the other fusions are refused, and `rope.style` must
    /// be [`RopeStyle::Interleaved`]. One float format. Nothing is recorded when a check fails.
    #[allow(clippy::too_many_arguments)]
    pub fn gemv_rope_qkv(
        &self,
        list: &mut CommandList,
        w: &Tensor,
        bias: Option<&Tensor>,
        x: &Tensor,
        q: &Tensor,
        [k_cache, v_cache]: [&Tensor; 2],
        op: &Gemv,
        rope: &Rope,
        position: Option<&Tensor>,
    ) -> Result<(), OpError> {
        const OP: &str = "gemv_rope_qkv";
        let (s, _) = gemv_shape(OP, w, x)?;
        let [hq, hkv, d, rows] = check_rope_qkv(OP, &s, q, [k_cache, v_cache], op, rope)?;
        let format = float_format(OP, "w", w)?;
        same_format(OP, "x", Some(x), format)?;
        let inputs = [("w", Some(w)), ("bias", bias), ("x", Some(x))];
        check_placed(OP, &s, (format, bias), [q, k_cache, v_cache], &inputs)?;
        let place = self.rope_placement(OP, [k_cache, v_cache], position)?;
        let heads = [hq, hkv, d, rows];
        let (spec, push) = rope_constants(op, &s, rope, heads, bias.is_some(), position);
        self.record_float_gemv(list, [w, x, q], bias, &s, (&spec, &push), &place)
    }

    /// Where the `rope_qkv` epilogue writes: the caches, and the position buffer (checked) or
    /// the unread one.
    fn rope_placement<'a>(
        &'a self,
        op: &'static str,
        [k, v]: [&'a Tensor; 2],
        position: Option<&'a Tensor>,
    ) -> Result<Placement<'a>, OpError> {
        position_buffer(op, position)?;
        let position = self.position_or_unread(op, position)?;
        Ok(Placement { k, v, position })
    }

    /// One dispatch of the float GEMV, wide or scalar as K allows.
    fn record_float_gemv(
        &self,
        list: &mut CommandList,
        [w, x, y]: [&Tensor; 3],
        bias: Option<&Tensor>,
        s: &GemvShape,
        constants: (&gemv::SpecConstants, &gemv::PushConstants),
        place: &Placement<'_>,
    ) -> Result<(), OpError> {
        const OP: &str = "gemv";
        let format = w.format();
        // Unread without a bias (`bias_term` 0): W binds in its place.
        let bias = bias.unwrap_or(w);
        if s.wide(format.size()) {
            let kernel = self.kernel_for::<gemv::Kernel>(OP, "w_blob", format, false)?;
            let b = gemv::BufferBindings {
                w_blob: w,
                x_blob: x,
                bias_blob: bias,
                y_blob: y,
                k_blob: place.k,
                v_blob: place.v,
                pos_blob: place.position,
            };
            let chunk = GemvShape::chunk(format.size());
            self.record_gemv(list, OP, &kernel, s, chunk, constants, &b)
        } else {
            let kernel = self.kernel_for::<gemv_scalar::Kernel>(OP, "w_blob", format, false)?;
            let b = gemv_scalar::BufferBindings {
                w_blob: w,
                x_blob: x,
                bias_blob: bias,
                y_blob: y,
                k_blob: place.k,
                v_blob: place.v,
                pos_blob: place.position,
            };
            self.record_gemv(list, OP, &kernel, s, 1, constants, &b)
        }
    }

    /// Records `y = scale · (W · x)` into `list`, W in int8 dequantized on the fly: `w` an I8
    /// `[N, K]` tensor (row-major, one row per output channel), `scales` F32 `[N]` (each row's
    /// scale), `x` `[K]` or `[batch, K]` (batch 1 to 8) and `y` `[N]` or `[batch, N]` in one
    /// float format (F32, F16 or Bf16); fp32 sums. Where K is not a multiple of 16 and the
    /// device lacks 8-bit storage, `N · K` must be a multiple of 4. `y` may not be another
    /// operand. Nothing is recorded when a check fails.
    pub fn gemv_int8(
        &self,
        list: &mut CommandList,
        w: &Tensor,
        scales: &Tensor,
        x: &Tensor,
        y: &Tensor,
    ) -> Result<(), OpError> {
        self.gemv_int8_with(list, (w, scales), x, None, y, &Gemv::new())
    }

    /// [`Ops::gemv_int8`] with `bias` (`[N]`, x's format, added after the scale) and `op` fused
    /// (as [`Ops::gemv_with`]; the scales and the bias apply before the activation). Nothing is
    /// recorded when a check fails.
    pub fn gemv_int8_with(
        &self,
        list: &mut CommandList,
        (w, scales): (&Tensor, &Tensor),
        x: &Tensor,
        bias: Option<&Tensor>,
        y: &Tensor,
        op: &Gemv,
    ) -> Result<(), OpError> {
        const OP: &str = "gemv_int8";
        let (s, y_shape) = gemv_shape(OP, w, x)?;
        let y_shape = op.output_shape(OP, y_shape)?;
        shape_is(OP, "y", y, &y_shape, "x's rows × N (N/2 gated)")?;
        int8_weights(OP, &s, w, scales)?;
        let format = float_format(OP, "x", x)?;
        same_format(OP, "bias", bias, format)?;
        same_format(OP, "y", Some(y), format)?;
        bias_shape(OP, &s, bias)?;
        let inputs = [
            ("w", Some(w)),
            ("scales", Some(scales)),
            ("x", Some(x)),
            ("bias", bias),
        ];
        not_aliased(OP, y, "y", &inputs)?;
        let place = Placement {
            k: y,
            v: y,
            position: self.unread_i32(OP)?,
        };
        let constants = (&op.spec(&s, bias.is_some()), &op.push(&s));
        self.record_int8_gemv(list, OP, [w, scales, x, y], bias, &s, constants, &place)
    }

    /// [`Ops::gemv_rope_qkv`] on int8 weights: `w` I8 `[(hq + 2·hkv) · d, K]` (its heads' rotation
    /// pairs side by side) with one F32 scale per row in `scales`, the bias (added after the
    /// scale) and the other operands as there in one float format. Nothing is recorded when a
    /// check fails.
    #[allow(clippy::too_many_arguments)]
    pub fn gemv_int8_rope_qkv(
        &self,
        list: &mut CommandList,
        (w, scales): (&Tensor, &Tensor),
        bias: Option<&Tensor>,
        x: &Tensor,
        q: &Tensor,
        [k_cache, v_cache]: [&Tensor; 2],
        op: &Gemv,
        rope: &Rope,
        position: Option<&Tensor>,
    ) -> Result<(), OpError> {
        const OP: &str = "gemv_int8_rope_qkv";
        let (s, _) = gemv_shape(OP, w, x)?;
        let heads = check_rope_qkv(OP, &s, q, [k_cache, v_cache], op, rope)?;
        int8_weights(OP, &s, w, scales)?;
        let format = float_format(OP, "x", x)?;
        let inputs = [
            ("w", Some(w)),
            ("scales", Some(scales)),
            ("bias", bias),
            ("x", Some(x)),
        ];
        check_placed(OP, &s, (format, bias), [q, k_cache, v_cache], &inputs)?;
        let place = self.rope_placement(OP, [k_cache, v_cache], position)?;
        let (spec, push) = rope_constants(op, &s, rope, heads, bias.is_some(), position);
        let constants = (&spec, &push);
        self.record_int8_gemv(list, OP, [w, scales, x, q], bias, &s, constants, &place)
    }

    /// One dispatch of the int8 GEMV, wide or scalar as K allows (the scalar one on packed
    /// int8 storage needs `N · K` a multiple of 4).
    #[allow(clippy::too_many_arguments)]
    fn record_int8_gemv(
        &self,
        list: &mut CommandList,
        op: &'static str,
        [w, scales, x, y]: [&Tensor; 4],
        bias: Option<&Tensor>,
        s: &GemvShape,
        constants: (&gemv::SpecConstants, &gemv::PushConstants),
        place: &Placement<'_>,
    ) -> Result<(), OpError> {
        let format = x.format();
        // Unread without a bias (`bias_term` 0): x binds in its place.
        let bias = bias.unwrap_or(x);
        if s.wide(1) {
            let kernel = self.kernel_for::<gemv_int8::Kernel>(op, "x_blob", format, false)?;
            let b = gemv_int8::BufferBindings {
                w_blob: w,
                x_blob: x,
                scale_blob: scales,
                y_blob: y,
                k_blob: place.k,
                v_blob: place.v,
                pos_blob: place.position,
                bias_blob: bias,
            };
            return self.record_gemv(list, op, &kernel, s, GemvShape::chunk(1), constants, &b);
        }
        let kernel = self.kernel_for::<gemv_int8_scalar::Kernel>(op, "x_blob", format, false)?;
        let packed = kernel.variant().key.int8 == Some(Int8Mode::Int8p);
        if packed && !(s.n * s.k).is_multiple_of(4) {
            return Err(OpError::Unsupported {
                op,
                why: format!(
                    "`w` holds {} int8 values, not a multiple of 4, and K = {} is not a \
                     multiple of 16; this device reads int8 as 32-bit words (no 8-bit storage)",
                    s.n * s.k,
                    s.k
                ),
            });
        }
        let b = gemv_int8_scalar::BufferBindings {
            w_blob: w,
            x_blob: x,
            scale_blob: scales,
            y_blob: y,
            k_blob: place.k,
            v_blob: place.v,
            pos_blob: place.position,
            bias_blob: bias,
        };
        self.record_gemv(list, op, &kernel, s, 1, constants, &b)
    }

    /// One GEMV dispatch of `kernel` (any of the four: they share constants types) reading
    /// chunks of `chunk` elements.
    #[allow(clippy::too_many_arguments)]
    fn record_gemv<'a, B>(
        &self,
        list: &mut CommandList,
        op: &'static str,
        kernel: &Arc<LoadedKernel<B::Kernel>>,
        s: &GemvShape,
        chunk: usize,
        (spec, push): (&gemv::SpecConstants, &gemv::PushConstants),
        bindings: &B,
    ) -> Result<(), OpError>
    where
        B: Bindings<'a>,
        B::Kernel: Kernel<SpecConstants = gemv::SpecConstants, PushConstants = gemv::PushConstants>,
    {
        let local = s.local_size(chunk);
        let pipe = pipeline(op, kernel, spec, Some(local))?;
        recorded(op, list.dispatch(&pipe, bindings, push, s.grid(local)))
    }
}
