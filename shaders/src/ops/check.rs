//! The operand checks every operation makes before it records anything, each a located
//! [`OpError`] naming the operation and the operand.

use super::OpError;
use vkprism::{Tensor, TensorFormat};

/// A kernel given by the caller stores the operands' format.
pub(super) fn kernel_takes(
    op: &'static str,
    stored: Result<TensorFormat, vkprism::PipelineError>,
    format: TensorFormat,
) -> Result<(), OpError> {
    match stored {
        Ok(f) if f == format => Ok(()),
        Ok(f) => Err(OpError::Format {
            op,
            operand: "the kernel's variant",
            got: f,
            want: format!("{format:?}, the operands' format"),
        }),
        Err(source) => Err(OpError::Load { op, source }),
    }
}

/// The two dimensions of a matrix operand.
pub(super) fn matrix(
    op: &'static str,
    operand: &'static str,
    t: &Tensor,
) -> Result<[usize; 2], OpError> {
    match *t.shape() {
        [r, c] => Ok([r, c]),
        _ => Err(OpError::Shape {
            op,
            operand,
            got: t.shape().to_vec(),
            want: "a matrix, [rows, columns]".into(),
        }),
    }
}

/// Every stored row (its length given) is a multiple of 4 elements: the kernels read quads.
pub(super) fn rows_of_four(
    op: &'static str,
    rows: &[(&'static str, usize)],
) -> Result<(), OpError> {
    match rows.iter().find(|(_, len)| !len.is_multiple_of(4)) {
        Some((operand, len)) => Err(OpError::Unsupported {
            op,
            why: format!("`{operand}`'s rows are {len} elements long, not a multiple of 4"),
        }),
        None => Ok(()),
    }
}

/// `t` has at least one dimension and no dimension of 0.
pub(super) fn nonempty(op: &'static str, operand: &'static str, t: &Tensor) -> Result<(), OpError> {
    if !t.shape().is_empty() && !t.shape().contains(&0) {
        return Ok(());
    }
    Err(OpError::Shape {
        op,
        operand,
        got: t.shape().to_vec(),
        want: "at least one dimension, none of them 0".into(),
    })
}

/// A sliding kernel (`shape` describes it) of `kernel` (kh, kw) over an input of `size` (h, w)
/// padded by `pad` on every side, moved by `stride`: neither a zero stride nor a zero kernel,
/// and the padded input at least the kernel.
pub(super) fn kernel_fits(
    op: &'static str,
    shape: &dyn std::fmt::Debug,
    (h, w): (usize, usize),
    (kh, kw): (usize, usize),
    stride: usize,
    pad: usize,
) -> Result<(), OpError> {
    if stride == 0 || kh == 0 || kw == 0 || h + 2 * pad < kh || w + 2 * pad < kw {
        return Err(OpError::Unsupported {
            op,
            why: format!(
                "{shape:?}: a zero stride or kernel, or a kernel larger than the padded input"
            ),
        });
    }
    Ok(())
}

/// A convolution's operands past their shapes: `input`'s float format, which `weight`, `out`
/// and the bias share; the rows in `rows` multiples of 4; `out` aliasing none of the others.
pub(super) fn conv_operands(
    op: &'static str,
    [input, weight, out]: [&Tensor; 3],
    bias: Option<&Tensor>,
    rows: &[(&'static str, usize)],
) -> Result<TensorFormat, OpError> {
    let format = float_format(op, "input", input)?;
    for (name, t) in [("weight", Some(weight)), ("out", Some(out)), ("bias", bias)] {
        same_format(op, name, t, format)?;
    }
    rows_of_four(op, rows)?;
    not_aliased(
        op,
        out,
        "out",
        &[
            ("input", Some(input)),
            ("weight", Some(weight)),
            ("bias", bias),
        ],
    )?;
    Ok(format)
}

/// `t`'s shape is `want` (described as `names`).
pub(super) fn shape_is(
    op: &'static str,
    operand: &'static str,
    t: &Tensor,
    want: &[usize],
    names: &str,
) -> Result<(), OpError> {
    if t.shape() == want {
        return Ok(());
    }
    Err(OpError::Shape {
        op,
        operand,
        got: t.shape().to_vec(),
        want: format!("{names} = {want:?}"),
    })
}

/// `t`'s format, one the float kernels take.
pub(super) fn float_format(
    op: &'static str,
    operand: &'static str,
    t: &Tensor,
) -> Result<TensorFormat, OpError> {
    let f = t.format();
    if matches!(
        f,
        TensorFormat::F32 | TensorFormat::F16 | TensorFormat::Bf16
    ) {
        return Ok(f);
    }
    Err(OpError::Format {
        op,
        operand,
        got: f,
        want: "F32, F16 or Bf16".into(),
    })
}

/// `t`, where given, has format `want`.
pub(super) fn same_format(
    op: &'static str,
    operand: &'static str,
    t: Option<&Tensor>,
    want: TensorFormat,
) -> Result<(), OpError> {
    match t {
        Some(t) if t.format() != want => Err(OpError::Format {
            op,
            operand,
            got: t.format(),
            want: format!("{want:?}, as the other operands"),
        }),
        _ => Ok(()),
    }
}

/// `out` (named `output`) shares no memory with any of `inputs`.
pub(super) fn not_aliased(
    op: &'static str,
    out: &Tensor,
    output: &'static str,
    inputs: &[(&'static str, Option<&Tensor>)],
) -> Result<(), OpError> {
    for (name, t) in inputs {
        if t.is_some_and(|t| t.raw_buffer() == out.raw_buffer()) {
            return Err(OpError::Aliased {
                op,
                output,
                other: name,
            });
        }
    }
    Ok(())
}

/// A position read on the GPU, where given: one I32 value (`[1]`).
pub(super) fn position_buffer(op: &'static str, position: Option<&Tensor>) -> Result<(), OpError> {
    if let Some(p) = position {
        shape_is(op, "position", p, &[1], "[1]")?;
        same_format(op, "position", Some(p), TensorFormat::I32)?;
    }
    Ok(())
}

/// A KV cache's `[rows, hkv, head_dim]`: `k_cache` of rank 3 and `v_cache` of its shape.
pub(super) fn kv_cache_shape(
    op: &'static str,
    k_cache: &Tensor,
    v_cache: &Tensor,
) -> Result<[usize; 3], OpError> {
    let [rows, hkv, d] = *k_cache.shape() else {
        return Err(OpError::Shape {
            op,
            operand: "k_cache",
            got: k_cache.shape().to_vec(),
            want: "[rows, hkv, head_dim]".into(),
        });
    };
    shape_is(op, "v_cache", v_cache, k_cache.shape(), "k_cache's shape")?;
    Ok([rows, hkv, d])
}

/// A step's placed outputs (the queries `q` and the caches it writes) share no memory with
/// `inputs` or with each other.
pub(super) fn placed_apart(
    op: &'static str,
    [q, k_cache, v_cache]: [&Tensor; 3],
    inputs: &[(&'static str, Option<&Tensor>)],
) -> Result<(), OpError> {
    for (name, t) in [("q", q), ("k_cache", k_cache), ("v_cache", v_cache)] {
        not_aliased(op, t, name, inputs)?;
    }
    not_aliased(
        op,
        k_cache,
        "k_cache",
        &[("q", Some(q)), ("v_cache", Some(v_cache))],
    )?;
    not_aliased(op, v_cache, "v_cache", &[("q", Some(q))])
}
